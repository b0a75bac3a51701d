"""`peagle iam-policy --for deployer` grants what deploy, update, bench and delete send, and
nothing else (issue 33, item 9).

The sandbox records every AWS request it receives (peagle_sandbox/testing/request_log.py;
runtime and Service Quotas calls included). Each recorded request is mapped to the IAM
action that authorizes it, by the rule AWS documents: the action is the service's IAM
prefix plus the operation name (botocore's service model names the operations; the
Service Authorization Reference's "API operations" tables map each to its action), except
the few operations written out in RENAMED with their source. The policy's actions must be
exactly those, plus iam:PassRole, which CreateModel needs without a request of its own
(SageMaker API reference, CreateModel). Each request's resources must be granted by a
statement that allows its action.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

import botocore.session
import pytest

from tests.e2e.test_sandbox import Sandbox, running_sandbox

pytestmark = pytest.mark.e2e

NAME = "peagle-gpt-oss-20b-p-eagle"
REGION = "us-east-1"
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))
# The IAM service prefix of each service as the request log names it.
PREFIX = {
    "application-autoscaling": "application-autoscaling",
    "cloudwatch": "cloudwatch",
    "iam": "iam",
    "logs": "logs",
    "s3": "s3",
    "sagemaker": "sagemaker",
    "scheduler": "scheduler",
    "sagemaker-runtime": "sagemaker",
    "service-quotas": "servicequotas",
}
RENAMED = {
    # SageMaker runtime API reference, InvokeEndpointWithResponseStream: "your IAM
    # permissions must allow the sagemaker:InvokeEndpoint action".
    ("sagemaker-runtime", "InvokeEndpointWithResponseStream"): "sagemaker:InvokeEndpoint",
    # S3 API reference, ListObjectsV2: "you must have permission to perform the
    # s3:ListBucket action"; HeadObject: "you must have the s3:GetObject permission".
    ("s3", "ListObjectsV2"): "s3:ListBucket",
    ("s3", "HeadObject"): "s3:GetObject",
}
# Authorized without a request of their own (SageMaker API reference, CreateModel; a
# CreateLogGroup with tags is also authorized as logs:TagResource: ASSUMED from the
# CreateLogGroup reference, not exercised by a request of its own).
IMPLIED = {
    ("sagemaker", "CreateModel"): "iam:PassRole",
    ("logs", "CreateLogGroup"): "logs:TagResource",
    # Issue 39. The schedule hands its role to EventBridge Scheduler (the managed policy
    # AmazonEventBridgeSchedulerFullAccess grants iam:PassRole for it); creating a role or a
    # schedule group with Tags is authorized as tagging too (IAM User Guide, "Tagging IAM
    # resources": CreateRole with tags needs iam:TagRole; ASSUMED for Scheduler's groups).
    ("scheduler", "CreateSchedule"): "iam:PassRole",
    ("scheduler", "UpdateSchedule"): "iam:PassRole",
    ("iam", "CreateRole"): "iam:TagRole",
    ("scheduler", "CreateScheduleGroup"): "scheduler:TagResource",
}
# Needs no permission (STS API reference, GetCallerIdentity: "No permissions are required
# to perform this operation"): the account for the monitoring dashboard's alarm widget.
NO_PERMISSION = {("sts", "GetCallerIdentity")}
# Granted with monitoring for `peagle health` and `status` (the alarm's history, the
# acceptance metrics), which the commands run here do not send.
HEALTH_READS = {"cloudwatch:DescribeAlarmHistory", "cloudwatch:GetMetricData"}
# Granted for `status` and `ls` (the spend estimate's scaling history), which the commands
# run here do not send.
SPEND_READS = {"application-autoscaling:DescribeScalingActivities"}
# Granted for a deploy that meets a stale schedule of its endpoint's name (an earlier
# endpoint's, deleted outside peagle), which the commands run here do not meet.
STALE_SCHEDULE = {"scheduler:DeleteSchedule"}
_SAGEMAKER_NAMES = {
    "EndpointName": "endpoint",
    "EndpointConfigName": "endpoint-config",
    "ModelName": "model",
}


@pytest.fixture(scope="module")
def sb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    yield from running_sandbox(tmp_path_factory.mktemp("sandbox-iam-deployer"))


def _requests(sb: Sandbox) -> list[dict[str, Any]]:
    with _OPENER.open(f"{sb.url}/_peagle/requests", timeout=10) as resp:
        return list(json.loads(resp.read())["requests"])


def _action(r: dict[str, Any]) -> str:
    key = (r["service"], r["operation"])
    return RENAMED.get(key) or f"{PREFIX[r['service']]}:{r['operation']}"


def _resources(r: dict[str, Any], account: str) -> list[str]:
    """The ARNs a request acts on (empty: a call IAM authorizes on "*" only)."""
    p, sm = r["params"], f"arn:aws:sagemaker:{REGION}:{account}"
    if r["service"] in ("sagemaker", "sagemaker-runtime"):
        arns = [f"{sm}:{kind}/{p[k].lower()}" for k, kind in _SAGEMAKER_NAMES.items() if k in p]
        return arns + ([p["ResourceArn"]] if "ResourceArn" in p else [])
    if r["service"] == "s3":
        key = f"/{p['Key']}" if "Key" in p else ""
        return [f"arn:aws:s3:::{p['Bucket']}{key}"]
    if r["service"] == "iam":
        return [f"arn:aws:iam::{account}:role/{p['RoleName']}"]
    if r["service"] == "scheduler":  # botocore's ScheduleArn / schedule-group ARN forms
        sch = f"arn:aws:scheduler:{REGION}:{account}"
        if "GroupName" in p:
            return [f"{sch}:schedule/{p['GroupName']}/{p['Name']}"]
        return [f"{sch}:schedule-group/{p['Name']}"]
    if r["service"] == "logs":
        group = p.get("logGroupName") or p.get("logGroupIdentifier")
        if group is None and "resourceArn" in p:
            return [p["resourceArn"]]
        if group is None:  # DescribeLogGroups: by a prefix, authorized on the groups
            return [f"arn:aws:logs:{REGION}:{account}:log-group:*"]
        return [f"arn:aws:logs:{REGION}:{account}:log-group:{group}:*"]
    if r["service"] == "cloudwatch":
        names = p.get("AlarmNames") or ([p["AlarmName"]] if "AlarmName" in p else [])
        arns = [f"arn:aws:cloudwatch:{REGION}:{account}:alarm:{n}" for n in names]
        dashboards = p.get("DashboardNames") or (
            [p["DashboardName"]] if "DashboardName" in p else []
        )
        arns += [f"arn:aws:cloudwatch::{account}:dashboard/{n}" for n in dashboards]
        return arns + ([p["ResourceARN"]] if "ResourceARN" in p else [])
    return []


def _granted(policy: dict[str, Any], action: str, arn: str, r: dict[str, Any]) -> bool:
    for s in policy["Statement"]:
        if action not in s["Action"]:
            continue
        patterns = [s["Resource"]] if isinstance(s["Resource"], str) else s["Resource"]
        if not any(fnmatchcase(arn, pat) for pat in patterns):
            continue
        prefixes = s.get("Condition", {}).get("StringLike", {}).get("s3:prefix")
        if prefixes and not any(fnmatchcase(r["params"].get("prefix", ""), x) for x in prefixes):
            continue
        return True
    return False


@pytest.mark.parametrize("monitored", [False, True], ids=["plain", "monitored"])
def test_deployer_policy_is_exactly_what_the_commands_send(
    sb: Sandbox, tmp_path: Path, monitored: bool
) -> None:
    # A first deploy: its log group does not exist yet (an earlier case's endpoint, not
    # monitored, left the one SageMaker made, as AWS would).
    logs = sb.client("logs")
    for g in logs.describe_log_groups(logGroupNamePrefix=f"/aws/sagemaker/Endpoints/{NAME}")[
        "logGroups"
    ]:
        logs.delete_log_group(logGroupName=g["logGroupName"])
    _OPENER.open(urllib.request.Request(f"{sb.url}/_peagle/requests", method="DELETE")).read()
    # Monitored, apply then changes only the monitoring: a threshold of the spec's (the
    # alarm's peagle:threshold tag), keep_logs on (the log group's tag) and off again.
    specs = []
    for i, keep in enumerate(("true", "false")):
        specs.append(tmp_path / f"monitoring-{i}.yaml")
        specs[-1].write_text(
            "model: gpt-oss-20b\nspeculative:\n  num_speculative_tokens: 5\n"
            f"monitoring:\n  threshold: 1.5\n  keep_logs: {keep}\n"
        )
    deploy = ["deploy", "gpt-oss-20b", *(["--monitor"] if monitored else []), "--yes"]
    applies = [["apply", "-f", str(p), "--yes"] for p in specs] if monitored else []
    for args in (
        deploy,
        ["update", NAME, "-k", "5", "--yes"],
        *applies,
        ["bench", NAME, "-c", "1", "-n", "2", "--max-tokens", "8", "--acceptance-wait", "0"],
        ["delete", NAME, "--yes"],
    ):
        sb.cli("--sandbox", *args)
    log = [r for r in _requests(sb) if (r["service"], r["operation"]) not in NO_PERMISSION]
    [create] = [r["params"] for r in log if r["operation"] == "CreateModel"][:1]
    role = create["ExecutionRoleArn"]
    account = role.split(":")[4]

    # The same deployment (`iam-policy` takes the spec's `monitoring:`).
    spec = tmp_path / "deployment.yaml"
    spec.write_text("model: gpt-oss-20b\n" + ("monitoring:\n  enabled: true\n" * monitored))
    out = sb.cli("iam-policy", "-f", spec, "--for", "deployer", "--role", role, "--json")
    doc = json.loads(out.stdout)
    assert doc["for"] == "deployer" and "trust_policy" not in doc
    policy = doc["policy"]
    granted = {a for s in policy["Statement"] for a in s["Action"]}

    # Each recorded operation is one of its service's API operations (botocore's service
    # model), so "prefix:operation" is the action AWS documents for it.
    models = botocore.session.get_session()
    for service, operation in {(r["service"], r["operation"]) for r in log}:
        assert operation in models.get_service_model(service).operation_names, operation
    sent = {_action(r) for r in log}
    implied = {
        IMPLIED[(r["service"], r["operation"])]
        for r in log
        if (r["service"], r["operation"]) in IMPLIED
    }
    # The commands ran every kind of call the policy is for: preflight's reads included.
    assert {"servicequotas:ListServiceQuotas", "iam:GetRole", "s3:GetObject"} <= sent
    assert {
        "sagemaker:InvokeEndpoint",
        "sagemaker:UpdateEndpoint",
        "sagemaker:DeleteEndpoint",
    } <= sent
    # Update, delete (and apply) look for monitoring either way.
    assert {"cloudwatch:DescribeAlarms", "logs:DescribeMetricFilters"} <= sent
    if monitored:  # made by deploy, moved by update (a new K) and apply, removed by delete
        assert {
            "logs:CreateLogGroup",
            "logs:PutTransformer",
            "cloudwatch:PutMetricAlarm",
            "cloudwatch:PutDashboard",
            "cloudwatch:DeleteAlarms",
            "cloudwatch:TagResource",
            "logs:TagResource",
            "logs:UntagResource",
            "logs:DeleteLogGroup",
        } <= sent
    expected = (
        sent | implied | SPEND_READS | STALE_SCHEDULE | (HEALTH_READS if monitored else set())
    )
    assert granted == expected, (sorted(expected - granted), sorted(granted - expected))

    for r in log:
        for arn in _resources(r, account):
            assert _granted(policy, _action(r), arn, r), (r["operation"], arn)
    assert _granted(policy, "iam:PassRole", role, create)
    [pass_role] = [s for s in policy["Statement"] if "iam:PassRole" in s["Action"]]
    assert pass_role["Condition"] == {
        "StringEquals": {"iam:PassedToService": "sagemaker.amazonaws.com"}
    }


def test_deployer_policy_with_a_ttl_is_exactly_what_the_commands_send(
    sb: Sandbox, tmp_path: Path
) -> None:
    """Issue 39: deploy --ttl (the group, peagle's role made on first use, the schedule),
    update --ttl (UpdateSchedule and the tag) and delete (the schedule first). The rest of
    the policy is the cases above's; here, its Scheduler calls and those on the TTL role."""
    _OPENER.open(urllib.request.Request(f"{sb.url}/_peagle/requests", method="DELETE")).read()
    for args in (
        ["deploy", "gpt-oss-20b", "--ttl", "4h", "--yes"],
        ["update", NAME, "--ttl", "2h", "--yes"],
        ["delete", NAME, "--yes"],
        # the role is there now: the next TTL deploy reads its policy (GetRolePolicy)
        ["deploy", "gpt-oss-20b", "--ttl", "4h", "--yes"],
        ["delete", NAME, "--yes"],
    ):
        sb.cli("--sandbox", *args)
    log = [r for r in _requests(sb) if (r["service"], r["operation"]) not in NO_PERMISSION]
    [create] = [r["params"] for r in log if r["operation"] == "CreateModel"][:1]
    role = create["ExecutionRoleArn"]
    account = role.split(":")[4]
    schedule = [r["params"] for r in log if r["operation"] == "CreateSchedule"][0]
    ttl_role = schedule["Target"]["RoleArn"]
    assert ttl_role == f"arn:aws:iam::{account}:role/peagle-ttl-deleter"
    expiry = [
        r for r in log
        if r["service"] == "scheduler"
        or (r["service"] == "iam" and r["params"].get("RoleName") == "peagle-ttl-deleter")
    ]  # fmt: skip
    operations = {(r["service"], r["operation"]) for r in expiry}
    # the first TTL in the account: peagle's role and group are made, then the schedule
    assert {
        ("iam", "CreateRole"),
        ("iam", "PutRolePolicy"),
        ("scheduler", "CreateScheduleGroup"),
        ("scheduler", "CreateSchedule"),
        ("scheduler", "UpdateSchedule"),
        ("scheduler", "DeleteSchedule"),
        ("iam", "GetRolePolicy"),
    } <= operations
    models = botocore.session.get_session()
    for service, operation in operations:
        assert operation in models.get_service_model(service).operation_names, operation

    spec = tmp_path / "deployment.yaml"
    spec.write_text("model: gpt-oss-20b\nendpoint:\n  ttl: 4h\n")
    out = sb.cli("iam-policy", "-f", spec, "--for", "deployer", "--role", role, "--json")
    policy = json.loads(out.stdout)["policy"]
    scheduler = f"arn:aws:scheduler:{REGION}:{account}:"
    granted = {
        a
        for s in policy["Statement"]
        for a in s["Action"]
        if any(r.startswith(scheduler) or r == ttl_role for r in _listed(s["Resource"]))
    }
    expected = {_action(r) for r in expiry} | {IMPLIED[key] for key in operations if key in IMPLIED}
    assert granted == expected, (sorted(expected - granted), sorted(granted - expected))
    for r in expiry:
        for arn in _resources(r, account):
            assert _granted(policy, _action(r), arn, r), (r["operation"], arn)
    passing = [
        s for s in policy["Statement"]
        if "iam:PassRole" in s["Action"] and ttl_role in s["Resource"]
    ]  # fmt: skip
    assert [s["Condition"] for s in passing] == [
        {"StringEquals": {"iam:PassedToService": "scheduler.amazonaws.com"}}
    ]


def _listed(value: str | list[str]) -> list[str]:
    return [value] if isinstance(value, str) else value
