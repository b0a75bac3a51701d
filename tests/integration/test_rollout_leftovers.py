"""What a rollout interrupted twice leaves (its rollback alarm) is removed by `delete` of the
endpoint and, once the endpoint is gone, by `gc`: by the alarm's name
(`<endpoint>-rollout-<signal>`) and its tags (peagle:managed, peagle:deployment, and
peagle:rollout), never an alarm without them."""

from __future__ import annotations

from typing import Any

import boto3

from tests.integration.lifecycle_env import run
from tests.integration.test_rollout import ERRORS, NAME, alarms_left, interrupt_twice, rw

__all__ = ["rw"]  # the fixture, used by name


def foreign_alarm(name: str) -> None:
    """An alarm named like a rollout's that peagle did not make (no tags)."""
    boto3.client("cloudwatch").put_metric_alarm(
        AlarmName=name, Namespace="AWS/SageMaker", MetricName="ModelLatency",
        Dimensions=[{"Name": "EndpointName", "Value": NAME}], Statistic="Average", Period=60,
        EvaluationPeriods=1, Threshold=1.0, ComparisonOperator="GreaterThanThreshold",
    )  # fmt: skip


def test_delete_removes_the_rollout_alarm_an_interrupted_update_left(
    rw: Any, capsys: Any, sagemaker_harness: Any, monkeypatch: Any
) -> None:
    interrupt_twice(rw, capsys, sagemaker_harness, monkeypatch)
    foreign_alarm(f"{NAME}-rollout-latency")
    code, out, err = run(capsys, "delete", NAME, "--dry-run", "--json")
    assert code == 0, err
    assert f"rollout alarm {ERRORS}" in out and f"{NAME}-rollout-latency" not in out
    code, _, err = run(capsys, "delete", NAME, "--yes")
    assert code == 0, err
    assert f"rollout alarm {ERRORS}" in err
    assert alarms_left() == [f"{NAME}-rollout-latency"]  # not peagle's: kept


def test_gc_removes_the_rollout_alarm_of_an_endpoint_that_is_gone(
    rw: Any, capsys: Any, sagemaker_harness: Any, monkeypatch: Any
) -> None:
    interrupt_twice(rw, capsys, sagemaker_harness, monkeypatch)
    foreign_alarm(f"{NAME}-rollout-latency")
    boto3.client("sagemaker").delete_endpoint(EndpointName=NAME)  # by hand, not by peagle
    sagemaker_harness.clock.advance(3600)  # older than gc's --min-age
    code, out, err = run(capsys, "gc", "--dry-run")
    assert code == 0, err
    assert f"rollout alarm {ERRORS}" in out + err
    code, _, err = run(capsys, "gc", "--yes")
    assert code == 0, err
    assert alarms_left() == [f"{NAME}-rollout-latency"]


def test_an_update_rollback_failed_endpoint_keeps_both_sets(
    rw: Any, capsys: Any, sagemaker_harness: Any
) -> None:
    """UpdateRollbackFailed: "Both the rolling deployment and auto-rollback failed. Your
    endpoint is in service with a mix of the old and new endpoint configurations" (botocore
    1.44.8's EndpointStatus doc). The new config and model are in use, so the failed
    update removes neither (nor the old ones), and says so; exit 1."""
    from tests.integration.test_rollout import deploy, inventory

    old = deploy(rw, capsys)
    before = inventory()
    sagemaker_harness.schedule_update(
        NAME, ("Updating", "UpdateRollbackFailed"), failure_reason="rollback failed (test)"
    )
    code, _, err = run(capsys, "update", NAME, "-k", "5", "--yes")
    assert code == 1, err
    assert "UpdateRollbackFailed" in err.strip().splitlines()[-1]
    assert "a mix of the old and new fleets serves" in err
    configs, models = inventory()
    assert old in configs and len(configs) == 2 and len(models) == len(before[1]) + 1


def test_a_rollout_right_after_a_rolled_back_one_is_not_judged_by_its_alarms_history(
    rw: Any, capsys: Any, sagemaker_harness: Any
) -> None:
    """Each rollout puts its `<endpoint>-rollout-*` alarms afresh. The last one's errors
    alarm went to ALARM; its history stays under the name (as AWS keeps a deleted alarm's),
    but a new alarm starts INSUFFICIENT_DATA: the next canary, started at once (no alarm
    period has passed), bakes and completes."""
    from tests.integration.test_rollout import deploy, traffic, trip_in_canary_bake

    old = deploy(rw, capsys)
    trip_in_canary_bake(sagemaker_harness, ERRORS)
    code, _, _ = run(capsys, "update", NAME, "-k", "5", "--rollout", "canary", "--bake", "5m",
                     "--yes")  # fmt: skip
    assert code == 1  # rolled back by the tripped alarm
    sagemaker_harness.clock.on_advance(lambda: None)  # (the trip fired once; it stays idle)
    traffic(sagemaker_harness)
    code, _, err = run(capsys, "update", NAME, "-k", "5", "--rollout", "canary", "--bake", "5m",
                       "--yes")  # fmt: skip
    assert code == 0, err
    desc = boto3.client("sagemaker").describe_endpoint(EndpointName=NAME)
    assert desc["EndpointConfigName"] != old
