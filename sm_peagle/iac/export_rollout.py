"""The rollout of a plan (`Plan.rollout`: planning/rollout.py) in the exports: the
DeploymentConfig an update sends, on the endpoint resource, and the rollback alarms it
names, as alarm resources.

A stack applies it when it updates the endpoint (a new endpoint config), as `peagle
update` does; creating the endpoint sends it too and SageMaker has no old fleet to keep
then. Unlike `peagle update`, which makes its rollback alarms before each update and
deletes them after, a stack keeps them: their EndpointConfigName dimension follows the
config resource, so they watch the new fleet of each update.

What an export cannot carry, and says so (in a "//" comment on the Terraform endpoint,
in the CloudFormation endpoint's Metadata): an alarm whose threshold comes from the live
fleet (the speculation alarm of a canary, linear or rolling update: the mixed-fleet
threshold needs the live acceptance; the latency alarm without `rollout.latency_ms`: twice
the live p90), and the idle-bake check (peagle reads each bake's invocations; a stack
does not).

Terraform (hashicorp/aws `aws_sagemaker_endpoint`, internal/service/sagemaker/endpoint.go):
`deployment_config { blue_green_update_policy | rolling_update_policy,
auto_rollback_configuration { alarms { alarm_name } } }`. Both
`maximum_execution_timeout_in_seconds` take 600..14400 there (the API takes 28800): a
longer timeout is refused. `auto_rollback_configuration` is ForceNew: changing its alarm
list replaces the endpoint, so the alarm names here are fixed (`<endpoint>-rollout-*`).
CloudFormation (`AWS::SageMaker::Endpoint.DeploymentConfig`, the API's names; checked
against the schema cfn-lint ships) and `AWS::CloudWatch::Alarm`.
"""

from __future__ import annotations

from typing import Any

from ..errors import Call, SpecError, text

__all__ = ["TF_MAX_TIMEOUT_S", "cfn_rollout", "rollout_comment", "tf_rollout"]

# terraform-provider-aws validates maximum_execution_timeout_in_seconds IntBetween(600, 14400).
TF_MAX_TIMEOUT_S = 14400
_FORCE_NEW = (
    "auto_rollback_configuration is ForceNew in the AWS provider: changing the list of "
    "rollback alarms replaces the endpoint"
)


def rollout_comment(plan: Any, *, terraform: bool) -> str:
    """What the exported rollout is and what it leaves out, in one paragraph."""
    r = plan.rollout
    parts = [
        f"endpoint.rollout: {r.strategy}, for updates of this endpoint (the steps assume "
        f"{r.fleet} instances); the rollback alarms stay, and follow the endpoint config",
        "peagle's idle-bake check (each bake's invocations on the new fleet) is not run by a stack",
        *r.notes,
    ]
    if terraform and r.deployment_config and "AutoRollbackConfiguration" in r.deployment_config:
        parts.append(_FORCE_NEW)
    return "; ".join(parts)


def _config_ref_tf(rid: str) -> str:
    return f"${{aws_sagemaker_endpoint_configuration.{rid}.name}}"


def _alarm_id(plan: Any, name: str) -> str:
    """`<endpoint>-rollout-errors` -> `rollout_errors`."""
    return name.removeprefix(plan.names["endpoint"] + "-").replace("-", "_")


def _capacity_tf(c: dict[str, Any]) -> dict[str, Any]:
    return {"type": c["Type"], "value": c["Value"]}


def _refuse_tf_timeout(timeout: int) -> None:
    if timeout > TF_MAX_TIMEOUT_S:
        raise SpecError(
            text(
                "Terraform export: the rollout's MaximumExecutionTimeoutInSeconds is {t} s; "
                "the AWS provider takes at most {m} (the API takes 28800)",
                t=timeout, m=TF_MAX_TIMEOUT_S,
            ),
            remedy=text(
                "set rollout.timeout to {m} or less (above its bakes), or update with `{apply}`",
                m=TF_MAX_TIMEOUT_S, apply=Call("apply", spec="<spec>"),
            ),
            field="rollout",
        )  # fmt: skip


