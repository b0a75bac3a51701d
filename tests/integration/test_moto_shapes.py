"""The harness's describe answers stay inside botocore's output shapes: no structure
without the members botocore's model marks required. Stock moto 5.2.5 answered
`"VpcConfig": {}` and `"DataCaptureConfig": {}` for "not set", which the sagemaker SDK's
resource classes (pydantic models of the same shapes) refuse; SageMaker leaves them out."""

from __future__ import annotations

from typing import Any

import boto3
import botocore.session
from moto.sagemaker.responses import SageMakerResponse

import sm_peagle
from peagle_sandbox.testing.moto_sagemaker import SageMakerHarness
from tests.integration.lifecycle_env import REGION
from tests.integration.sagemaker_extra import require_sagemaker_core


def missing_required(value: Any, shape: Any, path: str) -> list[str]:
    """Paths of required members absent from `value` (a parsed response), recursively."""
    out: list[str] = []
    if shape.type_name == "structure" and isinstance(value, dict):
        for name in shape.required_members:
            if name not in value:
                out.append(f"{path}.{name}")
        for name, member in shape.members.items():
            if name in value:
                out += missing_required(value[name], member, f"{path}.{name}")
    elif shape.type_name == "list" and isinstance(value, list):
        for i, item in enumerate(value):
            out += missing_required(item, shape.member, f"{path}[{i}]")
    return out


def deployed(world: Any) -> tuple[Any, dict[str, dict]]:
    planned = sm_peagle.plan("gpt-oss-20b", role=world.role_arn, region=REGION)
    sm = boto3.client("sagemaker", region_name=REGION)
    sm.create_model(**planned.create_model)
    sm.create_endpoint_config(**planned.create_endpoint_config)
    sm.create_endpoint(**planned.create_endpoint)
    answers = {
        "DescribeModel": sm.describe_model(ModelName=planned.names["model"]),
        "DescribeEndpointConfig": sm.describe_endpoint_config(
            EndpointConfigName=planned.names["endpoint_config"]
        ),
        "DescribeEndpoint": sm.describe_endpoint(EndpointName=planned.names["endpoint"]),
    }
    return planned, answers


def test_describe_answers_carry_every_required_member(world: Any, sagemaker_harness: Any) -> None:
    _, answers = deployed(world)
    model = botocore.session.get_session().get_service_model("sagemaker")
    for operation, answer in answers.items():
        shape = model.operation_model(operation).output_shape
        assert missing_required(answer, shape, operation) == []
    # Not set means absent, as SageMaker answers.
    assert "VpcConfig" not in answers["DescribeModel"]
    assert "DataCaptureConfig" not in answers["DescribeEndpointConfig"]
    assert "DataCaptureConfig" not in answers["DescribeEndpoint"]


def test_set_values_still_come_back(world: Any, sagemaker_harness: Any) -> None:
    planned = sm_peagle.plan("gpt-oss-20b", role=world.role_arn, region=REGION)
    sm = boto3.client("sagemaker", region_name=REGION)
    vpc = {"SecurityGroupIds": ["sg-0123456789abcdef0"], "Subnets": ["subnet-0123456789abcdef0"]}
    sm.create_model(**{**planned.create_model, "VpcConfig": vpc})
    capture = {
        "InitialSamplingPercentage": 10,
        "DestinationS3Uri": "s3://bucket/capture",
        "CaptureOptions": [{"CaptureMode": "Input"}],
    }
    sm.create_endpoint_config(**{**planned.create_endpoint_config, "DataCaptureConfig": capture})
    assert sm.describe_model(ModelName=planned.names["model"])["VpcConfig"] == vpc
    answer = sm.describe_endpoint_config(EndpointConfigName=planned.names["endpoint_config"])
    assert answer["DataCaptureConfig"] == capture


def test_uninstall_restores_moto(aws: None) -> None:
    before = SageMakerResponse.__dict__.get("RESPONSE_KEY_PATH_TO_TRANSFORMER")
    with SageMakerHarness(region=REGION):
        assert ".VpcConfig" in SageMakerResponse.RESPONSE_KEY_PATH_TO_TRANSFORMER
    assert SageMakerResponse.__dict__.get("RESPONSE_KEY_PATH_TO_TRANSFORMER") is before


def test_the_sdk_resource_classes_read_them(world: Any, sagemaker_harness: Any) -> None:
    resources = require_sagemaker_core()
    planned, _ = deployed(world)
    session = boto3.session.Session(region_name=REGION)
    model = resources.Model.get(model_name=planned.names["model"], session=session)
    config = resources.EndpointConfig.get(
        endpoint_config_name=planned.names["endpoint_config"], session=session
    )
    endpoint = resources.Endpoint.get(endpoint_name=planned.names["endpoint"], session=session)
    channels = model.primary_container.additional_model_data_sources
    assert [c.channel_name for c in channels] == ["eagle"]
    assert config.production_variants[0].instance_type == "ml.g7e.2xlarge"
    assert endpoint.endpoint_status == "InService"
