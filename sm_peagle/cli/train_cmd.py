"""`peagle drafter train`: train a P-EAGLE head for any target as a SageMaker training job.

One SDK call (`Client.drafter_train`), rendered: the dry run's exact request, or the job's
report (per-depth accuracy, the acceptance to expect), the head's check and where it is.
Registered on the `drafter` sub-app by `drafter_cmds.py`; boto3 and rich load only when
it runs.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from ..ops.training import DEFAULT_INSTANCE, DEFAULT_MAX_NEW_TOKENS
from .options import DryRunOpt, YesOpt, bucket_option, k_option
from .output import current, note
from .spec_options import ImageOpt, InstanceTypeOpt, JsonOpt, RegionOpt, RoleOpt

TrainKOpt = k_option("Depths the head drafts, 1..15.")
TrainBucketOpt = bucket_option(
    "Bucket for the job's uploads and the head (default sagemaker-<region>-<account>)."
)

__all__ = ["train_cmd"]


def train_cmd(
    target: Annotated[
        str,
        typer.Argument(
            metavar="TARGET",
            help="Catalog alias, s3://bucket/prefix/ of a HF model, or a local model directory.",
        ),
    ],
    data: Annotated[
        str,
        typer.Option(
            "--data", help='jsonl of prompts ({"prompt": …} or {"messages": […]}), local or s3://.'
        ),  # fmt: skip
    ],
    k: TrainKOpt = 3,
    layers: Annotated[int, typer.Option("--layers", help="Head decoder layers (1..4).")] = 1,
    draft_vocab: Annotated[
        int | None,
        typer.Option("--draft-vocab", help="Draft vocabulary size (default: the target's)."),
    ] = None,
    steps: Annotated[
        int | None, typer.Option("--steps", help="Optimizer steps (0: an untrained head).")
    ] = None,
    epochs: Annotated[int | None, typer.Option("--epochs", help="Passes over the data.")] = None,
    max_new_tokens: Annotated[
        int, typer.Option("--max-new-tokens", help="Length of each target continuation.")
    ] = DEFAULT_MAX_NEW_TOKENS,
    instance_type: InstanceTypeOpt = DEFAULT_INSTANCE,
    role: RoleOpt = None,
    bucket: TrainBucketOpt = None,
    image: ImageOpt = None,
    max_runtime: Annotated[
        str, typer.Option("--max-runtime", help="Job time limit, e.g. 6h (at most 28d).")
    ] = "6h",
    seed: Annotated[int, typer.Option("--seed", help="Random seed.")] = 0,
    deploy: Annotated[
        bool, typer.Option("--deploy", help="Deploy the target with the head once it passes.")
    ] = False,
    dry_run: DryRunOpt = False,
    yes: YesOpt = False,
    region: RegionOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Train a P-EAGLE head for TARGET on SageMaker (stock speculators), check it as
    deploy would, and print per-depth validation accuracy and the acceptance to expect.
    --dry-run prints the exact CreateTrainingJob request and sends nothing. Ctrl-C stops
    the job and removes what it uploaded."""
    from .context import client
    from .lifecycle_cmds import asker, report_failure

    try:
        result = client(region).drafter_train(
            target,
            data=data,
            k=3 if k is None else k,
            layers=layers,
            draft_vocab_size=draft_vocab,
            steps=steps,
            epochs=epochs,
            max_new_tokens=max_new_tokens,
            instance_type=instance_type or DEFAULT_INSTANCE,
            role=role,
            bucket=bucket,
            image=image,
            max_runtime=max_runtime,
            seed=seed,
            dry_run=dry_run,
            deploy=deploy,
            confirm=asker(yes),
        )
    except Exception as e:
        if type(e).__name__ == "TrainingFailed":
            report_failure(e)
        raise
    current().result(result, render=_render)


def _render(r: Any) -> str:
    from .faces import cli_text

    lines = [f"training job {r.job_name}: {r.status}", f"head: {r.head_uri}"]
    if r.status == "DryRun":
        lines.append("would upload:")
        lines += [f"  {u['what']}: {u.get('from', 'sm_peagle/training/source/')} -> {u['uri']}"
                  for u in r.uploads]  # fmt: skip
        lines.append("CreateTrainingJob (nothing sent):")
        lines.append(json.dumps(r.request, indent=2))
    if r.report is not None:
        rep = r.report
        acc = ", ".join(f"d{i} {a:.0%}" for i, a in enumerate(rep.per_depth_val_accuracy))
        lines.append(f"steps {rep.steps}, K={rep.k}, validation accuracy per depth: {acc or '-'}")
        if rep.expected_position0_acceptance is not None and rep.per_round:
            spread = f" ± {rep.round_start_stderr:.0%}" if rep.round_start_stderr else ""
            lines.append(
                f"expect position-0 acceptance ~{rep.expected_position0_acceptance:.0%}{spread} "
                f"per draft round (K={rep.k}) and ~{rep.expected_accepted_length:.2f} tokens "
                "per round at temperature 0 (as vLLM counts them)"
            )
        elif rep.expected_position0_acceptance is not None:
            lines.append(
                f"expect position-0 acceptance below ~{rep.expected_position0_acceptance:.0%} "
                "per draft round (the depth-0 accuracy, per token; this report has no "
                "per-round estimate)"
            )
    if r.check is not None:
        lines.append("drafter check: " + ("passed" if r.check.ok else "FAILED"))
        for c in r.check.checks:
            if c.status == "fail":
                lines.append(f"  fail {c.name}: {c.message}")
    if r.endpoint:
        lines.append(f"deployed: {r.endpoint}")
    for n in r.notes:
        note(str(cli_text(n)))
    for w in r.warnings:
        note("warning: " + w)
    if r.next_step is not None:  # in the CLI's words, reaching what this command reached
        lines.append(str(cli_text(r.next_step)))
    return "\n".join(lines)
