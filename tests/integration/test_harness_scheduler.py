"""The moto harness's EventBridge Scheduler front door (issue 39): requests are checked as
AWS checks them, with AWS's error shapes. In process (`mock_aws`), boto3 against the
harness; a client with `parameter_validation=False` sends what boto3 would refuse, as a
raw caller could.

Expected values come from botocore 1.44.8's `scheduler` model (required members, enums,
patterns, the error list) and the API reference's words: "if you do not set an optional
field in your request, that field will be set to its system-default value after the
update" (UpdateSchedule); "You can only assign tags to schedule groups" (TagResource).
Stock moto 5.2.5 fails each of these (research §3.1): KeyError on a missing group, the old
ActionAfterCompletion kept, State None, anything accepted.
"""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from peagle_sandbox.sandbox_clock import SandboxClock
from peagle_sandbox.testing.moto_sagemaker import SageMakerHarness

REGION = "us-east-1"
ACCOUNT = "123456789012"  # moto's default account
T0 = 1_800_000_000  # 2027-01-15 08:00:00 UTC
ROLE = f"arn:aws:iam::{ACCOUNT}:role/peagle-ttl-deleter"
TARGET = "arn:aws:scheduler:::aws-sdk:sagemaker:deleteEndpoint"


@pytest.fixture
def harness(sagemaker_harness: SageMakerHarness) -> SageMakerHarness:
    sagemaker_harness.clock = SandboxClock(frozen=True, start=T0)
    return sagemaker_harness


def _client(validate: bool = True) -> Any:
    cfg = Config(parameter_validation=validate)
    return boto3.client("scheduler", region_name=REGION, config=cfg)


def _request(**over: Any) -> dict[str, Any]:
    req: dict[str, Any] = {
        "Name": "my-endpoint",
        "GroupName": "peagle",
        "ScheduleExpression": "at(2027-01-15T09:00:00)",
        "ScheduleExpressionTimezone": "UTC",
        "FlexibleTimeWindow": {"Mode": "OFF"},
        "ActionAfterCompletion": "DELETE",
        "State": "ENABLED",
        "Target": {
            "Arn": TARGET,
            "RoleArn": ROLE,
            "Input": '{"EndpointName":"my-endpoint"}',
            "RetryPolicy": {"MaximumEventAgeInSeconds": 86400, "MaximumRetryAttempts": 185},
        },
    }
    req.update(over)
    return req


def _error(exc: pytest.ExceptionInfo[ClientError]) -> tuple[str, str]:
    err = exc.value.response["Error"]
    return err["Code"], err["Message"]


def test_create_schedule_into_a_missing_group_is_resource_not_found(harness: Any) -> None:
    with pytest.raises(ClientError) as exc:
        _client().create_schedule(**_request())
    code, message = _error(exc)
    assert code == "ResourceNotFoundException"
    assert "peagle" in message
    assert exc.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404


@pytest.mark.parametrize(
    ("change", "where"),
    [
        ({"Name": "bad name!"}, "Name"),
        ({"ScheduleExpression": "x" * 257}, "ScheduleExpression"),
        ({"FlexibleTimeWindow": {"Mode": "WHATEVER"}}, "FlexibleTimeWindow.Mode"),
        ({"ActionAfterCompletion": "EXPLODE"}, "ActionAfterCompletion"),
        ({"Target": {"Arn": TARGET, "RoleArn": "b"}}, "Target.RoleArn"),
    ],
)
def test_requests_breaking_the_model_are_refused_as_validation_errors(
    harness: Any, change: dict[str, Any], where: str
) -> None:
    client = _client(validate=False)
    client.create_schedule_group(Name="peagle")
    with pytest.raises(ClientError) as exc:
        client.create_schedule(**_request(**change))
    code, message = _error(exc)
    assert code == "ValidationException"
    assert message.startswith("1 validation error detected: ")
    assert f"at '{where}' failed to satisfy constraint" in message
    assert client.list_schedules()["Schedules"] == []


def test_a_missing_required_member_is_refused(harness: Any) -> None:
    client = _client(validate=False)
    client.create_schedule_group(Name="peagle")
    req = _request()
    del req["FlexibleTimeWindow"]  # required by the model; OFF is not a default
    with pytest.raises(ClientError) as exc:
        client.create_schedule(**req)
    assert _error(exc)[0] == "ValidationException"
    assert "FlexibleTimeWindow" in _error(exc)[1]


