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
