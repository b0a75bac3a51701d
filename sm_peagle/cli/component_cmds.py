"""`peagle update ENDPOINT --component NAME ...`: an inference component's copy count
(`--copies N`: UpdateInferenceComponentRuntimeConfig; 0 scales it to zero) or its
configuration (`-k N`, `--mode M`: a new model and UpdateInferenceComponent for that
component only, its old model retired)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import typer

from .output import print_json


def update_copies(
    lc: Any,
    endpoint: str,
    component: str | None,
    copies: int | None,
    timeout: str | None,
    *,
    ask: Callable[[str], None],
    json_out: bool,
) -> None:
    from ..errors import SpecError
    from ..lifecycle.components import set_copies
    from ..lifecycle.waiter import parse_duration

    if component is None or copies is None or copies < 0:
        raise SpecError(
            "update: --component NAME and --copies N (N >= 0) go together",
            remedy=f"e.g. `peagle update {endpoint} --component baseline --copies 0`",
        )
    ask(f"Set {endpoint} component {component} to {copies} copies?")
    desc = set_copies(lc, endpoint, component, copies, parse_duration(timeout) if timeout else 3600)
    rc = desc.get("RuntimeConfig", {})
    doc = {
        "endpoint": endpoint,
        "component": desc["InferenceComponentName"],
        "status": desc["InferenceComponentStatus"],
        "desired_copies": rc.get("DesiredCopyCount"),
        "current_copies": rc.get("CurrentCopyCount"),
        "scaled_to_zero": rc.get("DesiredCopyCount") == 0 and rc.get("CurrentCopyCount") == 0,
    }
    if json_out:
        print_json(doc)
        return
    zero = " (scaled to zero)" if doc["scaled_to_zero"] else ""
    typer.echo(f"{doc['component']} is {doc['status']} with {doc['current_copies']} copies{zero}")


def update_component_config(
    lc: Any,
    endpoint: str,
    component: str,
    *,
    k: int | None,
    mode: str | None,
    timeout: str | None,
    ask: Callable[[str], None],
    json_out: bool,
) -> None:
    """The deployed spec (its tags) with one component's K/mode replaced, re-planned,
    then `update_components`: only that component gets a new model."""
    from ..lifecycle.component_update import plan_component_change
    from ..lifecycle.waiter import parse_duration

    change = plan_component_change(lc.sm, endpoint, component, k=k, mode=mode)
    changes = change.changes
    ask(f"Update {endpoint} ({', '.join(changes) or 'no change'})?")
    result = change.apply(lc, timeout=parse_duration(timeout) if timeout else None)
    doc = {
        "endpoint": endpoint,
        "status": result.status,
        "changed": bool(result.created),
        "changes": changes,
        "created": [{"kind": kind, "name": n} for kind, n in result.created],
    }
    if json_out:
        print_json(doc)
        return
    typer.echo(
        f"{endpoint} is {result.status} ({', '.join(changes) or 'components updated'})"
        if result.created
        else f"{endpoint}: nothing to change"
    )
