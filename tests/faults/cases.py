"""The fault matrix: each command, each window of it (a mutating request, or the wait on a
Creating/Updating endpoint), each way a process is stopped; and the subset CI runs.

The windows are the mutating requests an uninterrupted run of each command sends, in
order (test_windows_are_every_mutating_request checks them against the proxy's log of
such a run, so a new step fails there until it has its window here). `PEAGLE_FAULTS=all`
generates every case; unset, a representative subset (DEFAULT) that still covers every
command and every kind of stop. Nothing is skipped either way: the parametrization
itself is the subset.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.faults.world import DEPLOYMENT, JUMPSTART

__all__ = ["COMMANDS", "DEFAULT", "Command", "Window", "cases", "selected"]


@dataclass(frozen=True)
class Window:
    label: str  # the operation, "#n" when the command sends it more than once; or "wait"
    operation: str
    nth: int = 1
    waiting: bool = False  # a DescribeEndpoint answered Creating/Updating
    # Finishing is allowed too: UpdateEndpoint has reached AWS (peagle waits for it to
    # settle and finishes, or removes the new resources), or the deployment is complete
    # on AWS already (its peagle:completed mark).
    may_finish: bool = False


def _w(label: str, may_finish: bool = False) -> Window:
    op, _, nth = label.partition("#")
    return Window(label, op, int(nth or 1), may_finish=may_finish)


WAIT = Window("wait", "DescribeEndpoint", waiting=True)
_CREATE = (
    _w("CreateModel"),
    _w("CreateEndpointConfig"),
    _w("CreateEndpoint"),
    WAIT,
    _w("AddTags", may_finish=True),  # peagle:completed on the endpoint
)
_UPDATE = (
    _w("CreateModel"),
    _w("CreateEndpointConfig"),
    _w("UpdateEndpoint", may_finish=True),
    Window("wait", "DescribeEndpoint", waiting=True, may_finish=True),
    _w("AddTags", may_finish=True),  # the retag: the new spec's tags over the old ones
    _w("DeleteEndpointConfig", may_finish=True),  # the old config and model
    _w("DeleteModel", may_finish=True),
)


# `update --component p-eagle -k 5` on a two-component endpoint (`world.COMPONENTS`):
# the new model, UpdateInferenceComponent (from there SageMaker switches whatever the
# client does), the old model retired, the endpoint's spec tags and completion mark.
_COMPONENT = (
    _w("CreateModel"),
    _w("UpdateInferenceComponent", may_finish=True),
    _w("DeleteModel", may_finish=True),
    _w("AddTags", may_finish=True),
)


@dataclass(frozen=True)
class Command:
    key: str
    args: tuple[str, ...]
    start: str  # FaultWorld.prepare: empty, deployed, applied, components, jumpstart
    windows: tuple[Window, ...]
    name: str  # the endpoint it works on

    @property
    def new(self) -> bool:
        """Creates a deployment from nothing (a killed one is also `delete NAME`'s)."""
        return self.start == "empty"


COMMANDS = {
    c.key: c
    for c in (
        Command("deploy", ("deploy", "gpt-oss-20b", "--yes"), "empty", _CREATE, DEPLOYMENT),
        Command("apply-new", ("apply", "-f", "{spec3}", "--yes"), "empty", _CREATE, DEPLOYMENT),
        Command("update", ("update", DEPLOYMENT, "-k", "5", "--yes"), "deployed", _UPDATE,
                DEPLOYMENT),
        Command("apply-update", ("apply", "-f", "{spec5}", "--yes"), "applied", _UPDATE,
                DEPLOYMENT),
        Command("update-component", ("update", DEPLOYMENT, "--component", "p-eagle", "-k", "5",
                "--yes"), "components", _COMPONENT, DEPLOYMENT),
        Command("delete", ("delete", DEPLOYMENT, "--yes"), "deployed",
                (_w("DeleteEndpoint"), _w("DeleteEndpointConfig"), _w("DeleteModel")),
                DEPLOYMENT),
        Command("adopt", ("adopt", JUMPSTART, "--yes"), "jumpstart",
                (_w("AddTags#1"), _w("AddTags#2"), _w("AddTags#3")), JUMPSTART),
    )
}  # fmt: skip

# SIGKILL is followed by `gc --yes`; for a new deployment also by `delete NAME --yes`.
STOPS = ("SIGINT", "SIGINT2", "SIGTERM", "SIGKILL-gc", "SIGKILL-delete")

# The CI subset: every command, every kind of stop, the windows where each is costliest:
# the endpoint exists (and bills), UpdateEndpoint has reached AWS or the endpoint is
# Updating, the retag, a delete halfway, adopt with one or two resources tagged. The
# simplest rollbacks (a lone model) and a delete's SIGKILL run in the full tier only.
DEFAULT = (
    "deploy-wait-SIGTERM",
    "deploy-CreateEndpoint-SIGINT2",
    "deploy-CreateEndpointConfig-SIGKILL-gc",
    "apply-new-CreateEndpoint-SIGKILL-delete",
    "update-UpdateEndpoint-SIGINT",
    "update-CreateEndpointConfig-SIGINT2",
    "update-UpdateEndpoint-SIGINT2",
    "update-AddTags-SIGTERM",
    "update-wait-SIGKILL-gc",
    "update-component-UpdateInferenceComponent-SIGINT",
    "update-component-UpdateInferenceComponent-SIGINT2",
    "update-component-UpdateInferenceComponent-SIGKILL-gc",
    "update-component-CreateModel-SIGTERM",
    "apply-update-wait-SIGINT",
    "delete-DeleteEndpointConfig-SIGINT",
    "delete-DeleteEndpoint-SIGINT2",
    "adopt-AddTags#2-SIGTERM",
    "adopt-AddTags#1-SIGINT2",
)


def cases(*keys: str) -> Iterator[tuple[Command, Window, str]]:
    """Every (command, window, stop) of these commands."""
    for key in keys:
        command = COMMANDS[key]
        for window in command.windows:
            for stop in STOPS:
                if stop == "SIGKILL-delete" and not command.new:
                    continue
                yield command, window, stop


def case_id(command: Command, window: Window, stop: str) -> str:
    return f"{command.key}-{window.label}-{stop}"


def selected(*keys: str) -> list[object]:
    """pytest params for these commands: all cases with PEAGLE_FAULTS=all, else DEFAULT's."""
    mode = os.environ.get("PEAGLE_FAULTS", "")
    if mode not in ("", "all"):
        raise pytest.UsageError(f"PEAGLE_FAULTS={mode!r}: use 'all', or unset it for the subset")
    return [
        pytest.param(command, window, stop, id=case_id(command, window, stop))
        for command, window, stop in cases(*keys)
        if mode == "all" or case_id(command, window, stop) in DEFAULT
    ]
