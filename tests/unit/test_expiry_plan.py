"""The expiry's pure foundation (planning/expiry.py) and what `peagle plan --ttl` shows.

Expected values come from AWS's documentation, written out here (not from the code):
- EventBridge Scheduler runs a one-time schedule within the minute of its time ("60 second
  precision", schedule types page), so the expiry rounds UP to the whole minute;
- CreateSchedule (botocore `scheduler` 2021-06-30): `at(yyyy-mm-ddThh:mm:ss)`,
  FlexibleTimeWindow {Mode: OFF} (required), ActionAfterCompletion DELETE, a universal target
  `arn:aws:scheduler:::aws-sdk:sagemaker:deleteEndpoint` whose Input is the DeleteEndpoint
  request in the API's own member names, RetryPolicy at its maxima (86400 s, 185);
- the execution role's trust names `scheduler.amazonaws.com` with the confused-deputy
  conditions aws:SourceAccount and aws:SourceArn = the schedule GROUP's ARN;
- DeleteEndpoint with autoscaling registered needs application-autoscaling:
  DeregisterScalableTarget (SageMaker guide, "Delete an endpoint with autoscaling").
Every request also passes botocore's own validator (and its patterns, maximums, enums).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

import sm_peagle
from sm_peagle.cli.app import main
from sm_peagle.errors import SpecError
from sm_peagle.planning.expiry import (
    expiry_at,
    parse_expiry,
    permission_policy,
    schedule_request,
    trust_policy,
)
from sm_peagle.planning.spec.model import DeploymentSpec
from sm_peagle.planning.spec.tags import spec_tag_list

MODEL = "gpt-oss-20b"
ACCOUNT = "123456789012"
ROLE = f"arn:aws:iam::{ACCOUNT}:role/peagle-exec"
START = datetime(2026, 11, 30, 1, 0, 10, tzinfo=UTC)  # a deploy's start on AWS's clock


def _problems(service: str, operation: str, request: dict) -> list[str]:
    from peagle_sandbox.testing.moto_validate import problems  # botocore's validator + patterns

    return problems(service, operation, request)


def _json(out: str) -> dict:
    return json.loads(out[: out.index("\n}\n") + 2])


# --- the foundation --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ttl", "expected"),
    [
        ("4h", datetime(2026, 11, 30, 5, 1, tzinfo=UTC)),  # 05:00:10 -> up to 05:01:00
        ("90m", datetime(2026, 11, 30, 2, 31, tzinfo=UTC)),
        ("1d", datetime(2026, 12, 1, 1, 1, tzinfo=UTC)),
        ("1h30m", datetime(2026, 11, 30, 2, 31, tzinfo=UTC)),
        (3600, datetime(2026, 11, 30, 2, 1, tzinfo=UTC)),
        ("3600", datetime(2026, 11, 30, 2, 1, tzinfo=UTC)),
        ("2026-12-01T18:00Z", datetime(2026, 12, 1, 18, 0, tzinfo=UTC)),
        ("2026-12-01T18:00:30Z", datetime(2026, 12, 1, 18, 1, tzinfo=UTC)),
    ],
)
def test_expiry_is_the_start_plus_ttl_rounded_up_to_the_minute(ttl, expected) -> None:
    assert expiry_at(ttl, START) == expected


def test_fifteen_minutes_is_the_shortest_ttl() -> None:
    on_the_minute = datetime(2026, 11, 30, 1, 0, tzinfo=UTC)
    assert expiry_at("15m", on_the_minute) == datetime(2026, 11, 30, 1, 15, tzinfo=UTC)
    assert expiry_at("15m", START) == datetime(2026, 11, 30, 1, 16, tzinfo=UTC)
    with pytest.raises(ValueError, match="15 minutes at least"):
        expiry_at("10m", on_the_minute)
    with pytest.raises(ValueError, match="in the past"):
        expiry_at("2026-11-30T00:00Z", on_the_minute)
    with pytest.raises(ValueError, match="15 minutes at least"):
        expiry_at("2026-11-30T01:10Z", on_the_minute)  # the future, but 10 minutes away


@pytest.mark.parametrize(
    ("value", "parsed"),
    [
        ("4h", ("relative", 14400.0)),
        ("90m", ("relative", 5400.0)),
        ("1d", ("relative", 86400.0)),
        ("1h30m", ("relative", 5400.0)),
        ("45s", ("relative", 45.0)),
        (900, ("relative", 900.0)),
        ("2026-12-01T18:00Z", ("absolute", datetime(2026, 12, 1, 18, tzinfo=UTC).timestamp())),
        ("2026-12-01T18:00", ("absolute", datetime(2026, 12, 1, 18, tzinfo=UTC).timestamp())),
    ],
)
def test_parse_forms(value, parsed) -> None:
    assert parse_expiry(value) == parsed


@pytest.mark.parametrize("value", ["abc", "", "4 hours", "-1h", "h", True, 0, -5])
def test_unparseable_ttls_are_refused(value) -> None:
    with pytest.raises(ValueError):
        parse_expiry(value)


def test_the_exact_create_schedule_for_an_endpoint() -> None:
    expires = expiry_at("4h", START)
    role = f"arn:aws:iam::{ACCOUNT}:role/peagle-ttl-deleter"
    request = schedule_request("my-endpoint", expires, role, "op-20261130T010010Z-3f9a1c")
    assert request == {
        "Name": "my-endpoint",
        "GroupName": "peagle",
        "ScheduleExpression": "at(2026-11-30T05:01:00)",
        "ScheduleExpressionTimezone": "UTC",
        "FlexibleTimeWindow": {"Mode": "OFF"},
        "ActionAfterCompletion": "DELETE",
        "State": "ENABLED",
        "Description": "peagle ttl: endpoint=my-endpoint op=op-20261130T010010Z-3f9a1c "
        "expires=2026-11-30T05:01:00Z",
        "Target": {
            "Arn": "arn:aws:scheduler:::aws-sdk:sagemaker:deleteEndpoint",
            "RoleArn": role,
            "Input": '{"EndpointName":"my-endpoint"}',
            "RetryPolicy": {"MaximumEventAgeInSeconds": 86400, "MaximumRetryAttempts": 185},
        },
    }
    # UpdateSchedule resets what it is not given, so `update --ttl` sends the whole request
    assert _problems("scheduler", "CreateSchedule", request) == []
    assert _problems("scheduler", "UpdateSchedule", request) == []


def test_the_exact_create_schedule_for_a_component_five_minutes_earlier() -> None:
    expires = expiry_at("4h", START)
    role = f"arn:aws-cn:iam::{ACCOUNT}:role/peagle-ttl-deleter"
    request = schedule_request(
        "my-endpoint", expires, role, "op-1", partition="aws-cn", component="my-endpoint-p-eagle"
    )
    assert request == {
        "Name": "my-endpoint-p-eagle",
        "GroupName": "peagle-components",
        "ScheduleExpression": "at(2026-11-30T04:56:00)",
        "ScheduleExpressionTimezone": "UTC",
        "FlexibleTimeWindow": {"Mode": "OFF"},
        "ActionAfterCompletion": "DELETE",
        "State": "ENABLED",
        "Description": "peagle ttl: component=my-endpoint-p-eagle endpoint=my-endpoint op=op-1 "
        "expires=2026-11-30T05:01:00Z",
        "Target": {
            # China's universal targets use the aws-cn partition
            "Arn": "arn:aws-cn:scheduler:::aws-sdk:sagemaker:deleteInferenceComponent",
            "RoleArn": role,
            "Input": '{"InferenceComponentName":"my-endpoint-p-eagle"}',
            "RetryPolicy": {"MaximumEventAgeInSeconds": 86400, "MaximumRetryAttempts": 185},
        },
    }
    assert _problems("scheduler", "CreateSchedule", request) == []


def test_the_role_trusts_scheduler_for_peagle_groups_and_deletes_only_peagle_endpoints() -> None:
    assert trust_policy(ACCOUNT) == {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "SchedulerAssumesRole",
                "Effect": "Allow",
                "Principal": {"Service": "scheduler.amazonaws.com"},
                "Action": "sts:AssumeRole",
                "Condition": {
                    "StringEquals": {"aws:SourceAccount": ACCOUNT},
                    # the group's ARN, not a schedule's (Scheduler's confused-deputy page)
                    "ArnLike": {
                        "aws:SourceArn": f"arn:aws:scheduler:*:{ACCOUNT}:schedule-group/peagle*"
                    },
                },
            }
        ],
    }
    assert permission_policy(ACCOUNT) == {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "DeleteExpiredPeagleEndpoints",
                "Effect": "Allow",
                "Action": ["sagemaker:DeleteEndpoint", "sagemaker:DeleteInferenceComponent"],
                "Resource": [
                    f"arn:aws:sagemaker:*:{ACCOUNT}:endpoint/*",
                    f"arn:aws:sagemaker:*:{ACCOUNT}:inference-component/*",
                ],
                "Condition": {"StringEquals": {"aws:ResourceTag/peagle:managed": "true"}},
            },
            {
                "Sid": "DeregisterScalingOfExpiredEndpoints",
                "Effect": "Allow",
                "Action": "application-autoscaling:DeregisterScalableTarget",
                "Resource": "*",
            },
        ],
    }


def test_ttl_is_outside_the_spec_hash_and_the_spec_tags() -> None:
    base = {"model": MODEL, "role": ROLE}
    with_ttl = {**base, "endpoint": {"ttl": "4h", "ttl_role": ROLE}}
    a, b = DeploymentSpec.model_validate(base), DeploymentSpec.model_validate(with_ttl)
    assert a.sha256() == b.sha256()
    assert spec_tag_list(a) == spec_tag_list(b)
    assert not [t for t in spec_tag_list(b) if "ttl" in t["Key"] or "ttl" in t["Value"]]
    # so the plans' names (they carry the hash) are the same too
    assert sm_peagle.plan(base).names == sm_peagle.plan(with_ttl).names


# --- plan --ttl ------------------------------------------------------------------------------


def test_cli_and_sdk_plan_the_same_expiry(capsys) -> None:
    assert main(["plan", MODEL, "--role", ROLE, "--ttl", "4h", "--json"]) == 0
    cli = _json(capsys.readouterr().out)
    sdk = sm_peagle.plan(MODEL, role=ROLE, ttl="4h").to_dict()
    assert cli["expiry"] == sdk["expiry"]
    e = cli["expiry"]
    endpoint = cli["names"]["endpoint"]
    role = f"arn:aws:iam::{ACCOUNT}:role/peagle-ttl-deleter"  # the execution role's account
    assert e["expires"] == "deploy start + 4h"
    assert e["role"] == role and e["own_role"] is True
    assert e["trust_policy"] == trust_policy(ACCOUNT)
    assert e["permission_policy"] == permission_policy(ACCOUNT)
    assert e["create_schedule_groups"] == [
        {"Name": "peagle", "Tags": [{"Key": "peagle:managed", "Value": "true"}]}
    ]
    create_role, put_policy = e["role_requests"]
    assert create_role["operation"] == "CreateRole"
    assert create_role["request"]["RoleName"] == "peagle-ttl-deleter"
    assert json.loads(create_role["request"]["AssumeRolePolicyDocument"]) == trust_policy(ACCOUNT)
    assert create_role["request"]["Tags"] == [{"Key": "peagle:managed", "Value": "true"}]
    assert put_policy["operation"] == "PutRolePolicy"
    assert json.loads(put_policy["request"]["PolicyDocument"]) == permission_policy(ACCOUNT)
    for item in e["role_requests"]:
        assert _problems("iam", item["operation"], item["request"]) == []
    (schedule,) = e["create_schedules"]
    # a plan has no deploy time: the instant is said in words, the rest is deploy's request
    assert schedule["ScheduleExpression"] == "at(<deploy start + 4h, rounded up to the minute>)"
    assert schedule["Target"] == {
        "Arn": "arn:aws:scheduler:::aws-sdk:sagemaker:deleteEndpoint",
        "RoleArn": role,
        "Input": json.dumps({"EndpointName": endpoint}, separators=(",", ":")),
        "RetryPolicy": {"MaximumEventAgeInSeconds": 86400, "MaximumRetryAttempts": 185},
    }
    assert schedule["ActionAfterCompletion"] == "DELETE"
    assert schedule["FlexibleTimeWindow"] == {"Mode": "OFF"}
    assert e["tags"] == [{"Key": "peagle:expires", "Value": "<deploy start + 4h>"}]
    assert any("a plan has no deploy time" in n for n in e["notes"])
    checks = {c["name"]: c for c in cli["checks"]}
    assert checks["expiry"]["status"] == "pass"
    assert checks["aws.request_shapes"]["status"] == "pass"


def test_without_a_ttl_the_plan_has_no_expiry() -> None:
    doc = sm_peagle.plan(MODEL).to_dict()
    assert doc["expiry"] is None
    assert "expiry" not in {c["name"] for c in doc["checks"]}


def test_an_absolute_ttl_is_shown_as_its_instant() -> None:
    e = sm_peagle.plan(MODEL, role=ROLE, ttl="2026-12-01T18:00:30Z").expiry
    assert e.expires == "2026-12-01T18:01:00Z"
    (schedule,) = e.schedules
    assert schedule["ScheduleExpression"] == "at(2026-12-01T18:01:00)"
    assert _problems("scheduler", "CreateSchedule", schedule) == []


def test_ttl_role_is_used_as_given_and_tagged() -> None:
    theirs = f"arn:aws:iam::{ACCOUNT}:role/team-scheduler"
    e = sm_peagle.plan(MODEL, role=ROLE, ttl="4h", ttl_role=theirs).expiry
    assert e.own_role is False
    assert e.role_requests == []  # never made, never edited
    assert [s["Target"]["RoleArn"] for s in e.schedules] == [theirs]
    assert {"Key": "peagle:expires-role", "Value": theirs} in e.tags


def test_a_component_endpoint_schedules_each_component_first() -> None:
    p = sm_peagle.plan(
        MODEL, role=ROLE, instance_type="ml.g7e.2xlarge", components=["p-eagle:k=7", "baseline"],
        ttl="2026-12-01T18:00Z",
    )  # fmt: skip
    names = [ic["InferenceComponentName"] for ic in p.inference_components]
    e = p.expiry
    assert [(s["GroupName"], s["Name"]) for s in e.schedules] == [
        *(("peagle-components", n) for n in names),
        ("peagle", p.names["endpoint"]),
    ]
    assert [s["ScheduleExpression"] for s in e.schedules] == [
        "at(2026-12-01T17:55:00)", "at(2026-12-01T17:55:00)", "at(2026-12-01T18:00:00)",
    ]  # fmt: skip
    assert [g["Name"] for g in e.group_requests] == ["peagle", "peagle-components"]
    assert {c.name: c.status for c in p.checks}["aws.request_shapes"] == "pass"


def test_text_shows_the_schedules_first_and_the_role_and_its_policies(capsys) -> None:
    assert main(["plan", MODEL, "--role", ROLE, "--ttl", "4h"]) == 0
    out = capsys.readouterr().out
    requests = out[out.index("Requests deploy sends") :]
    headings = [ln for ln in requests.splitlines() if ln and not ln.startswith(" ")]
    assert headings[1:6] == [
        "CreateScheduleGroup  (scheduler; only if peagle does not exist)",
        "CreateRole  (iam; only if the role does not exist yet)",
        "PutRolePolicy  (iam; only if the role does not exist yet)",
        "CreateSchedule  (scheduler; deletes the endpoint at its expiry)",
        "CreateModel",
    ]
    block = out[out.index("Expiry (endpoint.ttl") :]
    assert "expires: deploy start + 4h" in block
    assert f"role: arn:aws:iam::{ACCOUNT}:role/peagle-ttl-deleter" in block
    assert "Service: scheduler.amazonaws.com" in block
    assert "- sagemaker:DeleteEndpoint" in block
    assert "note: a plan has no deploy time" in block


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("10m", "shorter than 15 minutes"),
        ("0", "shorter than 15 minutes"),
        ("abc", "is not a duration"),
        ("4 hours", "is not a duration"),
    ],
)
def test_bad_ttls_exit_2_from_cli_and_raise_from_sdk(capsys, value, says) -> None:
    assert main(["plan", MODEL, "--ttl", value]) == 2
    err = capsys.readouterr().err
    (line,) = [ln for ln in err.splitlines() if ln.strip()]
    assert line.startswith("error: endpoint.ttl: ") and says in line and "(fix: " in line
    with pytest.raises(SpecError, match=says) as raised:
        sm_peagle.plan(MODEL, ttl=value)
    assert raised.value.field == "ttl"


def test_a_short_ttl_names_the_flag_at_the_cli_and_the_keyword_in_python(capsys) -> None:
    assert main(["plan", MODEL, "--ttl", "10m"]) == 2
    assert "(fix: give --ttl 15m or longer)" in capsys.readouterr().err
    with pytest.raises(SpecError) as raised:
        sm_peagle.plan(MODEL, ttl="10m")
    assert str(raised.value.remedy) == "give ttl='15m' or longer"


def test_a_bad_ttl_role_exits_2(capsys) -> None:
    assert main(["plan", MODEL, "--ttl", "4h", "--ttl-role", "team-scheduler"]) == 2
    assert "endpoint.ttl_role" in capsys.readouterr().err
    with pytest.raises(SpecError, match="ttl_role"):
        sm_peagle.plan(MODEL, ttl="4h", ttl_role="team-scheduler")
