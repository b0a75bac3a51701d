"""Guardrail deployments beyond the endpoint's blue/green: an inference component's rolling
update (UpdateInferenceComponent's RollingUpdatePolicy: batches of copies, 5-50% of them),
and the real-engine harness, whose new fleet provisions until the engine answers
(`fleet_ready`) and whose failed new engine rolls the update back with its reason.
In process, frozen clock, no sleeps. Schedules: design38 decision 1, P = 300."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from peagle_sandbox.engine_harness import HOLD_SECONDS, EngineHarness
from peagle_sandbox.sandbox_clock import SandboxClock
from peagle_sandbox.testing.moto_sagemaker import SageMakerHarness

REGION = "us-east-1"
ROLE = "arn:aws:iam::123456789012:role/r"
T0 = 1_800_000_000
P = 300
OLD = {"ModelName": "m1", "ComputeResourceRequirements": {"MinMemoryRequiredInMb": 1024}}
NEW = {"ModelName": "m2", "ComputeResourceRequirements": {"MinMemoryRequiredInMb": 1024}}
ALARM = "ic-errors"
ROLLING = {
    "RollingUpdatePolicy": {
        "MaximumBatchSize": {"Type": "COPY_COUNT", "Value": 2},
        "WaitIntervalInSeconds": 600,
        "MaximumExecutionTimeoutInSeconds": 3600,
    },
    "AutoRollbackConfiguration": {"Alarms": [{"AlarmName": ALARM}]},
}


def _cw() -> Any:
    return boto3.client("cloudwatch", region_name=REGION)


def _alarm() -> None:
    _cw().put_metric_alarm(
        AlarmName=ALARM, Namespace="Test", MetricName="Signal", Statistic="Maximum",
        Period=60, EvaluationPeriods=1, Threshold=1.0,
        ComparisonOperator="GreaterThanThreshold", TreatMissingData="ignore",
    )  # fmt: skip


def _at(harness: SageMakerHarness, t: float) -> None:
    harness.clock.advance(T0 + t - harness.clock.now())


@pytest.fixture
def sm(sagemaker_harness: SageMakerHarness) -> Any:
    sagemaker_harness.clock = SandboxClock(frozen=True, start=T0)
    sagemaker_harness.provisioning_seconds = P
    client = boto3.client("sagemaker", region_name=REGION)
    for model in ("m1", "m2"):
        client.create_model(ModelName=model, ExecutionRoleArn=ROLE,
                            PrimaryContainer={"Image": "i:1"})  # fmt: skip
    variant = {"VariantName": "AllTraffic", "InstanceType": "ml.g7e.12xlarge",
               "InitialInstanceCount": 1}  # fmt: skip
    client.create_endpoint_config(
        EndpointConfigName="c", ExecutionRoleArn=ROLE, ProductionVariants=[variant]
    )
    client.create_endpoint(EndpointName="e", EndpointConfigName="c")
    client.create_inference_component(
        InferenceComponentName="ic", EndpointName="e", VariantName="AllTraffic",
        Specification=OLD, RuntimeConfig={"CopyCount": 4},
    )  # fmt: skip
    statuses = [_ic(client)["InferenceComponentStatus"] for _ in range(2)]
    assert statuses == ["Creating", "InService"]  # count-based: Creating for one describe
    _alarm()
    return client


def _ic(sm: Any) -> dict[str, Any]:
    return dict(sm.describe_inference_component(InferenceComponentName="ic"))


def _update(sm: Any, config: dict[str, Any]) -> None:
    sm.update_inference_component(
        InferenceComponentName="ic", Specification=NEW, RuntimeConfig={"CopyCount": 4},
        DeploymentConfig=config,
    )  # fmt: skip


def test_a_rolling_update_of_copies_commits_after_its_last_batch_bakes(
    sagemaker_harness: SageMakerHarness, sm: Any
) -> None:
    _update(sm, ROLLING)
    # 2 of 4 copies per batch: [0, P) provisions, [P, P+600) bakes, [900, 1200) provisions
    # the second batch, [1200, 1800) bakes it; commit at 1800
    for t in (0, 299, 300, 899, 900, 1200, 1799):
        _at(sagemaker_harness, t)
        d = _ic(sm)
        assert (d["InferenceComponentStatus"], d["Specification"]["ModelName"]) == (
            "Updating", "m1"
        ), t  # fmt: skip
    _at(sagemaker_harness, 1800)
    d = _ic(sm)
    assert (d["InferenceComponentStatus"], d["Specification"]["ModelName"]) == ("InService", "m2")
    assert d["RuntimeConfig"] == {"DesiredCopyCount": 4, "CurrentCopyCount": 4}
    assert d["LastDeploymentConfig"] == ROLLING
    assert "FailureReason" not in d


def test_an_alarm_in_a_batch_bake_restores_the_old_specification(
    sagemaker_harness: SageMakerHarness, sm: Any
) -> None:
    _update(sm, ROLLING)
    _at(sagemaker_harness, 1300)  # inside the second batch's bake
    _cw().set_alarm_state(AlarmName=ALARM, StateValue="ALARM", StateReason="test")
    _at(sagemaker_harness, 1301)
    d = _ic(sm)
    assert (d["InferenceComponentStatus"], d["Specification"]["ModelName"]) == ("InService", "m1")
    assert d["LastDeploymentConfig"] == ROLLING
    _at(sagemaker_harness, 2000)  # and it stays so
    assert _ic(sm)["Specification"]["ModelName"] == "m1"


@pytest.mark.parametrize(
    ("size", "words"),
    [
        ({"Type": "COPY_COUNT", "Value": 3}, "between 5% to 50%"),  # 75% of 4 copies
        ({"Type": "CAPACITY_PERCENT", "Value": 60}, "between 5% to 50%"),
        ({"Type": "CAPACITY_PERCENT", "Value": 10}, "less than one"),  # 0.4 of a copy
    ],
)
def test_a_batch_outside_the_rule_is_refused(sm: Any, size: dict[str, Any], words: str) -> None:
    config = {"RollingUpdatePolicy": {"MaximumBatchSize": size, "WaitIntervalInSeconds": 600}}
    with pytest.raises(ClientError) as exc:
        _update(sm, config)
    assert exc.value.response["Error"]["Code"] == "ValidationException"
    assert words in exc.value.response["Error"]["Message"]
    d = _ic(sm)
    assert (d["InferenceComponentStatus"], d["Specification"]["ModelName"]) == ("InService", "m1")


# ---------------------------------------------------------------- the real-engine harness


class _Host:
    """Stands in for engine_host.EngineHost: records what the harness tells it."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, ...]] = []

    def submit(self, region: str, name: str, config: str, kind: str) -> None:
        self.calls.append((region, name, config, kind))

    def deleted(self, region: str, name: str) -> None:
        self.calls.append((region, name, "deleted"))


