"""The monitoring of a plan (`Plan.monitoring`: planning/monitoring.py) in the exports:
the same log group, transformer, metric filters, alarm and dashboard `deploy` makes, each
value taken from the request `deploy` sends.

Terraform (hashicorp/aws): aws_cloudwatch_log_group, aws_cloudwatch_log_transformer (new
in 6.25.0: CHANGELOG "6.25.0 (December 4, 2025)", #44300), aws_cloudwatch_log_metric_filter
(`apply_on_transformed_logs`, #43381), aws_cloudwatch_metric_alarm, aws_cloudwatch_dashboard;
argument names from the provider's website/docs/r pages. CloudFormation: AWS::Logs::LogGroup,
AWS::Logs::Transformer, AWS::Logs::MetricFilter, AWS::CloudWatch::Alarm,
AWS::CloudWatch::Dashboard (property names from the schemas cfn-lint ships).

What an export cannot say as deploy does: neither aws_cloudwatch_dashboard nor
AWS::CloudWatch::Dashboard takes tags, so the dashboard is the stack's, not peagle's
(`peagle delete` leaves it; destroying the stack removes it). The log group is the
stack's to create: an export is for an endpoint whose group does not exist yet (deploy
checks; a stack fails on a group that exists). `keep_logs` is the group's
`skip_destroy` / `DeletionPolicy: Retain`.
"""

from __future__ import annotations

from typing import Any

from ..planning.monitoring import ACCOUNT_PLACEHOLDER

__all__ = ["TF_PROVIDER_MIN_MONITORING", "cfn_monitoring", "tf_monitoring"]

# First hashicorp/aws release with aws_cloudwatch_log_transformer.
TF_PROVIDER_MIN_MONITORING = "6.25.0"


def _tags(tag_list: list[dict[str, str]]) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in tag_list}


# --- Terraform ---------------------------------------------------------------------------


def _lit(value: Any) -> Any:
    """Terraform JSON reads every string as a template: `${` and `%{` escaped, so the grok
    pattern's `%{NUMBER:...}` arrives literally (as export.py's `_tf_literal`)."""
    if isinstance(value, str):
        return value.replace("${", "$${").replace("%{", "%%{")
    if isinstance(value, list):
        return [_lit(v) for v in value]
    if isinstance(value, dict):
        return {k: _lit(v) for k, v in value.items()}
    return value


def _tf_processor(processor: dict[str, Any]) -> dict[str, Any]:
    """One PutTransformer processor as a transformer_config block (one processor each)."""
    (kind, body), *rest = processor.items()
    assert not rest, processor
    if kind == "grok":
        return {"grok": [{"source": _lit(body["source"]), "match": _lit(body["match"])}]}
    if kind == "typeConverter":
        entries = [{"key": e["key"], "type": e["type"]} for e in body["entries"]]
        return {"type_converter": [{"entry": entries}]}
    if kind == "addKeys":
        entries = [
            {"key": e["key"], "value": e["value"], "overwrite_if_exists": e["overwriteIfExists"]}
            for e in body["entries"]
        ]
        return {"add_keys": [{"entry": entries}]}
    raise AssertionError(f"no Terraform table for transformer processor {kind}")


def tf_monitoring(
    plan: Any, rid: str
) -> tuple[dict[str, dict[str, Any]], dict[str, Any], list[str]]:
    """(resources by type, data sources, what the endpoint depends on) for Terraform JSON."""
    m = plan.monitoring
    region = plan.region
    group = f"aws_cloudwatch_log_group.{rid}"
    log_group: dict[str, Any] = {
        "name": m.create_log_group["logGroupName"],
        "retention_in_days": m.retention["retentionInDays"],
        "tags": _lit(dict(m.create_log_group["tags"])),
        "region": region,
    }
    if m.keep_logs:
        log_group["skip_destroy"] = True
    transformer = {
        "log_group_arn": f"${{{group}.arn}}",
        "transformer_config": [_tf_processor(p) for p in m.transformer["transformerConfig"]],
        "region": region,
    }
    filters = {}
    for f in m.metric_filters:
        (t,) = f["metricTransformations"]
        filters[f"{rid}_{f['filterName'].replace('-', '_')}"] = {
            "name": f["filterName"],
            "pattern": _lit(f["filterPattern"]),
            "log_group_name": f"${{{group}.name}}",
            "apply_on_transformed_logs": f["applyOnTransformedLogs"],
            "metric_transformation": [
                {
                    "name": t["metricName"],
                    "namespace": t["metricNamespace"],
                    "value": _lit(t["metricValue"]),
                    "dimensions": _lit(dict(t["dimensions"])),
                    "unit": t["unit"],
                }
            ],
            "region": region,
            # The filters read the transformed events: the transformer first.
            "depends_on": [f"aws_cloudwatch_log_transformer.{rid}"],
        }
    a = m.alarm
    alarm = {
        "alarm_name": a["AlarmName"],
        "alarm_description": _lit(a["AlarmDescription"]),
        "actions_enabled": a["ActionsEnabled"],
        "alarm_actions": _lit(list(a["AlarmActions"])),
        "namespace": a["Namespace"],
        "metric_name": a["MetricName"],
        "dimensions": {d["Name"]: d["Value"] for d in a["Dimensions"]},
        "statistic": a["Statistic"],
        "period": a["Period"],
        "evaluation_periods": a["EvaluationPeriods"],
        "datapoints_to_alarm": a["DatapointsToAlarm"],
        "threshold": a["Threshold"],
        "comparison_operator": a["ComparisonOperator"],
        "treat_missing_data": a["TreatMissingData"],
        "tags": _lit(_tags(a["Tags"])),
        "region": region,
    }
    account = "${data.aws_caller_identity.current.account_id}"
    dashboard = {
        "dashboard_name": m.dashboard["DashboardName"],
        "dashboard_body": account.join(
            _lit(part) for part in m.dashboard["DashboardBody"].split(ACCOUNT_PLACEHOLDER)
        ),
    }
    resources = {
        "aws_cloudwatch_log_group": {rid: log_group},
        "aws_cloudwatch_log_transformer": {rid: transformer},
        "aws_cloudwatch_log_metric_filter": filters,
        "aws_cloudwatch_metric_alarm": {rid: alarm},
        "aws_cloudwatch_dashboard": {rid: dashboard},
    }
    data = {"aws_caller_identity": {"current": {}}}
    # The endpoint after its log group, transformer and filters: SageMaker must not create
    # the group first (untagged, never expiring) nor write lines the filters never see.
    depends = [group, f"aws_cloudwatch_log_transformer.{rid}"]
    depends += [f"aws_cloudwatch_log_metric_filter.{n}" for n in filters]
    return resources, data, depends


