"""Expiry on the SIMULATED sandbox (issue 39's acceptance): `deploy --ttl 15m`, then only the
sandbox server runs: every `peagle` CLI call below is a subprocess that has exited, and
the clock is moved through the server's own HTTP route (POST /_peagle/clock), not by a
peagle process. The server runs the due EventBridge Scheduler schedule itself (the
harness's moto_scheduler: the role must trust scheduler.amazonaws.com and allow the
delete); the endpoint is gone after the time; `gc` then leaves nothing. A role that cannot
delete makes the schedule fail visibly, and `status` says so. No sleeps: the clock moves."""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.e2e.test_sandbox import NAME, Sandbox, running_sandbox
from tests.plan_helpers import TWO_COMPONENTS

pytestmark = pytest.mark.e2e

ACCOUNT = "123456789012"  # the sandbox's (moto's) account
# AWS's documented trust for a Scheduler execution role (setting-up page), with the
# confused-deputy conditions; and a permission to delete SageMaker endpoints.
SCHEDULER_TRUST = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Effect": "Allow",
            "Principal": {"Service": "scheduler.amazonaws.com"},
            "Action": "sts:AssumeRole",
            "Condition": {"StringEquals": {"aws:SourceAccount": ACCOUNT}},
        }
    ],
}
DELETE_ENDPOINTS = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Effect": "Allow",
            "Action": ["sagemaker:DeleteEndpoint", "sagemaker:DeleteInferenceComponent"],
            "Resource": "*",
        }
    ],
}
SAGEMAKER_TRUST = {  # trusts SageMaker, not Scheduler: a schedule cannot run as it
    "Version": "2012-10-17",
    "Statement": [
        {
            "Effect": "Allow",
            "Principal": {"Service": "sagemaker.amazonaws.com"},
            "Action": "sts:AssumeRole",
        }
    ],
}


@pytest.fixture
def sandbox(tmp_path: Path) -> Iterator[Sandbox]:
    yield from running_sandbox(tmp_path)


def advance(sb: Sandbox, seconds: int) -> None:
    """Move the sandbox clock through the server (due schedules run before it answers)."""
    req = urllib.request.Request(
        f"{sb.url}/_peagle/clock",
        data=json.dumps({"advance": seconds}).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(req, timeout=30) as r:
        assert r.status == 200


def runs(sb: Sandbox) -> list[dict[str, Any]]:
    with urllib.request.urlopen(f"{sb.url}/_peagle/schedules", timeout=30) as r:
        return list(json.loads(r.read())["runs"])


def gone(sb: Sandbox, name: str) -> bool:
    """DescribeEndpoint says there is no such endpoint (a Deleting one is waited out: the
    simulated deletion takes a moment of real time)."""
    sm = sb.client("sagemaker")
    for _ in range(40):
        try:
            sm.describe_endpoint(EndpointName=name)
        except ClientError as e:
            if "Could not find" in str(e):
                return True
            raise
        time.sleep(0.25)
    return False


def role(sb: Sandbox, name: str, trust: dict, policy: dict | None) -> str:
    iam = sb.client("iam")
    arn = iam.create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]
    if policy is not None:
        iam.put_role_policy(RoleName=name, PolicyName="p", PolicyDocument=json.dumps(policy))
    return str(arn)


def nothing_left(sb: Sandbox) -> None:
    sm = sb.client("sagemaker")
    assert sm.list_endpoints()["Endpoints"] == []
    assert sm.list_endpoint_configs()["EndpointConfigs"] == []
    assert sm.list_models()["Models"] == []
    sch = sb.client("scheduler")
    for g in sch.list_schedule_groups()["ScheduleGroups"]:
        assert sch.list_schedules(GroupName=g["Name"])["Schedules"] == [], g["Name"]


def test_ttl_15m_the_server_deletes_it_then_gc_leaves_nothing(sandbox: Sandbox) -> None:
    sb = sandbox
    out = sb.cli("--sandbox", "deploy", "gpt-oss-20b", "--ttl", "15m", "--yes", "--json")
    assert json.loads(out.stdout)["status"] == "InService"
    (row,) = json.loads(sb.cli("--sandbox", "ls", "--json").stdout)
    assert row["expiry"] == "scheduled"
    # 15 min from the deploy's start, rounded up to the minute; the deploy took some
    # sandbox time (a 10x clock)
    assert 10 * 60 < row["expires_in_s"] <= 16 * 60, row
    listing = sb.cli("--sandbox", "ls").stdout
    assert f"{row['expires_in_s'] // 60}m" in listing or f"{row['expires_in_s'] // 60 + 1}m" in (
        listing
    )

    advance(sb, row["expires_in_s"] + 60)  # past the expiry; only the server runs now
    assert gone(sb, NAME)
    (attempt,) = [r for r in runs(sb) if r["schedule"] == f"peagle/{NAME}"]
    assert attempt["outcome"] == "succeeded" and attempt.get("deleted") is True

    doc = json.loads(sb.cli("--sandbox", "gc", "--yes", "--json").stdout)
    assert "role peagle-ttl-deleter" in doc["expiry"]
    nothing_left(sb)
    assert "peagle-ttl-deleter" not in {
        r["RoleName"] for r in sb.client("iam").list_roles()["Roles"]
    }


