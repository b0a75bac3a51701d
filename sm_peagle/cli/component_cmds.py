"""How `peagle update` shows what it did: an endpoint's K/mode/instances, one inference
component's configuration (`--component NAME -k N`), or its copy count (`--copies N`).
The update itself is one SDK call, `sm_peagle.update` (sm_peagle/ops/changes.py)."""

from __future__ import annotations

from typing import Any

import typer


def render_update(result: Any) -> None:
    """One line for an `UpdateResult`."""
    if result.dry_run:
        if not result.changes:  # not "would change no changes"
            typer.echo(f"{result.endpoint}: no changes (dry run: nothing sent)")
            return
        what = (
            f"{result.component} to {result.desired_copies} copies"
            if result.kind == "copies"
            else ", ".join(result.changes)
        )
        typer.echo(f"{result.endpoint}: would change {what} (dry run: nothing changed)")
        planned = getattr(result, "rollout", None)
        if planned is not None:  # the rollout it would run, from the live fleet
            shares = ", ".join(f"{s['share']:.0%} for {s['bake_s']}s" for s in planned.steps)
            alarms = ", ".join(planned.alarms) or "none"
            typer.echo(f"would roll out {planned.strategy}: {shares}; rollback alarms: {alarms}")
        return
    if not result.changed:
        return  # the SDK's note already said `no changes: …; nothing sent` (one line)
    if result.kind == "copies":
        zero = " (scaled to zero)" if result.scaled_to_zero else ""
        typer.echo(
            f"{result.component} is {result.status} with {result.current_copies} copies{zero}"
        )
        return
    name, changes = result.endpoint, ", ".join(result.changes)
    if result.kind == "expiry":  # its schedules and tag only
        typer.echo(f"{name} is {result.status} ({changes})")
        return
    if result.kind == "component":
        typer.echo(f"{name} is {result.status} ({changes or 'components updated'})")
    else:
        typer.echo(f"{name} is {result.status} on {result.endpoint_config} ({changes})")
    rollout = getattr(result, "rollout", None)
    if rollout is not None:
        idle = rollout.unverified_bakes
        seen = " -> ".join(rollout.phases) or "no phase seen"
        line = f"rollout: {rollout.strategy} {rollout.outcome} ({seen})"
        if idle:
            line += f"; bake(s) {', '.join(map(str, idle))} saw no invocations: not verified"
        typer.echo(line)
