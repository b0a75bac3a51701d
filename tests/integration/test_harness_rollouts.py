"""The moto harness runs SageMaker's deployment guardrails: UpdateEndpoint with a
DeploymentConfig moves through its steps on the sandbox clock and rolls back on a named
alarm. In process (`mock_aws`), on a frozen clock the tests advance; nothing sleeps.

The expected schedules are design38's decision 1 written out from AWS's rules, never read
from the harness: provisioning (`provisioning_seconds`, P = 300 here), then per step the
new fleet's share (canary: CanarySize / N; linear: LinearStepSize, 2x, ... below the
whole fleet; rolling: a batch more each step) baking WaitIntervalInSeconds, then
blue/green's final bake (TerminationWaitInSeconds) at 100%, then the commit. A rollback
is decision 2: a named alarm in ALARM during a bake (AWS: "If any of the alarms trip
during the baking period, then SageMaker initiates a rollback and all traffic returns to
the blue fleet").
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from peagle_sandbox.sandbox_clock import SandboxClock
from peagle_sandbox.testing.moto_sagemaker import SageMakerHarness

REGION = "us-east-1"
ROLE = "arn:aws:iam::123456789012:role/peagle-test"
IMAGE = "763104351884.dkr.ecr.us-east-1.amazonaws.com/vllm:latest"
T0 = 1_800_000_000  # 2027-01-15 08:00:00 UTC, a minute boundary
P = 300  # provisioning seconds
ALARM = "ep-rollout-speculation"


@pytest.fixture
def harness(sagemaker_harness: SageMakerHarness) -> SageMakerHarness:
    sagemaker_harness.clock = SandboxClock(frozen=True, start=T0)
    sagemaker_harness.provisioning_seconds = P
    return sagemaker_harness


@pytest.fixture
def outcomes(harness: SageMakerHarness) -> list[tuple[str, ...]]:
    seen: list[tuple[str, ...]] = []
    harness.rollout_listeners.append(lambda *args: seen.append(args))
    return seen


def _sm() -> Any:
    return boto3.client("sagemaker", region_name=REGION)


def _cw() -> Any:
    return boto3.client("cloudwatch", region_name=REGION)


def _config(sm: Any, name: str, n: int) -> None:
    sm.create_model(ModelName=name, ExecutionRoleArn=ROLE, PrimaryContainer={"Image": IMAGE})
    sm.create_endpoint_config(
        EndpointConfigName=name,
        ProductionVariants=[
            {
                "VariantName": "AllTraffic",
                "ModelName": name,
                "InstanceType": "ml.g6e.2xlarge",
                "InitialInstanceCount": n,
            }
        ],
    )


def _endpoint(n: int) -> Any:
    """`ep` serving `old` (n instances), and `new` ready to update to."""
    sm = _sm()
    _config(sm, "old", n)
    _config(sm, "new", n)
    sm.create_endpoint(EndpointName="ep", EndpointConfigName="old")
    return sm


def _alarm(name: str = ALARM, **overrides: Any) -> None:
    """An alarm on a test metric; `ignore` keeps a state SetAlarmState gave it."""
    request = {
        "AlarmName": name,
        "Namespace": "Test",
        "MetricName": "Signal",
        "Statistic": "Maximum",
        "Period": 60,
        "EvaluationPeriods": 1,
        "Threshold": 1.0,
        "ComparisonOperator": "GreaterThanThreshold",
        "TreatMissingData": "ignore",
        **overrides,
    }
    _cw().put_metric_alarm(**request)


def _trip(name: str = ALARM) -> None:
    _cw().set_alarm_state(AlarmName=name, StateValue="ALARM", StateReason="test trips it")


def _at(harness: SageMakerHarness, t: float) -> None:
    """Move the clock to T0 + t."""
    harness.clock.advance(T0 + t - harness.clock.now())


def _canary(wait: int = 600, final: int = 600, timeout: int = 3600) -> dict[str, Any]:
    return {
        "BlueGreenUpdatePolicy": {
            "TrafficRoutingConfiguration": {
                "Type": "CANARY",
                "WaitIntervalInSeconds": wait,
                "CanarySize": {"Type": "INSTANCE_COUNT", "Value": 1},
            },
            "TerminationWaitInSeconds": final,
            "MaximumExecutionTimeoutInSeconds": timeout,
        },
        "AutoRollbackConfiguration": {"Alarms": [{"AlarmName": ALARM}]},
    }


LINEAR = {
    "BlueGreenUpdatePolicy": {
        "TrafficRoutingConfiguration": {
            "Type": "LINEAR",
            "WaitIntervalInSeconds": 600,
            "LinearStepSize": {"Type": "CAPACITY_PERCENT", "Value": 25},
        },
        "TerminationWaitInSeconds": 300,
        "MaximumExecutionTimeoutInSeconds": 3600,
    },
    "AutoRollbackConfiguration": {"Alarms": [{"AlarmName": ALARM}]},
}
ROLLING = {
    "RollingUpdatePolicy": {
        "MaximumBatchSize": {"Type": "INSTANCE_COUNT", "Value": 2},
        "WaitIntervalInSeconds": 600,
        "MaximumExecutionTimeoutInSeconds": 3600,
    },
    "AutoRollbackConfiguration": {"Alarms": [{"AlarmName": ALARM}]},
}
ALL_AT_ONCE = {
    "BlueGreenUpdatePolicy": {
        "TrafficRoutingConfiguration": {"Type": "ALL_AT_ONCE", "WaitIntervalInSeconds": 0},
        "TerminationWaitInSeconds": 600,
        "MaximumExecutionTimeoutInSeconds": 1800,
    },
    "AutoRollbackConfiguration": {"Alarms": [{"AlarmName": ALARM}]},
}

# (t, VariantStatus now, phase, step, share): decision 1 for each policy, P = 300.
SCHEDULES = {
    # canary 1 of 2, bake 600, final 600: 0.5 during [P, P+600), 1.0 during [P+600, P+1200)
    "canary": (_canary(), 2, [
        (0, "Creating", "provisioning", 1, 0.0),
        (299, "Creating", "provisioning", 1, 0.0),
        (300, "ActivatingTraffic", "baking", 1, 0.5),
        (301, "Baking", "baking", 1, 0.5),
        (899, "Baking", "baking", 1, 0.5),
        (900, "ActivatingTraffic", "final-bake", 2, 1.0),
        (1499, "Baking", "final-bake", 2, 1.0),
    ], 1500),
    # linear 25% of 4, bake 600, final 300: 0.25, 0.5, 0.75 for 600 s each, 1.0 for 300 s
    "linear": (LINEAR, 4, [
        (0, "Creating", "provisioning", 1, 0.0),
        (300, "ActivatingTraffic", "baking", 1, 0.25),
        (899, "Baking", "baking", 1, 0.25),
        (900, "ActivatingTraffic", "baking", 2, 0.5),
        (1500, "ActivatingTraffic", "baking", 3, 0.75),
        (2099, "Baking", "baking", 3, 0.75),
        (2100, "ActivatingTraffic", "final-bake", 4, 1.0),
        (2399, "Baking", "final-bake", 4, 1.0),
    ], 2400),
    # rolling 2 of 4, bake 600: each batch provisions (P) then bakes; no final bake
    "rolling": (ROLLING, 4, [
        (0, "Creating", "provisioning", 1, 0.0),
        (300, "ActivatingTraffic", "baking", 1, 0.5),
        (899, "Baking", "baking", 1, 0.5),
        (900, "Creating", "provisioning", 2, 0.5),
        (1199, "Creating", "provisioning", 2, 0.5),
        (1200, "ActivatingTraffic", "baking", 2, 1.0),
        (1799, "Baking", "baking", 2, 1.0),
    ], 1800),
    # all at once, final bake 600: 1.0 during [P, P+600)
    "all-at-once": (ALL_AT_ONCE, 1, [
        (0, "Creating", "provisioning", 1, 0.0),
        (300, "ActivatingTraffic", "final-bake", 1, 1.0),
        (899, "Baking", "final-bake", 1, 1.0),
    ], 900),
}  # fmt: skip


@pytest.mark.parametrize("strategy", list(SCHEDULES))
def test_each_strategy_moves_through_its_steps_and_commits(
    harness: SageMakerHarness, outcomes: list[tuple[str, ...]], strategy: str
) -> None:
    config, n, points, commit = SCHEDULES[strategy]
    sm = _endpoint(n)
    _alarm()
    sm.update_endpoint(EndpointName="ep", EndpointConfigName="new", DeploymentConfig=config)
    for t, status, phase, step, share in points:
        _at(harness, t)
        d = sm.describe_endpoint(EndpointName="ep")
        assert (d["EndpointStatus"], d["EndpointConfigName"]) == ("Updating", "old"), t
        pending = d["PendingDeploymentSummary"]
        assert pending["EndpointConfigName"] == "new"
        assert pending["StartTime"] == datetime.fromtimestamp(T0, tz=UTC)
        (variant,) = pending["ProductionVariants"]
        assert variant["VariantName"] == "AllTraffic"
        assert variant["InstanceType"] == "ml.g6e.2xlarge"
        assert variant["VariantStatus"][-1]["Status"] == status, t
        assert variant["DesiredInstanceCount"] == n
        assert variant["CurrentInstanceCount"] == round(share * n), t
        assert (variant["DesiredWeight"], variant["CurrentWeight"]) == (1.0, share), t
        state = harness.rollout_of("ep")
        assert state is not None
        assert (state.phase, state.step, state.share) == (phase, step, share), t
        assert (state.old_config, state.new_config, state.alarms) == ("old", "new", (ALARM,))
        assert outcomes == []

    _at(harness, commit)
    d = sm.describe_endpoint(EndpointName="ep")
    assert (d["EndpointStatus"], d["EndpointConfigName"]) == ("InService", "new")
    assert "PendingDeploymentSummary" not in d and "FailureReason" not in d
    assert d["LastDeploymentConfig"] == config
    assert d["LastModifiedTime"] == datetime.fromtimestamp(T0 + commit, tz=UTC)
    assert harness.rollout_of("ep") is None
    assert outcomes == [(REGION, "ep", "committed", "old", "new")]


def test_rollback_alarms_alone_mean_all_at_once_with_no_bake(
    harness: SageMakerHarness, outcomes: list[tuple[str, ...]]
) -> None:
    """AWS: "If no update policy is specified, SageMaker uses a blue/green deployment
    strategy with all at once traffic shifting"; TerminationWaitInSeconds defaults to 0."""
    config = {"AutoRollbackConfiguration": {"Alarms": [{"AlarmName": ALARM}]}}
    sm = _endpoint(2)
    _alarm()
    sm.update_endpoint(EndpointName="ep", EndpointConfigName="new", DeploymentConfig=config)
    _at(harness, P - 1)
    assert sm.describe_endpoint(EndpointName="ep")["EndpointStatus"] == "Updating"
    _at(harness, P)
    d = sm.describe_endpoint(EndpointName="ep")
    assert (d["EndpointStatus"], d["EndpointConfigName"]) == ("InService", "new")
    assert outcomes == [(REGION, "ep", "committed", "old", "new")]


