"""`update --component p-eagle -k 5` (K 7 -> 5 of one of two inference components) stopped
at each window: the new model, UpdateInferenceComponent, the old model's deletion and the
endpoint's retag. Like an endpoint update it is an operation (issue 33): what it creates
carries its tags, a stop before UpdateInferenceComponent removes it, a stop after lets
SageMaker finish and finishes too, and a run killed after it is finished by `gc`
(`lifecycle.reconcile`: the endpoint takes the spec of the component's new model)."""

from __future__ import annotations

import pytest

from tests.faults.cases import COMMANDS, Command, Window, selected
from tests.faults.scenario import check_operation_tags, check_windows, run_case
from tests.faults.world import FaultWorld

pytestmark = pytest.mark.e2e

KEYS = ("update-component",)


def test_the_windows_are_every_mutating_request(world: FaultWorld) -> None:
    check_windows(world, COMMANDS["update-component"])


def test_what_it_creates_carries_its_operation(world: FaultWorld) -> None:
    check_operation_tags(world, COMMANDS["update-component"])


@pytest.mark.parametrize(("command", "window", "stop"), selected(*KEYS))
def test_stopped_at_a_window(
    world: FaultWorld, command: Command, window: Window, stop: str
) -> None:
    run_case(world, command, window, stop)
