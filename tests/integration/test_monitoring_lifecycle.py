"""Monitoring's lifecycle against moto and the harness: deploy sends the log group,
transformer, filters, alarm and dashboard after the endpoint config and before
CreateEndpoint; delete removes exactly what peagle made; a failed deploy rolls it back.

Expected values come from the rules: AWS's names and limits, the issue's choices (30 days
of retention, "no data" for an idle endpoint), the design's fixed names, and vLLM's line
(vllm 0.31.0 `v1/spec_decode/metrics.py`), never from the code under test."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest
from botocore.validate import ParamValidator

import sm_peagle
from tests.integration.lifecycle_env import REGION, record_requests, sagemaker_inventory

NAME = "peagle-gpt-oss-20b-p-eagle"
ACCOUNT = "123456789012"  # moto's
GROUP = f"/aws/sagemaker/Endpoints/{NAME}"  # where SageMaker writes an endpoint's output
ALARM = f"{NAME}-speculation"
FILTERS = {"peagle-acceptance-length", "peagle-accepted-tokens", "peagle-drafted-tokens"}
MONITORING_OPS = (
    "CreateLogGroup",
    "PutRetentionPolicy",
    "PutTransformer",
    "PutMetricFilter",
    "PutMetricAlarm",
    "PutDashboard",
)
# vLLM 0.31's SpecDecodingLogging.log format, filled in.
VLLM_LINE = (
    "INFO 11-29 21:00:00 [metrics.py:180] SpecDecoding metrics: Mean acceptance length: 1.85, "
    "Accepted throughput: 12.00 tokens/s, Drafted throughput: 30.00 tokens/s, "
    "Accepted: 120 tokens, Drafted: 300 tokens, Per-position acceptance rate: 0.600, "
    "0.400, 0.200, Avg Draft acceptance rate: 40.0%"
)


@pytest.fixture
def mon(world, monkeypatch):
    record_requests(world, monkeypatch, "logs", "cloudwatch")
    return world


def clients() -> tuple[Any, Any]:
    return boto3.client("logs", region_name=REGION), boto3.client("cloudwatch", region_name=REGION)


def valid(service: str, operation: str, params: dict) -> None:
    """The request passes botocore's own validator for the operation's input shape."""
    model = boto3.client(service, region_name=REGION).meta.service_model
    report = ParamValidator().validate(params, model.operation_model(operation).input_shape)
    assert not report.has_errors(), report.generate_report()


def ops(world) -> list[str]:
    return [op for op, _ in world.requests]


def tags_of(items: Any) -> dict[str, str]:
    if isinstance(items, dict):
        return items
    return {t["Key"]: t["Value"] for t in items}


def left_monitoring() -> dict[str, Any]:
    """What is left of monitoring in moto: log groups, their filters and transformers,
    alarms, dashboards."""
    logs, cw = clients()
    groups = [g["logGroupName"] for g in logs.describe_log_groups()["logGroups"]]
    out: dict[str, Any] = {
        "log_groups": groups,
        "filters": [f["filterName"] for f in logs.describe_metric_filters()["metricFilters"]],
        "transformers": [g for g in groups if _transformer(logs, g)],
        "alarms": [a["AlarmName"] for a in cw.describe_alarms()["MetricAlarms"]],
        "dashboards": [d["DashboardName"] for d in cw.list_dashboards()["DashboardEntries"]],
    }
    return {k: v for k, v in out.items() if v}


def _transformer(logs: Any, group: str) -> bool:
    try:
        return bool(logs.get_transformer(logGroupIdentifier=group).get("transformerConfig"))
    except logs.exceptions.ResourceNotFoundException:
        return False


def test_deploy_sends_monitoring_between_config_and_endpoint_field_by_field(mon):
    ep = sm_peagle.deploy("gpt-oss-20b", monitor=True, role=mon.role_arn, region=REGION)
    order = ops(mon)
    i_config, i_endpoint = order.index("CreateEndpointConfig"), order.index("CreateEndpoint")
    between = [op for op in order[i_config + 1 : i_endpoint] if op in MONITORING_OPS]
    # The log group did not exist: peagle creates it, then its retention; one transformer,
    # three filters, the alarm, the dashboard; all before SageMaker can write there.
    assert between == [
        "CreateLogGroup",
        "PutRetentionPolicy",
        "PutTransformer",
        "PutMetricFilter",
        "PutMetricFilter",
        "PutMetricFilter",
        "PutMetricAlarm",
        "PutDashboard",
    ]
    assert not [op for op in order[i_endpoint:] if op in MONITORING_OPS]

    (create,) = mon.sent("CreateLogGroup")
    valid("logs", "CreateLogGroup", create)
    assert create["logGroupName"] == GROUP
    assert {"peagle:managed": "true", "peagle:deployment": NAME}.items() <= create["tags"].items()
    assert "peagle:keep-logs" not in create["tags"]

    (retention,) = mon.sent("PutRetentionPolicy")
    valid("logs", "PutRetentionPolicy", retention)
    assert retention == {"logGroupName": GROUP, "retentionInDays": 30}  # the default

    (transformer,) = mon.sent("PutTransformer")
    valid("logs", "PutTransformer", transformer)
    assert transformer["logGroupIdentifier"] == GROUP
    # What the transformer makes of vLLM's own line: numbers, and the endpoint's name.
    logs, cw = clients()
    (out,) = logs.test_transformer(
        transformerConfig=transformer["transformerConfig"], logEventMessages=[VLLM_LINE]
    )["transformedLogs"]
    fields = json.loads(out["transformedEventMessage"])
    assert fields["acceptance_length"] == 1.85
    assert (fields["accepted"], fields["drafted"]) == (120, 300)
    assert fields["peagle_endpoint"] == NAME

    filters = mon.sent("PutMetricFilter")
    assert {f["filterName"] for f in filters} == FILTERS
    metrics = {}
    for f in filters:
        valid("logs", "PutMetricFilter", f)
        assert f["logGroupName"] == GROUP and f["applyOnTransformedLogs"] is True
        (t,) = f["metricTransformations"]
        assert t["metricNamespace"] == "Peagle/SpeculativeDecoding"
        assert t["dimensions"] == {"EndpointName": "$.peagle_endpoint"}
        # An idle period must have no datapoint ("no data"), so no default value.
        assert "defaultValue" not in t
        metrics[t["metricName"]] = t["metricValue"]
    assert metrics == {
        "AcceptanceLength": "$.acceptance_length",
        "AcceptedTokens": "$.accepted",
        "DraftedTokens": "$.drafted",
    }

    (alarm,) = mon.sent("PutMetricAlarm")
    valid("cloudwatch", "PutMetricAlarm", alarm)
    k = 3  # the plan's default K
    assert {key: alarm[key] for key in (
        "AlarmName", "Namespace", "MetricName", "Dimensions", "Statistic", "Period",
        "EvaluationPeriods", "DatapointsToAlarm", "Threshold", "ComparisonOperator",
        "TreatMissingData",
    )} == {
        "AlarmName": ALARM,
        "Namespace": "Peagle/SpeculativeDecoding",
        "MetricName": "AcceptanceLength",
        "Dimensions": [{"Name": "EndpointName", "Value": NAME}],
        "Statistic": "Average",
        "Period": 60,
        "EvaluationPeriods": 5,
        "DatapointsToAlarm": 3,  # min(3, periods)
        "Threshold": round(1 + 0.05 * (1 + k), 2),  # the design's break-even rule
        "ComparisonOperator": "LessThanThreshold",
        "TreatMissingData": "missing",  # idle: INSUFFICIENT_DATA, "no data"
    }  # fmt: skip
    alarm_tags = tags_of(alarm["Tags"])
    assert alarm_tags["peagle:managed"] == "true" and alarm_tags["peagle:deployment"] == NAME
    assert alarm_tags["peagle:threshold"] == "default"

    (dash,) = mon.sent("PutDashboard")
    valid("cloudwatch", "PutDashboard", dash)
    assert dash["DashboardName"] == ALARM
    body = json.loads(dash["DashboardBody"])
    (alarm_widget,) = [w for w in body["widgets"] if w["type"] == "alarm"]
    arn = f"arn:aws:cloudwatch:{REGION}:{ACCOUNT}:alarm:{ALARM}"
    assert alarm_widget["properties"]["alarms"] == [arn]
    assert "${AWS::AccountId}" not in dash["DashboardBody"]

    # What is live: peagle's group (tagged, 30 days), transformer, filters, alarm, dashboard.
    (g,) = logs.describe_log_groups(logGroupNamePrefix=GROUP)["logGroups"]
    assert g["retentionInDays"] == 30
    assert left_monitoring() == {
        "log_groups": [GROUP],
        "filters": sorted(FILTERS),
        "transformers": [GROUP],
        "alarms": [ALARM],
        "dashboards": [ALARM],
    }

    ep.delete()
    assert left_monitoring() == {}
    assert sagemaker_inventory() == {"models": [], "endpoint_configs": [], "endpoints": []}


def _existing_group() -> dict[str, Any]:
    """A log group someone made before peagle's monitoring: its tags, retention, events."""
    logs, _ = clients()
    logs.create_log_group(logGroupName=GROUP, tags={"team": "ops"})
    logs.put_retention_policy(logGroupName=GROUP, retentionInDays=7)
    logs.create_log_stream(logGroupName=GROUP, logStreamName="AllTraffic/i-0")
    logs.put_log_events(
        logGroupName=GROUP,
        logStreamName="AllTraffic/i-0",
        logEvents=[{"timestamp": 1_700_000_000_000, "message": "an older line"}],
    )
    return _group_state()