def test_bake_ends_and_kind_are_reported(harness: SageMakerHarness) -> None:
    sm = _endpoint(2)
    _alarm()
    sm.update_endpoint(EndpointName="ep", EndpointConfigName="new", DeploymentConfig=_canary())
    assert harness.rollout_of("ep").bake_ends is None  # type: ignore[union-attr]
    _at(harness, 400)
    state = harness.rollout_of("ep")
    assert state is not None
    assert (state.kind, state.steps, state.bake_ends) == ("CANARY", 2, T0 + 900)


# ---------------------------------------------------------------- rollback


def _rolled_back(sm: Any, outcomes: list[tuple[str, ...]], config: dict[str, Any]) -> dict:
    d = sm.describe_endpoint(EndpointName="ep")
    assert (d["EndpointStatus"], d["EndpointConfigName"]) == ("InService", "old")
    assert "PendingDeploymentSummary" not in d
    assert "FailureReason" not in d  # terraform PR #49020's case: empty
    assert d["LastDeploymentConfig"] == config
    assert outcomes == [(REGION, "ep", "rolled-back", "old", "new")]
    return dict(d)


def test_an_alarm_inside_the_canary_bake_rolls_back(
    harness: SageMakerHarness, outcomes: list[tuple[str, ...]]
) -> None:
    sm = _endpoint(2)
    _alarm()
    sm.update_endpoint(EndpointName="ep", EndpointConfigName="new", DeploymentConfig=_canary())
    _at(harness, P + 100)
    _trip()
    _at(harness, P + 101)
    d = _rolled_back(sm, outcomes, _canary())
    assert d["LastModifiedTime"] == datetime.fromtimestamp(T0 + P + 100, tz=UTC)
    assert harness.rollout_of("ep") is None
    # Nothing of the new fleet serves afterwards: the endpoint keeps the old variants.
    assert d["ProductionVariants"][0]["CurrentInstanceCount"] == 2


