"""The options `plan`, `deploy` and `update` share, and how they become a spec.

Each command passes its parameters by name into `SpecOptions(...)`
(`sm_peagle.planning.spec_options`), whose `overrides()` names the spec field of each.
The options every command shares (`-f`, `-k`, `--mode`, `--region`, `--json`, ...) are
declared in `cli/options.py` and re-exported here."""

from __future__ import annotations

from typing import Annotated

import typer

from .options import (
    FileOpt,
    JsonOpt,
    KOpt,
    ModeOpt,
    RegionOpt,
    check_region,
)

__all__ = [
    "AutoscaleOpt",
    "BucketOpt",
    "DrafterOpt",
    "FallbackOpt",
    "ImageOpt",
    "InstanceCountOpt",
    "InstanceTypeOpt",
    "JsonOpt",
    "KOpt",
    "KScheduleOpt",
    "ModeOpt",
    "ModelDataOpt",
    "NameOpt",
    "RegionOpt",
    "RoleOpt",
    "SpecFileOpt",
    "TargetConcurrencyOpt",
    "TargetInvocationsOpt",
    "VllmVersionOpt",
    "check_region",
]

SpecFileOpt = FileOpt
InstanceTypeOpt = Annotated[
    str | None, typer.Option("--instance-type", "-t", help="e.g. ml.g7e.2xlarge.")
]
InstanceCountOpt = Annotated[int | None, typer.Option("--instance-count", help="Instances.")]
KScheduleOpt = Annotated[
    str | None,
    typer.Option(
        "--k-schedule",
        help="Dynamic K per batch size, START-END:K ranges (1-4:7,5-32:5,33-256:3); "
        "vLLM >= 0.24.0, checked with vLLM's own rules.",
    ),
]
DrafterOpt = Annotated[
    str | None, typer.Option("--drafter", help="Drafter head: s3://bucket/prefix/ or a dir.")
]
BucketOpt = Annotated[
    str | None,
    typer.Option(
        "--bucket",
        help="Bucket a local --drafter is pushed to at deploy "
        "(default sagemaker-<region>-<account>).",
    ),
]
FallbackOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--fallback",
        metavar="INSTANCE_TYPE",
        help="Capacity fallback instance type (repeat; priority order).",
    ),
]
AutoscaleOpt = Annotated[
    str | None, typer.Option("--autoscale", help="Autoscaling range MIN:MAX, e.g. 1:4.")
]
TargetConcurrencyOpt = Annotated[
    float | None,
    typer.Option("--target-concurrency", help="Scale to keep this many requests per instance."),
]
TargetInvocationsOpt = Annotated[
    float | None,
    typer.Option("--target-invocations", help="Scale on invocations per instance per minute."),
]
ModelDataOpt = Annotated[
    str | None,
    typer.Option(
        "--model-data", help="Target weights: s3://…/, s3://…/model.tar.gz or hf://org/name."
    ),
]
ImageOpt = Annotated[str | None, typer.Option("--image", help="Container image URI.")]
VllmVersionOpt = Annotated[
    str | None, typer.Option("--vllm-version", help="vLLM version the image runs.")
]
NameOpt = Annotated[str | None, typer.Option("--name", help="Endpoint name.")]
RoleOpt = Annotated[
    str | None, typer.Option("--role", help="Execution role ARN (or PEAGLE_ROLE_ARN).")
]
