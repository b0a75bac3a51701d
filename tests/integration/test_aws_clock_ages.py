"""peagle judges AWS's resources on AWS's clock (issue 36, item 4): ages, gc's `--min-age`,
operation deadlines and log windows come from the resources' timestamps and the `Date`
header of AWS's answers, never from this machine's clock.

The moto harness's clock (`sagemaker_harness.clock`, a `SandboxClock`) stamps every
CreationTime, log event and `Date` header; these tests freeze it or set it days ahead of
the wall clock and advance it, as a sandbox clock running fast does. On the old code (the
local clock) each of them fails: the resources stay young, the deadline is days behind
AWS's now, and the log window reaches back days.
"""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta
from typing import Any

import boto3
import pytest

import sm_peagle
from peagle_sandbox.sandbox_clock import SandboxClock
from tests.integration.lifecycle_env import REGION, World, run

DAY = 86400.0
NAME = "peagle-gpt-oss-20b-p-eagle"
MANAGED = [{"Key": "peagle:managed", "Value": "true"}]
OTHER_HOST = "ci-runner-7:4242"  # an operation run elsewhere: only its deadline ends it


def sm() -> Any:
    return boto3.client("sagemaker", region_name=REGION)


def leftovers(role: str, tags: list[dict[str, str]]) -> list[str]:
    """An unused peagle model and endpoint config carrying `tags` (what a peagle from
    before operations, or an operation, left behind): gc's candidates."""
    c = sm()
    c.create_model(
        ModelName="old-m",
        ExecutionRoleArn=role,
        PrimaryContainer={"Image": "x.dkr/img:1"},
        Tags=MANAGED + tags,
    )
    c.create_endpoint_config(
        EndpointConfigName="old-c",
        ProductionVariants=[
            {
                "VariantName": "AllTraffic",
                "ModelName": "old-m",
                "InstanceType": "ml.g7e.2xlarge",
                "InitialInstanceCount": 1,
            }
        ],
        Tags=MANAGED + tags,
    )
    return ["old-c", "old-m"]


def gc_dry_run(capsys: pytest.CaptureFixture, *args: str) -> dict[str, Any]:
    code, out, err = run(capsys, "gc", "--dry-run", "--json", *args)
    assert code == 0, err
    return json.loads(out)


def garbage(doc: dict[str, Any]) -> list[str]:
    return sorted(doc["endpoint_configs"] + doc["models"])


def test_gc_min_age_counts_on_aws_s_clock(
    world: World, sagemaker_harness: Any, capsys: pytest.CaptureFixture
) -> None:
    """Untagged leftovers (no operation tag) are judged by age: younger than --min-age
    on AWS's clock they are skipped; two AWS days later they are garbage, however little
    time passed here."""
    clock = sagemaker_harness.clock = SandboxClock(frozen=True)
    names = leftovers(world.role_arn, [])

    doc = gc_dry_run(capsys, "--min-age", "1d")
    assert (garbage(doc), sorted(doc["skipped_young"])) == ([], names)
    result = sm_peagle.Client(region=REGION).gc(dry_run=True, min_age="1d")
    assert (result.endpoint_configs, result.models, sorted(result.skipped_young)) == (
        [],
        [],
        names,
    )

    clock.advance(2 * DAY)
    doc = gc_dry_run(capsys, "--min-age", "1d")
    assert (garbage(doc), doc["skipped_young"]) == (names, [])
    result = sm_peagle.Client(region=REGION).gc(dry_run=True, min_age="1d")
    assert (result.endpoint_configs, result.models, result.skipped_young) == (
        ["old-c"],
        ["old-m"],
        [],
    )
    assert set(names) <= {m["ModelName"] for m in sm().list_models()["Models"]} | {
        c["EndpointConfigName"] for c in sm().list_endpoint_configs()["EndpointConfigs"]
    }  # a dry run deletes nothing


def _operation_tags(op: str, until: datetime) -> list[dict[str, str]]:
    return [
        {"Key": "peagle:operation", "Value": op},
        {"Key": "peagle:operation-owner", "Value": OTHER_HOST},
        {"Key": "peagle:operation-until", "Value": until.strftime("%Y-%m-%dT%H:%M:%SZ")},
    ]


def test_another_host_s_operation_is_over_when_its_deadline_passed_on_aws_s_clock(
    world: World, sagemaker_harness: Any, capsys: pytest.CaptureFixture
) -> None:
    """Deadline an hour ahead of AWS's now: running, left alone. AWS's clock two hours on
    (this machine's has not moved): over, and what it left is garbage."""
    clock = sagemaker_harness.clock = SandboxClock(frozen=True)
    op = "op-20261129T180000Z-0a1b2c"
    names = leftovers(world.role_arn, _operation_tags(op, clock.datetime() + timedelta(hours=1)))

    doc = gc_dry_run(capsys, "--min-age", "0")
    assert (garbage(doc), {k: sorted(v) for k, v in doc["running"].items()}) == ([], {op: names})

    clock.advance(2 * 3600)
    doc = gc_dry_run(capsys, "--min-age", "0")
    assert (garbage(doc), doc["running"]) == (names, {})