def test_a_rollback_stays_updating_for_rollback_seconds_and_can_set_a_reason(
    harness: SageMakerHarness, outcomes: list[tuple[str, ...]]
) -> None:
    harness.rollback_seconds = 120
    harness.rollback_failure_reason = "Deployment rolled back: alarm tripped"  # #39099's case
    sm = _endpoint(2)
    _alarm()
    sm.update_endpoint(EndpointName="ep", EndpointConfigName="new", DeploymentConfig=_canary())
    _at(harness, P + 100)
    _trip()
    _at(harness, P + 219)
    d = sm.describe_endpoint(EndpointName="ep")
    assert (d["EndpointStatus"], d["EndpointConfigName"]) == ("Updating", "old")
    state = harness.rollout_of("ep")
    assert state is not None and (state.phase, state.share) == ("rolling-back", 0.0)
    assert outcomes == []
    _at(harness, P + 220)
    d = sm.describe_endpoint(EndpointName="ep")
    assert (d["EndpointStatus"], d["EndpointConfigName"]) == ("InService", "old")
    assert d["FailureReason"] == "Deployment rolled back: alarm tripped"
    assert outcomes == [(REGION, "ep", "rolled-back", "old", "new")]


def test_an_alarm_after_the_last_bake_does_not_roll_back(
    harness: SageMakerHarness, outcomes: list[tuple[str, ...]]
) -> None:
    sm = _endpoint(2)
    _alarm()
    sm.update_endpoint(EndpointName="ep", EndpointConfigName="new", DeploymentConfig=_canary())
    _at(harness, 1500)  # the final bake is [900, 1500): this instant is after it
    _trip()
    _at(harness, 1600)
    d = sm.describe_endpoint(EndpointName="ep")
    assert (d["EndpointStatus"], d["EndpointConfigName"]) == ("InService", "new")
    assert outcomes == [(REGION, "ep", "committed", "old", "new")]


