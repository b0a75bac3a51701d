"""A change that only turns monitoring on or off (or changes it) sends nothing to
SageMaker: apply, diff and update send only the CloudWatch Logs and CloudWatch requests
that differ, and an unchanged spec sends nothing at all. An update of K moves a threshold
left to its default."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml

from tests.integration.lifecycle_env import REGION, record_requests, run

NAME = "peagle-gpt-oss-20b-p-eagle"
GROUP = f"/aws/sagemaker/Endpoints/{NAME}"
ALARM = f"{NAME}-speculation"


@pytest.fixture
def mon(world, monkeypatch):
    record_requests(world, monkeypatch, "logs", "cloudwatch")
    return world


def spec_file(path: Path, monitoring: dict[str, Any] | None, k: int = 3) -> Path:
    doc: dict[str, Any] = {
        "model": "gpt-oss-20b",
        "region": REGION,
        "speculative": {"mode": "p-eagle", "num_speculative_tokens": k},
    }
    if monitoring is not None:
        doc["monitoring"] = monitoring
    path.write_text(yaml.safe_dump(doc))
    return path


def changing(world, since: int) -> list[str]:
    """Every request after `since` that changes something, on any service."""
    return [
        op
        for op, _ in world.requests[since:]
        if op.startswith(("Create", "Update", "Delete", "AddTags", "Put", "Tag", "Untag"))
    ]


def alarm() -> dict[str, Any] | None:
    found = boto3.client("cloudwatch", region_name=REGION).describe_alarms(AlarmNames=[ALARM])
    return (found["MetricAlarms"] or [None])[0]


def test_monitoring_on_change_off_through_apply_sends_nothing_to_sagemaker(mon, capsys, tmp_path):
    spec = spec_file(tmp_path / "d.yaml", None)
    code, _, err = run(capsys, "apply", "-f", spec, "--yes", "--json")
    assert code == 0, err
    assert alarm() is None

    # on
    spec_file(spec, {"enabled": True})
    code, out, _ = run(capsys, "diff", "-f", spec, "--json")
    doc = json.loads(out)
    assert doc["action"] == "update"
    assert {"path": "monitoring", "old": "off", "new": "on"} in doc["spec_changes"]
    n = len(mon.requests)
    code, out, err = run(capsys, "apply", "-f", spec, "--yes", "--json")
    assert code == 0, err
    assert json.loads(out)["applied"] is True
    sent = changing(mon, n)
    assert not [op for op in sent if op in ("CreateModel", "CreateEndpointConfig")]
    assert not [op for op in sent if op in ("UpdateEndpoint", "AddTags", "DeleteEndpoint")]
    assert sent == [
        "CreateLogGroup",
        "PutRetentionPolicy",
        "PutTransformer",
        "PutMetricFilter",
        "PutMetricFilter",
        "PutMetricFilter",
        "PutMetricAlarm",
        "PutDashboard",
    ]
    assert alarm()["Threshold"] == 1.2  # default for K=3: 1 + 0.05 x (1 + 3)

    # unchanged: nothing at all, not even PutMetricAlarm
    n = len(mon.requests)
    code, out, _ = run(capsys, "apply", "-f", spec, "--yes", "--json")
    assert code == 0 and json.loads(out)["action"] == "noop"
    assert changing(mon, n) == []

    # changed: only the alarm and what shows its threshold
    spec_file(spec, {"enabled": True, "threshold": 1.5, "evaluation_periods": 4})
    n = len(mon.requests)
    code, out, err = run(capsys, "apply", "-f", spec, "--yes", "--json")
    assert code == 0, err
    paths = {c["path"]: (c["old"], c["new"]) for c in json.loads(out)["spec_changes"]}
    assert paths["monitoring.threshold"] == (1.2, 1.5)
    assert paths["monitoring.evaluation_periods"] == (5, 4)
    assert sorted(changing(mon, n)) == ["PutDashboard", "PutMetricAlarm", "TagResource"]
    a = alarm()
    assert (a["Threshold"], a["EvaluationPeriods"], a["DatapointsToAlarm"]) == (1.5, 4, 3)

    # off (--no-monitor over the spec): removed as delete removes it
    n = len(mon.requests)
    code, out, err = run(capsys, "apply", "-f", spec, "--no-monitor", "--yes", "--json")
    assert code == 0, err
    sent = changing(mon, n)
    assert sorted(sent) == sorted(
        ["DeleteAlarms", "DeleteDashboards", "DeleteTransformer", "DeleteLogGroup"]
        + ["DeleteMetricFilter"] * 3
    )
    assert alarm() is None
    logs = boto3.client("logs", region_name=REGION)
    assert logs.describe_log_groups(logGroupNamePrefix=GROUP)["logGroups"] == []
    status = boto3.client("sagemaker", region_name=REGION).describe_endpoint(EndpointName=NAME)
    assert status["EndpointStatus"] == "InService"


def test_update_k_keeps_monitoring_and_moves_a_default_threshold(mon, capsys):
    code, _, err = run(capsys, "deploy", "gpt-oss-20b", "--monitor", "--yes")
    assert code == 0, err
    n = len(mon.requests)
    code, _, err = run(capsys, "update", NAME, "-k", "5", "--yes")
    assert code == 0, err
    a = alarm()
    assert a["Threshold"] == 1.3  # default for K=5: 1 + 0.05 x (1 + 5)
    sent = changing(mon, n)
    assert "PutMetricAlarm" in sent and "PutDashboard" in sent
    assert "DeleteAlarms" not in sent and "DeleteLogGroup" not in sent


def test_update_monitor_alone_sends_nothing_to_sagemaker(mon, capsys):
    code, _, err = run(capsys, "deploy", "gpt-oss-20b", "--yes")
    assert code == 0, err
    n = len(mon.requests)
    code, out, err = run(capsys, "update", NAME, "--monitor", "--yes", "--json")
    assert code == 0, err
    sent = changing(mon, n)
    assert "PutMetricAlarm" in sent
    assert not [
        op
        for op in sent
        if op in ("CreateModel", "CreateEndpointConfig", "UpdateEndpoint", "AddTags")
    ]
    assert "monitoring: off -> on" in json.loads(out)["changes"]
    n = len(mon.requests)
    code, out, err = run(capsys, "update", NAME, "--monitor", "--yes", "--json")
    assert code == 0, err
    assert changing(mon, n) == []


def test_an_update_that_asks_nothing_of_monitoring_survives_a_denied_read(mon, capsys, monkeypatch):
    """A deployer policy from before monitoring: reading the alarm is denied. An update of K
    (nothing asked of monitoring) still succeeds, and says monitoring was left as it is."""
    from botocore.exceptions import ClientError

    import sm_peagle.lifecycle.monitoring as monitoring
    import sm_peagle.lifecycle.monitoring_read as reads

    code, _, err = run(capsys, "deploy", "gpt-oss-20b", "--yes")
    assert code == 0, err

    def denied(*_a: Any, **_k: Any) -> None:
        raise ClientError({"Error": {"Code": "AccessDenied", "Message": "no"}}, "DescribeAlarms")

    monkeypatch.setattr(reads, "read_monitoring", denied)
    monkeypatch.setattr(monitoring, "read_monitoring", denied)
    code, out, err = run(capsys, "update", NAME, "-k", "5", "--yes", "--json")
    assert code == 0, err
    assert json.loads(out)["speculative_config"]["num_speculative_tokens"] == 5
    assert "monitoring of peagle-gpt-oss-20b-p-eagle not read (access denied)" in err
    # ... while one that asks for monitoring fails on it, in one line.
    code, _, err = run(capsys, "update", NAME, "--monitor", "--yes")
    assert code == 1 and "Traceback" not in err


def test_turning_monitoring_on_over_a_foreign_transformer_is_refused_with_nothing_sent(
    mon, capsys, tmp_path
):
    spec = spec_file(tmp_path / "d.yaml", None, k=3)
    code, _, err = run(capsys, "apply", "-f", spec, "--yes")
    assert code == 0, err
    logs = boto3.client("logs", region_name=REGION)
    if not logs.describe_log_groups(logGroupNamePrefix=GROUP)["logGroups"]:
        logs.create_log_group(logGroupName=GROUP)
    logs.put_transformer(logGroupIdentifier=GROUP, transformerConfig=[{"parseJSON": {}}])
    # With a SageMaker change too (K 3 -> 5): refused before SageMaker is touched.
    spec_file(spec, {"enabled": True}, k=5)
    n = len(mon.requests)
    code, _, err = run(capsys, "apply", "-f", spec, "--yes")
    assert code == 2, err
    assert "transformer" in err and "Traceback" not in err
    assert changing(mon, n) == []
