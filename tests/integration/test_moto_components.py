"""The moto harness's inference components: the calls, their states over time, copy
counts, what AWS refuses, and the widened Application Auto Scaling dimension."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from peagle_sandbox.testing.moto_components import leftovers, schedule_component

REGION = "us-east-1"
ROLE = "arn:aws:iam::123456789012:role/r"
SPEC = {"ModelName": "m", "ComputeResourceRequirements": {"MinMemoryRequiredInMb": 1024}}


@pytest.fixture
def sm(sagemaker_harness: Any) -> Any:
    client = boto3.client("sagemaker", region_name=REGION)
    client.create_model(ModelName="m", ExecutionRoleArn=ROLE, PrimaryContainer={"Image": "i:1"})
    variant = {
        "VariantName": "AllTraffic",
        "InstanceType": "ml.g7e.12xlarge",
        "InitialInstanceCount": 1,
        "ManagedInstanceScaling": {
            "Status": "ENABLED",
            "MinInstanceCount": 0,
            "MaxInstanceCount": 2,
        },
        "RoutingConfig": {"RoutingStrategy": "LEAST_OUTSTANDING_REQUESTS"},
    }
    client.create_endpoint_config(
        EndpointConfigName="c", ExecutionRoleArn=ROLE, ProductionVariants=[variant]
    )
    client.create_endpoint(EndpointName="e", EndpointConfigName="c")
    return client


def _create(sm: Any, name: str = "ic", copies: int = 1) -> None:
    sm.create_inference_component(
        InferenceComponentName=name,
        EndpointName="e",
        VariantName="AllTraffic",
        Specification=SPEC,
        RuntimeConfig={"CopyCount": copies},
    )


def _state(sm: Any, name: str = "ic") -> tuple[str, int, int]:
    d = sm.describe_inference_component(InferenceComponentName=name)
    rc = d["RuntimeConfig"]
    return d["InferenceComponentStatus"], rc["DesiredCopyCount"], rc["CurrentCopyCount"]


def test_component_config_echoes_the_execution_role(sm: Any) -> None:
    assert sm.describe_endpoint_config(EndpointConfigName="c")["ExecutionRoleArn"] == ROLE
    with pytest.raises(ClientError, match="ExecutionRoleArn"):
        sm.create_endpoint_config(
            EndpointConfigName="c2",
            ProductionVariants=[
                {"VariantName": "A", "InstanceType": "ml.g7e.2xlarge", "InitialInstanceCount": 1}
            ],
        )


def test_create_describe_scale_to_zero_delete(sm: Any) -> None:
    _create(sm)
    assert _state(sm) == ("Creating", 1, 0)
    assert _state(sm) == ("InService", 1, 1)
    listed = sm.list_inference_components(EndpointNameEquals="e")["InferenceComponents"]
    assert [c["InferenceComponentName"] for c in listed] == ["ic"]
    sm.update_inference_component_runtime_config(
        InferenceComponentName="ic", DesiredRuntimeConfig={"CopyCount": 0}
    )
    assert _state(sm) == ("Updating", 0, 1)
    assert _state(sm) == ("InService", 0, 0)
    # The only component has no copies and min instances is 0: the endpoint has none.
    (variant,) = sm.describe_endpoint(EndpointName="e")["ProductionVariants"]
    assert variant["CurrentInstanceCount"] == 0
    sm.delete_inference_component(InferenceComponentName="ic")
    assert _state(sm)[0] == "Deleting"
    with pytest.raises(ClientError, match="Could not find inference component"):
        sm.describe_inference_component(InferenceComponentName="ic")


def test_what_aws_refuses(sm: Any) -> None:
    with pytest.raises(ClientError, match="copy count"):
        _create(sm, copies=0)
    _create(sm)
    with pytest.raises(ClientError, match="already existing"):
        _create(sm)
    with pytest.raises(ClientError, match="Could not find model"):
        sm.create_inference_component(
            InferenceComponentName="other",
            EndpointName="e",
            VariantName="AllTraffic",
            Specification={**SPEC, "ModelName": "missing"},
            RuntimeConfig={"CopyCount": 1},
        )


def test_a_scheduled_start_up_failure(sagemaker_harness: Any, sm: Any) -> None:
    schedule_component(sagemaker_harness, "ic", ["Creating", "Failed"], failure_reason="OOM")
    _create(sm)
    assert _state(sm)[0] == "Creating"
    d = sm.describe_inference_component(InferenceComponentName="ic")
    assert (d["InferenceComponentStatus"], d["FailureReason"]) == ("Failed", "OOM")


def test_autoscaling_accepts_the_copy_count_dimension(sm: Any) -> None:
    _create(sm)
    aas = boto3.client("application-autoscaling", region_name=REGION)
    target = {
        "ServiceNamespace": "sagemaker",
        "ResourceId": "inference-component/ic",
        "ScalableDimension": "sagemaker:inference-component:DesiredCopyCount",
    }
    aas.register_scalable_target(**target, MinCapacity=0, MaxCapacity=2)
    aas.put_scaling_policy(
        PolicyName="p",
        **target,
        PolicyType="StepScaling",
        StepScalingPolicyConfiguration={
            "AdjustmentType": "ChangeInCapacity",
            "StepAdjustments": [{"MetricIntervalLowerBound": 0.0, "ScalingAdjustment": 1}],
        },
    )
    left = leftovers("123456789012", REGION)
    assert left["scalable_targets"] == ["inference-component/ic"]
    assert left["scaling_policies"] == ["p"]
    with pytest.raises(ClientError):  # the enum is widened, not dropped
        aas.register_scalable_target(
            **{**target, "ScalableDimension": "sagemaker:bogus:Thing"}, MinCapacity=0, MaxCapacity=1
        )