def test_a_role_that_cannot_delete_fails_visibly_and_status_says_so(sandbox: Sandbox) -> None:
    sb = sandbox
    bad = role(sb, "not-for-scheduler", SAGEMAKER_TRUST, DELETE_ENDPOINTS)
    out = sb.cli("--sandbox", "deploy", "gpt-oss-20b", "--ttl", "15m", "--ttl-role", bad, "--yes")
    assert "does not trust scheduler.amazonaws.com" in out.stderr  # warned, not refused
    status = json.loads(sb.cli("--sandbox", "status", NAME, "--json").stdout)
    assert status["expiry_role"] == bad
    advance(sb, status["expires_in_s"] + 3 * 60)
    assert not gone(sb, NAME) or pytest.fail("a role Scheduler cannot assume deleted it")
    failed = [r for r in runs(sb) if r["schedule"] == f"peagle/{NAME}"]
    assert failed and all(r["outcome"] == "failed" for r in failed)
    status = json.loads(sb.cli("--sandbox", "status", NAME, "--json").stdout)
    assert status["expiry"] == "overdue"
    assert failed[-1]["error"] in status["expiry_problem"]
    text = sb.cli("--sandbox", "status", NAME)
    assert f"delete {NAME}`" in text.stdout + text.stderr  # the remedy, as a command
    sb.cli("--sandbox", "delete", NAME, "--yes")
    sb.cli("--sandbox", "gc", "--yes")
    nothing_left(sb)
    assert "not-for-scheduler" in {r["RoleName"] for r in sb.client("iam").list_roles()["Roles"]}


def test_a_role_without_delete_endpoint_fails_visibly(sandbox: Sandbox) -> None:
    sb = sandbox
    bad = role(sb, "trusts-but-cannot-delete", SCHEDULER_TRUST, None)
    sb.cli("--sandbox", "deploy", "gpt-oss-20b", "--ttl", "15m", "--ttl-role", bad, "--yes")
    left = json.loads(sb.cli("--sandbox", "status", NAME, "--json").stdout)["expires_in_s"]
    advance(sb, left + 3 * 60)
    failed = [r for r in runs(sb) if r["schedule"] == f"peagle/{NAME}"]
    assert failed and failed[-1]["outcome"] == "failed"
    status = json.loads(sb.cli("--sandbox", "status", NAME, "--json").stdout)
    assert status["expiry"] == "overdue" and failed[-1]["error"] in status["expiry_problem"]


def test_ttl_role_that_can_delete_expires_the_endpoint(sandbox: Sandbox) -> None:
    sb = sandbox
    good = role(sb, "my-deleter", SCHEDULER_TRUST, DELETE_ENDPOINTS)
    sb.cli("--sandbox", "deploy", "gpt-oss-20b", "--ttl", "15m", "--ttl-role", good, "--yes")
    left = json.loads(sb.cli("--sandbox", "status", NAME, "--json").stdout)["expires_in_s"]
    advance(sb, left + 60)
    assert gone(sb, NAME)
    sb.cli("--sandbox", "gc", "--yes")
    nothing_left(sb)
    assert "my-deleter" in {r["RoleName"] for r in sb.client("iam").list_roles()["Roles"]}


def test_a_component_endpoint_expires_components_first(sandbox: Sandbox) -> None:
    sb = sandbox
    out = sb.cli("--sandbox", "deploy", *TWO_COMPONENTS, "--ttl", "15m", "--yes", "--json")
    assert json.loads(out.stdout)["status"] == "InService"
    left = json.loads(sb.cli("--sandbox", "status", NAME, "--json").stdout)["expires_in_s"]
    advance(sb, left + 60)
    assert gone(sb, NAME)
    done = {r["schedule"]: r for r in runs(sb) if r["outcome"] == "succeeded"}
    assert f"peagle/{NAME}" in done
    components = [k for k in done if k.startswith("peagle-components/")]
    assert len(components) == 2
    sb.cli("--sandbox", "gc", "--yes")
    nothing_left(sb)