def _group_state() -> dict[str, Any]:
    logs, _ = clients()
    (g,) = logs.describe_log_groups(logGroupNamePrefix=GROUP)["logGroups"]
    arn = g["arn"].removesuffix(":*")
    return {
        "retention": g.get("retentionInDays"),
        "tags": logs.list_tags_for_resource(resourceArn=arn)["tags"],
        "events": [e["message"] for e in logs.filter_log_events(logGroupName=GROUP)["events"]],
    }


def test_an_existing_log_group_is_used_never_owned(mon):
    before = _existing_group()
    ep = sm_peagle.deploy("gpt-oss-20b", monitor=True, role=mon.role_arn, region=REGION)
    assert not mon.sent("CreateLogGroup") and not mon.sent("PutRetentionPolicy")
    assert len(mon.sent("PutMetricFilter")) == 3 and len(mon.sent("PutTransformer")) == 1
    assert not [op for op, _ in mon.requests if op in ("TagResource", "TagLogGroup")]
    assert _group_state() == before

    plan = ep.client.delete(NAME, dry_run=True)
    assert f"log group {GROUP}" not in plan.would_delete  # not peagle's to delete
    assert f"alarm {ALARM}" in plan.would_delete and f"dashboard {ALARM}" in plan.would_delete
    assert "metric filter peagle-acceptance-length" in plan.would_delete

    ep.delete()
    # Only peagle's filters and transformer went; the group is as it was.
    assert left_monitoring() == {"log_groups": [GROUP]}
    assert _group_state() == before
    assert not mon.sent("DeleteLogGroup")