def _tf_deployment_config(dc: dict[str, Any], alarm_refs: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if "BlueGreenUpdatePolicy" in dc:
        bg = dc["BlueGreenUpdatePolicy"]
        routing = bg["TrafficRoutingConfiguration"]
        trc: dict[str, Any] = {
            "type": routing["Type"],
            "wait_interval_in_seconds": routing["WaitIntervalInSeconds"],
        }
        if "CanarySize" in routing:
            trc["canary_size"] = _capacity_tf(routing["CanarySize"])
        if "LinearStepSize" in routing:
            trc["linear_step_size"] = _capacity_tf(routing["LinearStepSize"])
        _refuse_tf_timeout(bg["MaximumExecutionTimeoutInSeconds"])
        out["blue_green_update_policy"] = {
            "traffic_routing_configuration": trc,
            "termination_wait_in_seconds": bg["TerminationWaitInSeconds"],
            "maximum_execution_timeout_in_seconds": bg["MaximumExecutionTimeoutInSeconds"],
        }
    else:
        ru = dc["RollingUpdatePolicy"]
        _refuse_tf_timeout(ru["MaximumExecutionTimeoutInSeconds"])
        rolling: dict[str, Any] = {
            "maximum_batch_size": _capacity_tf(ru["MaximumBatchSize"]),
            "wait_interval_in_seconds": ru["WaitIntervalInSeconds"],
            "maximum_execution_timeout_in_seconds": ru["MaximumExecutionTimeoutInSeconds"],
        }
        if "RollbackMaximumBatchSize" in ru:
            rolling["rollback_maximum_batch_size"] = _capacity_tf(ru["RollbackMaximumBatchSize"])
        out["rolling_update_policy"] = rolling
    if alarm_refs:
        out["auto_rollback_configuration"] = {"alarms": [{"alarm_name": a} for a in alarm_refs]}
    return out


def _lit(value: Any) -> Any:
    if isinstance(value, str):
        return value.replace("${", "$${").replace("%{", "%%{")
    return value


def tf_rollout(plan: Any, rid: str) -> tuple[dict[str, Any] | None, dict[str, dict]]:
    """(the endpoint's deployment_config block or None, alarm resources by id) for
    Terraform JSON. The block names each alarm by interpolation, so Terraform makes the
    alarms before the endpoint."""
    r = plan.rollout
    region, config_ref = plan.region, _config_ref_tf(rid)
    alarms: dict[str, dict[str, Any]] = {}
    refs: dict[str, str] = {}
    for a in r.alarms:
        key = f"{rid}_{_alarm_id(plan, a['AlarmName'])}"

        def follow(value: str) -> str:  # the new config: whatever config the stack has now
            return config_ref if value == r.new_config else _lit(value)

        resource: dict[str, Any] = {
            "alarm_name": a["AlarmName"],
            "alarm_description": _lit(a["AlarmDescription"]),
            "actions_enabled": a["ActionsEnabled"],
            "namespace": a["Namespace"],
            "metric_name": a["MetricName"],
            "dimensions": {d["Name"]: follow(d["Value"]) for d in a["Dimensions"]},
            "period": a["Period"],
            "evaluation_periods": a["EvaluationPeriods"],
            "datapoints_to_alarm": a["DatapointsToAlarm"],
            "threshold": a["Threshold"],
            "comparison_operator": a["ComparisonOperator"],
            "treat_missing_data": a["TreatMissingData"],
            "tags": {t["Key"]: follow(t["Value"]) for t in a["Tags"]},
            "region": region,
        }
        if "ExtendedStatistic" in a:
            resource["extended_statistic"] = a["ExtendedStatistic"]
        else:
            resource["statistic"] = a["Statistic"]
        alarms[key] = resource
        refs[a["AlarmName"]] = f"${{aws_cloudwatch_metric_alarm.{key}.alarm_name}}"
    if r.deployment_config is None:
        return None, alarms
    names = [refs.get(n, _lit(n)) for n in r.alarm_names]
    return _tf_deployment_config(r.deployment_config, names), alarms


def cfn_rollout(plan: Any) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """(the endpoint's DeploymentConfig or None, alarm resources by logical id) for a
    CloudFormation template. The alarms are named by Ref (an alarm's Ref is its name), so
    the stack makes them before the endpoint."""
    r = plan.rollout
    config_ref = {"Fn::GetAtt": ["PeagleEndpointConfig", "EndpointConfigName"]}
    resources: dict[str, Any] = {}
    refs: dict[str, Any] = {}
    for a in r.alarms:
        logical = "PeagleRollout" + "".join(
            w.capitalize() for w in _alarm_id(plan, a["AlarmName"]).split("_")[1:]
        ) + "Alarm"  # fmt: skip
        props = dict(a)
        props["Dimensions"] = [
            {"Name": d["Name"], "Value": config_ref if d["Value"] == r.new_config else d["Value"]}
            for d in a["Dimensions"]
        ]
        props["Tags"] = [
            {"Key": t["Key"], "Value": config_ref if t["Value"] == r.new_config else t["Value"]}
            for t in a["Tags"]
        ]
        resources[logical] = {"Type": "AWS::CloudWatch::Alarm", "Properties": props}
        refs[a["AlarmName"]] = {"Ref": logical}
    if r.deployment_config is None:
        return None, resources
    dc = {k: v for k, v in r.deployment_config.items() if k != "AutoRollbackConfiguration"}
    if r.alarm_names:
        dc["AutoRollbackConfiguration"] = {
            "Alarms": [{"AlarmName": refs.get(n, n)} for n in r.alarm_names]
        }
    return dc, resources