CANARY = {
    "BlueGreenUpdatePolicy": {
        "TrafficRoutingConfiguration": {
            "Type": "CANARY",
            "WaitIntervalInSeconds": 600,
            "CanarySize": {"Type": "INSTANCE_COUNT", "Value": 1},
        },
        "TerminationWaitInSeconds": 600,
        "MaximumExecutionTimeoutInSeconds": 7200,
    }
}


@pytest.fixture
def engine(aws: None) -> Any:
    clock = SandboxClock(frozen=True, start=T0)
    harness = EngineHarness(
        creating_seconds=HOLD_SECONDS, updating_seconds=HOLD_SECONDS, clock=clock
    )
    with harness:
        sm = boto3.client("sagemaker", region_name=REGION)
        for name in ("old", "new"):
            sm.create_model(ModelName=name, ExecutionRoleArn=ROLE,
                            PrimaryContainer={"Image": "i:1"})  # fmt: skip
            sm.create_endpoint_config(
                EndpointConfigName=name,
                ProductionVariants=[{"VariantName": "AllTraffic", "ModelName": name,
                                     "InstanceType": "ml.g6e.2xlarge",
                                     "InitialInstanceCount": 2}],
            )  # fmt: skip
        sm.create_endpoint(EndpointName="ep", EndpointConfigName="old")
        assert harness.settle(REGION, "ep", "InService")
        harness.host = _Host()
        seen: list[tuple[str, ...]] = []
        harness.rollout_listeners.append(lambda *args: seen.append(args))
        sm.update_endpoint(EndpointName="ep", EndpointConfigName="new", DeploymentConfig=CANARY)
        yield harness, sm, seen


def test_the_engine_harness_provisions_until_the_new_fleet_is_ready(engine: Any) -> None:
    harness, sm, seen = engine
    assert harness.host.calls == [(REGION, "ep", "new", "update")]
    harness.clock.advance(1800)  # the new engine is still starting: no step yet
    state = harness.rollout_of("ep", REGION)
    assert state is not None and (state.phase, state.share) == ("provisioning", 0.0)
    assert harness.fleet_ready(REGION, "ep")
    state = harness.rollout_of("ep", REGION)
    assert state is not None and (state.phase, state.share) == ("baking", 0.5)
    assert state.bake_ends == T0 + 1800 + 600
    harness.clock.advance(1200)  # canary bake and final bake
    d = sm.describe_endpoint(EndpointName="ep")
    assert (d["EndpointStatus"], d["EndpointConfigName"]) == ("InService", "new")
    assert seen == [(REGION, "ep", "committed", "old", "new")]


def test_a_failed_new_engine_rolls_back_with_its_reason(engine: Any) -> None:
    harness, sm, seen = engine
    harness.clock.advance(200)
    reason = "the new engine exited before /ping answered"
    assert harness.settle(REGION, "ep", "InService", reason)
    d = sm.describe_endpoint(EndpointName="ep")
    assert (d["EndpointStatus"], d["EndpointConfigName"]) == ("InService", "old")
    assert d["FailureReason"] == reason
    assert "PendingDeploymentSummary" not in d
    assert seen == [(REGION, "ep", "rolled-back", "old", "new")]
    assert not harness.fleet_ready(REGION, "ep")  # nothing waits any more
