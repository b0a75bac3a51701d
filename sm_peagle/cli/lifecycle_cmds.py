"""`peagle deploy` and `peagle update`: create or change an endpoint, and wait."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

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
from .output import note, print_json
from .spec_options import (
    AutoscaleOpt,
    BucketOpt,
    DrafterOpt,
    FallbackOpt,
    ImageOpt,
    InstanceCountOpt,
    InstanceTypeOpt,
    JsonOpt,
    KOpt,
    KScheduleOpt,
    ModelDataOpt,
    ModeOpt,
    NameOpt,
    RegionOpt,
    RoleOpt,
    SpecFileOpt,
    TargetConcurrencyOpt,
    TargetInvocationsOpt,
    VllmVersionOpt,
)

YesOpt = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")]
TimeoutOpt = Annotated[
    str | None,
    typer.Option(
        "--timeout",
        help="Give up waiting after this long (2h, 90m, 600s). "
        "Default: download + health-check timeouts + 15m.",
    ),
]


def confirm(question: str, yes: bool) -> None:
    if yes:
        return
    from ..errors import SpecError

    if not sys.stdin.isatty():
        raise SpecError(f"{question} needs confirmation: pass --yes in non-interactive use")
    # The prompt goes where the user sees it: stderr, since stdout carries the result
    # (`--json > out.json`); stdout when only stdout is a terminal (`2> log`), else the
    # prompt would sit in the log while the command waits with nothing on screen.
    err = sys.stderr.isatty() or not sys.stdout.isatty()
    answer = typer.confirm(question, default=False, err=err)
    if not (sys.stderr if err else sys.stdout).isatty():  # a terminal echoes the Enter
        typer.echo("", err=err)
    if not answer:
        raise typer.Abort()  # the boundary prints "aborted" and exits 1


def report_failure(err: Any) -> None:
    """FailureReason and the newest log lines, before the one-line error."""
    reason = getattr(err, "failure_reason", None)
    if reason:
        note(f"FailureReason: {reason}")
    lines = getattr(err, "log_lines", None) or []
    if lines:
        note("last log lines:")
        for line in lines:
            note(f"  {line}")


def _lifecycle(region: str | None, json_out: bool) -> Any:
    from ..aws import AwsContext
    from ..lifecycle.manager import Lifecycle
    from .context import describe_target

    aws = AwsContext(region)
    aws.check_credentials()
    note(describe_target(aws))
    return Lifecycle(aws, say=note)


def _sandbox_only(model: str, dry_run: bool) -> None:
    """A sandbox-only model (tiny-llama) deploys only into the sandbox, and says which
    engine serves it there: its weights exist nowhere else."""
    import os

    from ..catalog.models import find_model
    from ..errors import SpecError

    entry = find_model(model)
    if entry is None or not entry.sandbox_only:
        return
    engine = os.environ.get("PEAGLE_SANDBOX_ENGINE_LABEL") or "SIMULATED"
    if os.environ.get("PEAGLE_SANDBOX_URL"):
        note(f"{entry.alias}: sandbox-only tiny model, served by the sandbox's {engine} engine")
    elif not dry_run:
        raise SpecError(
            f"{entry.alias} is a sandbox-only model: its weights exist only in the sandbox",
            remedy=f"peagle --sandbox deploy {entry.alias} ... (--sandbox-engine vllm for "
            "the real vLLM engine)",
        )


def deploy_command(
    model: Annotated[str | None, typer.Argument(help="Catalog alias or JumpStart id.")] = None,
    spec_file: SpecFileOpt = None,
    instance_type: InstanceTypeOpt = None,
    instance_count: InstanceCountOpt = None,
    fallback: FallbackOpt = None,
    autoscale: AutoscaleOpt = None,
    target_concurrency: TargetConcurrencyOpt = None,
    target_invocations: TargetInvocationsOpt = None,
    mode: ModeOpt = None,
    k: KOpt = None,
    k_schedule: KScheduleOpt = None,
    drafter: DrafterOpt = None,
    bucket: BucketOpt = None,
    model_data: ModelDataOpt = None,
    image: ImageOpt = None,
    vllm_version: VllmVersionOpt = None,
    name: NameOpt = None,
    role: RoleOpt = None,
    region: RegionOpt = None,
    hosting: HostingOpt = None,
    component: ComponentOpt = None,
    scale_to_zero: ScaleToZeroOpt = False,
    copies: CopiesOpt = None,
    accelerators_per_copy: AcceleratorsOpt = None,
    min_instances: MinInstancesOpt = None,
    max_instances: MaxInstancesOpt = None,
    scale_in_strategy: ScaleInStrategyOpt = None,
    scale_in_max_step: ScaleInMaxStepOpt = None,
    scale_in_cooldown_minutes: ScaleInCooldownOpt = None,
    wait: Annotated[bool, typer.Option("--wait/--no-wait", help="Wait until InService.")] = True,
    timeout: TimeoutOpt = None,
    keep_on_failure: Annotated[
        bool, typer.Option("--keep-on-failure", help="Keep resources of a failed deploy.")
    ] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Plan only; create nothing.")] = False,
    yes: YesOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Create the endpoint (model -> config -> endpoint), wait, and roll back on failure."""
    from ..endpoint import with_push_bucket
    from ..errors import DeploymentFailed
    from ..lifecycle.waiter import parse_duration
    from ..planning.plan_result import variant_instance_types
    from ..planning.spec_options import SpecOptions, build_spec
    from .live import wait_view
    from .plan_cmd import make_plan, render_plan

    options = SpecOptions(
        instance_type=instance_type,
        instance_count=instance_count,
        fallback=fallback or None,
        autoscale=autoscale,
        target_concurrency=target_concurrency,
        target_invocations=target_invocations,
        mode=mode,
        k=k,
        k_schedule=k_schedule,
        drafter=drafter,
        bucket=bucket,
        model_data=model_data,
        image=image,
        vllm_version=vllm_version,
        name=name,
        role=role,
        region=region,
        hosting=hosting,
        components=component or None,
        scale_to_zero=scale_to_zero or None,
        copies=copies,
        accelerators_per_copy=accelerators_per_copy,
        min_instances=min_instances,
        max_instances=max_instances,
        scale_in_strategy=scale_in_strategy,
        scale_in_max_step=scale_in_max_step,
        scale_in_cooldown_minutes=scale_in_cooldown_minutes,
    )
    spec = build_spec(model, spec_file, options)
    p = make_plan(spec)
    _sandbox_only(spec.model, dry_run)
    if dry_run:
        print_json(p.to_dict()) if json_out else render_plan(p)
        p.raise_for_failures()
        return
    p.raise_for_failures()
    seconds = parse_duration(timeout) if timeout else None
    lc = _lifecycle(p.region, json_out)
    p = with_push_bucket(p, lc.aws)
    price = f"${p.usd_per_hour:.2f}/h" if p.usd_per_hour is not None else "an unknown price"
    v = p.create_endpoint_config["ProductionVariants"][0]
    confirm(
        f"Create {p.names['endpoint']} on {v['InitialInstanceCount']} x "
        f"{' or '.join(variant_instance_types(v))} "
        f"({price})?",
        yes,
    )
    try:
        with wait_view(quiet=json_out) as on_poll:
            result = lc.apply(
                p, wait=wait, timeout=seconds, keep_on_failure=keep_on_failure, on_poll=on_poll
            )
    except DeploymentFailed as e:
        report_failure(e)
        raise
    doc = {
        "endpoint": result.endpoint,
        "status": result.status,
        "created": [{"kind": k_, "name": n} for k_, n in result.created],
        "elapsed_seconds": round(result.elapsed, 1),
        "region": p.region,
        "speculative_config": p.speculative_config,
    }
    if json_out:
        print_json(doc)
    else:
        typer.echo(f"{result.endpoint} is {result.status} ({result.elapsed:.0f}s)")
        typer.echo(
            f"next: peagle status {result.endpoint}   |   peagle logs {result.endpoint}   |   "
            f"peagle delete {result.endpoint} --yes"
        )


