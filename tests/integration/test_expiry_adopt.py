"""`adopt NAME --ttl`: an endpoint made elsewhere gets an expiry with the schedule and its
tag only (no Create* of SageMaker resources); a short TTL is exit 2 before anything is
tagged. Expected requests from the design (issue 39, decision on adopt)."""

from __future__ import annotations

from typing import Any

import pytest

from peagle_sandbox.sandbox_clock import SandboxClock
from tests.integration.lifecycle_env import World, record_requests, run
from tests.integration.test_adopt import NAME, all_tags, create_jumpstart_endpoint
from tests.integration.test_expiry import START, schedules


@pytest.fixture
def ttl(world: World, sagemaker_harness: Any, monkeypatch: pytest.MonkeyPatch) -> World:
    sagemaker_harness.clock = SandboxClock(start=START, frozen=True)
    record_requests(world, monkeypatch, "scheduler", "iam")
    return world


def sagemaker_writes(world: World) -> list[str]:
    return [
        op
        for op, _ in world.requests
        if op.startswith(("Create", "Update", "Delete"))
        and "Schedule" not in op
        and op not in ("CreateRole",)
    ]


def test_adopt_ttl_adds_the_schedule_and_tag_only(ttl, capsys):
    create_jumpstart_endpoint(ttl.role_arn)
    ttl.requests.clear()
    code, _, err = run(capsys, "adopt", NAME, "--ttl", "4h", "--yes")
    assert code == 0, err
    assert sagemaker_writes(ttl) == []  # no CreateModel/Config/Endpoint: tags and schedule
    assert [op for op, _ in ttl.requests if op == "CreateSchedule"] == ["CreateSchedule"]
    assert all_tags()[NAME]["peagle:expires"] == "2026-11-30T05:01:00Z"
    assert schedules() == {"peagle": [NAME]}


def test_adopt_with_a_short_ttl_is_exit_2_and_tags_nothing(ttl, capsys):
    create_jumpstart_endpoint(ttl.role_arn)
    before = all_tags()
    ttl.requests.clear()
    code, _, err = run(capsys, "adopt", NAME, "--ttl", "5m", "--yes")
    assert code == 2 and "Traceback" not in err and "error: " in err
    assert all_tags() == before
    assert not [op for op, _ in ttl.requests if op.startswith(("Add", "Create", "Put"))]
