"""delete stopped at DeleteEndpoint, DeleteEndpointConfig and DeleteModel; adopt (of an
endpoint made with boto3, no peagle tag) stopped at each of its three AddTags."""

from __future__ import annotations

import pytest

from tests.faults.cases import COMMANDS, Command, Window, selected
from tests.faults.scenario import check_windows, run_case
from tests.faults.world import FaultWorld

pytestmark = pytest.mark.e2e

KEYS = ("delete", "adopt")


@pytest.mark.parametrize("key", KEYS)
def test_the_windows_are_every_mutating_request(world: FaultWorld, key: str) -> None:
    check_windows(world, COMMANDS[key])


@pytest.mark.parametrize(("command", "window", "stop"), selected(*KEYS))
def test_stopped_at_a_window(
    world: FaultWorld, command: Command, window: Window, stop: str
) -> None:
    run_case(world, command, window, stop)
