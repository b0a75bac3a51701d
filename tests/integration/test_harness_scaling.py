"""Application Auto Scaling's DescribeScalingActivities in the moto harness (issue 39: spend
follows an endpoint's instance-count history). moto 5.2.5 has no such operation
(NotImplementedError) and stamps AAS resources with the wall clock; the harness answers
from the activities it recorded (`harness.record_scaling`), on the sandbox clock.

Expected shapes: botocore 1.44.8's `ScalingActivity` (ResourceId `endpoint/<e>/variant/<v>`,
ScalableDimension `sagemaker:variant:DesiredInstanceCount`, StartTime, StatusCode
Successful) and its MaxResults/NextToken paging.
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
T0 = 1_800_000_000  # 2027-01-15 08:00:00 UTC
RESOURCE = "endpoint/my-endpoint/variant/AllTraffic"
DIMENSION = "sagemaker:variant:DesiredInstanceCount"


@pytest.fixture
def harness(sagemaker_harness: SageMakerHarness) -> SageMakerHarness:
    sagemaker_harness.clock = SandboxClock(frozen=True, start=T0)
    return sagemaker_harness


def _aas() -> Any:
    return boto3.client("application-autoscaling", region_name=REGION)


def test_recorded_scaling_is_described_newest_first_on_the_clock(harness: Any) -> None:
    harness.record_scaling("my-endpoint", "AllTraffic", 3)  # at the clock's now: T0
    harness.clock.advance(1800)
    harness.record_scaling("my-endpoint", "AllTraffic", 1)
    harness.record_scaling("other", "AllTraffic", 2, at=T0 + 60)
    got = _aas().describe_scaling_activities(ServiceNamespace="sagemaker", ResourceId=RESOURCE)
    acts = got["ScalingActivities"]
    assert [a["Description"] for a in acts] == [
        "Setting desired instance count to 1.",
        "Setting desired instance count to 3.",
    ]
    assert [a["StartTime"] for a in acts] == [
        datetime.fromtimestamp(T0 + 1800, UTC),
        datetime.fromtimestamp(T0, UTC),
    ]
    assert {(a["ResourceId"], a["ScalableDimension"], a["StatusCode"]) for a in acts} == {
        (RESOURCE, DIMENSION, "Successful")
    }
    every = _aas().describe_scaling_activities(ServiceNamespace="sagemaker")
    assert len(every["ScalingActivities"]) == 3
    paged = _aas().describe_scaling_activities(ServiceNamespace="sagemaker", MaxResults=2)
    assert len(paged["ScalingActivities"]) == 2
    rest = _aas().describe_scaling_activities(
        ServiceNamespace="sagemaker", MaxResults=2, NextToken=paged["NextToken"]
    )
    assert len(rest["ScalingActivities"]) == 1
    assert "NextToken" not in rest


def test_no_activity_is_an_empty_list_and_a_bad_namespace_a_validation_error(
    harness: Any,
) -> None:
    got = _aas().describe_scaling_activities(ServiceNamespace="sagemaker", ResourceId=RESOURCE)
    assert got["ScalingActivities"] == []
    raw = boto3.client(
        "application-autoscaling",
        region_name=REGION,
        config=boto3.session.Config(parameter_validation=False),
    )
    with pytest.raises(ClientError) as exc:
        raw.describe_scaling_activities(ServiceNamespace="nope")
    assert exc.value.response["Error"]["Code"] == "ValidationException"


def test_scalable_targets_are_stamped_on_the_sandbox_clock(harness: Any) -> None:
    aas = _aas()
    aas.register_scalable_target(
        ServiceNamespace="sagemaker",
        ResourceId=RESOURCE,
        ScalableDimension=DIMENSION,
        MinCapacity=1,
        MaxCapacity=4,
    )
    target = aas.describe_scalable_targets(ServiceNamespace="sagemaker")["ScalableTargets"][0]
    assert target["CreationTime"] == datetime.fromtimestamp(T0, UTC)


def test_a_successful_activity_sets_the_endpoints_instance_counts(harness: Any) -> None:
    sm = boto3.client("sagemaker", region_name=REGION)
    role = "arn:aws:iam::123456789012:role/exec"
    sm.create_model(ModelName="m", ExecutionRoleArn=role, PrimaryContainer={"Image": "i:1"})
    variant = {"VariantName": "AllTraffic", "InstanceType": "ml.g6e.xlarge",
               "InitialInstanceCount": 1, "ModelName": "m"}  # fmt: skip
    sm.create_endpoint_config(EndpointConfigName="c", ProductionVariants=[variant])
    sm.create_endpoint(EndpointName="my-endpoint", EndpointConfigName="c")
    harness.record_scaling("my-endpoint", "AllTraffic", 3)
    (v,) = sm.describe_endpoint(EndpointName="my-endpoint")["ProductionVariants"]
    assert (v["CurrentInstanceCount"], v["DesiredInstanceCount"]) == (3, 3)
    harness.record_scaling("my-endpoint", "AllTraffic", 5, status="Failed")
    (v,) = sm.describe_endpoint(EndpointName="my-endpoint")["ProductionVariants"]
    assert v["CurrentInstanceCount"] == 3  # a failed activity changed nothing
