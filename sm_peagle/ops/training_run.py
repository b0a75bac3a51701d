"""The run of `drafter_train` (ops/training.py holds the method and its checks): the S3
reads of an S3 target and data, preflight, the uploads, CreateTrainingJob, the wait, the
report, the drafter check and the deploy; and the clean-up of an interrupted run.
"""

from __future__ import annotations

import contextlib
from typing import Any

from ..errors import AwsError, SpecError

__all__ = ["plan_request", "run_training"]

# Shown in a dry run where the value comes from the target's config.json at run time.
FROM_CONFIG = "<from the target's config.json>"


def plan_request(
    spec: Any,
    info: Any,
    draft_vocab: int | None,
    role_arn: str,
    region: str,
    bucket: str,
    *,
    tags: list[dict[str, str]],
    job: str | None = None,
) -> tuple[dict[str, Any], Any, list[dict[str, str]]]:
    """(the CreateTrainingJob request, the S3 layout, the uploads it needs), validated
    against botocore's model (SpecError naming each violation: a bug, never sent)."""
    from ..planning.steps.aws_shapes import validate_request
    from ..training.checks import target_layer_ids
    from ..training.images import training_image
    from ..training.request import TrainingLayout, build_request, job_name

    layout = TrainingLayout(bucket, job or job_name(spec.target))
    uploads = [{"what": "source", "uri": layout.uri(layout.source_prefix)}]
    data_uri = spec.data
    if not spec.data.startswith("s3://"):
        data_uri = layout.uri(layout.data_key)
        uploads.append({"what": "data", "uri": data_uri, "from": spec.data})
    target_uri = info.model_data if info is not None else spec.target
    if info is not None and info.local_dir is not None:
        target_uri = layout.uri(layout.target_prefix)
        uploads.append({"what": "target", "uri": target_uri, "from": info.local_dir})
    if target_uri and not target_uri.endswith("/"):
        target_uri += "/"
    layers = target_layer_ids(info.num_layers) if info is not None else None
    request = build_request(
        spec,
        layout=layout,
        role_arn=role_arn,
        image=training_image(region, spec.image),
        target_uri=target_uri,
        data_uri=data_uri,
        layer_ids=layers if layers is not None else [],
        draft_vocab=draft_vocab,
        tags=tags,
    )
    if layers is None:
        request["HyperParameters"]["target_layer_ids"] = FROM_CONFIG
    checked = request
    if role_arn.startswith("arn:aws:iam::<account>"):  # a dry run's placeholder: shape only
        checked = {**request, "RoleArn": "arn:aws:iam::123456789012:role/placeholder"}
    problems = validate_request("sagemaker", "CreateTrainingJob", checked)
    if problems:
        raise SpecError(
            "the CreateTrainingJob request breaks botocore's model: " + "; ".join(problems),
            remedy="report this as a peagle bug; nothing was sent",
        )
    return request, layout, uploads


def _ensure_bucket(s3: Any, bucket: str, region: str) -> None:
    """The default bucket exists (made as SageMaker's Python SDK makes its own)."""
    from botocore.exceptions import ClientError

    try:
        s3.head_bucket(Bucket=bucket)
    except ClientError as e:
        if str(e.response.get("Error", {}).get("Code")) not in ("404", "NoSuchBucket"):
            raise
        conf = (
            {}
            if region == "us-east-1"
            else {"CreateBucketConfiguration": {"LocationConstraint": region}}
        )
        s3.create_bucket(Bucket=bucket, **conf)


def _upload_dir(s3: Any, root: str, bucket: str, prefix: str) -> None:
    from pathlib import Path

    base = Path(root).expanduser()
    for p in sorted(base.rglob("*")):
        rel = p.relative_to(base)
        if p.is_file() and not any(x.startswith(".") for x in rel.parts):
            s3.upload_file(str(p), bucket, prefix + rel.as_posix())


