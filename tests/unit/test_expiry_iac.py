"""The expiry (`--ttl`) in the IAM policies and the exports.

IAM: whoever deploys with a TTL calls EventBridge Scheduler and IAM on peagle's groups,
schedules and role, as the design's requests name them (design39 decisions 1, 4-9: deploy's
GetSchedule for a stale schedule, CreateScheduleGroup, CreateRole + PutRolePolicy (tagged),
CreateSchedule per component and for the endpoint; update --ttl's UpdateSchedule; delete's
DeleteSchedule), and passes the role to `scheduler.amazonaws.com` only (iam:PassRole with
iam:PassedToService, as AWS's AmazonEventBridgeSchedulerFullAccess grants it). Scheduler ARNs:
`arn:aws:scheduler:<region>:<account>:schedule/<group>/<name>` and
`…:schedule-group/<group>` (botocore's ScheduleArn / schedule-group ARN patterns).
`iam-policy --for ttl-role` prints the trust and permission policies a `--ttl-role` needs.

Exports: hashicorp/aws's `aws_scheduler_schedule` (internal/service/scheduler/schedule.go:
name, group_name, schedule_expression, schedule_expression_timezone, flexible_time_window
{mode}, action_after_completion, state, description, target {arn, role_arn, input,
retry_policy {maximum_event_age_in_seconds, maximum_retry_attempts}}) and
`aws_scheduler_schedule_group`, `aws_iam_role` (assume_role_policy) and
`aws_iam_role_policy`; CloudFormation's AWS::Scheduler::Schedule (no ActionAfterCompletion in
its schema), AWS::Scheduler::ScheduleGroup and AWS::IAM::Role.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from datetime import UTC, datetime
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

import pytest

import sm_peagle
from sm_peagle.cli.app import main
from sm_peagle.errors import SpecError
from sm_peagle.iac.export import export_text
from sm_peagle.iac.iam_deployer import deployer_policy

ACCOUNT = "123456789012"
ROLE = f"arn:aws:iam::{ACCOUNT}:role/peagle-exec"
SCH = f"arn:aws:scheduler:us-east-1:{ACCOUNT}"
TTL_ROLE = f"arn:aws:iam::{ACCOUNT}:role/peagle-ttl-deleter"


def _granted(policy: dict[str, Any], action: str, arn: str) -> list[dict[str, Any]]:
    out = []
    for s in policy["Statement"]:
        if action not in s["Action"]:
            continue
        patterns = [s["Resource"]] if isinstance(s["Resource"], str) else s["Resource"]
        if any(fnmatchcase(arn, pat) for pat in patterns):
            out.append(s)
    return out


def _listed(value: str | list[str]) -> list[str]:
    return [value] if isinstance(value, str) else value


def _components_plan(**kw: Any) -> Any:
    return sm_peagle.plan(
        "gpt-oss-20b", role=ROLE, instance_type="ml.g7e.2xlarge", components=["p-eagle:k=7"], **kw
    )


# --- IAM: the deployer ------------------------------------------------------------------------


def test_deployer_with_a_ttl_may_send_each_expiry_request() -> None:
    p = _components_plan(ttl="4h")
    ep = p.names["endpoint"]
    (component,) = [ic["InferenceComponentName"] for ic in p.inference_components]
    policy = deployer_policy(p, account=ACCOUNT).policy
    requests = [
        ("scheduler:GetSchedule", f"{SCH}:schedule/peagle/{ep}"),  # deploy: a stale one?
        ("scheduler:GetScheduleGroup", f"{SCH}:schedule-group/peagle"),
        ("scheduler:CreateScheduleGroup", f"{SCH}:schedule-group/peagle"),
        ("scheduler:CreateScheduleGroup", f"{SCH}:schedule-group/peagle-components"),
        ("scheduler:TagResource", f"{SCH}:schedule-group/peagle"),  # the group's Tags
        ("iam:GetRole", TTL_ROLE),
        ("iam:CreateRole", TTL_ROLE),
        ("iam:TagRole", TTL_ROLE),  # CreateRole with Tags
        ("iam:PutRolePolicy", TTL_ROLE),
        ("scheduler:CreateSchedule", f"{SCH}:schedule/peagle-components/{component}"),
        ("scheduler:CreateSchedule", f"{SCH}:schedule/peagle/{ep}"),
        ("scheduler:UpdateSchedule", f"{SCH}:schedule/peagle/{ep}"),  # update --ttl
        ("scheduler:UpdateSchedule", f"{SCH}:schedule/peagle-components/{component}"),
        ("scheduler:DeleteSchedule", f"{SCH}:schedule/peagle/{ep}"),  # delete, rollback
        ("scheduler:DeleteSchedule", f"{SCH}:schedule/peagle-components/{component}"),
        ("application-autoscaling:DescribeScalingActivities", "*"),  # status's spend
    ]
    for action, arn in requests:
        assert _granted(policy, action, arn), (action, arn)
    # gc's sweep (every schedule of the groups) is not one deployment's
    assert not _granted(policy, "scheduler:ListSchedules", "*")
    # another endpoint's schedule and the default group are not this deployment's
    assert not _granted(policy, "scheduler:CreateSchedule", f"{SCH}:schedule/peagle/other")
    assert not _granted(policy, "scheduler:DeleteSchedule", f"{SCH}:schedule/default/{ep}")
    # the role goes to Scheduler only; the execution role to SageMaker only
    (to_scheduler,) = _granted(policy, "iam:PassRole", TTL_ROLE)
    assert to_scheduler["Condition"] == {
        "StringEquals": {"iam:PassedToService": "scheduler.amazonaws.com"}
    }
    (to_sagemaker,) = _granted(policy, "iam:PassRole", ROLE)
    assert to_sagemaker["Condition"] == {
        "StringEquals": {"iam:PassedToService": "sagemaker.amazonaws.com"}
    }


def test_deployer_with_a_given_ttl_role_never_makes_or_edits_a_role() -> None:
    theirs = f"arn:aws:iam::{ACCOUNT}:role/team-scheduler"
    policy = deployer_policy(
        sm_peagle.plan("gpt-oss-20b", role=ROLE, ttl="4h", ttl_role=theirs), account=ACCOUNT
    ).policy
    assert _granted(policy, "iam:GetRole", theirs)  # its trust is checked
    (passing,) = _granted(policy, "iam:PassRole", theirs)
    assert passing["Condition"]["StringEquals"]["iam:PassedToService"] == "scheduler.amazonaws.com"
    actions = {a for s in policy["Statement"] for a in s["Action"]}
    assert not actions & {"iam:CreateRole", "iam:PutRolePolicy", "iam:TagRole", "iam:DeleteRole"}
    assert not _granted(policy, "iam:PassRole", TTL_ROLE)


def test_deployer_without_a_ttl_may_only_find_and_remove_a_schedule_of_its_endpoint() -> None:
    p = sm_peagle.plan("gpt-oss-20b", role=ROLE)
    ep = p.names["endpoint"]
    policy = deployer_policy(p, account=ACCOUNT).policy
    scheduler = sorted(
        {a for s in policy["Statement"] for a in s["Action"] if a.startswith("scheduler:")}
    )
    # deploy deletes a stale schedule of the name (it would delete the new endpoint);
    # delete removes one an apply or update --ttl made
    assert scheduler == ["scheduler:DeleteSchedule", "scheduler:GetSchedule"]
    assert _granted(policy, "scheduler:GetSchedule", f"{SCH}:schedule/peagle/{ep}")
    assert not [a for s in policy["Statement"] for a in s["Action"] if a.startswith("iam:Create")]
    assert not _granted(policy, "iam:PassRole", TTL_ROLE)


# --- IAM: iam-policy --for ttl-role -----------------------------------------------------------


def test_iam_policy_for_ttl_role_prints_the_trust_and_permission_policies(capsys) -> None:
    assert main(["iam-policy", "gpt-oss-20b", "--for", "ttl-role", "--role", ROLE, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["for"] == "ttl-role"
    (trust,) = doc["trust_policy"]["Statement"]
    assert trust["Principal"] == {"Service": "scheduler.amazonaws.com"}
    assert trust["Action"] == "sts:AssumeRole"
    assert trust["Condition"] == {
        "StringEquals": {"aws:SourceAccount": ACCOUNT},
        "ArnLike": {"aws:SourceArn": f"arn:aws:scheduler:*:{ACCOUNT}:schedule-group/peagle*"},
    }
    allowed = {
        (a, r)
        for s in doc["policy"]["Statement"]
        for a in _listed(s["Action"])
        for r in _listed(s["Resource"])
    }
    assert allowed == {
        ("sagemaker:DeleteEndpoint", f"arn:aws:sagemaker:*:{ACCOUNT}:endpoint/*"),
        ("sagemaker:DeleteEndpoint", f"arn:aws:sagemaker:*:{ACCOUNT}:inference-component/*"),
        ("sagemaker:DeleteInferenceComponent", f"arn:aws:sagemaker:*:{ACCOUNT}:endpoint/*"),
        (
            "sagemaker:DeleteInferenceComponent",
            f"arn:aws:sagemaker:*:{ACCOUNT}:inference-component/*",
        ),
        ("application-autoscaling:DeregisterScalableTarget", "*"),
    }
    # the same from the SDK, and the text form names both documents
    sdk = sm_peagle.Client().iam_policy("gpt-oss-20b", for_="ttl-role", role=ROLE)
    assert sdk.to_dict() == {k: v for k, v in doc.items() if k != "label"}
    assert main(["iam-policy", "gpt-oss-20b", "--for", "ttl-role", "--role", ROLE]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# TTL-role permission policy (account 123456789012)")
    assert "# Trust policy" in out


def test_iam_policy_for_an_unknown_role_kind_exits_2(capsys) -> None:
    assert main(["iam-policy", "gpt-oss-20b", "--for", "ttl"]) == 2
    err = capsys.readouterr().err
    assert "execution-role, deployer, ttl-role" in err
    with pytest.raises(SpecError, match="ttl"):
        sm_peagle.Client().iam_policy("gpt-oss-20b", for_="ttl")


# --- exports ----------------------------------------------------------------------------------

NOW = datetime(2026, 11, 30, 1, 0, 10, tzinfo=UTC)  # when the export is written
# The schedule deploy would send, for an expiry fixed at the export: NOW + 4h, rounded up.
SCHEDULE_AT = "at(2026-11-30T05:01:00)"


def _exported(fmt: str, **kw: Any) -> tuple[Any, dict[str, Any]]:
    mode = "p-eagle" if fmt == "terraform" else "baseline"  # CFN: no drafter channel
    p = sm_peagle.plan({"model": "gpt-oss-20b", "role": ROLE, "speculative": {"mode": mode},
                        "endpoint": {"ttl": "4h", **kw}})  # fmt: skip
    return p, json.loads(export_text(p, fmt, now=NOW))


def test_terraform_schedule_and_its_own_role() -> None:
    p, doc = _exported("terraform")
    ep = p.names["endpoint"]
    rid = ep.replace("-", "_")
    res = doc["resource"]
    schedule = res["aws_scheduler_schedule"][rid]
    comment = schedule.pop("//")
    assert schedule == {
        "name": ep,
        "group_name": "peagle",
        "schedule_expression": SCHEDULE_AT,
        "schedule_expression_timezone": "UTC",
        "flexible_time_window": {"mode": "OFF"},
        "action_after_completion": "DELETE",
        "state": "ENABLED",
        "description": f"peagle ttl: endpoint={ep} op=export expires=2026-11-30T05:01:00Z",
        "target": {
            "arn": "arn:aws:scheduler:::aws-sdk:sagemaker:deleteEndpoint",
            "role_arn": f"${{aws_iam_role.{rid}_ttl.arn}}",
            "input": json.dumps({"EndpointName": ep}, separators=(",", ":")),
            "retry_policy": {"maximum_event_age_in_seconds": 86400, "maximum_retry_attempts": 185},
        },
        "region": "us-east-1",
        "depends_on": [f"aws_iam_role_policy.{rid}_ttl"],
    }
    # the time is fixed at export, and said so; the shared group is not the stack's
    assert "2026-11-30T05:01:00Z, a time fixed when this file was exported" in comment
    assert "re-export before applying" in comment
    assert "the schedule group 'peagle' must exist" in comment
    assert "aws_scheduler_schedule_group" not in res
    role = res["aws_iam_role"][f"{rid}_ttl"]
    assert role["name_prefix"] == "peagle-ttl-"  # never the account's shared peagle-ttl-deleter
    trust = json.loads(role["assume_role_policy"])["Statement"][0]
    assert trust["Principal"] == {"Service": "scheduler.amazonaws.com"}
    assert trust["Condition"]["ArnLike"] == {
        "aws:SourceArn": f"arn:aws:scheduler:*:{ACCOUNT}:schedule-group/peagle*"
    }
    policy = res["aws_iam_role_policy"][f"{rid}_ttl"]
    assert policy["role"] == f"${{aws_iam_role.{rid}_ttl.id}}"
    deletes = json.loads(policy["policy"])["Statement"][0]
    assert "sagemaker:DeleteEndpoint" in deletes["Action"]


def test_terraform_with_a_given_role_makes_none() -> None:
    theirs = f"arn:aws:iam::{ACCOUNT}:role/team-scheduler"
    p, doc = _exported("terraform", ttl_role=theirs)
    res = doc["resource"]
    assert "aws_iam_role" not in res and "aws_iam_role_policy" not in res
    (schedule,) = res["aws_scheduler_schedule"].values()
    assert schedule["target"]["role_arn"] == theirs
    assert "depends_on" not in schedule


def test_cloudformation_schedule_has_no_action_after_completion_and_says_so(
    tmp_path: Path,
) -> None:
    p, template = _exported("cloudformation")
    ep = p.names["endpoint"]
    res = template["Resources"]
    schedule = res["PeagleExpirySchedule"]
    assert schedule["Type"] == "AWS::Scheduler::Schedule"
    props = schedule["Properties"]
    assert props == {
        "Name": ep,
        "GroupName": "peagle",
        "ScheduleExpression": SCHEDULE_AT,
        "ScheduleExpressionTimezone": "UTC",
        "FlexibleTimeWindow": {"Mode": "OFF"},
        "State": "ENABLED",
        "Description": f"peagle ttl: endpoint={ep} op=export expires=2026-11-30T05:01:00Z",
        "Target": {
            "Arn": "arn:aws:scheduler:::aws-sdk:sagemaker:deleteEndpoint",
            "RoleArn": {"Fn::GetAtt": ["PeagleTtlRole", "Arn"]},
            "Input": json.dumps({"EndpointName": ep}, separators=(",", ":")),
            "RetryPolicy": {"MaximumEventAgeInSeconds": 86400, "MaximumRetryAttempts": 185},
        },
    }
    note = schedule["Metadata"]["peagle:expiry"]
    assert "has no ActionAfterCompletion" in note and "until the stack is deleted" in note
    assert "fixed when this file was exported" in note
    role = res["PeagleTtlRole"]
    assert role["Type"] == "AWS::IAM::Role" and "RoleName" not in role["Properties"]
    assert role["Properties"]["AssumeRolePolicyDocument"]["Statement"][0]["Principal"] == {
        "Service": "scheduler.amazonaws.com"
    }
    # the schema cfn-lint ships: every property known, and no ActionAfterCompletion in it
    from tests.unit.test_templates import _cfn_schema

    pytest.importorskip("cfnlint")
    schema = _cfn_schema("AWS::Scheduler::Schedule")
    assert "ActionAfterCompletion" not in schema["properties"]
    assert set(props) <= set(schema["properties"])
    assert set(props["Target"]) <= set(schema["definitions"]["Target"]["properties"])
    path = tmp_path / "stack.json"
    path.write_text(json.dumps(template))
    exe = shutil.which("cfn-lint")
    if exe is None:
        pytest.skip("cfn-lint is not installed")
    result = subprocess.run([exe, "--", str(path)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_an_absolute_ttl_already_near_or_past_at_export_is_refused() -> None:
    p = sm_peagle.plan("gpt-oss-20b", role=ROLE, ttl="2026-11-30T01:10Z")  # plan reads no clock
    with pytest.raises(SpecError, match="export's clock") as e:
        export_text(p, "terraform", now=NOW)
    assert e.value.field == "ttl"


def test_sagemaker_script_refuses_the_ttl_with_the_reason() -> None:
    p = sm_peagle.plan({"model": "gpt-oss-20b", "role": ROLE, "speculative": {"mode": "baseline"},
                        "endpoint": {"ttl": "4h"}})  # fmt: skip
    with pytest.raises(SpecError, match="does not cover endpoint.ttl") as e:
        export_text(p, "sagemaker")
    assert e.value.field == "ttl"


def test_export_and_iam_policy_take_ttl_from_the_cli_and_the_sdk(capsys) -> None:
    assert main(["export", "gpt-oss-20b", "--role", ROLE, "--ttl", "4h"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert list(doc["resource"]["aws_scheduler_schedule"].values())[0]["group_name"] == "peagle"
    sdk = json.loads(sm_peagle.Client().export("gpt-oss-20b", role=ROLE, ttl="4h").text)
    assert set(sdk["resource"]) == set(doc["resource"])
    assert main(["iam-policy", "gpt-oss-20b", "--for", "deployer", "--role", ROLE,
                 "--ttl", "4h", "--json"]) == 0  # fmt: skip
    policy = json.loads(capsys.readouterr().out)["policy"]
    assert _granted(policy, "iam:CreateRole", TTL_ROLE)
    assert main(["export", "gpt-oss-20b", "--ttl", "10m"]) == 2
    assert "shorter than 15 minutes" in capsys.readouterr().err
