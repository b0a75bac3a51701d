"""`drafter_train()`: train a P-EAGLE head for any target as a SageMaker training job, the
method of `TrainingOps` (a part of `sm_peagle.Client`); `peagle drafter train` calls it.

Every argument, the local data and a local or catalog target are checked before anything
is read from AWS (SpecError); an S3 target's config.json and S3 data are read (one GET
each) and judged before anything is created; then preflight (role, training quota, GPU
fit), the uploads (the source files, local data, a local target), CreateTrainingJob with
the operation's tags, the wait (status lines and the job's log lines), the report, the
drafter check of the head, and, when asked, the deploy; a completed run removes its uploads
and keeps the head. Ctrl-C stops the job, waits until it is Stopped, deletes it, and
removes everything the run uploaded and any output: nothing is left (a job that had
already Completed keeps its head).
`dry_run=True` sends nothing and returns the exact request.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import Param, SpecError, text
from ..training.spec import DEFAULT_INSTANCE, DEFAULT_MAX_NEW_TOKENS, DEFAULT_MAX_RUNTIME
from .session import Session
from .training_data import local_data, size_disk
from .training_results import (
    TrainResult,
    catalog_target,
    judge_target,
    local_target,
    training_cost,
)

__all__ = ["TrainResult", "TrainingOps"]

_PLACEHOLDER_ROLE = "arn:aws:iam::<account>:role/<name>"


# Said with every AWS run on the default image until a GPU job has run it end to end.
def unverified_gpu_note() -> str:
    """The note (a Text: each face names the parameter its own way)."""
    from ..errors import text

    return text(
        "the AWS training path has not yet run on a GPU: the image's pip install of "
        "speculators and vLLM's hidden-states extraction were read from source, never "
        "executed (see 'What has been run' in docs/guides/drafter-training.md); start with "
        "a short {max_runtime}"
    )


class TrainingOps(Session):
    """`drafter_train`: a P-EAGLE head for any target, trained as a SageMaker job."""

    def drafter_train(
        self,
        target: str,
        *,
        data: str,
        k: int = 3,
        layers: int = 1,
        draft_vocab_size: int | None = None,
        steps: int | None = None,
        epochs: int | None = None,
        max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
        instance_type: str = DEFAULT_INSTANCE,
        role: str | None = None,
        bucket: str | None = None,
        image: str | None = None,
        max_runtime: str | int = DEFAULT_MAX_RUNTIME,
        seed: int = 0,
        dry_run: bool = False,
        deploy: bool = False,
        wait: bool = True,
        confirm: Callable[[str], None] | None = None,
    ) -> TrainResult:
        """Train a P-EAGLE head for `target` on SageMaker (stock speculators in an AWS
        training image), check it as deploy would, and optionally deploy it.

        Args:
            target: a catalog alias, an s3:// prefix of a Hugging Face model, or a local
                model directory (pushed with the job).
            data: a jsonl of prompts (`{"prompt": ...}` or `{"messages": [...]}` rows, every
                turn's role and content a string; at least 2), local or one s3://…/*.jsonl
                object (its first MiB checked); the training text is the target's own
                continuations.
            k: depths the head drafts (1..15).
            layers: the head's decoder layers (1..4).
            draft_vocab_size: the draft vocabulary (default: the target's).
            steps: optimizer steps (0 writes the untrained head); or `epochs`.
            epochs: passes over the data; or `steps`.
            max_new_tokens: the length of each continuation (1..4096).
            instance_type: the training instance, of a family the training image runs
                on (`sm_peagle.training.spec.TRAINING_FAMILIES`: g5, g6, g6e, g7e, p4d,
                p4de, p5, p5e, p5en, p6-b200, p6-b300).
            role: the execution role ARN (default: PEAGLE_ROLE_ARN).
            bucket: where uploads and the head go (default sagemaker-REGION-ACCOUNT).
            image: a training image URI instead of AWS's vLLM 0.31.0 SageMaker DLC.
            max_runtime: the job's time limit ("6h", seconds; at most 28 days).
            seed: the random seed (data split, initialisation).
            dry_run: send nothing; return the exact request and the uploads.
            deploy: deploy the target with the trained head (K = `k`) once it passes.
            wait: wait for the job (False: return once it is created).
            confirm: called with a question after preflight, before the first upload
                (it raises to stop); None goes ahead.

        Returns:
            A `TrainResult`: the job, the head's S3 prefix, the report (per-depth
            accuracy, expected acceptance), the head's drafter check.

        Raises:
            SpecError: a bad argument, data the job would refuse (a malformed row, too
                few rows for the validation split), a disk no training volume holds, a
                target the trainer cannot handle (nothing was sent or created).
            PreflightFailed: the role, quota or GPU fit (nothing was created).
            TrainingFailed: the job ended Failed (its FailureReason).
            TrainingLost: the wait broke (expired credentials, the network) while the
                job may still be running; nothing was stopped or removed.
            TrainingStopped: interrupted; the job was stopped and deleted and nothing is
                left (`left` says otherwise when it was still Stopping).
            Interrupted: interrupted again during that clean-up: what is left, and the
                `gc` that removes it.
            AwsError: an upload S3 refused (nothing was created).
        """
        from .. import settings
        from ..training.spec import check_train_args

        spec = check_train_args(
            target, data=data, k=k, layers=layers, draft_vocab_size=draft_vocab_size,
            steps=steps, epochs=epochs, max_new_tokens=max_new_tokens,
            instance_type=instance_type, role=role, bucket=bucket, image=image,
            max_runtime=max_runtime, seed=seed, deploy=deploy,
        )  # fmt: skip
        notes: list[str] = []
        s3_data = spec.data.startswith("s3://")
        if not s3_data and spec.data.startswith("~"):
            # Expanded once, here: every later read and the upload use the same path
            # (`--data=~/p.jsonl` reaches peagle unexpanded; bash expands only word starts).
            from dataclasses import replace

            spec = replace(spec, data=str(Path(spec.data).expanduser()))
        if s3_data:
            from ..drafter.inspection import parse_s3_uri

            _b, key = parse_s3_uri(spec.data)
            if not key or not spec.data.endswith(".jsonl"):
                # One object (a prefix is not read), and the job reads only *.jsonl files
                # of its train channel.
                raise SpecError(
                    text(
                        "{p}: {d} is not a .jsonl object (the job reads only *.jsonl)",
                        p=Param("data"),
                        d=spec.data,
                    ),  # fmt: skip
                    remedy="give s3://bucket/key.jsonl (copy or rename the object)",
                    field="data",
                    value=spec.data,
                    rule="an S3 key ending in .jsonl",
                )
            stats = None
        else:
            stats = local_data(spec.data, spec.val_fraction)
            notes.append(stats.note())
        info = None
        if spec.target.startswith("s3://"):
            from ..drafter.inspection import parse_s3_uri

            parse_s3_uri(spec.target)
        elif spec.target.startswith((".", "/", "~")) or Path(spec.target).expanduser().is_dir():
            info = local_target(spec.target)
        else:
            info = catalog_target(spec.target, self._say)
        if spec.deploy and (info is None or info.local_dir is not None):
            # deploy() serves catalog models (a JumpStart id or alias): refused now, not
            # after hours of training.
            raise SpecError(
                text(
                    "{d}: deploy serves catalog models, and {t} is not one",
                    d=Param("deploy"),
                    t=spec.target,
                ),  # fmt: skip
                remedy="train without it, then deploy the head with your model's own "
                "serving setup (the head's S3 prefix is printed)",
                field="deploy",
                value=True,
            )
        draft_vocab = spec.draft_vocab_size
        if info is not None:
            draft_vocab = judge_target(info, spec.draft_vocab_size)
        role_arn = spec.role or settings.role_arn()
        if role_arn is None and not dry_run:
            raise SpecError(
                "no execution role for the training job",
                remedy=text("pass {r} or set PEAGLE_ROLE_ARN", r=Param("role", _PLACEHOLDER_ROLE)),
                field="role",
            )
        if spec.image is None and not self._elsewhere():
            notes.append(unverified_gpu_note())
        if dry_run:
            if info is not None and stats is not None:  # else the run sizes it after its reads
                spec = size_disk(spec, info, stats, notes)
            return self._dry_run(spec, info, draft_vocab, role_arn or _PLACEHOLDER_ROLE, notes)
        from ..training.request import ENTRYPOINT, source_files
        from .training_run import run_training

        if ENTRYPOINT not in source_files():  # before any request
            raise SpecError(
                f"this peagle has no training entrypoint (sm_peagle/training/source/{ENTRYPOINT})",
                remedy="install a peagle release that ships it",
            )
        aws = self._connect()
        return run_training(self, aws, self._say, spec, info, draft_vocab, role_arn, notes,
                            stats, wait, confirm)  # fmt: skip

    def _elsewhere(self) -> bool:
        """The requests go to an endpoint other than AWS's (the sandbox, moto's server):
        its trainer is not the GPU path."""
        from .. import settings

        url = self.endpoint_url or getattr(self._aws, "endpoint_url", None)
        return bool(url or settings.aws_endpoint_url("sagemaker"))

    def _dry_run(self, spec: Any, info: Any, draft_vocab: int | None, role_arn: str,
                 notes: list[str]) -> TrainResult:  # fmt: skip
        from ..aws import resolve_region
        from .training_run import plan_request

        region = self.region or getattr(self._aws, "given_region", None) or resolve_region()
        if region is None:  # a dry run needs no region: show one, and say so
            region = "us-east-1"
            notes.append(f"no region set: the request is shown for {region}")
        bucket = spec.bucket or f"sagemaker-{region}-<account>"
        if info is None:
            notes.append(
                "the target's config.json is read when the job runs (a dry run sends "
                "nothing): its architecture is checked then, and target_layer_ids comes from it"
            )
        if spec.data.startswith("s3://"):
            notes.append(
                "the S3 data is read when the job runs, not in a dry run: its first MiB only "
                "(one ranged GET) and its size; rows after that MiB are not checked before "
                "the job starts"
            )
        if spec.data.startswith("s3://") or info is None:
            notes.append(
                f"disk: VolumeSizeInGB {spec.volume_gb} here; the run sizes it from the data "
                "and the target it reads"
            )
        request, layout, uploads = plan_request(spec, info, draft_vocab, role_arn, region,
                                                bucket, tags=[])  # fmt: skip
        cost = training_cost(spec.instance_type, spec.max_runtime)
        notes.append(cost["note"])
        return TrainResult(
            job_name=layout.job,
            status="DryRun",
            head_uri=layout.head_uri,
            request=request,
            uploads=uploads,
            notes=notes,
            cost=cost,
        )
