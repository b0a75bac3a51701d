"""Endpoints that expire (issue 39): the exact EventBridge Scheduler and IAM requests a
`deploy --ttl` sends, their order around CreateEndpoint, the rollback, and `delete`.

Expected values are written out here from AWS's documented shapes (EventBridge Scheduler's
universal targets page: `arn:aws:scheduler:::aws-sdk:<service>:<apiAction>` and an Input of
the API's own JSON; its execution-role page: trust `scheduler.amazonaws.com` with the
aws:SourceAccount / aws:SourceArn (schedule-group ARN) conditions; botocore's RetryPolicy
maxima 86400 s / 185) and from the lead's decisions (design39: group `peagle`, role
`peagle-ttl-deleter`, expiry rounded up to the minute, the components' schedules 5 minutes
earlier), never from the code under test. Each request also passes botocore's validator."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.validate import ParamValidator

import sm_peagle
from peagle_sandbox.sandbox_clock import SandboxClock
from tests.integration.lifecycle_env import REGION, World, record_requests, run

NAME = "peagle-gpt-oss-20b-p-eagle"
ACCOUNT = "123456789012"  # moto's
ROLE = f"arn:aws:iam::{ACCOUNT}:role/peagle-ttl-deleter"
# The deploy starts at 01:00:10 on AWS's clock: 4 h later is 05:00:10, rounded up to the
# minute a schedule fires in.
START = datetime(2026, 11, 30, 1, 0, 10, tzinfo=UTC).timestamp()
EXPIRES = "2026-11-30T05:01:00Z"
SCHEDULER_OPS = ("CreateScheduleGroup", "CreateSchedule", "DeleteSchedule", "UpdateSchedule")
IAM_OPS = ("CreateRole", "PutRolePolicy")

TRUST = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Sid": "SchedulerAssumesRole",
            "Effect": "Allow",
            "Principal": {"Service": "scheduler.amazonaws.com"},
            "Action": "sts:AssumeRole",
            "Condition": {
                "StringEquals": {"aws:SourceAccount": ACCOUNT},
                "ArnLike": {
                    "aws:SourceArn": f"arn:aws:scheduler:*:{ACCOUNT}:schedule-group/peagle*"
                },
            },
        }
    ],
}
PERMISSIONS = {
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


@pytest.fixture
def ttl(world: World, sagemaker_harness: Any, monkeypatch: pytest.MonkeyPatch) -> World:
    sagemaker_harness.clock = SandboxClock(start=START, frozen=True)
    record_requests(world, monkeypatch, "scheduler", "iam")
    return world


def valid(service: str, operation: str, params: dict) -> None:
    """The request passes botocore's own validator for the operation's input shape."""
    model = boto3.client(service, region_name=REGION).meta.service_model
    report = ParamValidator().validate(params, model.operation_model(operation).input_shape)
    assert not report.has_errors(), report.generate_report()


def ops(world: World, *names: str) -> list[str]:
    return [op for op, _ in world.requests if not names or op in names]


def schedules() -> dict[str, list[str]]:
    sch = boto3.client("scheduler", region_name=REGION)
    out: dict[str, list[str]] = {}
    for g in sch.list_schedule_groups()["ScheduleGroups"]:
        names = [s["Name"] for s in sch.list_schedules(GroupName=g["Name"])["Schedules"]]
        if names:
            out[g["Name"]] = names
    return out


def endpoint_tags() -> dict[str, str]:
    sm = boto3.client("sagemaker", region_name=REGION)
    arn = sm.describe_endpoint(EndpointName=NAME)["EndpointArn"]
    return {t["Key"]: t["Value"] for t in sm.list_tags(ResourceArn=arn)["Tags"]}


def without_token(req: dict[str, Any]) -> dict[str, Any]:
    # botocore fills ClientToken (idempotencyToken) with a random value
    return {k: v for k, v in req.items() if k != "ClientToken"}


def test_deploy_ttl_sends_the_exact_schedule_and_role_before_create_endpoint(ttl):
    sm_peagle.deploy("gpt-oss-20b", ttl="4h", role=ttl.role_arn, region=REGION)
    order = ops(ttl)
    # group and role, then the schedule, all before the models and CreateEndpoint
    assert order.index("CreateSchedule") < order.index("CreateModel")
    assert order.index("CreateSchedule") < order.index("CreateEndpoint")
    assert ops(ttl, *SCHEDULER_OPS, *IAM_OPS) == [
        "CreateScheduleGroup",
        "CreateRole",
        "PutRolePolicy",
        "CreateSchedule",
    ]
    (group,) = ttl.sent("CreateScheduleGroup")
    valid("scheduler", "CreateScheduleGroup", group)
    assert group == {"Name": "peagle", "Tags": [{"Key": "peagle:managed", "Value": "true"}]}

    (role,) = ttl.sent("CreateRole")
    valid("iam", "CreateRole", role)
    assert role["RoleName"] == "peagle-ttl-deleter"
    assert json.loads(role["AssumeRolePolicyDocument"]) == TRUST
    assert {"Key": "peagle:managed", "Value": "true"} in role["Tags"]
    (policy,) = ttl.sent("PutRolePolicy")
    valid("iam", "PutRolePolicy", policy)
    assert policy["RoleName"] == "peagle-ttl-deleter"
    assert json.loads(policy["PolicyDocument"]) == PERMISSIONS

    (create,) = ttl.sent("CreateSchedule")
    valid("scheduler", "CreateSchedule", create)
    op = endpoint_tags()["peagle:operation"]
    assert without_token(create) == {
        "Name": NAME,
        "GroupName": "peagle",
        "ScheduleExpression": "at(2026-11-30T05:01:00)",
        "ScheduleExpressionTimezone": "UTC",
        "FlexibleTimeWindow": {"Mode": "OFF"},
        "ActionAfterCompletion": "DELETE",
        "State": "ENABLED",
        "Description": f"peagle ttl: endpoint={NAME} op={op} expires={EXPIRES}",
        "Target": {
            "Arn": "arn:aws:scheduler:::aws-sdk:sagemaker:deleteEndpoint",
            "RoleArn": ROLE,
            "Input": json.dumps({"EndpointName": NAME}, separators=(",", ":")),
            "RetryPolicy": {"MaximumEventAgeInSeconds": 86400, "MaximumRetryAttempts": 185},
        },
    }
    (ep,) = ttl.sent("CreateEndpoint")
    assert {"Key": "peagle:expires", "Value": EXPIRES} in ep["Tags"]
    assert not any(t["Key"] == "peagle:expires-role" for t in ep["Tags"])
    assert schedules() == {"peagle": [NAME]}


def test_a_second_ttl_deploy_reuses_the_group_and_the_role(ttl, capsys):
    sm_peagle.deploy("gpt-oss-20b", ttl="4h", role=ttl.role_arn, region=REGION)
    assert run(capsys, "delete", NAME, "--yes")[0] == 0
    ttl.requests.clear()
    sm_peagle.deploy("gpt-oss-20b", ttl="4h", role=ttl.role_arn, region=REGION)
    assert ops(ttl, *SCHEDULER_OPS, *IAM_OPS) == ["CreateSchedule"]


def test_a_role_left_without_its_policy_gets_it_back_on_the_next_ttl_deploy(ttl):
    """CreateRole went through and PutRolePolicy did not (a boundary, an interrupt): every
    schedule would run without permission. The next deploy writes the policy again."""
    iam = boto3.client("iam", region_name=REGION)
    iam.create_role(
        RoleName="peagle-ttl-deleter", AssumeRolePolicyDocument=json.dumps(TRUST),
        Tags=[{"Key": "peagle:managed", "Value": "true"}],
    )  # fmt: skip
    ttl.requests.clear()
    sm_peagle.deploy("gpt-oss-20b", ttl="4h", role=ttl.role_arn, region=REGION)
    (put,) = ttl.sent("PutRolePolicy")
    assert json.loads(put["PolicyDocument"]) == PERMISSIONS
    assert ops(ttl, "CreateRole") == []
    ttl.requests.clear()
    sm_peagle.delete(NAME)
    sm_peagle.deploy("gpt-oss-20b", ttl="4h", role=ttl.role_arn, region=REGION)
    assert ops(ttl, "PutRolePolicy") == []  # whole now: read, not written


def test_ttl_role_is_used_as_given_and_never_created(ttl):
    iam = boto3.client("iam", region_name=REGION)
    mine = iam.create_role(RoleName="my-deleter", AssumeRolePolicyDocument=json.dumps(TRUST))
    arn = mine["Role"]["Arn"]
    sm_peagle.deploy("gpt-oss-20b", ttl="4h", ttl_role=arn, role=ttl.role_arn, region=REGION)
    assert not ops(ttl, *IAM_OPS)
    (create,) = ttl.sent("CreateSchedule")
    assert create["Target"]["RoleArn"] == arn
    (ep,) = ttl.sent("CreateEndpoint")
    assert {"Key": "peagle:expires-role", "Value": arn} in ep["Tags"]


@pytest.mark.parametrize("bad", ["10m", "14m", "2020-01-01T00:00Z", "2026-11-30T01:10Z"])
def test_a_short_or_past_ttl_is_exit_2_with_nothing_sent(ttl, capsys, bad):
    code, out, err = run(capsys, "deploy", "gpt-oss-20b", "--ttl", bad, "--yes")
    assert code == 2
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "(fix: " in errors[0] and "Traceback" not in err
    assert "ttl" in errors[0].lower() or "expire" in errors[0]
    # nothing sent: not even the preflight's reads of the plan's resources
    sent = ops(ttl)
    assert not [op for op in sent if not op.startswith("GetCallerIdentity")], sent


def test_delete_removes_the_schedule_once_the_endpoint_is_gone(ttl, capsys):
    """After DeleteEndpoint, not before: a delete that fails or is stopped before it
    leaves the endpoint with its expiry."""
    sm_peagle.deploy("gpt-oss-20b", ttl="4h", role=ttl.role_arn, region=REGION)
    ttl.requests.clear()
    code, _, err = run(capsys, "delete", NAME, "--yes")
    assert code == 0, err
    order = ops(ttl)
    assert order.index("DeleteEndpoint") < order.index("DeleteSchedule")
    (gone,) = ttl.sent("DeleteSchedule")
    valid("scheduler", "DeleteSchedule", without_token(gone))
    assert without_token(gone) == {"Name": NAME, "GroupName": "peagle"}
    assert schedules() == {}


def test_delete_dry_run_lists_the_schedule_and_sends_nothing(ttl, capsys):
    sm_peagle.deploy("gpt-oss-20b", ttl="4h", role=ttl.role_arn, region=REGION)
    ttl.requests.clear()
    code, out, err = run(capsys, "delete", NAME, "--dry-run")
    assert code == 0, err
    assert out.splitlines()[0].startswith(f"would delete: schedule peagle/{NAME}, {NAME}")
    assert ops(ttl, "DeleteSchedule", "CreateSchedule", "UpdateSchedule") == []
    assert schedules() == {"peagle": [NAME]}


def test_delete_of_an_endpoint_without_a_ttl_sends_no_delete_schedule(ttl, capsys):
    """Nothing to remove, nothing sent: the schedule is read (GetSchedule), not blindly
    deleted."""
    sm_peagle.deploy("gpt-oss-20b", role=ttl.role_arn, region=REGION)
    ttl.requests.clear()
    code, _, err = run(capsys, "delete", NAME, "--yes")
    assert code == 0, err
    assert ops(ttl, "DeleteSchedule") == [] and ops(ttl, "GetSchedule") == ["GetSchedule"]


def test_a_rolled_back_deploy_removes_its_schedule(ttl, monkeypatch, capsys):
    from tests.integration.test_operations import inject

    inject(monkeypatch, "before-call.sagemaker.CreateEndpoint", _boom)
    with pytest.raises(Exception, match="CreateEndpoint failed"):
        sm_peagle.deploy("gpt-oss-20b", ttl="4h", role=ttl.role_arn, region=REGION)
    assert "CreateSchedule" in ops(ttl)
    assert schedules() == {}


def _boom() -> None:
    raise RuntimeError("CreateEndpoint failed")


def test_a_stale_schedule_of_the_name_is_removed_by_the_next_deploy(ttl, sagemaker_harness):
    """An endpoint deleted outside peagle leaves its schedule; without this the new
    endpoint of the same name would be deleted at the old time."""
    sm_peagle.deploy("gpt-oss-20b", ttl="4h", role=ttl.role_arn, region=REGION)
    _delete_by_hand()
    sagemaker_harness.clock.advance(11 * 60)  # older than a racing deploy's (10 minutes)
    ttl.requests.clear()
    sm_peagle.deploy("gpt-oss-20b", role=ttl.role_arn, region=REGION)  # no TTL this time
    assert ops(ttl, *SCHEDULER_OPS) == ["DeleteSchedule"]
    assert schedules() == {}


def test_a_schedule_written_just_now_may_be_a_racing_deploy_s_and_stays(ttl, capsys):
    """Two deploys of one name at once: the second must not delete the first's schedule,
    neither as stale (its endpoint is not there yet) nor in its own rollback."""
    sm_peagle.deploy("gpt-oss-20b", ttl="4h", role=ttl.role_arn, region=REGION)
    _delete_by_hand()  # the first deploy's endpoint "not yet created", as seen by the second
    ttl.requests.clear()
    with pytest.raises(sm_peagle.PeagleError) as e:
        sm_peagle.deploy("gpt-oss-20b", ttl="4h", role=ttl.role_arn, region=REGION)
    assert "ConflictException" in str(e.value) or "already exists" in str(e.value), e.value
    assert ops(ttl, "DeleteSchedule") == []
    assert schedules() == {"peagle": [NAME]}


def test_status_and_ls_show_the_expiry_on_aws_s_clock(ttl, sagemaker_harness, capsys):
    sm_peagle.deploy("gpt-oss-20b", ttl="4h", role=ttl.role_arn, region=REGION)
    st = sm_peagle.status(NAME)
    # 01:00:10 on a frozen AWS clock -> 05:01:00 is 4h50s away (AWS's Date header is to
    # the second and peagle adds the local time since it: the last second may be spent)
    left = range(4 * 3600 + 49, 4 * 3600 + 51)
    assert (st.expires_at, st.expiry) == (EXPIRES, "scheduled") and st.expires_in_s in left
    (row,) = sm_peagle.ls()
    assert (row.expires_at, row.expiry) == (EXPIRES, "scheduled") and row.expires_in_s in left
    code, out, _ = run(capsys, "ls", "--json")
    assert code == 0
    (doc,) = json.loads(out)
    assert doc["expires_at"] == EXPIRES and doc["expires_in_s"] in left
    code, out, _ = run(capsys, "ls")
    assert code == 0 and "4h00m" in out  # the countdown column
    code, out, _ = run(capsys, "status", NAME)
    assert code == 0 and EXPIRES in out


def test_an_endpoint_still_there_after_its_expiry_is_overdue_with_the_remedy(
    ttl, sagemaker_harness, capsys
):
    """A role Scheduler may not assume (it trusts SageMaker only): the harness's attempts
    fail, the endpoint outlives its expiry, as on AWS."""
    iam = boto3.client("iam", region_name=REGION)
    sagemaker_only = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": "sagemaker.amazonaws.com"},
                "Action": "sts:AssumeRole",
            }
        ],
    }
    bad = iam.create_role(
        RoleName="not-for-scheduler", AssumeRolePolicyDocument=json.dumps(sagemaker_only)
    )["Role"]["Arn"]
    sm_peagle.deploy("gpt-oss-20b", ttl="4h", ttl_role=bad, role=ttl.role_arn, region=REGION)
    sagemaker_harness.clock.advance(4 * 3600 + 50 + 121)  # 2 min 1 s past the expiry
    st = sm_peagle.status(NAME)
    assert st.expiry == "overdue" and st.expires_in_s in (-121, -122)
    assert "scheduled deletion has not happened" in st.expiry_problem
    assert f"peagle/{NAME} remains" in st.expiry_problem
    code, out, err = run(capsys, "status", NAME)
    assert code == 0
    assert f"peagle delete {NAME}" in out + err


MUTATING = ("Create", "Update", "Delete", "Put", "Add", "Tag", "Untag", "Register")


def mutations(world: World) -> list[str]:
    return [op for op in ops(world) if op.startswith(MUTATING)]


def test_update_ttl_sends_only_update_schedule_and_the_tag(ttl, sagemaker_harness, capsys):
    sm_peagle.deploy("gpt-oss-20b", ttl="4h", role=ttl.role_arn, region=REGION)
    sagemaker_harness.clock.advance(3600)  # AWS's now: 02:00:10
    ttl.requests.clear()
    code, out, err = run(capsys, "update", NAME, "--ttl", "2h", "--yes", "--json")
    assert code == 0, err
    assert mutations(ttl) == ["UpdateSchedule", "AddTags"]
    (upd,) = ttl.sent("UpdateSchedule")
    valid("scheduler", "UpdateSchedule", upd)
    new = "2026-11-30T04:01:00Z"  # 02:00:10 + 2 h, rounded up to the minute
    # the whole request (UpdateSchedule resets what it is not given)
    assert upd["ScheduleExpression"] == "at(2026-11-30T04:01:00)"
    assert upd["ActionAfterCompletion"] == "DELETE"
    assert upd["FlexibleTimeWindow"] == {"Mode": "OFF"}
    assert upd["Target"] == {
        "Arn": "arn:aws:scheduler:::aws-sdk:sagemaker:deleteEndpoint",
        "RoleArn": ROLE,
        "Input": json.dumps({"EndpointName": NAME}, separators=(",", ":")),
        "RetryPolicy": {"MaximumEventAgeInSeconds": 86400, "MaximumRetryAttempts": 185},
    }
    assert upd["Description"].endswith(f"expires={new}")
    (tags,) = ttl.sent("AddTags")
    assert tags["Tags"] == [{"Key": "peagle:expires", "Value": new}]
    doc = json.loads(out)
    assert doc["expires_at"] == new and doc["changed"] is True
    assert sm_peagle.status(NAME).expires_at == new


def test_update_ttl_to_the_time_it_already_has_sends_nothing(ttl, capsys):
    sm_peagle.deploy("gpt-oss-20b", ttl="2026-11-30T09:00Z", role=ttl.role_arn, region=REGION)
    ttl.requests.clear()
    code, _, err = run(capsys, "update", NAME, "--ttl", "2026-11-30T09:00Z", "--yes")
    assert code == 0, err
    assert mutations(ttl) == []


def test_update_ttl_of_an_endpoint_peagle_did_not_create_is_refused(ttl, capsys):
    """peagle's role deletes only peagle:managed endpoints (its permission policy), and
    delete refuses this one: its expiry would never fire. adopt --ttl is the way."""
    sm_peagle.deploy("gpt-oss-20b", role=ttl.role_arn, region=REGION)
    sm = boto3.client("sagemaker", region_name=REGION)
    arn = sm.describe_endpoint(EndpointName=NAME)["EndpointArn"]
    sm.delete_tags(ResourceArn=arn, TagKeys=["peagle:managed"])
    ttl.requests.clear()
    code, _, err = run(capsys, "update", NAME, "--ttl", "4h", "--yes")
    assert code == 2, err
    assert err.strip().splitlines()[-1] == (
        f"error: endpoint {NAME} was not created by peagle (no peagle:managed tag); nothing "
        f"was sent (fix: adopt it with a TTL: `peagle adopt {NAME} --ttl 4h`)"
    )
    assert mutations(ttl) == []


def test_update_ttl_role_that_is_not_a_role_arn_is_exit_2_before_any_request(ttl, capsys):
    sm_peagle.deploy("gpt-oss-20b", ttl="4h", role=ttl.role_arn, region=REGION)
    ttl.requests.clear()
    code, _, err = run(capsys, "update", NAME, "--ttl", "4h", "--ttl-role", "my-role", "--yes")
    assert code == 2 and "--ttl-role" in err, err
    assert ttl.requests == []


def test_update_ttl_gives_an_endpoint_without_one_a_schedule(ttl, capsys):
    sm_peagle.deploy("gpt-oss-20b", role=ttl.role_arn, region=REGION)
    ttl.requests.clear()
    code, _, err = run(capsys, "update", NAME, "--ttl", "1h", "--yes")
    assert code == 0, err
    assert mutations(ttl) == [
        "CreateScheduleGroup",
        "CreateRole",
        "PutRolePolicy",
        "CreateSchedule",
        "AddTags",
    ]
    assert schedules() == {"peagle": [NAME]}


def test_update_ttl_none_removes_the_schedule_and_the_tag(ttl, capsys):
    sm_peagle.deploy("gpt-oss-20b", ttl="4h", role=ttl.role_arn, region=REGION)
    ttl.requests.clear()
    code, _, err = run(capsys, "update", NAME, "--ttl", "none", "--yes")
    assert code == 0, err
    assert mutations(ttl) == ["DeleteSchedule", "DeleteTags"]
    assert schedules() == {} and "peagle:expires" not in endpoint_tags()
    assert sm_peagle.status(NAME).expiry == "none"


def test_update_ttl_with_another_change_or_too_short_is_exit_2(ttl, capsys):
    sm_peagle.deploy("gpt-oss-20b", ttl="4h", role=ttl.role_arn, region=REGION)
    ttl.requests.clear()
    for argv in (["--ttl", "2h", "-k", "3"], ["--ttl", "5m"]):
        code, _, err = run(capsys, "update", NAME, *argv, "--yes")
        assert code == 2, err
        assert "Traceback" not in err and "error: " in err
    assert mutations(ttl) == []


def _spec(path: Any, **endpoint: Any) -> Any:
    import yaml

    doc: dict[str, Any] = {"model": "gpt-oss-20b", "region": REGION}
    if endpoint:
        doc["endpoint"] = endpoint
    path.write_text(yaml.safe_dump(doc))
    return path


def test_reapplying_an_unchanged_spec_sends_nothing_and_keeps_the_expiry(
    ttl, sagemaker_harness, capsys, tmp_path
):
    spec = _spec(tmp_path / "d.yaml", ttl="4h")
    code, _, err = run(capsys, "apply", "-f", str(spec), "--yes")
    assert code == 0, err
    assert endpoint_tags()["peagle:expires"] == EXPIRES
    sagemaker_harness.clock.advance(3600)  # an hour on: a re-apply must not extend it
    ttl.requests.clear()
    code, out, err = run(capsys, "apply", "-f", str(spec), "--yes", "--json")
    assert code == 0, err
    assert json.loads(out)["applied"] is False
    assert mutations(ttl) == []
    assert endpoint_tags()["peagle:expires"] == EXPIRES


def test_a_spec_newly_gaining_ttl_adds_only_the_schedule_and_tag(
    ttl, sagemaker_harness, capsys, tmp_path
):
    spec = _spec(tmp_path / "d.yaml")
    assert run(capsys, "apply", "-f", str(spec), "--yes")[0] == 0
    sagemaker_harness.clock.advance(3600)  # 02:00:10: the TTL counts from now
    ttl.requests.clear()
    _spec(spec, ttl="4h")
    code, _, err = run(capsys, "apply", "-f", str(spec), "--dry-run")  # says it, sends nothing
    assert code == 0, err
    assert "would set expires never -> 2026-11-30T06:01:00Z" in err and mutations(ttl) == []
    code, _, err = run(capsys, "apply", "-f", str(spec), "--yes")
    assert code == 0, err
    assert [op for op in mutations(ttl) if op not in IAM_OPS + ("CreateScheduleGroup",)] == [
        "CreateSchedule",
        "AddTags",
    ]
    assert endpoint_tags()["peagle:expires"] == "2026-11-30T06:01:00Z"


def _delete_by_hand() -> None:
    """What a deletion outside peagle does: the endpoint, its config and model."""
    sm = boto3.client("sagemaker", region_name=REGION)
    sm.delete_endpoint(EndpointName=NAME)
    for c in sm.list_endpoint_configs()["EndpointConfigs"]:
        sm.delete_endpoint_config(EndpointConfigName=c["EndpointConfigName"])
    for m in sm.list_models()["Models"]:
        sm.delete_model(ModelName=m["ModelName"])


def roles() -> set[str]:
    return {r["RoleName"] for r in boto3.client("iam", region_name=REGION).list_roles()["Roles"]}


def test_gc_keeps_a_live_endpoint_s_schedule_and_the_role(ttl, capsys):
    sm_peagle.deploy("gpt-oss-20b", ttl="4h", role=ttl.role_arn, region=REGION)
    code, out, err = run(capsys, "gc", "--yes", "--json")
    assert code == 0, err
    assert json.loads(out)["expiry"] == []
    assert schedules() == {"peagle": [NAME]} and "peagle-ttl-deleter" in roles()


def test_gc_removes_a_gone_endpoint_s_schedule_then_the_unused_role(ttl, sagemaker_harness, capsys):
    sm_peagle.deploy("gpt-oss-20b", ttl="4h", role=ttl.role_arn, region=REGION)
    _delete_by_hand()
    # A schedule without its endpoint may be a deploy in progress: gc waits out its run.
    code, out, err = run(capsys, "gc", "--dry-run", "--json")
    assert code == 0 and json.loads(out)["expiry"] == [], err
    sagemaker_harness.clock.advance(7 * 3600)
    ttl.requests.clear()
    code, out, err = run(capsys, "gc", "--yes", "--json")
    assert code == 0, err
    assert json.loads(out)["expiry"] == [f"schedule peagle/{NAME}", "role peagle-ttl-deleter"]
    assert mutations(ttl) == ["DeleteSchedule", "DeleteRolePolicy", "DeleteRole"]
    assert schedules() == {} and "peagle-ttl-deleter" not in roles()


def test_gc_never_deletes_a_ttl_role(ttl, sagemaker_harness, capsys):
    iam = boto3.client("iam", region_name=REGION)
    arn = iam.create_role(RoleName="my-deleter", AssumeRolePolicyDocument=json.dumps(TRUST))[
        "Role"
    ]["Arn"]
    sm_peagle.deploy("gpt-oss-20b", ttl="4h", ttl_role=arn, role=ttl.role_arn, region=REGION)
    _delete_by_hand()
    sagemaker_harness.clock.advance(7 * 3600)
    code, out, err = run(capsys, "gc", "--yes", "--json")
    assert code == 0, err
    assert json.loads(out)["expiry"] == [f"schedule peagle/{NAME}"]
    assert "my-deleter" in roles()
