"""An endpoint is found by its `peagle:deployment` tag when the plan's name is not live
(issue 33, item 6: a CloudFormation stack that names resources itself). Two live endpoints
with the same deployment's tags are ambiguous: `diff` refuses to pick one, naming both."""

from __future__ import annotations

from typing import Any

import boto3
import pytest

import sm_peagle
from sm_peagle.errors import SpecError
from sm_peagle.planning.spec.tags import tagged_requests
from tests.integration.lifecycle_env import REGION, World

DEPLOYMENT = "peagle-gpt-oss-20b-baseline"  # the plan's endpoint name for SPEC
SPEC = {"model": "gpt-oss-20b", "speculative": {"mode": "baseline"}}


def _endpoint(sm: Any, role: str, name: str, tags: list[dict[str, str]]) -> None:
    sm.create_model(
        ModelName=f"{name}-m", ExecutionRoleArn=role, PrimaryContainer={"Image": "i"}, Tags=tags
    )
    variant = {"VariantName": "AllTraffic", "ModelName": f"{name}-m",
               "InstanceType": "ml.g7e.2xlarge", "InitialInstanceCount": 1}  # fmt: skip
    sm.create_endpoint_config(EndpointConfigName=f"{name}-c", ProductionVariants=[variant])
    sm.create_endpoint(EndpointName=name, EndpointConfigName=f"{name}-c", Tags=tags)


def test_two_endpoints_of_one_deployment_are_named_not_guessed(world: World) -> None:
    sm = boto3.client("sagemaker", region_name=REGION)
    spec = {**SPEC, "role": world.role_arn}
    # The tags an export carries (peagle:managed, peagle:deployment, the spec), as a
    # stack's endpoint has them.
    *_, endpoint_request = tagged_requests(sm_peagle.plan(spec))
    tags = endpoint_request["Tags"]
    assert {"Key": "peagle:deployment", "Value": DEPLOYMENT} in tags
    _endpoint(sm, world.role_arn, "stack-a-PeagleEndpoint-1", tags)
    other = [t for t in tags if t["Key"] != "peagle:deployment"]
    _endpoint(sm, world.role_arn, "other-endpoint", other)  # not this deployment's
    found = sm_peagle.diff(spec)
    assert (found.endpoint, found.live_name) == ("stack-a-PeagleEndpoint-1",) * 2
    assert found.action == "noop"  # the same spec, read from its tags

    _endpoint(sm, world.role_arn, "stack-b-PeagleEndpoint-2", tags)
    with pytest.raises(SpecError) as caught:
        sm_peagle.diff(spec)
    assert "stack-a-PeagleEndpoint-1, stack-b-PeagleEndpoint-2" in caught.value.message
    assert caught.value.remedy and "endpoint.name" in caught.value.remedy