def _changes(old: Any, new: Any) -> list[str]:
    """`K 5 -> 3`, `mode p-eagle -> eagle3`, ...: what an update changes, from the two
    plans (so a K left to the catalog default shows its value, not "None")."""
    from ..planning.plan_result import variant_instance_types

    def variant(p: Any) -> dict:
        return p.create_endpoint_config["ProductionVariants"][0]

    fields = (
        ("mode", lambda p: p.spec.speculative.mode.value),
        ("K", lambda p: (p.speculative_config or {}).get("num_speculative_tokens", "-")),
        ("instance type", lambda p: " > ".join(variant_instance_types(variant(p)))),
        ("instances", lambda p: variant(p)["InitialInstanceCount"]),
    )
    return [f"{label} {get(old)} -> {get(new)}" for label, get in fields if get(old) != get(new)]


def _one_component_change(
    name: str, copies: int | None, instance_type: Any, instance_count: int | None
) -> None:
    """`--component NAME -k/--mode` changes that component's configuration and nothing else."""
    from ..errors import SpecError

    if copies is not None:
        raise SpecError(
            "update: --copies and -k/--mode are separate updates of a component; run one, "
            "then the other",
            remedy=f"e.g. `peagle update {name} --component NAME -k 5`, then "
            f"`peagle update {name} --component NAME --copies 2`",
        )
    if instance_type or instance_count is not None:
        raise SpecError(
            "update: --component changes one component; the instances are the endpoint's "
            "(a component endpoint's instances cannot be changed in place)"
        )


