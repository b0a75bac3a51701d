"""`peagle plan`: JumpStart's lmi-optimized wiring reproduced offline, and what -k/--mode
change (and do not change) in the requests."""

from __future__ import annotations

import json
import socket
from typing import Any

import pytest

from sm_peagle.planning.spec.model import AWS_NAME_RE
from tests.plan_helpers import (
    SPEC_ENV,
    assert_matches_lmi_optimized,
    lmi_optimized,
    load_fixture,
    make_offline,
    plan_json,
    run_cli,
)

REQUESTS = ("create_model", "create_endpoint_config", "create_endpoint")


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    """Offline for real: no credentials to find, and any connection attempt fails."""
    make_offline(monkeypatch, tmp_path)

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError(f"network access attempted: {args}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


def _variant(doc: dict[str, Any]) -> dict[str, Any]:
    (variant,) = doc["create_endpoint_config"]["ProductionVariants"]
    return variant


@pytest.mark.parametrize("region", ["us-east-1", "eu-west-1", "ap-northeast-1", "cn-north-1"])
def test_plan_reproduces_jumpstart_lmi_optimized_offline(capsys, no_network, region) -> None:
    expected = lmi_optimized(load_fixture(), region=region)
    doc = plan_json(capsys, "gpt-oss-20b", "--region", region)

    assert_matches_lmi_optimized(doc["create_model"], _variant(doc), expected)
    # K=3 is JumpStart's default, with parallel drafting (P-EAGLE) on.
    assert doc["speculative_config"] == expected["speculative_config"]
    assert doc["speculative_config"]["num_speculative_tokens"] == 3
    assert doc["vllm_version"] == expected["vllm_version"]
    assert doc["jumpstart"]["config"] == expected["config"]
    assert doc["region"] == region
    # Nothing failed; the only warning is the placeholder role.
    statuses = {c["name"]: c["status"] for c in doc["checks"]}
    assert "fail" not in statuses.values()
    assert [n for n, s in statuses.items() if s == "warn"] == ["role"]


def test_plan_without_json_prints_a_readable_plan(capsys, no_network) -> None:
    code, out, err = run_cli(capsys, "plan", "gpt-oss-20b", "--region", "us-east-1")
    assert code == 0, err
    assert "peagle-gpt-oss-20b-p-eagle" in out
    assert "-> channel eagle" in out
    assert "FAIL" not in out


# -- what -k and --mode change --------------------------------------------------------


def _comparable(doc: dict[str, Any]) -> dict[str, Any]:
    """The three requests, with each Tags list turned into a mapping so that a difference
    is reported under the tag's key rather than its position."""
    out = json.loads(json.dumps({r: doc[r] for r in REQUESTS}))
    for request in out.values():
        request["Tags"] = {t["Key"]: t["Value"] for t in request["Tags"]}
    return out


def diff_paths(a: Any, b: Any, path: str = "") -> set[str]:
    """Every path at which `a` and `b` differ (a key present on one side only counts)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out: set[str] = set()
        for key in set(a) | set(b):
            sub = f"{path}.{key}" if path else str(key)
            if key not in a or key not in b:
                out.add(sub)
            else:
                out |= diff_paths(a[key], b[key], sub)
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        out = set()
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            out |= diff_paths(x, y, f"{path}[{i}]")
        return out
    return set() if a == b else {path}


def test_diff_paths_reports_changes_additions_and_removals() -> None:
    a = {"x": 1, "y": {"z": [1, {"w": 2}]}, "gone": 0}
    b = {"x": 1, "y": {"z": [1, {"w": 3}]}, "new": 0}
    assert diff_paths(a, b) == {"y.z[1].w", "gone", "new"}
    assert diff_paths(a, a) == set()


NAMES_AND_TAGS = {
    "create_model.ModelName",
    "create_model.Tags.peagle:deployment",
    "create_model.Tags.peagle:spec-sha256",
    "create_endpoint_config.EndpointConfigName",
    "create_endpoint_config.ProductionVariants[0].ModelName",
    "create_endpoint_config.Tags.peagle:deployment",
    "create_endpoint_config.Tags.peagle:spec-sha256",
    "create_endpoint.EndpointName",
    "create_endpoint.EndpointConfigName",
    "create_endpoint.Tags.peagle:deployment",
    "create_endpoint.Tags.peagle:spec-sha256",
}


def _assert_names_follow_spec(doc: dict[str, Any], mode: str) -> None:
    sha = doc["spec_sha256"]
    names = doc["names"]
    assert names["endpoint"].endswith(f"-{mode}")
    assert sha[:8] in names["model"] and sha[:8] in names["endpoint_config"]
    for name in names.values():
        assert AWS_NAME_RE.match(name) and len(name) <= 63
    tags = {t["Key"]: t["Value"] for t in doc["create_endpoint"]["Tags"]}
    assert tags["peagle:spec-sha256"] == sha
    assert tags["peagle:deployment"] == names["endpoint"]


def test_k7_eagle3_changes_only_the_speculative_config(capsys, no_network) -> None:
    base = plan_json(capsys, "gpt-oss-20b", "--region", "us-east-1")
    eagle3 = plan_json(
        capsys, "gpt-oss-20b", "--region", "us-east-1", "-k", "7", "--mode", "eagle3"
    )

    changed = diff_paths(_comparable(base), _comparable(eagle3))
    assert changed == NAMES_AND_TAGS | {f"create_model.PrimaryContainer.Environment.{SPEC_ENV}"}

    env = eagle3["create_model"]["PrimaryContainer"]["Environment"]
    assert json.loads(env[SPEC_ENV]) == {
        "model": "/opt/ml/additional-model-data-sources/eagle",
        "method": "eagle3",
        "num_speculative_tokens": 7,
    }
    assert "parallel_drafting" not in eagle3["speculative_config"]
    assert eagle3["mode"] == "eagle3"
    _assert_names_follow_spec(base, "p-eagle")
    _assert_names_follow_spec(eagle3, "eagle3")
    assert base["spec_sha256"] != eagle3["spec_sha256"]


def test_baseline_drops_speculation_and_the_drafter_channel(capsys, no_network) -> None:
    base = plan_json(capsys, "gpt-oss-20b", "--region", "us-east-1")
    plain = plan_json(capsys, "gpt-oss-20b", "--region", "us-east-1", "--mode", "baseline")

    container = plain["create_model"]["PrimaryContainer"]
    assert SPEC_ENV not in container["Environment"]
    assert "AdditionalModelDataSources" not in container
    assert plain["speculative_config"] is None
    changed = diff_paths(_comparable(base), _comparable(plain))
    assert changed == NAMES_AND_TAGS | {
        f"create_model.PrimaryContainer.Environment.{SPEC_ENV}",
        "create_model.PrimaryContainer.AdditionalModelDataSources",
    }
    _assert_names_follow_spec(plain, "baseline")


def test_same_spec_twice_gives_the_same_plan(capsys, no_network) -> None:
    args = ("gpt-oss-20b", "--region", "us-east-1", "-k", "5", "-t", "ml.g7e.12xlarge")
    first = plan_json(capsys, *args)
    second = plan_json(capsys, *args)
    assert first == second
    assert json.dumps(first, sort_keys=True) == json.dumps(second, sort_keys=True)


def test_instance_count_and_name_reach_the_requests(capsys, no_network) -> None:
    doc = plan_json(
        capsys, "gpt-oss-20b", "--region", "us-east-1", "--instance-count", "3", "--name", "my-ep"
    )
    assert _variant(doc)["InitialInstanceCount"] == 3
    assert doc["create_endpoint"]["EndpointName"] == "my-ep"
    assert doc["estimate"]["usd_per_hour"] == pytest.approx(3 * 4.20)


def test_engine_args_and_tp_become_container_env(capsys, no_network, tmp_path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "model: gpt-oss-20b\n"
        "region: us-east-1\n"
        "endpoint: {instance_type: ml.g7e.48xlarge}\n"
        "container:\n"
        "  engine_args: {max_model_len: 16384, tensor_parallel_size: 4, enforce-eager: true}\n"
    )
    code, out, err = run_cli(capsys, "plan", "-f", str(spec), "--json")
    assert code == 0, err
    env = json.loads(out)["create_model"]["PrimaryContainer"]["Environment"]
    assert env["SM_VLLM_MAX_MODEL_LEN"] == "16384"
    assert env["SM_VLLM_TENSOR_PARALLEL_SIZE"] == "4"
    assert env["SM_VLLM_ENFORCE_EAGER"] == "true"
    checks = {c["name"]: c for c in json.loads(out)["checks"]}
    assert checks["container.engine_args.tensor_parallel_size"]["status"] == "warn"  # 4 of 8