def test_a_foreign_transformer_refuses_the_deploy_before_anything_is_created(mon, capsys):
    from tests.integration.lifecycle_env import run

    logs, _ = clients()
    logs.create_log_group(logGroupName=GROUP)
    theirs = [{"parseJSON": {}}]
    logs.put_transformer(logGroupIdentifier=GROUP, transformerConfig=theirs)
    mon.requests.clear()
    code, out, err = run(capsys, "deploy", "gpt-oss-20b", "--monitor", "--yes")
    assert code == 2, err
    (line,) = [ln for ln in err.strip().splitlines() if ln.startswith("error:")]
    assert "transformer" in line and GROUP in line and "(fix:" in line
    assert "Traceback" not in err
    created = [op for op, _ in mon.requests if op.startswith(("Create", "Put", "Delete"))]
    assert created == []
    assert sagemaker_inventory() == {"models": [], "endpoint_configs": [], "endpoints": []}
    assert logs.get_transformer(logGroupIdentifier=GROUP)["transformerConfig"] == theirs


@pytest.mark.parametrize("kind", ["alarm", "dashboard"])
def test_an_alarm_or_dashboard_of_that_name_peagle_did_not_make_refuses_the_deploy(
    mon, capsys, kind
):
    """PutMetricAlarm and PutDashboard overwrite a resource of the same name: someone's
    `<endpoint>-speculation` (no peagle tags) is refused with exit 2, nothing created, and
    it is left as it was."""
    from tests.integration.lifecycle_env import run

    cw = boto3.client("cloudwatch", region_name=REGION)
    name = f"{NAME}-speculation"
    if kind == "alarm":
        cw.put_metric_alarm(AlarmName=name, Namespace="Theirs", MetricName="M", Statistic="Sum",
                            Period=60, EvaluationPeriods=1, Threshold=1.0,
                            ComparisonOperator="GreaterThanThreshold")  # fmt: skip
        before = cw.describe_alarms(AlarmNames=[name])["MetricAlarms"][0]["Namespace"]
    else:
        cw.put_dashboard(DashboardName=name, DashboardBody='{"widgets": []}')
        before = cw.get_dashboard(DashboardName=name)["DashboardBody"]
    mon.requests.clear()
    code, _, err = run(capsys, "deploy", "gpt-oss-20b", "--monitor", "--yes")
    assert code == 2, err
    (line,) = [ln for ln in err.strip().splitlines() if ln.startswith("error:")]
    assert f"{kind} {name}" in line and "(fix:" in line and "--no-monitor" in line
    created = [op for op, _ in mon.requests if op.startswith(("Create", "Put", "Delete"))]
    assert created == []
    assert sagemaker_inventory() == {"models": [], "endpoint_configs": [], "endpoints": []}
    if kind == "alarm":
        assert cw.describe_alarms(AlarmNames=[name])["MetricAlarms"][0]["Namespace"] == before
    else:
        assert cw.get_dashboard(DashboardName=name)["DashboardBody"] == before


