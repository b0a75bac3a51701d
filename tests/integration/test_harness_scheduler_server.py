"""The scheduler half of the harness behind moto's threaded server (the sandbox's mode):
the same checks answer over HTTP (rest-json: names and ARNs in the URI, the rest in the
query string and body), and a due schedule runs when the clock moves."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from peagle_sandbox.sandbox_clock import SandboxClock
from peagle_sandbox.testing.moto_sagemaker import SageMakerHarness
from sm_peagle.planning import expiry
from tests.integration.test_harness_scheduler_runs import ACCOUNT, EXEC_ROLE, MANAGED, T0

REGION = "us-east-1"


def _client(url: str, service: str) -> Any:
    return boto3.client(service, region_name=REGION, endpoint_url=url)


def test_over_http_the_checks_hold_and_the_schedule_runs(
    moto_server: str, moto_server_harness: SageMakerHarness
) -> None:
    harness = moto_server_harness
    harness.clock = SandboxClock(frozen=True, start=T0)
    sched, sm, iam = (_client(moto_server, s) for s in ("scheduler", "sagemaker", "iam"))
    sm.create_model(ModelName="m", ExecutionRoleArn=EXEC_ROLE, PrimaryContainer={"Image": "i"})
    variant = {"VariantName": "AllTraffic", "InstanceType": "ml.g6e.xlarge",
               "InitialInstanceCount": 1, "ModelName": "m"}  # fmt: skip
    sm.create_endpoint_config(EndpointConfigName="c", ProductionVariants=[variant])
    sm.create_endpoint(EndpointName="my-endpoint", EndpointConfigName="c", Tags=MANAGED)
    role = iam.create_role(
        RoleName=expiry.ROLE_NAME,
        AssumeRolePolicyDocument=json.dumps(expiry.trust_policy(ACCOUNT)),
    )["Role"]["Arn"]
    iam.put_role_policy(
        RoleName=expiry.ROLE_NAME,
        PolicyName="p",
        PolicyDocument=json.dumps(expiry.permission_policy(ACCOUNT)),
    )
    req = expiry.schedule_request(
        "my-endpoint", datetime.fromtimestamp(T0 + 900, UTC), role, "op-1"
    )
    with pytest.raises(ClientError) as exc:
        sched.create_schedule(**req)
    assert exc.value.response["Error"]["Code"] == "ResourceNotFoundException"
    group = sched.create_schedule_group(Name=expiry.GROUP, Tags=MANAGED)["ScheduleGroupArn"]
    assert sched.list_tags_for_resource(ResourceArn=group)["Tags"] == MANAGED
    arn = sched.create_schedule(**req)["ScheduleArn"]
    with pytest.raises(ClientError) as exc:
        sched.tag_resource(ResourceArn=arn, Tags=MANAGED)
    assert exc.value.response["Error"]["Code"] == "ValidationException"
    got = sched.get_schedule(Name="my-endpoint", GroupName=expiry.GROUP)
    assert got["ActionAfterCompletion"] == "DELETE"
    harness.clock.advance(900)
    assert [r["outcome"] for r in harness.schedule_runs] == ["succeeded"]
    assert sm.list_endpoints()["Endpoints"] == []
    assert sched.list_schedules(GroupName=expiry.GROUP)["Schedules"] == []