def test_a_deploy_stamps_its_deadline_on_aws_s_clock(
    world: World,
    sagemaker_harness: Any,
    capsys: pytest.CaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With AWS's clock three days ahead of this machine's, a deploy's deadline is after
    the endpoint's CreationTime (both AWS time), so a gc running meanwhile elsewhere sees
    the deploy as running and leaves it; stamped on the local clock it would be three days
    in AWS's past, and that gc would take a deploy in progress."""
    from tests.integration.test_operations import die, inject

    sagemaker_harness.clock = SandboxClock(start=time.time() + 3 * DAY)
    inject(monkeypatch, "after-call.sagemaker.CreateEndpoint", die)  # the deploy stops there
    with pytest.raises(SystemExit):
        run(capsys, "deploy", "gpt-oss-20b", "--yes")
    capsys.readouterr()
    c = sm()
    ep = c.describe_endpoint(EndpointName=NAME)
    tags = {t["Key"]: t["Value"] for t in c.list_tags(ResourceArn=ep["EndpointArn"])["Tags"]}
    until = datetime.fromisoformat(tags["peagle:operation-until"].replace("Z", "+00:00"))
    # The deadline is start + the wait limit + a rollback's worst case: hours, not days,
    # after the endpoint was created.
    assert ep["CreationTime"] < until < ep["CreationTime"] + timedelta(days=1)

    # The same deploy as if its process ran on another machine: gc there must wait for it.
    op = tags["peagle:operation"]
    c.add_tags(
        ResourceArn=ep["EndpointArn"],
        Tags=[{"Key": "peagle:operation-owner", "Value": OTHER_HOST}],
    )
    doc = gc_dry_run(capsys, "--min-age", "0")
    assert (doc["endpoints"], doc["running"]) == ({}, {op: [NAME]})


def test_status_age_is_aws_s_date_minus_creation_time(
    world: World, sagemaker_harness: Any, capsys: pytest.CaptureFixture
) -> None:
    clock = sagemaker_harness.clock = SandboxClock(frozen=True)
    code, _, err = run(capsys, "deploy", "gpt-oss-20b", "--yes")
    assert code == 0, err
    code, out, err = run(capsys, "status", NAME, "--json")
    assert code == 0, err
    young = json.loads(out)["age_seconds"]
    # Created "now" on a frozen clock, give or take the deploy's waits: a wait on the
    # sandbox clock moves it by its poll interval, and a busy machine polls once more.
    # What matters is below: the age follows AWS's Date exactly.
    assert 0 <= young <= 30

    clock.advance(DAY + 3600)
    code, out, err = run(capsys, "status", NAME, "--json")
    assert code == 0, err
    # Within the Date header's one-second resolution.
    assert abs(json.loads(out)["age_seconds"] - (young + DAY + 3600)) <= 1
    age = sm_peagle.Client(region=REGION).status(NAME).age_seconds
    assert age is not None and abs(age - (young + DAY + 3600)) <= 1


def test_logs_since_is_a_window_on_aws_s_clock(
    world: World, sagemaker_harness: Any, capsys: pytest.CaptureFixture
) -> None:
    """AWS's clock two days ahead: `--since 10m` is the last ten AWS minutes, so it shows
    the line written now and not the one written an hour ago (on the local clock both are
    in the future, and both would show)."""
    clock = sagemaker_harness.clock = SandboxClock(start=time.time() + 2 * DAY, frozen=True)
    code, _, err = run(capsys, "deploy", "gpt-oss-20b", "--yes")
    assert code == 0, err
    hour_ago_ms = int((clock.now() - 3600) * 1000)
    sagemaker_harness.seed_logs(NAME, ["an hour ago"], start_ms=hour_ago_ms)
    sagemaker_harness.seed_logs(NAME, ["just now"])

    code, out, err = run(capsys, "logs", NAME, "--since", "10m", "--json")
    assert code == 0, err
    assert [e["message"] for e in json.loads(out)] == ["just now"]
    code, out, err = run(capsys, "logs", NAME, "--since", "2h", "--json")
    assert code == 0, err
    assert [e["message"] for e in json.loads(out)] == ["an hour ago", "just now"]


SPEC_LINE = (
    "(APIServer pid=1) INFO 11-26 10:03:08 [metrics.py:96] SpecDecoding metrics: Mean "
    "acceptance length: 3.41, Accepted: 120 tokens, Drafted: 249 tokens, Avg Draft "
    "acceptance rate: 48.2%"
)


def test_bench_acceptance_reads_the_log_lines_of_its_window_on_aws_s_clock(
    world: World, sagemaker_harness: Any
) -> None:
    """A level measured here for the last five (real) seconds; vLLM's line about it is
    stamped on AWS's clock, two days ahead. The windowed acceptance finds it; read on the
    local clock, the window would end two days before the line."""
    from sm_peagle.aws import AwsContext
    from sm_peagle.benchmarking.acceptance import acceptance_for_levels

    sagemaker_harness.clock = SandboxClock(start=time.time() + 2 * DAY, frozen=True)
    sagemaker_harness.seed_logs(NAME, [SPEC_LINE])
    aws = AwsContext(REGION)
    aws.client("sagemaker").list_endpoints()  # the run's earlier calls: AWS's Date seen
    now = time.time()
    (acc,) = acceptance_for_levels(aws, NAME, [(now - 5.0, now)], mode="p-eagle", k=3, wait_s=0)
    assert acc["status"] == "measured", acc
    assert acc["lines"] == 1