def run_training(
    client: Any,
    aws: Any,
    say: Any,
    spec: Any,
    info: Any,
    draft_vocab: int | None,
    role_arn: str,
    notes: list[str],
    prompts: Any,
    wait: bool,
    confirm: Any = None,
) -> Any:
    """Everything after the argument checks, on AWS (see the module docstring)."""
    from botocore.exceptions import ClientError

    from .. import settings
    from ..aws import as_peagle_error
    from ..lifecycle import training as lt
    from ..lifecycle.operation import Operation
    from ..training.checks import check_fit
    from ..training.errors import TrainingFailed, TrainingStopped
    from ..training.report import TrainingReport
    from ..training.request import source_files
    from .training_data import s3_data, size_disk
    from .training_results import TrainResult, judge_target, training_cost

    s3 = aws.client("s3")
    if info is None:  # an S3 target: its config.json, read once
        info = lt.read_s3_target(s3, spec.target)
        draft_vocab = judge_target(info, spec.draft_vocab_size)
    if spec.data.startswith("s3://"):
        prompts = s3_data(s3, spec.data, spec.val_fraction)
        notes.append(prompts.note())
    spec = size_disk(spec, info, prompts, notes)
    from ..catalog.instances import get_instance

    fit = check_fit(info, get_instance(spec.instance_type), spec.layers, draft_vocab)
    lt.run_training_preflight(aws, role_arn, spec.instance_type, fit)
    files = source_files()
    region = aws.region
    bucket = spec.bucket or f"sagemaker-{region}-{aws.account_id()}"
    op = Operation.start(spec.max_runtime, now=aws.synced_aws_now())
    request, layout, uploads = plan_request(
        spec, info, draft_vocab, role_arn, region, bucket, tags=op.tags()
    )
    cost = training_cost(spec.instance_type, spec.max_runtime, _price(aws, spec, region))
    notes.append(cost["note"])
    if confirm is not None:
        most = f", at most ${cost['max_usd']:,.2f}" if cost["max_usd"] is not None else ""
        confirm(
            f"Start training job {layout.job} on {spec.instance_type} (billed by run time, "
            f"at most {spec.max_runtime / 3600:g} h{most})?"
        )
    created = False
    poll = settings.poll_seconds() or 5.0
    desc: dict[str, Any] | None = None
    try:
        if spec.bucket is None:
            _ensure_bucket(s3, bucket, region)
        _uploads(s3, say, spec, info, layout, files)
        sm = aws.client("sagemaker")
        say(f"creating training job {layout.job} on {spec.instance_type} ({op.id})")
        created = True  # from here the job may exist, even if the answer never comes
        try:
            sm.create_training_job(**request)
        except ClientError:
            created = False  # SageMaker answered with a refusal: no job was made
            raise
        if not wait:
            op.end()  # this process no longer runs the job: SageMaker does
            return TrainResult(job_name=layout.job, status="InProgress",
                               head_uri=layout.head_uri, request=request, uploads=uploads,
                               notes=notes, cost=cost)  # fmt: skip
        desc = lt.wait_for_job(aws, layout.job, say=say, poll=poll, on_poll=client.on_poll)
    except KeyboardInterrupt as stop:
        status, left = _clean_up(aws, s3, layout, created, say, poll, op)
        op.end()
        job = layout.job if status else None
        raise TrainingStopped(job, status, left, stopped_words(job, status, left)) from stop
    except TrainingFailed:
        # A failed job keeps its log and description on SageMaker; its uploads and any
        # partial output are of no use: removed, so a failure leaves nothing in S3.
        op.end()
        _remove_quietly(s3, layout)
        raise
    except Exception as e:
        op.end()  # this process no longer runs the job (gc may judge it once it ended)
        if created:  # the job may be running on: S3 is left as it is (TrainingLost)
            err = _lost(e, layout, op.id, region, aws.endpoint_url_for("sagemaker"))
        else:
            _remove_quietly(s3, layout)  # no job: the uploads are of no use
            err = as_peagle_error(e)  # the refusal as AWS said it (_uploads words its own)
        if err is None:
            raise  # already peagle's, or a bug: the boundary reports it as it is
        raise err from e
    op.end()
    head_uri = lt.head_location(desc, layout)
    doc = lt.read_report(s3, head_uri)
    if doc is None:
        raise AwsError(
            f"training job {layout.job} completed without {head_uri}peagle-training-report.json",
            remedy="read the job's log (CloudWatch /aws/sagemaker/TrainingJobs)",
        )
    # The job is over and its head is read: the uploads (the data, a copy of a local
    # target that may be tens of GB, the source) are of no further use.
    try:
        n = lt.remove_inputs(s3, bucket, layout.prefix)
        say(f"removed the job's {n} uploaded object(s); the head stays at {head_uri}")
    except Exception as e:  # the head is trained and read: a clean-up failure must not lose it
        notes.append(f"could not remove the job's uploads under {layout.uri(layout.prefix)} "
                     f"({type(e).__name__}: {e}); gc removes them")  # fmt: skip
    report = TrainingReport.from_dict(doc)
    for w in report.warnings:
        say("warning: " + w)
    check = client.drafter_check(
        head_uri,
        vllm_version=_serving_vllm(spec.target),
        k=spec.k,
        trained_k=spec.k,
        target_hidden_size=info.hidden_size,
        target_vocab_size=info.vocab_size,
        target_num_layers=info.num_layers,
    )
    warnings = list(report.warnings)
    warnings += [str(c.line(with_fix=False)) for c in check.checks if c.status == "warn"]
    endpoint = None
    if spec.deploy:
        check.raise_for_failures()
        endpoint = _deploy(client, say, spec, info, head_uri, role_arn)
    return TrainResult(
        job_name=layout.job,
        status="Completed",
        head_uri=head_uri,
        request=request,
        uploads=uploads,
        report=report,
        check=check,
        warnings=warnings,
        notes=notes,
        cost=cost,
        endpoint=endpoint,
        next_step=None if endpoint else _next_step(spec, info, head_uri),
    )