def test_an_alarm_already_in_alarm_when_a_bake_starts_rolls_back_at_its_start(
    harness: SageMakerHarness, outcomes: list[tuple[str, ...]]
) -> None:
    sm = _endpoint(2)
    _alarm()
    sm.update_endpoint(EndpointName="ep", EndpointConfigName="new", DeploymentConfig=_canary())
    _at(harness, 100)  # provisioning: no bake yet, nothing happens
    _trip()
    _at(harness, 200)
    assert sm.describe_endpoint(EndpointName="ep")["EndpointStatus"] == "Updating"
    _at(harness, 1000)
    d = _rolled_back(sm, outcomes, _canary())
    assert d["LastModifiedTime"] == datetime.fromtimestamp(T0 + P, tz=UTC)


def test_a_clock_jump_over_both_bakes_still_rolls_back_on_an_alarm_inside_the_first(
    harness: SageMakerHarness, outcomes: list[tuple[str, ...]]
) -> None:
    """The alarm goes ALARM at P+60 (its minute [P, P+60) breaches) and back to
    INSUFFICIENT_DATA a minute later: after the jump it is not in ALARM, but its history
    says it was, inside the canary bake."""
    sm = _endpoint(2)
    _alarm(TreatMissingData="missing")
    sm.update_endpoint(EndpointName="ep", EndpointConfigName="new", DeploymentConfig=_canary())
    _at(harness, P + 30)
    _cw().put_metric_data(Namespace="Test", MetricData=[{"MetricName": "Signal", "Value": 5.0}])
    _at(harness, 2000)  # one jump past the canary bake, the final bake and the commit time
    d = _rolled_back(sm, outcomes, _canary())
    assert d["LastModifiedTime"] == datetime.fromtimestamp(T0 + P + 60, tz=UTC)
    (alarm,) = _cw().describe_alarms(AlarmNames=[ALARM])["MetricAlarms"]
    assert alarm["StateValue"] == "INSUFFICIENT_DATA"