# --- CloudFormation ----------------------------------------------------------------------


def _cfn_processor(processor: dict[str, Any]) -> dict[str, Any]:
    (kind, body), *rest = processor.items()
    assert not rest, processor
    if kind == "grok":
        return {"Grok": {"Source": body["source"], "Match": body["match"]}}
    if kind == "typeConverter":
        return {
            "TypeConverter": {
                "Entries": [{"Key": e["key"], "Type": e["type"]} for e in body["entries"]]
            }
        }
    if kind == "addKeys":
        entries = [
            {"Key": e["key"], "Value": e["value"], "OverwriteIfExists": e["overwriteIfExists"]}
            for e in body["entries"]
        ]
        return {"AddKeys": {"Entries": entries}}
    raise AssertionError(f"no CloudFormation table for transformer processor {kind}")


def cfn_monitoring(plan: Any) -> tuple[dict[str, Any], list[str]]:
    """(resources, what the endpoint depends on) for a CloudFormation template."""
    m = plan.monitoring
    group: dict[str, Any] = {
        "Type": "AWS::Logs::LogGroup",
        "Properties": {
            "LogGroupName": m.create_log_group["logGroupName"],
            "RetentionInDays": m.retention["retentionInDays"],
            "Tags": [{"Key": k, "Value": v} for k, v in sorted(m.create_log_group["tags"].items())],
        },
    }
    if m.keep_logs:
        group["DeletionPolicy"] = group["UpdateReplacePolicy"] = "Retain"
    resources: dict[str, Any] = {
        "PeagleLogGroup": group,
        "PeagleLogTransformer": {
            "Type": "AWS::Logs::Transformer",
            "Properties": {
                "LogGroupIdentifier": {"Ref": "PeagleLogGroup"},  # Ref: the group's name
                "TransformerConfig": [
                    _cfn_processor(p) for p in m.transformer["transformerConfig"]
                ],
            },
        },
    }
    names = []
    for i, f in enumerate(m.metric_filters):
        (t,) = f["metricTransformations"]
        name = f"PeagleMetricFilter{i + 1}"
        names.append(name)
        resources[name] = {
            "Type": "AWS::Logs::MetricFilter",
            "DependsOn": "PeagleLogTransformer",  # the filters read the transformed events
            "Properties": {
                "FilterName": f["filterName"],
                "FilterPattern": f["filterPattern"],
                "LogGroupName": {"Ref": "PeagleLogGroup"},
                "ApplyOnTransformedLogs": f["applyOnTransformedLogs"],
                "MetricTransformations": [
                    {
                        "MetricName": t["metricName"],
                        "MetricNamespace": t["metricNamespace"],
                        "MetricValue": t["metricValue"],
                        "Dimensions": [
                            {"Key": k, "Value": v} for k, v in sorted(t["dimensions"].items())
                        ],
                        "Unit": t["unit"],
                    }
                ],
            },
        }
    alarm_props = {k: v for k, v in m.alarm.items()}
    resources["PeagleSpeculationAlarm"] = {
        "Type": "AWS::CloudWatch::Alarm",
        "Properties": alarm_props,
    }
    resources["PeagleSpeculationDashboard"] = {
        "Type": "AWS::CloudWatch::Dashboard",
        "Properties": {
            "DashboardName": m.dashboard["DashboardName"],
            # ${AWS::AccountId} in the alarm widget's ARN: the stack's account.
            "DashboardBody": {"Fn::Sub": m.dashboard["DashboardBody"]},
        },
    }
    return resources, ["PeagleLogGroup", "PeagleLogTransformer", *names]
