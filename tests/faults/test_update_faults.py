"""update and apply (a changed spec, K 3 -> 5, on a deployed endpoint) stopped at each
window: CreateModel, CreateEndpointConfig, UpdateEndpoint, the wait on the Updating
endpoint, the retag (DeleteTags, AddTags), and the old config's and model's deletion."""

from __future__ import annotations

import pytest

from tests.faults.cases import COMMANDS, Command, Window, selected
from tests.faults.scenario import check_operation_tags, check_windows, run_case
from tests.faults.world import FaultWorld

pytestmark = pytest.mark.e2e

KEYS = ("update", "apply-update")


@pytest.mark.parametrize("key", KEYS)
def test_the_windows_are_every_mutating_request(world: FaultWorld, key: str) -> None:
    check_windows(world, COMMANDS[key])


@pytest.mark.parametrize("key", KEYS)
def test_what_it_creates_carries_its_operation(world: FaultWorld, key: str) -> None:
    check_operation_tags(world, COMMANDS[key])


@pytest.mark.parametrize(("command", "window", "stop"), selected(*KEYS))
def test_stopped_at_a_window(
    world: FaultWorld, command: Command, window: Window, stop: str
) -> None:
    run_case(world, command, window, stop)
