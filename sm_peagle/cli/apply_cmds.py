"""`peagle apply` and `peagle diff`: keep an endpoint equal to a spec file in git."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from .lifecycle_cmds import YesOpt, asker, report_failure
from .options import StrictOpt, TimeoutOpt, dry_run_option, file_option
from .output import current, note
from .spec_options import JsonOpt, MonitorOpt, RegionOpt

SpecArg = file_option(required=True)
ApplyDryRunOpt = dry_run_option("Show what would change.")


def _render(ap: Any) -> None:
    name = ap.endpoint
    if ap.action == "create":
        typer.echo(f"{name} does not exist: apply will create it")
        return
    if ap.action == "noop":
        typer.echo(f"{name}: no changes, up to date (spec sha256 {ap.plan.spec_sha256[:12]})")
        if ap.rollout_note:
            typer.echo(f"  {ap.rollout_note}")
        return
    typer.echo(f"{name} differs from the spec; apply will update it in place:")
    typer.echo("  spec:")
    for c in ap.spec_changes:
        typer.echo(f"    ~ {c.path}: {c.old!r} -> {c.new!r}")
    typer.echo("  requests:")
    for c in ap.request_changes:
        typer.echo(f"    ~ {c.path}: {c.old!r} -> {c.new!r}")
    if ap.rollout_note:
        typer.echo(f"  {ap.rollout_note}")


CHANGES_PENDING = 3  # `diff --detailed-exitcode` (2 is taken by bad input)


def diff_command(
    spec_file: SpecArg,
    detailed_exitcode: Annotated[
        bool,
        typer.Option(
            "--detailed-exitcode",
            help="Exit 3 when apply would change something (create or update), 0 when the "
            "endpoint matches; 1 and 2 keep their meaning (AWS failure, bad input).",
        ),
    ] = False,
    region: RegionOpt = None,
    monitor: MonitorOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Show how the live endpoint differs from the spec file. Changes nothing."""
    from .context import client

    # --region: the spec's region, as deploy's; --monitor/--no-monitor over the spec's
    ap = client().diff(spec_file, region=region, monitor=monitor)
    current().result(ap, render=_render)
    if detailed_exitcode and ap.action != "noop":
        raise typer.Exit(CHANGES_PENDING)


def apply_command(
    spec_file: SpecArg,
    dry_run: ApplyDryRunOpt = False,
    timeout: TimeoutOpt = None,
    strict: StrictOpt = False,
    yes: YesOpt = False,
    region: RegionOpt = None,
    monitor: MonitorOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Create the endpoint, update it in place, or do nothing: whatever makes it match."""
    from ..errors import DeploymentFailed
    from .context import client
    from .live import wait_view

    try:
        with wait_view() as on_poll:
            result = client(on_poll=on_poll).apply(
                spec_file,
                region=region,  # the spec's region, as deploy's --region
                monitor=monitor,  # over the spec's `monitoring:` (--no-monitor: remove it)
                dry_run=dry_run,
                timeout=timeout,
                confirm=asker(yes),
                on_diff=current().human(_render),  # before the prompt, for people
                strict=strict,
            )
    except DeploymentFailed as e:
        report_failure(e)
        raise
    current().result(result, render=_render_applied)


def _render_applied(result: Any) -> None:
    """The diff was shown before the prompt; a note says where the endpoint ended up."""
    if result.applied:
        note(f"{result.diff.plan.names['endpoint']} is {result.status}")