def _serving_vllm(target: str) -> str:
    """The vLLM the head is checked against: the catalog target's own image version, else
    the newest peagle has facts for (a speculators-format P-EAGLE head needs a recent
    one; peagle's default image for other models is older)."""
    from ..catalog.models import find_model
    from ..vllm.versions import NEWEST_CHECKED

    entry = None if target.startswith("s3://") or "/" in target else find_model(target)
    return str(getattr(entry, "vllm_version", None) or NEWEST_CHECKED)


def _next_step(spec: Any, info: Any, head_uri: str) -> Any:
    """The call that serves the head: deploy for a catalog target (as `deploy=True` would
    have); for another target, the head's place and how vLLM takes it."""
    from ..errors import Call, text

    if info is not None and info.local_dir is None and not spec.target.startswith("s3://"):
        return text("deploy it: `{d}`", d=Call("deploy", spec.target, drafter=head_uri, k=spec.k))
    return text(
        "serve it with vLLM as the speculative model {h} (method eagle3, parallel_drafting, "
        "num_speculative_tokens {k})",
        h=head_uri,
        k=spec.k,
    )


def _deploy(client: Any, say: Any, spec: Any, info: Any, head_uri: str, role_arn: str) -> str:
    """Deploy the catalog target with the trained head: the existing deploy, K = the
    head's (drafter_train refused `deploy` for any other target before training)."""
    say(f"deploying {info.source} with the trained head (K={spec.k})")
    ep = client.deploy(info.source, mode="p-eagle", k=spec.k, drafter=head_uri, role=role_arn)
    return str(getattr(ep, "name", ep))


def _uploads(s3: Any, say: Any, spec: Any, info: Any, layout: Any, files: Any) -> None:
    """The training source (the `code` channel: one object per file, no archive), local
    data, a local target, each under the job's prefix; an S3 failure is a peagle AWS error
    naming what was being uploaded (exit 1, one line)."""
    from ..lifecycle import training as lt

    b = layout.bucket

    def source() -> None:
        for name in sorted(files):
            lt.upload(s3, b, layout.source_key(name), files[name])

    steps: list[tuple[str, str, Any]] = [("the training source", layout.source_prefix, source)]
    if not spec.data.startswith("s3://"):
        steps.append((spec.data, layout.data_key,
                      lambda: lt.upload(s3, b, layout.data_key, path=spec.data)))  # fmt: skip
    if info.local_dir is not None:
        tp = layout.target_prefix
        steps.append((f"the target {info.local_dir}", tp,
                      lambda: _upload_dir(s3, info.local_dir, b, tp)))  # fmt: skip
    for what, key, put in steps:
        say(f"uploading {what} to {layout.uri(key)}")
        try:
            put()
        except Exception as e:
            raise lt.upload_failure(e, what, layout.uri(key)) or e from e


def _keep_the_head(s3: Any, layout: Any, say: Any) -> list[tuple[str, str]]:
    """A job that Completed before the interrupt's stop reached it: its head is kept (and
    the job, whose description says where it is); only the uploads are removed."""
    from ..lifecycle import training as lt

    left = [("training_job", layout.job), ("head", layout.head_uri)]
    try:
        n = lt.remove_inputs(s3, layout.bucket, layout.prefix)
        say(f"removed the job's {n} uploaded object(s); the head stays at {layout.head_uri}")
    except Exception as e:  # named as left, not a new error
        say(f"could not remove the uploads under {layout.uri(layout.prefix)}: {e}")
        left.append(("s3_prefix", layout.uri(layout.prefix)))
    return left


def stopped_words(job: str | None, status: str | None, left: list[tuple[str, str]]) -> str:
    """What an interrupted run did before it ended, for TrainingStopped's line."""
    kinds = {k for k, _ in left}
    if job is None:
        return "start of the uploads: " + (
            "no job was created" if kinds else "they were removed and no job was created"
        )
    if status == "Completed":
        return (
            f"start of training job {job}: it had already Completed, so it and its head "
            "were kept (only the uploads were removed)"
        )
    if status == "Stopping":
        return (
            f"start of training job {job}: it is still Stopping (it bills until Stopped, "
            "and may still upload its output), so its files were kept"
        )
    done = [] if "training_job" in kinds else ["deleted"]
    done += [] if "s3_prefix" in kinds else ["its uploads removed"]
    what = f"start of training job {job}: it is {status or 'Stopped'}"
    return what + ((", " + " and ".join(done)) if done else "")


