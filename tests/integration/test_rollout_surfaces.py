"""The rollout (`endpoint.rollout`) on diff and apply: it says how the next update moves
traffic, not what runs, so a spec whose only change is its rollout is "no changes", sends
nothing (request log) and leaves the endpoint's tags as they were; diff says the rollout
applies to the next update. A real change lists no `endpoint.rollout` path among the spec
changes (the deployed spec never carries one)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml

from tests.integration.lifecycle_env import REGION, record_requests, run

NAME = "peagle-gpt-oss-20b-p-eagle"


@pytest.fixture
def w(world, monkeypatch):
    record_requests(world, monkeypatch, "logs", "cloudwatch")
    return world


def spec_file(path: Path, rollout: dict[str, Any] | None, k: int = 3) -> Path:
    doc: dict[str, Any] = {
        "model": "gpt-oss-20b",
        "region": REGION,
        "endpoint": {"instance_count": 2},
        "speculative": {"mode": "p-eagle", "num_speculative_tokens": k},
    }
    if rollout is not None:
        doc["endpoint"]["rollout"] = rollout
    path.write_text(yaml.safe_dump(doc))
    return path


def changing(world, since: int) -> list[str]:
    """Every request after `since` that changes something, on any service recorded."""
    return [
        op
        for op, _ in world.requests[since:]
        if op.startswith(("Create", "Update", "Delete", "AddTags", "Put", "Tag", "Untag"))
    ]


def live_tags() -> dict[str, str]:
    sm = boto3.client("sagemaker", region_name=REGION)
    arn = sm.describe_endpoint(EndpointName=NAME)["EndpointArn"]
    return {t["Key"]: t["Value"] for t in sm.list_tags(ResourceArn=arn)["Tags"]}


def test_a_rollout_only_change_is_no_change_and_sends_nothing(w, capsys, tmp_path) -> None:
    spec = spec_file(tmp_path / "d.yaml", None)
    code, _, err = run(capsys, "apply", "-f", spec, "--yes", "--json")
    assert code == 0, err
    before = live_tags()

    spec_file(spec, {"strategy": "canary", "size": 1, "bake": "5m", "alarms": ["team-5xx"]})
    n = len(w.requests)
    code, out, err = run(capsys, "diff", "-f", spec, "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["action"] == "noop"
    assert doc["spec_changes"] == [] and doc["request_changes"] == []
    assert doc["rollout"] == "the rollout (canary) applies to the next update; nothing sent for it"

    code, out, err = run(capsys, "diff", "-f", spec, "--detailed-exitcode")
    assert code == 0, err  # nothing pending: exit 0, not 3
    assert "no changes, up to date" in out
    assert "the rollout (canary) applies to the next update" in out

    code, out, err = run(capsys, "apply", "-f", spec, "--yes")
    assert code == 0, err
    assert "the rollout (canary) applies to the next update" in out + err
    assert changing(w, n) == []
    assert not w.sent("UpdateEndpoint")
    assert live_tags() == before


def test_a_real_change_lists_no_rollout_path(w, capsys, tmp_path) -> None:
    spec = spec_file(tmp_path / "d.yaml", None)
    code, _, err = run(capsys, "apply", "-f", spec, "--yes", "--json")
    assert code == 0, err
    spec_file(spec, {"strategy": "canary"}, k=5)
    n = len(w.requests)
    code, out, err = run(capsys, "diff", "-f", spec, "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["action"] == "update"
    paths = [c["path"] for c in doc["spec_changes"]]
    assert "speculative.num_speculative_tokens" in paths
    assert not [p for p in paths if p.startswith("endpoint.rollout")]
    assert doc["rollout"] == "this update rolls out canary"
    assert changing(w, n) == []


def _answer_last_deployment_config(monkeypatch, config: dict[str, Any]) -> None:
    """DescribeEndpoint answers `LastDeploymentConfig` as SageMaker does after a guardrail
    update (botocore's model: "The most recent deployment configuration for the
    endpoint"). Added to the parsed answer of every DescribeEndpoint made through the one
    AWS seam, so this test does not depend on the harness having run a rollout."""
    from sm_peagle.aws import AwsContext

    wrapped = AwsContext.client

    def client(self: AwsContext, service: str, region: str | None = None, **cfg: Any) -> Any:
        c = wrapped(self, service, region, **cfg)
        if service == "sagemaker" and not getattr(c, "_last_deployment", False):
            c._last_deployment = True

            def after(parsed: dict, **_: Any) -> None:
                parsed.setdefault("LastDeploymentConfig", config)

            c.meta.events.register("after-call.sagemaker.DescribeEndpoint", after)
        return c

    monkeypatch.setattr(AwsContext, "client", client)


def test_adopt_maps_the_last_deployment_config_to_the_rollout(
    world, capsys, monkeypatch, tmp_path
) -> None:
    from tests.integration.test_adopt import NAME as ADOPTED
    from tests.integration.test_adopt import create_jumpstart_endpoint

    create_jumpstart_endpoint(world.role_arn)
    _answer_last_deployment_config(
        monkeypatch,
        {
            "BlueGreenUpdatePolicy": {
                "TrafficRoutingConfiguration": {
                    "Type": "CANARY",
                    "WaitIntervalInSeconds": 300,
                    "CanarySize": {"Type": "INSTANCE_COUNT", "Value": 1},
                },
                "TerminationWaitInSeconds": 300,
                "MaximumExecutionTimeoutInSeconds": 3600,
            },
            "AutoRollbackConfiguration": {
                "Alarms": [
                    {"AlarmName": f"{ADOPTED}-rollout-errors"},
                    {"AlarmName": "team-p99"},
                ]
            },
        },
    )
    out_file = tmp_path / "adopted.yaml"
    code, out, err = run(capsys, "adopt", ADOPTED, "--yes", "-o", str(out_file), "--json")
    assert code == 0, err
    spec = yaml.safe_load(out_file.read_text())
    assert spec["endpoint"]["rollout"] == {
        "strategy": "canary",
        "size": 1,
        "bake": 300,
        "timeout": 3600,
        "alarms": ["team-p99"],
    }
    checks = {c["message"] for c in json.loads(out)["checks"] if c["name"] == "rollout"}
    assert f"{ADOPTED}-rollout-errors" in " ".join(checks)
    # outside the spec hash and tags: the tags adopt wrote are those of the spec without it
    from sm_peagle.planning.spec.loading import spec_from_data

    rest = {k: v for k, v in spec["endpoint"].items() if k != "rollout"}
    without = spec_from_data({**spec, "endpoint": rest})
    sm = boto3.client("sagemaker", region_name=REGION)
    arn = sm.describe_endpoint(EndpointName=ADOPTED)["EndpointArn"]
    tags = {t["Key"]: t["Value"] for t in sm.list_tags(ResourceArn=arn)["Tags"]}
    assert tags["peagle:spec-sha256"] == without.sha256()
    assert not [v for k, v in tags.items() if k.startswith("peagle:spec:") and "rollout" in v]


def test_tags_alone_do_not_carry_the_rollout(w, capsys, tmp_path) -> None:
    """A spec whose endpoint lags only in its tags is an update that retags and sends no
    UpdateEndpoint: the rollout waits for the next one, and apply says so."""
    spec = tmp_path / "d.yaml"
    doc = yaml.safe_load(spec_file(spec, None).read_text())
    doc["tags"] = {"team": "ml"}
    spec.write_text(yaml.safe_dump(doc))
    code, _, err = run(capsys, "apply", "-f", spec, "--yes", "--json")
    assert code == 0, err
    sm = boto3.client("sagemaker", region_name=REGION)
    sm.delete_tags(ResourceArn=sm.describe_endpoint(EndpointName=NAME)["EndpointArn"],
                   TagKeys=["team"])  # fmt: skip
    doc["endpoint"]["rollout"] = {"strategy": "canary"}
    spec.write_text(yaml.safe_dump(doc))
    code, out, err = run(capsys, "diff", "-f", spec, "--json")
    assert code == 0, err
    d = json.loads(out)
    assert d["action"] == "update"
    assert [c["path"] for c in d["spec_changes"]] == ["endpoint.tags.team"]
    assert d["rollout"] == "the rollout (canary) applies to the next update; nothing sent for it"
    n = len(w.requests)
    code, out, err = run(capsys, "apply", "-f", spec, "--yes")
    assert code == 0, err
    assert "the rollout (canary) applies to the next update" in out + err
    assert not [op for op, _ in w.requests[n:] if op == "UpdateEndpoint"]
    assert live_tags()["team"] == "ml"


def test_adopt_after_a_guarded_update_the_harness_ran(world, sagemaker_harness, capsys, tmp_path):
    """End to end on the harness: an all-at-once update with rollback alarms (sent as a
    stack or another tool would send it) commits on the sandbox clock, DescribeEndpoint
    answers LastDeploymentConfig, and adopt carries it as endpoint.rollout."""
    from tests.integration.test_adopt import CONFIG, create_jumpstart_endpoint
    from tests.integration.test_adopt import NAME as ADOPTED

    sagemaker_harness.provisioning_seconds = 0
    create_jumpstart_endpoint(world.role_arn)
    sm = boto3.client("sagemaker", region_name=REGION)
    cfg = sm.describe_endpoint_config(EndpointConfigName=CONFIG)
    sm.create_endpoint_config(EndpointConfigName=f"{CONFIG}-2",
                              ProductionVariants=cfg["ProductionVariants"])  # fmt: skip
    cw = boto3.client("cloudwatch", region_name=REGION)
    for alarm in (f"{ADOPTED}-rollout-errors", "team-p99"):
        cw.put_metric_alarm(
            AlarmName=alarm, Namespace="Test", MetricName="Signal", Statistic="Maximum",
            Period=60, EvaluationPeriods=1, Threshold=1.0,
            ComparisonOperator="GreaterThanThreshold", TreatMissingData="notBreaching",
        )  # fmt: skip
    sm.update_endpoint(
        EndpointName=ADOPTED,
        EndpointConfigName=f"{CONFIG}-2",
        DeploymentConfig={
            "BlueGreenUpdatePolicy": {
                "TrafficRoutingConfiguration": {"Type": "ALL_AT_ONCE", "WaitIntervalInSeconds": 0},
                "TerminationWaitInSeconds": 120,
                "MaximumExecutionTimeoutInSeconds": 1500,
            },
            "AutoRollbackConfiguration": {
                "Alarms": [{"AlarmName": f"{ADOPTED}-rollout-errors"}, {"AlarmName": "team-p99"}]
            },
        },
    )
    sagemaker_harness.clock.advance(121)  # past the final bake (no provisioning time here)
    ep = sm.describe_endpoint(EndpointName=ADOPTED)
    assert (ep["EndpointStatus"], ep["EndpointConfigName"]) == ("InService", f"{CONFIG}-2")
    assert "LastDeploymentConfig" in ep
    out_file = tmp_path / "adopted.yaml"
    code, _, err = run(capsys, "adopt", ADOPTED, "--yes", "-o", str(out_file))
    assert code == 0, err
    spec = yaml.safe_load(out_file.read_text())
    assert spec["endpoint"]["rollout"] == {
        "bake": 120,  # all-at-once's one bake: TerminationWaitInSeconds
        "timeout": 1500,
        "alarms": ["team-p99"],  # peagle's own <endpoint>-rollout-errors left out
    }  # strategy all-at-once is the default: adopt -o writes the spec without defaults