def test_the_execution_timeout_rolls_back(
    harness: SageMakerHarness, outcomes: list[tuple[str, ...]]
) -> None:
    # waits 250 + 300 < 600 (valid), but with P = 300 the commit would be at 850 > 600
    config = _canary(wait=250, final=300, timeout=600)
    sm = _endpoint(2)
    _alarm()
    sm.update_endpoint(EndpointName="ep", EndpointConfigName="new", DeploymentConfig=config)
    _at(harness, 599)
    assert sm.describe_endpoint(EndpointName="ep")["EndpointStatus"] == "Updating"
    _at(harness, 600)
    d = _rolled_back(sm, outcomes, config)
    assert d["LastModifiedTime"] == datetime.fromtimestamp(T0 + 600, tz=UTC)


def test_an_update_without_a_deployment_config_is_unchanged(
    harness: SageMakerHarness, outcomes: list[tuple[str, ...]]
) -> None:
    harness.default_update_schedule = None  # the instant switch
    sm = _endpoint(2)
    sm.update_endpoint(EndpointName="ep", EndpointConfigName="new")
    d = sm.describe_endpoint(EndpointName="ep")
    assert (d["EndpointStatus"], d["EndpointConfigName"]) == ("InService", "new")
    assert "LastDeploymentConfig" not in d
    assert harness.rollout_of("ep") is None and outcomes == []


def test_retain_all_variant_properties_keeps_the_live_instance_count(
    harness: SageMakerHarness,
) -> None:
    harness.default_update_schedule = None
    sm = _sm()
    _config(sm, "old", 3)
    _config(sm, "new", 1)
    sm.create_endpoint(EndpointName="ep", EndpointConfigName="old")
    sm.update_endpoint(EndpointName="ep", EndpointConfigName="new", RetainAllVariantProperties=True)
    variant = sm.describe_endpoint(EndpointName="ep")["ProductionVariants"][0]
    assert (variant["CurrentInstanceCount"], variant["DesiredInstanceCount"]) == (3, 3)


# ---------------------------------------------------------------- refusals


def _policy(routing: dict[str, Any]) -> dict[str, Any]:
    return {
        "BlueGreenUpdatePolicy": {
            "TrafficRoutingConfiguration": {"WaitIntervalInSeconds": 600, **routing},
            "TerminationWaitInSeconds": 600,
            "MaximumExecutionTimeoutInSeconds": 3600,
        }
    }


