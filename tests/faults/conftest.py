"""One sandbox and one lag proxy per test file (the suite runs with --dist loadfile, so a
file is one worker's); each case resets the account rather than restarting them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.faults.world import FaultWorld, fault_world


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FaultWorld]:
    with fault_world(tmp_path_factory.mktemp("faults")) as w:
        yield w