def _price(aws: Any, spec: Any, region: str) -> tuple[float | None, str]:
    """The instance's live training price on AWS (the Price List API; unknown, with why,
    when it cannot be read); a sandbox or another endpoint bills nothing peagle could price."""
    if aws.endpoint_url_for("sagemaker"):
        return None, "not AWS: the endpoint the run reached bills nothing peagle can price"
    from ..lifecycle.live_prices import training_price

    return training_price(region, spec.instance_type, aws)


def _lost(
    e: Exception, layout: Any, op_id: str, region: str, endpoint_url: str | None = None
) -> Exception | None:
    """TrainingLost for an error while waiting for a created job (not a failure of the
    job): it names the job, says it may still be running, and how to stop and remove it.
    The stop command reaches what this run reached: `endpoint_url` (a sandbox, a moto
    server) is on it, so a sandbox run's advice never stops a job in a real account."""
    from ..aws import as_peagle_error
    from ..errors import Call, PeagleError, text
    from ..training.errors import TrainingLost

    cause = e if isinstance(e, PeagleError) else as_peagle_error(e)
    if not isinstance(cause, PeagleError):
        return None  # a bug, not AWS: the boundary reports it as one
    first = text("{c}; then ", c=cause.remedy) if cause.remedy else ""
    return TrainingLost(
        text(
            "lost track of training job {j} ({m}): it may still be running (and billing); "
            "its files under {u} were left as they are",
            j=layout.job,
            m=cause.message,
            u=layout.uri(layout.prefix),
        ),
        job_name=layout.job,
        operation=op_id,
        remedy=text(
            "{first}if it should not finish, stop it (`aws sagemaker stop-training-job "
            "--training-job-name {j} --region {r}{at}`); once it has ended, `{gc}` removes its "
            "uploads (and all of it unless it Completed: its head is kept)",
            first=first,
            j=layout.job,
            r=region,
            at=f" --endpoint-url {endpoint_url}" if endpoint_url else "",
            gc=Call("gc", operation=op_id),
        ),
    )


def _remove_quietly(s3: Any, layout: Any) -> None:
    """Remove the uploads of a run that created no job; a failure here (the credentials
    that failed the upload fail this too) must not hide the first error."""
    from ..lifecycle import training as lt

    with contextlib.suppress(Exception):  # the first error is the one to report
        lt.remove_prefix(s3, layout.bucket, layout.prefix)


def _clean_up(aws: Any, s3: Any, layout: Any, created: bool, say: Any, poll: float,
              op: Any) -> tuple[str | None, list[tuple[str, str]]]:  # fmt: skip
    """Stop the job (if it may exist), wait until it is no longer running, delete it (gc
    would: a Stopped job is of no use), then remove everything under the job's prefix.
    (its last status, what is left). A second Ctrl-C meanwhile: `errors.Interrupted`
    naming what is left and the `gc` that removes it, as deploy's rollback does."""
    from ..errors import Call, Interrupted
    from ..lifecycle import training as lt

    say("interrupted: stopping the training job and removing its uploads")
    status: str | None = None
    left: list[tuple[str, str]] = [("s3_prefix", layout.uri(layout.prefix))]
    if created:
        left.insert(0, ("training_job", layout.job))
    try:
        if created:
            status = lt.stop_job(aws, layout.job, say=say, poll=min(poll, 5.0))
            if status == "Stopping":  # not stopped within the wait: it may still upload
                return status, left  # its output here, so its files stay too; gc's
            if status == "Completed":  # it finished before the stop: its head is the point
                return status, _keep_the_head(s3, layout, say)
            if status == "NotFound" or lt.delete_job(aws, layout.job):
                left.pop(0)  # never created, or deleted now
        try:
            n = lt.remove_prefix(s3, layout.bucket, layout.prefix)
        except Exception as e:  # expired credentials, say: named as left, not a new error
            say(f"could not remove {layout.uri(layout.prefix)}: {e}")
        else:
            left.pop()
            say(f"removed {n} object(s) under {layout.uri(layout.prefix)}")
    except Exception as e:  # e.g. expired credentials: the job may still be running
        op.end()
        err = _lost(e, layout, op.id, getattr(aws, "region", None) or "",
                    aws.endpoint_url_for("sagemaker")) if created else None  # fmt: skip
        if err is None:
            raise
        raise err from e
    except KeyboardInterrupt as again:
        op.end()
        raise Interrupted(
            "training clean-up stopped",
            left,
            Call("gc", operation=op.id),
            effect="removes them once the job has ended",
            operation=op.id,
            region=getattr(aws, "region", None),
        ) from again
    return (None if status == "NotFound" else status), left