REFUSALS = {
    "one policy only": ({**_policy({"Type": "ALL_AT_ONCE"}), **ROLLING}, "only one update policy"),
    "canary without CanarySize": (_policy({"Type": "CANARY"}), "CanarySize is required"),
    "60% canary": (
        _policy({"Type": "CANARY", "CanarySize": {"Type": "CAPACITY_PERCENT", "Value": 60}}),
        "less than or equal to 50%",
    ),
    "3 of 4 instances canary": (
        _policy({"Type": "CANARY", "CanarySize": {"Type": "INSTANCE_COUNT", "Value": 3}}),
        "less than or equal to 50%",
    ),
    "5% linear": (
        _policy({"Type": "LINEAR", "LinearStepSize": {"Type": "CAPACITY_PERCENT", "Value": 5}}),
        "10-50%",
    ),
    "linear without LinearStepSize": (_policy({"Type": "LINEAR"}), "LinearStepSize is required"),
    "60% rolling": (
        {
            "RollingUpdatePolicy": {
                "MaximumBatchSize": {"Type": "CAPACITY_PERCENT", "Value": 60},
                "WaitIntervalInSeconds": 600,
            }
        },
        "between 5% to 50%",
    ),  # fmt: skip
    "an alarm that does not exist": (
        {**ROLLING, "AutoRollbackConfiguration": {"Alarms": [{"AlarmName": "no-such-alarm"}]}},
        "no-such-alarm",
    ),
    "11 alarms": (
        {
            **ROLLING,
            "AutoRollbackConfiguration": {"Alarms": [{"AlarmName": f"a{i}"} for i in range(11)]},
        },
        "length less than or equal to 10",
    ),  # fmt: skip
    "a timeout no longer than the waits": (
        _canary(wait=600, final=600, timeout=1200),
        "must be larger than the total waiting time",
    ),
}


@pytest.mark.parametrize("case", list(REFUSALS))
def test_each_refusal_is_a_validation_exception_and_changes_nothing(
    harness: SageMakerHarness, case: str
) -> None:
    config, words = REFUSALS[case]
    sm = _endpoint(4)
    for i in range(11):
        _alarm(f"a{i}")  # they exist: the 11-alarm case is about the count
    _alarm()
    with pytest.raises(ClientError) as exc:
        sm.update_endpoint(EndpointName="ep", EndpointConfigName="new", DeploymentConfig=config)
    error = exc.value.response["Error"]
    assert error["Code"] == "ValidationException"
    assert words in error["Message"]
    d = sm.describe_endpoint(EndpointName="ep")
    assert (d["EndpointStatus"], d["EndpointConfigName"]) == ("InService", "old")
    assert "PendingDeploymentSummary" not in d
    assert harness.rollout_of("ep") is None


def test_a_one_instance_canary_is_refused(harness: SageMakerHarness) -> None:
    sm = _endpoint(1)
    _alarm()
    with pytest.raises(ClientError) as exc:
        sm.update_endpoint(EndpointName="ep", EndpointConfigName="new", DeploymentConfig=_canary())
    assert exc.value.response["Error"]["Code"] == "ValidationException"
    assert "less than or equal to 50%" in exc.value.response["Error"]["Message"]


def test_a_renamed_variant_is_refused(harness: SageMakerHarness) -> None:
    sm = _sm()
    _config(sm, "old", 2)
    sm.create_endpoint(EndpointName="ep", EndpointConfigName="old")
    sm.create_endpoint_config(
        EndpointConfigName="new",
        ProductionVariants=[{"VariantName": "Blue", "ModelName": "old",
                             "InstanceType": "ml.g6e.2xlarge", "InitialInstanceCount": 2}],
    )  # fmt: skip
    _alarm()
    with pytest.raises(ClientError) as exc:
        sm.update_endpoint(EndpointName="ep", EndpointConfigName="new", DeploymentConfig=_canary())
    assert "same variant name" in exc.value.response["Error"]["Message"]
