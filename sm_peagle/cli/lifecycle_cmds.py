"""`peagle deploy` and `peagle update`: create or change an endpoint, and wait."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

import typer

from .options import (
    DryRunOpt,
    StrictOpt,
    TimeoutOpt,
    YesOpt,
    component_option,
    copies_option,
    dry_run_option,
    k_option,
    mode_option,
)
from .output import current, note
from .spec_options import (
    BakeOpt,
    InstanceCountOpt,
    InstanceTypeOpt,
    JsonOpt,
    MonitorOpt,
    RegionOpt,
    RolloutOpt,
    SpecFileOpt,
    TtlOpt,
    TtlRoleOpt,
    with_spec_options,
)

if TYPE_CHECKING:
    from ..planning.spec.options import SpecOptions

UpdateModeOpt = mode_option("p-eagle, eagle3 or baseline (default: keep the current).")
UpdateKOpt = k_option("K, the speculative tokens per step [default: keep the current].")
UpdateComponentOpt = component_option(
    "Inference component to change: its copies (--copies), K (-k) or --mode."
)
UpdateCopiesOpt = copies_option("Copies of --component; 0 scales it to zero.")


def confirm(question: str, yes: bool) -> None:
    if yes:
        return
    from ..errors import SpecError

    if not sys.stdin.isatty():
        raise SpecError(
            f"{question} needs confirmation, and there is no terminal to ask",
            remedy="pass --yes in non-interactive use",
        )
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
        note(f"last log lines ({current().label}):")  # the sandbox's are SIMULATED
        for line in lines:
            note(f"  {line}")


def asker(yes: bool) -> Callable[[str], None] | None:
    """The `confirm` the CLI gives the SDK: None with --yes (proceed), else the prompt."""
    return None if yes else (lambda question: confirm(question, False))


@with_spec_options
def deploy_command(
    model: Annotated[str | None, typer.Argument(help="Catalog alias or JumpStart id.")] = None,
    spec_file: SpecFileOpt = None,
    wait: Annotated[bool, typer.Option("--wait/--no-wait", help="Wait until InService.")] = True,
    timeout: TimeoutOpt = None,
    keep_on_failure: Annotated[
        bool, typer.Option("--keep-on-failure", help="Keep resources of a failed deploy.")
    ] = False,
    dry_run: dry_run_option("Plan only; create nothing.") = False,
    strict: StrictOpt = False,
    yes: YesOpt = False,
    json_out: JsonOpt = False,
    *,
    options: SpecOptions,
) -> None:
    """Create the endpoint (model -> config -> endpoint), wait, and roll back on failure."""
    from ..errors import DeploymentFailed
    from ..planning.spec.options import build_spec
    from .context import client
    from .live import wait_view
    from .plan_cmd import render_plan

    spec = build_spec(model, spec_file, options)
    if spec.region:  # from -f's `region:` as from --region: the next commands go there too
        from .advice import given_region

        given_region(spec.region)
    if dry_run:
        p = client().plan(spec, strict=strict)
        current().result(p, render=render_plan)
        p.raise_for_failures()
        return
    try:
        with wait_view() as on_poll:
            # The spec carries the region (--region is a spec option here): the client
            # deploys where the spec says.
            ep = client(on_poll=on_poll).deploy(
                spec,
                wait=wait,
                timeout=timeout,
                keep_on_failure=keep_on_failure,
                confirm=asker(yes),
                strict=strict,
            )
    except DeploymentFailed as e:
        report_failure(e)
        raise
    d = ep.deployment
    assert d is not None
    current().result(d, render=render_deployment)


def render_deployment(d: Any) -> None:
    """A finished deploy: its status, and what to run next."""
    from .advice import Suggestion, render

    typer.echo(f"{d.endpoint} is {d.status} ({d.elapsed_seconds:.0f}s)")
    steps = [
        Suggestion.of("status", d.endpoint),
        Suggestion.of("logs", d.endpoint),
        Suggestion.of("delete", d.endpoint, yes=True),
    ]
    typer.echo("next: " + "   |   ".join(render(s) for s in steps))


def update_command(
    name: Annotated[str, typer.Argument(help="Endpoint name.")],
    k: UpdateKOpt = None,
    mode: UpdateModeOpt = None,
    instance_type: InstanceTypeOpt = None,
    instance_count: InstanceCountOpt = None,
    region: RegionOpt = None,
    component: UpdateComponentOpt = None,
    copies: UpdateCopiesOpt = None,
    monitor: MonitorOpt = None,
    rollout: RolloutOpt = None,
    bake: BakeOpt = None,
    ttl: TtlOpt = None,
    ttl_role: TtlRoleOpt = None,
    timeout: TimeoutOpt = None,
    dry_run: DryRunOpt = False,
    yes: YesOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Change K, mode or instances in place: new model + config, UpdateEndpoint, wait.
    `--ttl 2h` moves the expiry to 2 h from now (`--ttl none` removes it): the schedules
    and the tag only.
    On an endpoint hosting inference components, K and mode are per component:
    `--component NAME -k N` changes that component (new model, UpdateInferenceComponent).
    `--rollout canary` (linear, rolling) moves traffic in steps that bake while rollback
    alarms watch; a rollback exits 1 naming the alarm."""
    from ..errors import DeploymentFailed
    from .component_cmds import render_update
    from .context import client
    from .live import wait_view

    try:
        with wait_view() as on_poll:
            result = client(region, on_poll=on_poll).update(
                name,
                k=k,
                mode=mode,
                instance_type=instance_type,
                instance_count=instance_count,
                component=component,
                copies=copies,
                monitor=monitor,
                rollout=rollout,
                bake=bake,
                ttl=ttl,
                ttl_role=ttl_role,
                timeout=timeout,
                confirm=asker(yes),
                dry_run=dry_run,
            )
    except DeploymentFailed as e:
        report_failure(e)
        raise
    current().result(result, render=render_update)
