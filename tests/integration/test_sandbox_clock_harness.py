"""The moto harness's Deleting and the real engine's harness on the sandbox clock (issue
36), in process: a frozen clock, moved by the test, never slept for."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from peagle_sandbox.engine_harness import HOLD_SECONDS, EngineHarness
from peagle_sandbox.sandbox_clock import SandboxClock
from peagle_sandbox.testing.moto_sagemaker import SageMakerHarness

REGION = "us-east-1"
ROLE = "arn:aws:iam::123456789012:role/peagle-test"
IMAGE = "763104351884.dkr.ecr.us-east-1.amazonaws.com/vllm:latest"


def _deploy(sm: Any, name: str) -> None:
    sm.create_model(ModelName=name, ExecutionRoleArn=ROLE, PrimaryContainer={"Image": IMAGE})
    sm.create_endpoint_config(
        EndpointConfigName=name,
        ProductionVariants=[
            {
                "VariantName": "AllTraffic",
                "ModelName": name,
                "InstanceType": "ml.g6e.2xlarge",
                "InitialInstanceCount": 1,
            }
        ],
    )
    sm.create_endpoint(EndpointName=name, EndpointConfigName=name)


def _status(sm: Any, name: str) -> str:
    return str(sm.describe_endpoint(EndpointName=name)["EndpointStatus"])


def test_deleting_seconds_keep_an_endpoint_deleting_then_free_its_name(
    sagemaker_harness: SageMakerHarness,
) -> None:
    clock = sagemaker_harness.clock = SandboxClock(frozen=True)
    sagemaker_harness.deleting_seconds = 300.0
    sm = boto3.client("sagemaker", region_name=REGION)
    _deploy(sm, "ep")
    assert _status(sm, "ep") == "InService"
    sm.delete_endpoint(EndpointName="ep")
    described = sm.describe_endpoint(EndpointName="ep")
    assert described["EndpointStatus"] == "Deleting"
    sm.delete_endpoint(EndpointName="ep")  # again while Deleting: accepted, changes nothing
    with pytest.raises(ClientError) as e:  # nothing moves a Deleting endpoint
        sm.update_endpoint(EndpointName="ep", EndpointConfigName="ep")
    assert "in-progress" in e.value.response["Error"]["Message"]
    with pytest.raises(ClientError) as e:  # its name is still taken
        sm.create_endpoint(EndpointName="ep", EndpointConfigName="ep")
    assert "already existing" in e.value.response["Error"]["Message"]
    clock.advance(299)
    assert _status(sm, "ep") == "Deleting"
    assert sagemaker_harness.resources().endpoints == ("ep",)
    clock.advance(1)
    assert sm.list_endpoints()["Endpoints"] == []
    with pytest.raises(ClientError) as e:
        sm.describe_endpoint(EndpointName="ep")
    assert "Could not find endpoint" in e.value.response["Error"]["Message"]
    sm.create_endpoint(EndpointName="ep", EndpointConfigName="ep")  # the name is free again
    assert _status(sm, "ep") == "InService"


def test_without_deleting_seconds_a_delete_is_instant(
    sagemaker_harness: SageMakerHarness,
) -> None:
    sagemaker_harness.clock = SandboxClock(frozen=True)
    sm = boto3.client("sagemaker", region_name=REGION)
    _deploy(sm, "ep")
    sm.delete_endpoint(EndpointName="ep")
    assert sm.list_endpoints()["Endpoints"] == []


def test_the_real_engines_settle_stamps_last_modified_on_the_clock(aws: None) -> None:
    clock = SandboxClock(frozen=True)
    with EngineHarness(
        creating_seconds=HOLD_SECONDS, updating_seconds=HOLD_SECONDS, clock=clock
    ) as harness:
        sm = boto3.client("sagemaker", region_name=REGION)
        _deploy(sm, "ep")
        assert _status(sm, "ep") == "Creating"
        clock.advance(7 * 60)  # the engine took 7 sandbox minutes to answer /ping
        assert harness.settle(REGION, "ep", "InService")
        described = sm.describe_endpoint(EndpointName="ep")
        assert described["EndpointStatus"] == "InService"
        took = described["LastModifiedTime"] - described["CreationTime"]
        assert took == timedelta(minutes=7)
