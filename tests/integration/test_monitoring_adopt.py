"""`adopt` reads monitoring back from a live alarm of peagle's, and never takes the log
group: an endpoint made outside peagle whose alarm peagle's tags mark (a CloudFormation
export of a monitored spec makes exactly that)."""

from __future__ import annotations

import boto3
import yaml

import sm_peagle
from tests.integration.lifecycle_env import REGION, record_requests, run
from tests.integration.test_adopt import NAME, create_jumpstart_endpoint

GROUP = f"/aws/sagemaker/Endpoints/{NAME}"


def _peagles_alarm(threshold: float, periods: int, datapoints: int) -> None:
    """The alarm as peagle (or its CloudFormation export) makes it: its name, its tags."""
    boto3.client("cloudwatch", region_name=REGION).put_metric_alarm(
        AlarmName=f"{NAME}-speculation",
        Namespace="Peagle/SpeculativeDecoding",
        MetricName="AcceptanceLength",
        Dimensions=[{"Name": "EndpointName", "Value": NAME}],
        Statistic="Average",
        Period=120,
        EvaluationPeriods=periods,
        DatapointsToAlarm=datapoints,
        Threshold=threshold,
        ComparisonOperator="LessThanThreshold",
        TreatMissingData="missing",
        Tags=[
            {"Key": "peagle:managed", "Value": "true"},
            {"Key": "peagle:deployment", "Value": NAME},
            {"Key": "peagle:threshold", "Value": "spec"},
        ],
    )


def test_adopt_reads_monitoring_from_peagles_alarm_and_leaves_the_log_group(
    world, capsys, monkeypatch, tmp_path
):
    record_requests(world, monkeypatch, "logs", "cloudwatch")
    create_jumpstart_endpoint(world.role_arn)
    logs = boto3.client("logs", region_name=REGION)
    logs.create_log_group(logGroupName=GROUP)  # SageMaker's, untagged, never expiring
    _peagles_alarm(1.6, periods=6, datapoints=4)
    out_file = tmp_path / "adopted.yaml"
    code, _, err = run(capsys, "adopt", NAME, "--yes", "-o", str(out_file))
    assert code == 0, err
    spec = yaml.safe_load(out_file.read_text())
    assert spec["monitoring"] == {
        "threshold": 1.6,
        "period_seconds": 120,
        "evaluation_periods": 6,
        "datapoints_to_alarm": 4,
    }  # no log_retention_days: the group is not peagle's
    changed = [op for op, _ in world.requests if op.startswith(("Create", "Put", "Tag", "Delete"))]
    assert [op for op in changed if op not in ("AddTags",)] == []
    (g,) = logs.describe_log_groups(logGroupNamePrefix=GROUP)["logGroups"]
    assert "retentionInDays" not in g
    assert logs.list_tags_for_resource(resourceArn=g["arn"].removesuffix(":*"))["tags"] == {}


def test_adopt_without_peagles_alarm_has_no_monitoring(world):
    create_jumpstart_endpoint(world.role_arn)
    result = sm_peagle.Client(region=REGION).adopt(NAME, dry_run=True)
    assert result.spec.monitoring is None