def update_command(
    name: Annotated[str, typer.Argument(help="Endpoint name.")],
    k: KOpt = None,
    mode: Annotated[
        str | None,
        typer.Option("--mode", help="p-eagle, eagle3 or baseline (default: keep the current)."),
    ] = None,
    instance_type: InstanceTypeOpt = None,
    instance_count: InstanceCountOpt = None,
    region: RegionOpt = None,
    component: Annotated[
        str | None,
        typer.Option(
            "--component",
            help="Inference component to change: its copies (--copies), K (-k) or --mode.",
        ),
    ] = None,
    copies: Annotated[
        int | None,
        typer.Option("--copies", help="Copies of --component; 0 scales it to zero."),
    ] = None,
    timeout: TimeoutOpt = None,
    yes: YesOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Change K, mode or instances in place: new model + config, UpdateEndpoint, wait.
    On an endpoint hosting inference components, K and mode are per component:
    `--component NAME -k N` changes that component (new model, UpdateInferenceComponent)."""
    from ..endpoint import deployed_spec, plan_for
    from ..errors import DeploymentFailed
    from ..lifecycle.waiter import parse_duration
    from ..planning.component_change import refuse_top_level_change
    from ..planning.spec_options import SpecOptions, build_spec
    from .live import wait_view

    ask = lambda question: confirm(question, yes)  # noqa: E731
    if component is not None and (k is not None or mode is not None):  # its configuration
        from .component_cmds import update_component_config

        _one_component_change(name, copies, instance_type, instance_count)
        lc = _lifecycle(region, json_out)
        return update_component_config(
            lc, name, component, k=k, mode=mode, timeout=timeout, ask=ask, json_out=json_out
        )
    lc = _lifecycle(region, json_out)
    if component is not None or copies is not None:  # an inference component's copies
        from .component_cmds import update_copies

        return update_copies(lc, name, component, copies, timeout, ask=ask, json_out=json_out)
    current = deployed_spec(lc.sm, name)
    refuse_top_level_change(current, name, k=k, mode=mode)
    options = SpecOptions(
        k=k, mode=mode, instance_type=instance_type, instance_count=instance_count, name=name
    )
    base = current.model_dump(mode="json", exclude_unset=True)
    p = plan_for(build_spec(None, None, options, base=base))
    p.raise_for_failures()
    old_plan = plan_for(current)
    changes = _changes(old_plan, p)
    confirm(f"Update {name} ({', '.join(changes) or 'no change'})?", yes)
    try:
        with wait_view(quiet=json_out) as on_poll:
            result = lc.update(
                p, timeout=parse_duration(timeout) if timeout else None, on_poll=on_poll
            )
    except DeploymentFailed as e:
        report_failure(e)
        raise
    doc = {
        "endpoint": name,
        "status": result.status,
        "endpoint_config": p.names["endpoint_config"],
        "changed": bool(result.created),
        "changes": changes,
        "speculative_config": p.speculative_config,
    }
    if json_out:
        print_json(doc)
    else:
        typer.echo(
            f"{name} is {result.status} on {p.names['endpoint_config']} ({', '.join(changes)})"
            if result.created
            else f"{name}: nothing to change"
        )
