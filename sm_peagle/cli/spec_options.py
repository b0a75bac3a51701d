"""The spec options `plan` and `deploy` take, declared once, and how they become a spec.

`SPEC_OPTIONS` lists every one: its `SpecOptions` field (`sm_peagle.planning.spec.options`,
whose `overrides()` names the spec field it sets) and its typer option. `with_spec_options`
gives a command all of them and hands the command one `SpecOptions`. So a new spec option
is one field of the spec model, one field of `SpecOptions` and one entry here, and every
command that takes a spec (and the SDK's keyword arguments) has it.

The options every command shares (`-f`, `-k`, `--mode`, `--region`, `--json`, ...) are
declared in `cli/options.py` and re-exported here."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import typer

from .options import (
    FileOpt,
    JsonOpt,
    KOpt,
    ModeOpt,
    RegionOpt,
    bucket_option,
    check_region,
    vllm_version_option,
)

__all__ = [
    "SPEC_OPTIONS",
    "with_spec_options",
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
BucketOpt = bucket_option(
    "Bucket a local --drafter is pushed to at deploy (default sagemaker-<region>-<account>)."
)
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
VllmVersionOpt = vllm_version_option("vLLM version the image runs.")
NameOpt = Annotated[str | None, typer.Option("--name", help="Endpoint name.")]
RoutingStrategyOpt = Annotated[
    Literal["LEAST_OUTSTANDING_REQUESTS", "RANDOM"] | None,
    typer.Option(
        "--routing-strategy",
        parser=str,  # the spec checks the value, so the CLI and the SDK say the same
        help="How SageMaker spreads requests over the instances (the variant's "
        "RoutingConfig); LEAST_OUTSTANDING_REQUESTS suits long, uneven generations.",
    ),
]
RoleOpt = Annotated[
    str | None, typer.Option("--role", help="Execution role ARN (or PEAGLE_ROLE_ARN).")
]
MonitorOpt = Annotated[
    bool | None,
    typer.Option(
        "--monitor/--no-monitor",
        help="Speculation health computed by AWS: a metric of acceptance length from "
        "vLLM's own log lines, an alarm (speculation stopped paying) and a dashboard "
        "(spec `monitoring:`). --no-monitor removes them; neither touches SageMaker.",
    ),
]
RolloutOpt = Annotated[
    str | None,
    typer.Option(
        "--rollout",
        metavar="STRATEGY[:SIZE]",
        help="How the next update moves traffic (spec `endpoint.rollout`): all-at-once, "
        "canary[:SIZE], linear[:SIZE] or rolling[:SIZE] (SIZE: instances, or 25%); rollback "
        "alarms watch each bake and SageMaker rolls back when one trips.",
    ),
]
BakeOpt = Annotated[
    str | None,
    typer.Option(
        "--bake",
        metavar="DURATION",
        help="How long each rollout step bakes while the rollback alarms watch (10m, 600).",
    ),
]

TtlOpt = Annotated[
    str | None,
    typer.Option(
        "--ttl",
        metavar="DURATION|TIME",
        help="Delete the endpoint after this long (4h, 90m, 1d) or at this UTC time "
        "(2026-12-01T18:00Z), by an EventBridge Scheduler schedule: no peagle process runs "
        "(spec `endpoint.ttl`; 15 minutes at least).",
    ),
]
TtlRoleOpt = Annotated[
    str | None,
    typer.Option(
        "--ttl-role",
        metavar="ARN",
        help="The role the expiry schedule runs as, instead of the one peagle makes "
        "(it must trust scheduler.amazonaws.com and allow sagemaker:DeleteEndpoint).",
    ),
]


@dataclass(frozen=True)
class SpecOption:
    """One spec option: the `SpecOptions` field it fills, the command parameter (and so the
    flag's typer declaration), and the parameter's default when the flag is not given."""

    field: str
    annotation: Any
    default: Any = None
    param: str | None = None  # when the parameter is named unlike the field

    @property
    def name(self) -> str:
        return self.param or self.field


def _component_options() -> tuple[SpecOption, ...]:
    from .component_options import (
        AcceleratorsOpt,
        ComponentOpt,
        CopiesOpt,
        HostingOpt,
        MaxInstancesOpt,
        MinInstancesOpt,
        ScaleInCooldownOpt,
        ScaleInMaxStepOpt,
        ScaleInStrategyOpt,
        ScaleToZeroOpt,
    )

    return (
        SpecOption("hosting", HostingOpt),
        SpecOption("components", ComponentOpt, param="component"),
        SpecOption("scale_to_zero", ScaleToZeroOpt, False),
        SpecOption("copies", CopiesOpt),
        SpecOption("accelerators_per_copy", AcceleratorsOpt),
        SpecOption("min_instances", MinInstancesOpt),
        SpecOption("max_instances", MaxInstancesOpt),
        SpecOption("scale_in_strategy", ScaleInStrategyOpt),
        SpecOption("scale_in_max_step", ScaleInMaxStepOpt),
        SpecOption("scale_in_cooldown_minutes", ScaleInCooldownOpt),
    )


# Every spec option, in the order `--help` lists them.
SPEC_OPTIONS: tuple[SpecOption, ...] = (
    SpecOption("instance_type", InstanceTypeOpt),
    SpecOption("instance_count", InstanceCountOpt),
    SpecOption("fallback", FallbackOpt),
    SpecOption("autoscale", AutoscaleOpt),
    SpecOption("target_concurrency", TargetConcurrencyOpt),
    SpecOption("target_invocations", TargetInvocationsOpt),
    SpecOption("mode", ModeOpt),
    SpecOption("k", KOpt),
    SpecOption("k_schedule", KScheduleOpt),
    SpecOption("drafter", DrafterOpt),
    SpecOption("bucket", BucketOpt),
    SpecOption("model_data", ModelDataOpt),
    SpecOption("image", ImageOpt),
    SpecOption("vllm_version", VllmVersionOpt),
    SpecOption("name", NameOpt),
    SpecOption("routing_strategy", RoutingStrategyOpt),
    SpecOption("role", RoleOpt),
    SpecOption("region", RegionOpt),
    *_component_options(),
    SpecOption("monitor", MonitorOpt),
    SpecOption("rollout", RolloutOpt),
    SpecOption("bake", BakeOpt),
    SpecOption("ttl", TtlOpt),
    SpecOption("ttl_role", TtlRoleOpt),
)


def _given(value: Any, default: Any = False) -> Any:
    """A flag left at its default is "not given" (None) for SpecOptions: an unset boolean
    flag is False and an unrepeated list option is empty. A two-way flag (`--monitor /
    --no-monitor`, default None) passes False on: turning a thing off is a value."""
    if (value is False and default is False) or value == []:
        return None
    return value


def _evaluated(annotation: Any, command: Callable[..., Any]) -> Any:
    if isinstance(annotation, str):
        return eval(annotation, command.__globals__)  # noqa: S307 - the module's own source
    return annotation


def with_spec_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Give `command` every spec option (after its `spec_file` parameter) and call it with
    `options=SpecOptions(...)` built from them. `command` declares `options` itself and
    none of the spec options."""
    # The command's own annotations are strings (`from __future__ import annotations`);
    # typer needs the objects. `options` is left out unevaluated: its type is imported for
    # type checkers only, so that `peagle --help` does not load the planning package.
    signature = inspect.signature(command)
    own = [
        p.replace(annotation=_evaluated(p.annotation, command))
        for p in signature.parameters.values()
        if p.name != "options"
    ]
    at = next((i + 1 for i, p in enumerate(own) if p.name == "spec_file"), len(own))
    added = [
        inspect.Parameter(
            o.name,
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
            default=o.default,
            annotation=o.annotation,
        )
        for o in SPEC_OPTIONS
    ]
    params = [*own[:at], *added, *own[at:]]

    @functools.wraps(command)
    def wrapper(**kwargs: Any) -> Any:
        from ..planning.spec.options import SpecOptions

        values = {o.field: _given(kwargs.pop(o.name), o.default) for o in SPEC_OPTIONS}
        return command(**kwargs, options=SpecOptions(**values))

    wrapper.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=params, return_annotation=None
    )
    wrapper.__annotations__ = {p.name: p.annotation for p in params}
    del wrapper.__wrapped__  # typer must read the new signature, not the command's
    return wrapper