def test_a_failed_deploy_rolls_the_monitoring_back(mon, sagemaker_harness):
    sagemaker_harness.schedule(NAME, ["Creating", "Failed"], failure_reason="injected")
    with pytest.raises(sm_peagle.DeploymentFailed):
        sm_peagle.deploy("gpt-oss-20b", monitor=True, role=mon.role_arn, region=REGION)
    assert len(mon.sent("PutMetricAlarm")) == 1  # it got that far
    assert left_monitoring() == {}
    assert sagemaker_inventory() == {"models": [], "endpoint_configs": [], "endpoints": []}


def test_a_failed_deploy_leaves_an_existing_group_as_it_was(mon, sagemaker_harness):
    before = _existing_group()
    sagemaker_harness.schedule(NAME, ["Creating", "Failed"], failure_reason="injected")
    with pytest.raises(sm_peagle.DeploymentFailed):
        sm_peagle.deploy("gpt-oss-20b", monitor=True, role=mon.role_arn, region=REGION)
    # It put its transformer and filters there, and took exactly those away again.
    assert len(mon.sent("PutTransformer")) == 1 and len(mon.sent("DeleteTransformer")) == 1
    assert len(mon.sent("DeleteMetricFilter")) == 3 and not mon.sent("DeleteLogGroup")
    assert left_monitoring() == {"log_groups": [GROUP]}
    assert _group_state() == before


def test_delete_keep_logs_keeps_peagles_log_group_only(mon, capsys):
    from tests.integration.lifecycle_env import run

    sm_peagle.deploy("gpt-oss-20b", monitor=True, role=mon.role_arn, region=REGION)
    code, out, err = run(capsys, "delete", NAME, "--dry-run", "--keep-logs", "--json")
    assert code == 0, err
    assert f"log group {GROUP}" not in json.loads(out)["would_delete"]
    code, out, err = run(capsys, "delete", NAME, "--dry-run", "--json")
    assert f"log group {GROUP}" in json.loads(out)["would_delete"]
    code, out, err = run(capsys, "delete", NAME, "--keep-logs", "--yes", "--json")
    assert code == 0, err
    assert left_monitoring() == {"log_groups": [GROUP]}
    assert _group_state()["retention"] == 30


