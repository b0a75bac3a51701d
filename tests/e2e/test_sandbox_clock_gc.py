"""`peagle gc` judges ages on AWS's clock: with the SIMULATED sandbox's clock moved two days
ahead, `gc --min-age 1d --dry-run` lists the resources it skipped as young before (issue
36's acceptance; the real engine's twin is in tests/conformance/test_sandbox_engine_e2e.py).
Both the ages and the Date header come from the sandbox clock: no sleeping, no waiting."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.clock_gc import check_gc_sees_them_age
from tests.e2e.test_sandbox import Sandbox, running_sandbox

pytestmark = pytest.mark.e2e


@pytest.fixture
def sandbox(tmp_path: Path) -> Iterator[Sandbox]:
    yield from running_sandbox(tmp_path)  # stopped after, even when the test fails


def test_gc_min_age_sees_resources_two_sandbox_days_old(sandbox: Sandbox) -> None:
    check_gc_sees_them_age(sandbox.cli, sandbox.client("sagemaker"), sandbox.state["role_arn"])
