"""The moto SageMaker harness: widened instance types, UpdateEndpoint, scheduled statuses,
seeded logs, inventory, server mode, and reversibility."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from peagle_sandbox.sandbox_clock import SandboxClock
from peagle_sandbox.testing.moto_sagemaker import (
    SageMakerHarness,
    endpoint_log_group,
    valid_instance_types,
)

REGION = "us-east-1"
ROLE = "arn:aws:iam::123456789012:role/peagle-test"
IMAGE = "763104351884.dkr.ecr.us-east-1.amazonaws.com/vllm:latest"


def _sm(**kwargs: Any) -> Any:
    return boto3.client("sagemaker", region_name=REGION, **kwargs)


def _config(sm: Any, name: str, instance_type: str = "ml.g6e.2xlarge") -> None:
    """A model plus an endpoint config, both called ``name``."""
    sm.create_model(
        ModelName=name,
        ExecutionRoleArn=ROLE,
        PrimaryContainer={"Image": IMAGE},
    )
    sm.create_endpoint_config(
        EndpointConfigName=name,
        ProductionVariants=[
            {
                "VariantName": "AllTraffic",
                "ModelName": name,
                "InstanceType": instance_type,
                "InitialInstanceCount": 1,
            }
        ],
    )


def _deploy(sm: Any, endpoint: str, config: str, instance_type: str = "ml.g6e.2xlarge") -> None:
    _config(sm, config, instance_type)
    sm.create_endpoint(EndpointName=endpoint, EndpointConfigName=config)


def _statuses(sm: Any, endpoint: str, n: int) -> list[str]:
    return [sm.describe_endpoint(EndpointName=endpoint)["EndpointStatus"] for _ in range(n)]


def _error(exc: pytest.ExceptionInfo[ClientError]) -> tuple[str, str]:
    err = exc.value.response["Error"]
    return err["Code"], err["Message"]


# ---------------------------------------------------------------------- instance types


@pytest.mark.parametrize(
    "instance_type",
    ["ml.g7e.2xlarge", "ml.p6-b200.48xlarge", "ml.g5.12xlarge", "ml.p5.48xlarge"],
)
def test_modern_gpu_instance_types_are_accepted(
    sagemaker_harness: SageMakerHarness, instance_type: str
) -> None:
    sm = _sm()
    _config(sm, "cfg", instance_type)
    variant = sm.describe_endpoint_config(EndpointConfigName="cfg")["ProductionVariants"][0]
    assert variant["InstanceType"] == instance_type


def test_bogus_instance_type_is_still_rejected(sagemaker_harness: SageMakerHarness) -> None:
    assert "ml.bogus.large" not in valid_instance_types()
    sm = _sm()
    with pytest.raises(ClientError) as exc:
        _config(sm, "cfg", "ml.bogus.large")
    code, message = _error(exc)
    assert code == "ValidationException"
    assert "ml.bogus.large" in message and "ml.g7e.2xlarge" in message


# ---------------------------------------------------------------------- model echo


@pytest.mark.parametrize("isolation", [True, False])
def test_describe_model_echoes_network_isolation(
    sagemaker_harness: SageMakerHarness, isolation: bool
) -> None:
    # botocore's model carries the field both ways; stock moto always answers False.
    service = boto3.session.Session().client("sagemaker", region_name=REGION).meta.service_model
    assert "EnableNetworkIsolation" in service.operation_model("CreateModel").input_shape.members
    assert "EnableNetworkIsolation" in service.operation_model("DescribeModel").output_shape.members
    sm = _sm()
    sm.create_model(
        ModelName="iso",
        ExecutionRoleArn=ROLE,
        PrimaryContainer={"Image": IMAGE},
        EnableNetworkIsolation=isolation,
    )
    assert sm.describe_model(ModelName="iso")["EnableNetworkIsolation"] is isolation
    sm.create_model(ModelName="unset", ExecutionRoleArn=ROLE, PrimaryContainer={"Image": IMAGE})
    assert sm.describe_model(ModelName="unset")["EnableNetworkIsolation"] is False  # AWS default


# ---------------------------------------------------------------------- create schedules


def test_without_schedule_moto_default_is_kept(sagemaker_harness: SageMakerHarness) -> None:
    sm = _sm()
    _deploy(sm, "ep", "cfg")
    assert _statuses(sm, "ep", 2) == ["InService", "InService"]


def test_schedule_is_consumed_one_status_per_describe(
    sagemaker_harness: SageMakerHarness,
) -> None:
    sm = _sm()
    _deploy(sm, "ep", "cfg")
    sagemaker_harness.schedule("ep", ["Creating", "Creating", "InService"])
    assert _statuses(sm, "ep", 4) == ["Creating", "Creating", "InService", "InService"]
    assert "FailureReason" not in sm.describe_endpoint(EndpointName="ep")


def test_schedule_to_failed_sets_failure_reason(sagemaker_harness: SageMakerHarness) -> None:
    sm = _sm()
    reason = "CannotStartContainerError: vLLM exited with code 1"
    sagemaker_harness.schedule("ep", ["Creating", "Failed"], failure_reason=reason)
    _deploy(sm, "ep", "cfg")  # scheduled before it exists: applies on creation

    first = sm.describe_endpoint(EndpointName="ep")
    assert first["EndpointStatus"] == "Creating"
    assert "FailureReason" not in first
    second = sm.describe_endpoint(EndpointName="ep")
    assert second["EndpointStatus"] == "Failed"
    assert second["FailureReason"] == reason


def test_default_schedule_applies_to_endpoints_created_later(
    sagemaker_harness: SageMakerHarness,
) -> None:
    sagemaker_harness.default_schedule = ["Creating", "InService"]
    sm = _sm()
    _deploy(sm, "a", "cfg-a")
    _deploy(sm, "b", "cfg-b")
    # Before any describe, the stored status is already the first scheduled one.
    listed = {e["EndpointName"]: e["EndpointStatus"] for e in sm.list_endpoints()["Endpoints"]}
    assert listed == {"a": "Creating", "b": "Creating"}
    assert _statuses(sm, "a", 2) == ["Creating", "InService"]
    assert _statuses(sm, "b", 1) == ["Creating"]  # schedules are per endpoint


def test_time_based_creating_seconds(sagemaker_harness: SageMakerHarness) -> None:
    clock = sagemaker_harness.clock = SandboxClock(frozen=True)
    sagemaker_harness.creating_seconds = 2.0
    sm = _sm()
    _deploy(sm, "ep", "cfg")
    assert _statuses(sm, "ep", 3) == ["Creating"] * 3  # describes don't advance time
    clock.advance(1.9)
    assert _statuses(sm, "ep", 1) == ["Creating"]
    clock.advance(0.2)
    listed = sm.list_endpoints()["Endpoints"][0]["EndpointStatus"]
    assert listed == "InService"  # listing sees time-based progress too
    assert _statuses(sm, "ep", 1) == ["InService"]

    sagemaker_harness.updating_seconds = 5.0
    _config(sm, "v2")
    sm.update_endpoint(EndpointName="ep", EndpointConfigName="v2")
    assert _statuses(sm, "ep", 2) == ["Updating", "Updating"]
    clock.advance(5.0)
    described = sm.describe_endpoint(EndpointName="ep")
    assert (described["EndpointStatus"], described["EndpointConfigName"]) == ("InService", "v2")

    # A per-endpoint time-based schedule: each status lasts `seconds`.
    sagemaker_harness.schedule("ep", ["Updating", "Failed"], seconds=1.0, failure_reason="boom")
    assert sagemaker_harness.status_of("ep") == "Updating"
    clock.advance(1.0)
    assert sagemaker_harness.status_of("ep") == "Failed"
    assert sm.describe_endpoint(EndpointName="ep")["FailureReason"] == "boom"


def test_creating_an_existing_endpoint_is_refused(sagemaker_harness: SageMakerHarness) -> None:
    sm = _sm()
    _deploy(sm, "ep", "cfg")
    with pytest.raises(ClientError) as exc:
        sm.create_endpoint(EndpointName="ep", EndpointConfigName="cfg")
    assert _error(exc)[0] == "ValidationException"
    assert "already existing endpoint" in _error(exc)[1]


# ---------------------------------------------------------------------- update


def test_update_switches_config_after_updating(sagemaker_harness: SageMakerHarness) -> None:
    sm = _sm()
    _deploy(sm, "ep", "v1")
    _config(sm, "v2", "ml.g7e.2xlarge")

    arn = sm.update_endpoint(EndpointName="ep", EndpointConfigName="v2")["EndpointArn"]
    assert arn.endswith(":endpoint/ep")

    during = sm.describe_endpoint(EndpointName="ep")
    assert during["EndpointStatus"] == "Updating"
    assert during["EndpointConfigName"] == "v1"  # still serving the old config
    pending = during["PendingDeploymentSummary"]
    assert pending["EndpointConfigName"] == "v2"
    assert pending["ProductionVariants"][0]["InstanceType"] == "ml.g7e.2xlarge"

    after = sm.describe_endpoint(EndpointName="ep")
    assert after["EndpointStatus"] == "InService"
    assert after["EndpointConfigName"] == "v2"
    assert after["ProductionVariants"][0]["VariantName"] == "AllTraffic"
    assert "PendingDeploymentSummary" not in after
    assert "FailureReason" not in after


def test_failed_update_rolls_back_to_old_config(sagemaker_harness: SageMakerHarness) -> None:
    sm = _sm()
    _deploy(sm, "ep", "v1")
    _config(sm, "v2")
    reason = "The primary container for production variant AllTraffic did not pass the ping"
    sagemaker_harness.schedule_update(
        "ep", ["Updating", "Updating", "InService"], failure_reason=reason
    )
    sm.update_endpoint(EndpointName="ep", EndpointConfigName="v2", RetainAllVariantProperties=True)

    assert _statuses(sm, "ep", 2) == ["Updating", "Updating"]
    final = sm.describe_endpoint(EndpointName="ep")
    assert final["EndpointStatus"] == "InService"
    assert final["EndpointConfigName"] == "v1"
    assert final["FailureReason"] == reason

    # The next update is not poisoned by the previous failure plan.
    sm.update_endpoint(EndpointName="ep", EndpointConfigName="v2")
    assert _statuses(sm, "ep", 2) == ["Updating", "InService"]
    healed = sm.describe_endpoint(EndpointName="ep")
    assert healed["EndpointConfigName"] == "v2"
    assert "FailureReason" not in healed


@pytest.mark.parametrize(
    ("endpoint", "config", "expected"),
    [
        ("missing", "v1", "Could not find endpoint"),
        ("ep", "missing", "Could not find endpoint configuration"),
    ],
)
def test_update_validates_endpoint_and_config(
    sagemaker_harness: SageMakerHarness, endpoint: str, config: str, expected: str
) -> None:
    sm = _sm()
    _deploy(sm, "ep", "v1")
    with pytest.raises(ClientError) as exc:
        sm.update_endpoint(EndpointName=endpoint, EndpointConfigName=config)
    code, message = _error(exc)
    assert code == "ValidationException"
    assert expected in message


def test_update_of_failed_or_creating_endpoint_is_refused(
    sagemaker_harness: SageMakerHarness,
) -> None:
    sm = _sm()
    sagemaker_harness.schedule("ep", ["Creating", "Failed"])
    _deploy(sm, "ep", "v1")
    with pytest.raises(ClientError) as exc:
        sm.update_endpoint(EndpointName="ep", EndpointConfigName="v1")
    assert "in-progress" in _error(exc)[1]

    assert _statuses(sm, "ep", 2) == ["Creating", "Failed"]
    with pytest.raises(ClientError) as exc:
        sm.update_endpoint(EndpointName="ep", EndpointConfigName="v1")
    assert _error(exc)[0] == "ValidationException"
    assert "Failed" in _error(exc)[1]

    sm.delete_endpoint(EndpointName="ep")  # the one call a Failed endpoint accepts


# ---------------------------------------------------------------------- logs and inventory


def test_seed_logs_are_readable_through_cloudwatch(sagemaker_harness: SageMakerHarness) -> None:
    lines = ["INFO starting vLLM", "INFO loading drafter", "ERROR CUDA out of memory"]
    group = sagemaker_harness.seed_logs("ep", lines, stream="AllTraffic/i-0abc")
    assert group == endpoint_log_group("ep") == "/aws/sagemaker/Endpoints/ep"

    logs = boto3.client("logs", region_name=REGION)
    filtered = logs.filter_log_events(logGroupName=group)["events"]
    assert [e["message"] for e in filtered] == lines
    timestamps = [e["timestamp"] for e in filtered]
    assert timestamps == sorted(timestamps) and len(set(timestamps)) == len(lines)

    sagemaker_harness.seed_logs("ep", ["INFO more"], stream="AllTraffic/i-0abc")  # appends
    got = logs.get_log_events(
        logGroupName=group, logStreamName="AllTraffic/i-0abc", startFromHead=True
    )
    assert [e["message"] for e in got["events"]] == [*lines, "INFO more"]


def test_resources_track_what_is_left_behind(sagemaker_harness: SageMakerHarness) -> None:
    sm = _sm()
    assert sagemaker_harness.resources().is_empty
    _deploy(sm, "ep", "cfg")
    left = sagemaker_harness.resources(REGION)
    assert (left.models, left.endpoint_configs, left.endpoints) == (("cfg",), ("cfg",), ("ep",))
    assert left.total == 3

    sm.delete_endpoint(EndpointName="ep")
    sm.delete_endpoint_config(EndpointConfigName="cfg")
    sm.delete_model(ModelName="cfg")
    assert sagemaker_harness.resources().is_empty
    assert sagemaker_harness.resources("eu-west-1").is_empty


# ---------------------------------------------------------------------- server mode


def test_threaded_server_supports_update_and_modern_instances(
    moto_server: str, moto_server_harness: SageMakerHarness
) -> None:
    # No retries: a missing action would be an HTTP 500 that boto3 retries for seconds.
    sm = _sm(endpoint_url=moto_server, config=Config(retries={"max_attempts": 1}))
    moto_server_harness.default_schedule = ["Creating", "InService"]
    _deploy(sm, "ep", "v1", "ml.p6-b200.48xlarge")
    _config(sm, "v2", "ml.g7e.2xlarge")
    assert _statuses(sm, "ep", 2) == ["Creating", "InService"]

    sm.update_endpoint(EndpointName="ep", EndpointConfigName="v2")
    assert _statuses(sm, "ep", 2) == ["Updating", "InService"]
    assert sm.describe_endpoint(EndpointName="ep")["EndpointConfigName"] == "v2"

    with pytest.raises(ClientError) as exc:
        sm.update_endpoint(EndpointName="nope", EndpointConfigName="v2")
    assert _error(exc)[0] == "ValidationException"

    moto_server_harness.seed_logs("ep", ["hello from the server"])
    logs = boto3.client("logs", region_name=REGION, endpoint_url=moto_server)
    events = logs.filter_log_events(logGroupName=endpoint_log_group("ep"))["events"]
    assert [e["message"] for e in events] == ["hello from the server"]
    assert moto_server_harness.resources().endpoints == ("ep",)


# ---------------------------------------------------------------------- reversibility


def test_uninstall_restores_moto_behaviour(aws: None) -> None:
    sm = _sm()
    harness = SageMakerHarness()
    assert harness.install() is harness.install()  # idempotent
    with pytest.raises(RuntimeError, match="another SageMakerHarness"):
        SageMakerHarness().install()
    _config(sm, "modern", "ml.g7e.2xlarge")

    harness.uninstall()
    harness.uninstall()  # idempotent
    assert not harness.installed

    with pytest.raises(ClientError) as exc:
        _config(sm, "again", "ml.g7e.2xlarge")
    assert _error(exc)[0] == "ValidationException"
    # Stock moto again: UpdateEndpoint is unimplemented, which mock_aws surfaces as a Python error.
    _config(sm, "old", "ml.g4dn.xlarge")
    sm.create_endpoint(EndpointName="ep", EndpointConfigName="old")
    with pytest.raises(NotImplementedError):
        sm.update_endpoint(EndpointName="ep", EndpointConfigName="old")

    with SageMakerHarness() as again:  # and a fresh harness can be installed afterwards
        assert again.installed
        _config(sm, "modern-2", "ml.g7e.2xlarge")
