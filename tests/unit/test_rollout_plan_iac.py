"""The rollout in the IAM policies and the exports.

IAM: whoever runs `update` with a rollout makes, reads and deletes its rollback alarms
(`<endpoint>-rollout-*`), reads the alarms the user names and the metrics (GetMetricStatistics
and GetMetricData have no resource types); the execution role gets cloudwatch:DescribeAlarms
on the rollback alarms (AWS's deployment-guardrails guide: "Ensure that your IAM execution
role has permission to perform the cloudwatch:DescribeAlarms action on the auto-rollback
alarms you specify").

Exports: Terraform's `deployment_config` block and CloudFormation's DeploymentConfig, the
argument names written out from hashicorp/aws's aws_sagemaker_endpoint and the
AWS::SageMaker::Endpoint schema; Terraform's 14400 s timeout limit refused; the sagemaker
script refuses the rollout with the reason.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

import sm_peagle
from sm_peagle.errors import SpecError
from sm_peagle.iac.export import export_document, export_text
from sm_peagle.iac.iam import execution_role_policy
from sm_peagle.iac.iam_deployer import deployer_policy

ACCOUNT = "123456789012"
ROLE = f"arn:aws:iam::{ACCOUNT}:role/peagle-exec"
ALARM = f"arn:aws:cloudwatch:us-east-1:{ACCOUNT}:alarm:"


def _plan(rollout: dict[str, Any] | None, *, mode: str = "p-eagle", count: int = 4) -> Any:
    spec: dict[str, Any] = {
        "model": "gpt-oss-20b",
        "role": ROLE,
        "speculative": {"mode": mode},
        "endpoint": {"instance_count": count},
    }
    if rollout is not None:
        spec["endpoint"]["rollout"] = rollout
    return sm_peagle.plan(spec)


def _by_sid(policy: dict) -> dict[str, dict]:
    return {s["Sid"]: s for s in policy["Statement"]}


# --- IAM -----------------------------------------------------------------------------------


def test_deployer_gets_the_rollout_alarm_and_metric_actions() -> None:
    p = _plan({"strategy": "canary", "alarms": ["team-p99"]})
    ep = p.names["endpoint"]
    s = _by_sid(deployer_policy(p, account=ACCOUNT).policy)
    own = s["RolloutAlarmsOfThisEndpoint"]
    assert sorted(own["Action"]) == [
        "cloudwatch:DeleteAlarms",  # removed once the update settles
        "cloudwatch:DescribeAlarmHistory",  # which alarm rolled it back
        "cloudwatch:DescribeAlarms",  # not in ALARM before it starts
        "cloudwatch:PutMetricAlarm",  # made before UpdateEndpoint
        "cloudwatch:TagResource",  # PutMetricAlarm with Tags
    ]
    assert own["Resource"] == [f"{ALARM}{ep}-rollout-*"]
    user = s["RolloutReadsTheRollbackAlarmsYouName"]
    assert sorted(user["Action"]) == [
        "cloudwatch:DescribeAlarmHistory",
        "cloudwatch:DescribeAlarms",
    ]
    assert user["Resource"] == [f"{ALARM}team-p99"]
    star = s["RolloutMetricReadStarBecauseMetricReadsHaveNoResourceTypes"]
    assert star["Resource"] == "*"
    assert sorted(star["Action"]) == ["cloudwatch:GetMetricData", "cloudwatch:GetMetricStatistics"]


def test_deployer_without_a_rollout_has_none_of_it() -> None:
    sids = set(_by_sid(deployer_policy(_plan(None), account=ACCOUNT).policy))
    assert not [sid for sid in sids if "Rollout" in sid]
    sids = set(_by_sid(execution_role_policy(_plan(None), account=ACCOUNT).policy))
    assert "SageMakerReadsRollbackAlarms" not in sids


def test_monitoring_keeps_get_metric_data_under_its_own_reason() -> None:
    spec = {"model": "gpt-oss-20b", "role": ROLE, "monitoring": {"enabled": True},
            "endpoint": {"instance_count": 4, "rollout": {"strategy": "canary"}}}  # fmt: skip
    statements = deployer_policy(sm_peagle.plan(spec), account=ACCOUNT).policy["Statement"]
    sids = [s["Sid"] for s in statements]
    assert len(sids) == len(set(sids))
    granting = [s["Sid"] for s in statements if "cloudwatch:GetMetricData" in s["Action"]]
    assert granting == ["MetricReadStarBecauseGetMetricDataHasNoResourceTypes"]


def test_execution_role_may_describe_the_rollback_alarms() -> None:
    p = _plan({"strategy": "canary", "alarms": ["team-p99"]})
    ep = p.names["endpoint"]
    s = _by_sid(execution_role_policy(p, account=ACCOUNT).policy)["SageMakerReadsRollbackAlarms"]
    assert s["Action"] == ["cloudwatch:DescribeAlarms"]
    assert s["Resource"] == [f"{ALARM}{ep}-rollout-*", f"{ALARM}team-p99"]


# --- Terraform -----------------------------------------------------------------------------


def test_terraform_deployment_config_and_alarms() -> None:
    p = _plan({"strategy": "linear", "size": 1, "bake": "5m", "latency_ms": 2500,
               "alarms": ["team-p99"]})  # fmt: skip
    doc = export_document(p, "terraform")
    rid = p.names["endpoint"].replace("-", "_")
    (endpoint,) = doc["resource"]["aws_sagemaker_endpoint"].values()
    timeout = p.rollout.deployment_config["BlueGreenUpdatePolicy"][
        "MaximumExecutionTimeoutInSeconds"
    ]
    assert endpoint["deployment_config"] == {
        "blue_green_update_policy": {
            "traffic_routing_configuration": {
                "type": "LINEAR",
                "wait_interval_in_seconds": 300,
                "linear_step_size": {"type": "INSTANCE_COUNT", "value": 1},
            },
            "termination_wait_in_seconds": 300,
            "maximum_execution_timeout_in_seconds": timeout,
        },
        "auto_rollback_configuration": {
            "alarms": [
                {"alarm_name": f"${{aws_cloudwatch_metric_alarm.{rid}_rollout_{sig}.alarm_name}}"}
                for sig in ("latency", "errors")
            ]
            + [{"alarm_name": "team-p99"}]
        },
    }
    assert timeout <= 14400
    assert "ForceNew" in endpoint["//"]
    assert "no speculation rollback alarm" in endpoint["//"]  # monitoring off: said so
    alarms = doc["resource"]["aws_cloudwatch_metric_alarm"]
    latency = alarms[f"{rid}_rollout_latency"]
    config = f"${{aws_sagemaker_endpoint_configuration.{rid}.name}}"
    assert latency["dimensions"] == {
        "EndpointName": p.names["endpoint"],
        "VariantName": "AllTraffic",
        "EndpointConfigName": config,  # follows the config: the new fleet of each update
    }
    assert (latency["extended_statistic"], latency["threshold"]) == ("p90", 2_500_000)
    assert "statistic" not in latency
    errors = alarms[f"{rid}_rollout_errors"]
    assert (errors["metric_name"], errors["statistic"], errors["threshold"]) == (
        "Invocation5XXErrors", "Average", 0.05,
    )  # fmt: skip
    assert errors["tags"]["peagle:rollout"] == config


def test_terraform_refuses_a_timeout_over_its_14400_seconds() -> None:
    # four rolling batches, each with its provisioning allowance: far over 14400 s
    p = _plan({"strategy": "rolling", "size": 1})
    assert p.rollout.deployment_config["RollingUpdatePolicy"][
        "MaximumExecutionTimeoutInSeconds"
    ] > 14400  # fmt: skip
    with pytest.raises(SpecError, match="at most 14400") as e:
        export_document(p, "terraform")
    assert "rollout.timeout" in str(e.value.remedy)
    p = _plan({"strategy": "rolling", "size": 1, "timeout": 14400})
    (endpoint,) = export_document(p, "terraform")["resource"]["aws_sagemaker_endpoint"].values()
    rolling = endpoint["deployment_config"]["rolling_update_policy"]
    assert rolling == {
        "maximum_batch_size": {"type": "INSTANCE_COUNT", "value": 1},
        "wait_interval_in_seconds": 600,
        "maximum_execution_timeout_in_seconds": 14400,
    }


def test_no_rollout_no_deployment_config() -> None:
    (endpoint,) = export_document(_plan(None), "terraform")["resource"][
        "aws_sagemaker_endpoint"
    ].values()  # fmt: skip
    assert "deployment_config" not in endpoint and "//" not in endpoint


# --- CloudFormation ------------------------------------------------------------------------


def test_cloudformation_deployment_config_lints_clean(tmp_path: Path) -> None:
    p = _plan({"strategy": "canary", "bake": 300, "latency_ms": 2000}, mode="baseline", count=2)
    template = json.loads(export_text(p, "cloudformation"))
    res = template["Resources"]
    dc = res["PeagleEndpoint"]["Properties"]["DeploymentConfig"]
    timeout = p.rollout.deployment_config["BlueGreenUpdatePolicy"][
        "MaximumExecutionTimeoutInSeconds"
    ]
    assert dc == {
        "BlueGreenUpdatePolicy": {
            "TrafficRoutingConfiguration": {
                "Type": "CANARY",
                "WaitIntervalInSeconds": 300,
                "CanarySize": {"Type": "INSTANCE_COUNT", "Value": 1},
            },
            "TerminationWaitInSeconds": 300,
            "MaximumExecutionTimeoutInSeconds": timeout,
        },
        "AutoRollbackConfiguration": {
            "Alarms": [
                {"AlarmName": {"Ref": "PeagleRolloutLatencyAlarm"}},
                {"AlarmName": {"Ref": "PeagleRolloutErrorsAlarm"}},
            ]
        },
    }
    latency = res["PeagleRolloutLatencyAlarm"]
    assert latency["Type"] == "AWS::CloudWatch::Alarm"
    dims = {d["Name"]: d["Value"] for d in latency["Properties"]["Dimensions"]}
    assert dims["EndpointConfigName"] == {
        "Fn::GetAtt": ["PeagleEndpointConfig", "EndpointConfigName"]
    }
    assert "baseline" in res["PeagleEndpoint"]["Metadata"]["peagle:rollout"]
    # every name within the AWS::SageMaker::Endpoint schema cfn-lint ships
    from tests.unit.test_templates import _cfn_schema

    pytest.importorskip("cfnlint")
    schema = _cfn_schema("AWS::SageMaker::Endpoint")
    defs = schema["definitions"]
    assert set(dc) <= set(defs["DeploymentConfig"]["properties"])
    assert set(dc["BlueGreenUpdatePolicy"]) <= set(defs["BlueGreenUpdatePolicy"]["properties"])
    routing = dc["BlueGreenUpdatePolicy"]["TrafficRoutingConfiguration"]
    assert set(routing) <= set(defs["TrafficRoutingConfig"]["properties"])
    path = tmp_path / "stack.json"
    path.write_text(json.dumps(template))
    exe = shutil.which("cfn-lint")
    if exe is None:
        pytest.skip("cfn-lint is not installed")
    result = subprocess.run([exe, "--", str(path)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_sagemaker_script_refuses_the_rollout_with_the_reason() -> None:
    p = _plan({"strategy": "canary"}, mode="baseline", count=2)
    with pytest.raises(SpecError, match="does not cover endpoint.rollout") as e:
        export_text(p, "sagemaker")
    assert e.value.field == "rollout"


@pytest.mark.parametrize(
    ("fmt", "mode"), [("terraform", "p-eagle"), ("cloudformation", "baseline")]
)
def test_exports_refuse_a_rollout_the_spec_fleet_cannot_take(fmt: str, mode: str) -> None:
    """One instance cannot canary (CanarySize at most 50% of the instances, at least one):
    the plan warns; an export without the rollout would drop what the spec asks for."""
    p = _plan({"strategy": "canary"}, mode=mode, count=1)
    assert p.rollout is None
    with pytest.raises(SpecError, match="rollout does not fit its endpoint") as e:
        export_document(p, fmt)
    assert "needs at least 2 instances" in str(e.value)
    assert "all-at-once" in str(e.value.remedy)