def test_a_nonsense_expression_is_refused(harness: Any) -> None:
    client = _client()
    client.create_schedule_group(Name="peagle")
    with pytest.raises(ClientError) as exc:
        client.create_schedule(**_request(ScheduleExpression="at(nonsense)"))
    assert _error(exc)[0] == "ValidationException"


def test_the_expiry_request_is_accepted_and_echoed(harness: Any) -> None:
    client = _client()
    client.create_schedule_group(Name="peagle")
    arn = client.create_schedule(**_request())["ScheduleArn"]
    assert arn == f"arn:aws:scheduler:{REGION}:{ACCOUNT}:schedule/peagle/my-endpoint"
    got = client.get_schedule(Name="my-endpoint", GroupName="peagle")
    assert got["ActionAfterCompletion"] == "DELETE"
    assert got["Target"]["Input"] == '{"EndpointName":"my-endpoint"}'
    assert got["FlexibleTimeWindow"] == {"Mode": "OFF"}


def test_update_schedule_resets_what_it_omits(harness: Any) -> None:
    client = _client()
    client.create_schedule_group(Name="peagle")
    client.create_schedule(**_request(Description="peagle ttl: endpoint=my-endpoint"))
    client.update_schedule(
        Name="my-endpoint",
        GroupName="peagle",
        ScheduleExpression="at(2027-01-15T10:00:00)",
        FlexibleTimeWindow={"Mode": "OFF"},
        Target={"Arn": TARGET, "RoleArn": ROLE, "Input": '{"EndpointName":"my-endpoint"}'},
    )
    got = client.get_schedule(Name="my-endpoint", GroupName="peagle")
    assert got["ScheduleExpression"] == "at(2027-01-15T10:00:00)"
    assert got.get("ActionAfterCompletion") == "NONE"  # no longer DELETE
    assert got["State"] == "ENABLED"
    assert "Description" not in got or got["Description"] in (None, "")


def test_update_schedule_keeps_what_it_resends(harness: Any) -> None:
    client = _client()
    client.create_schedule_group(Name="peagle")
    client.create_schedule(**_request())
    client.update_schedule(**_request(ScheduleExpression="at(2027-01-15T10:00:00)"))
    got = client.get_schedule(Name="my-endpoint", GroupName="peagle")
    assert got["ActionAfterCompletion"] == "DELETE"
    assert got["ScheduleExpression"] == "at(2027-01-15T10:00:00)"


def test_tags_go_on_groups_only(harness: Any) -> None:
    client = _client()
    group_arn = client.create_schedule_group(Name="peagle")["ScheduleGroupArn"]
    arn = client.create_schedule(**_request())["ScheduleArn"]
    with pytest.raises(ClientError) as exc:
        client.tag_resource(ResourceArn=arn, Tags=[{"Key": "peagle:managed", "Value": "true"}])
    assert _error(exc)[0] == "ValidationException"
    client.tag_resource(ResourceArn=group_arn, Tags=[{"Key": "peagle:managed", "Value": "true"}])
    tags = client.list_tags_for_resource(ResourceArn=group_arn)["Tags"]
    assert tags == [{"Key": "peagle:managed", "Value": "true"}]
    missing = group_arn.replace("/peagle", "/nope")
    with pytest.raises(ClientError) as exc:
        client.tag_resource(ResourceArn=missing, Tags=[{"Key": "a", "Value": "b"}])
    assert _error(exc)[0] == "ResourceNotFoundException"


def test_group_conflicts_and_missing_groups(harness: Any) -> None:
    client = _client()
    client.create_schedule_group(Name="peagle")
    client.create_schedule(**_request())
    with pytest.raises(ClientError) as exc:
        client.create_schedule_group(Name="peagle")
    assert _error(exc)[0] == "ConflictException"
    # The schedule survived the refused re-creation.
    assert client.get_schedule(Name="my-endpoint", GroupName="peagle")["Name"] == "my-endpoint"
    with pytest.raises(ClientError) as exc:
        client.delete_schedule_group(Name="nope")
    assert _error(exc)[0] == "ResourceNotFoundException"
    with pytest.raises(ClientError) as exc:
        client.delete_schedule(Name="my-endpoint", GroupName="nope")
    assert _error(exc)[0] == "ResourceNotFoundException"