def test_gc_collects_orphaned_monitoring_and_leaves_foreign_resources(mon, capsys):
    from tests.integration.lifecycle_env import run

    sm_peagle.deploy("gpt-oss-20b", monitor=True, role=mon.role_arn, region=REGION)
    logs, cw = clients()
    # Someone else's, of the same shapes and names: no peagle tags.
    cw.put_metric_alarm(
        AlarmName="theirs-speculation",
        Namespace="Peagle/SpeculativeDecoding",
        MetricName="AcceptanceLength",
        Dimensions=[{"Name": "EndpointName", "Value": "theirs"}],
        Statistic="Average",
        Period=60,
        EvaluationPeriods=1,
        Threshold=1.5,
        ComparisonOperator="LessThanThreshold",
    )
    cw.put_dashboard(DashboardName="theirs-speculation", DashboardBody='{"widgets": []}')
    logs.create_log_group(logGroupName="/aws/sagemaker/Endpoints/theirs")
    # The endpoint goes by hand: its monitoring is orphaned.
    boto3.client("sagemaker", region_name=REGION).delete_endpoint(EndpointName=NAME)

    code, out, err = run(capsys, "gc", "--dry-run", "--min-age", "0", "--json")
    assert code == 0, err
    found = json.loads(out)["monitoring"]
    # The alarm, the dashboard (the alarm's name), the filters, the transformer (named by
    # its group) and the group: each once, named with its kind.
    assert sorted(found) == sorted(
        [
            f"alarm {ALARM}",
            f"dashboard {ALARM}",
            *(f"metric filter {f} on {GROUP}" for f in FILTERS),
            f"transformer on {GROUP}",
            f"log group {GROUP}",
        ]
    )
    assert not [n for n in found if "theirs" in n]
    code, out, err = run(capsys, "gc", "--yes", "--min-age", "0", "--json")
    assert code == 0, err
    assert left_monitoring() == {
        "log_groups": ["/aws/sagemaker/Endpoints/theirs"],
        "alarms": ["theirs-speculation"],
        "dashboards": ["theirs-speculation"],
    }


def test_plan_text_lists_the_requests_deploy_sends_in_its_order(mon, capsys):
    """The README promises `peagle plan` shows the requests deploy sends: with monitoring,
    the headings are the operations deploy then sends, in the same order."""
    from tests.integration.lifecycle_env import run

    code, out, err = run(capsys, "plan", "gpt-oss-20b", "--monitor", "--role", mon.role_arn)
    assert code == 0, err
    lines = out.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("Requests deploy sends"))
    known = (*MONITORING_OPS, *SAGEMAKER_CREATES)
    headings = [
        ln.split()[0]
        for ln in lines[start + 1 :]
        if ln and not ln[0].isspace() and ln.split()[0] in known
    ]
    code, _, err = run(capsys, "deploy", "gpt-oss-20b", "--monitor", "--yes")
    assert code == 0, err
    sent = [op for op in ops(mon) if op in known]
    assert headings == sent
    assert headings.index("PutDashboard") < headings.index("CreateEndpoint")


SAGEMAKER_CREATES = ("CreateModel", "CreateEndpointConfig", "CreateEndpoint")


def test_delete_is_fine_with_monitoring_already_partly_gone(mon):
    sm_peagle.deploy("gpt-oss-20b", monitor=True, role=mon.role_arn, region=REGION)
    logs, cw = clients()
    cw.delete_alarms(AlarmNames=[ALARM])  # by hand
    logs.delete_metric_filter(logGroupName=GROUP, filterName="peagle-drafted-tokens")
    result = sm_peagle.Client(region=REGION).delete(NAME)
    assert f"dashboard {ALARM}" in result.deleted  # the alarm was gone already
    assert f"alarm {ALARM}" not in result.deleted
    assert left_monitoring() == {}


def test_delete_of_a_gone_endpoint_removes_a_log_group_a_stopped_rollback_left(mon, capsys):
    """A rollback stopped right after CreateLogGroup leaves only peagle's group; the
    command it names (`delete NAME`) removes it, as it removes tagged configs and models."""
    from sm_peagle.lifecycle.manager import _cleanup
    from tests.integration.lifecycle_env import run

    logs, _ = clients()
    logs.create_log_group(
        logGroupName=GROUP, tags={"peagle:managed": "true", "peagle:deployment": NAME}
    )
    from datetime import UTC, datetime

    from sm_peagle.errors import Call
    from sm_peagle.lifecycle.operation import Operation

    op = Operation.start(60, datetime.now(UTC))  # a deploy's: without monitoring, gc --operation
    assert _cleanup([("model", "m"), ("log_group", GROUP)], NAME, op) == Call("delete", NAME)
    code, out, err = run(capsys, "delete", NAME, "--yes", "--json")
    assert code == 0, err
    assert json.loads(out)["deleted"] == [f"log group {GROUP}"]
    assert left_monitoring() == {}
