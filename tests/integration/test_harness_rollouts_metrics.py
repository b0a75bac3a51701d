"""SageMaker's own invocation metrics in the moto harness (`record_invocation`) and the
alarms a rollout sets on them: ModelLatency p90 and Invocation5XXErrors on the new fleet's
EndpointConfigName dimension (AWS's deployment-guardrails configuration guide).

Expected values come from the rules: CloudWatch "treats each unique combination of
dimensions as a separate metric"; p90 is the nearest-rank percentile (the harness's stated
assumption: of 10 values, the 9th smallest); an alarm with EvaluationPeriods 1 is ALARM
when that period's statistic crosses the threshold. In process, frozen clock, no sleeps.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import boto3
import pytest

from peagle_sandbox.sandbox_clock import SandboxClock
from peagle_sandbox.testing.moto_sagemaker import SageMakerHarness

REGION = "us-east-1"
T0 = 1_800_000_000  # a minute boundary
FAST, SLOW = 100_000, 900_000  # µs: 100 ms and 900 ms
BOTH = [{"Name": "EndpointName", "Value": "ep"}, {"Name": "VariantName", "Value": "AllTraffic"}]
NEW = [*BOTH, {"Name": "EndpointConfigName", "Value": "new"}]


@pytest.fixture
def harness(sagemaker_harness: SageMakerHarness) -> SageMakerHarness:
    sagemaker_harness.clock = SandboxClock(frozen=True, start=T0)
    return sagemaker_harness


def _cw() -> Any:
    return boto3.client("cloudwatch", region_name=REGION)


def _invoke(
    harness: SageMakerHarness, config: str, latencies: list[int], minute: int, code: int = 200
) -> None:
    for i, latency in enumerate(latencies):
        harness.record_invocation(
            REGION, "ep", "AllTraffic", config, latency_us=latency, status_code=code,
            at=T0 + minute * 60 + i,
        )  # fmt: skip


def _state(name: str) -> str:
    (alarm,) = _cw().describe_alarms(AlarmNames=[name])["MetricAlarms"]
    return str(alarm["StateValue"])


def _latency_alarm(name: str, dims: list[dict[str, str]]) -> None:
    # The rollout's latency alarm (planning/rollout.py's shape): p90 ModelLatency in µs.
    _cw().put_metric_alarm(
        AlarmName=name, Namespace="AWS/SageMaker", MetricName="ModelLatency",
        Dimensions=dims, ExtendedStatistic="p90", Period=60, EvaluationPeriods=1,
        Threshold=500_000.0, ComparisonOperator="GreaterThanThreshold",
        TreatMissingData="notBreaching",
    )  # fmt: skip


def test_a_p90_latency_alarm_on_the_new_config_sees_only_the_new_fleet(
    harness: SageMakerHarness,
) -> None:
    _latency_alarm("new-latency", NEW)
    _latency_alarm("endpoint-latency", BOTH)
    # minute 0: the new fleet 9 fast + 1 slow (p90 = 9th of 10 = fast); the old all slow
    _invoke(harness, "new", [FAST] * 9 + [SLOW], 0)
    _invoke(harness, "old", [SLOW] * 10, 0)
    harness.clock.advance(60)
    assert _state("new-latency") == "OK"
    # the endpoint-wide metric holds all 20: 11 slow, so its 18th smallest is slow
    assert _state("endpoint-latency") == "ALARM"
    # minute 1: the new fleet 8 fast + 2 slow: the 9th of 10 is slow
    _invoke(harness, "new", [FAST] * 8 + [SLOW] * 2, 1)
    harness.clock.advance(60)
    assert _state("new-latency") == "ALARM"


def test_a_5xx_alarm_on_the_new_config_ignores_the_old_fleets_errors(
    harness: SageMakerHarness,
) -> None:
    _cw().put_metric_alarm(
        AlarmName="new-errors", Namespace="AWS/SageMaker", MetricName="Invocation5XXErrors",
        Dimensions=NEW, Statistic="Average", Period=60, EvaluationPeriods=1, Threshold=0.05,
        ComparisonOperator="GreaterThanThreshold", TreatMissingData="notBreaching",
    )  # fmt: skip
    _invoke(harness, "old", [FAST] * 10, 0, code=500)  # the old fleet fails: not watched
    _invoke(harness, "new", [FAST] * 19, 0)
    _invoke(harness, "new", [FAST], 0, code=404)  # a 4xx is not a 5xx
    harness.clock.advance(60)
    assert _state("new-errors") == "OK"
    _invoke(harness, "new", [FAST] * 18, 1)
    _invoke(harness, "new", [FAST] * 2, 1, code=503)  # 2 of 20 = 0.1 > 0.05
    harness.clock.advance(60)
    assert _state("new-errors") == "ALARM"


def _stats(metric: str, dims: list[dict[str, str]], **kwargs: Any) -> list[dict[str, Any]]:
    return list(
        _cw().get_metric_statistics(
            Namespace="AWS/SageMaker", MetricName=metric, Dimensions=dims,
            StartTime=datetime.fromtimestamp(T0, tz=UTC),
            EndTime=datetime.fromtimestamp(T0 + 120, tz=UTC), Period=60, **kwargs,
        )["Datapoints"]
    )  # fmt: skip


def test_get_metric_statistics_counts_each_invocation_once_per_dimension_set(
    harness: SageMakerHarness,
) -> None:
    _invoke(harness, "new", [FAST] * 3, 0)
    _invoke(harness, "old", [SLOW] * 7, 0)
    harness.clock.advance(120)
    (whole,) = _stats("Invocations", BOTH, Statistics=["Sum"])
    assert (whole["Sum"], whole["Unit"]) == (10.0, "None")
    (new,) = _stats("Invocations", NEW, Statistics=["Sum"])
    assert new["Sum"] == 3.0
    (p90,) = _stats("ModelLatency", BOTH, ExtendedStatistics=["p90"])
    assert p90["ExtendedStatistics"] == {"p90": float(SLOW)}
    assert p90["Unit"] == "Microseconds"
    (errors,) = _stats("Invocation5XXErrors", BOTH, Statistics=["Sum", "SampleCount"])
    assert (errors["Sum"], errors["SampleCount"]) == (0.0, 10.0)


def test_a_component_invocation_carries_the_component_dimension(
    harness: SageMakerHarness,
) -> None:
    harness.record_invocation(
        REGION, "ep", "AllTraffic", "c", latency_us=FAST, status_code=200, component="ic"
    )
    harness.clock.advance(60)
    (point,) = _stats(
        "Invocations", [{"Name": "InferenceComponentName", "Value": "ic"}], Statistics=["Sum"]
    )
    assert point["Sum"] == 1.0
    assert _stats("Invocations", BOTH, Statistics=["Sum"]) == []
