"""Lossy is loud (issue 28, item 2 and its acceptance): `peagle plan … --vllm-version 0.33.0
--image <an explicit image>` with `rejection_sample_method: fly` warns and exits 0, and
with `--strict` exits 2; the message says why in vLLM's own words (0.33.0
`vllm/config/speculative.py`, `_verify_args`: "FLy verification is a lossy speculative
decoding method and may degrade model outputs."). `VLLM_USE_V2_MODEL_RUNNER=1` with
P-EAGLE is refused (0.33.0 `config/vllm.py` raises for parallel drafting on V2), naming
vllm PR #44816. Plan sends nothing: it is offline (the AWS endpoint never answers).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

import sm_peagle
from sm_peagle.cli.app import main

FLY_TEXT = "FLy verification is a lossy speculative decoding method and may degrade model outputs."
IMAGE = (
    "763104351884.dkr.ecr.us-east-1.amazonaws.com/vllm:0.33.0-gpu-py312-cu130-ubuntu24.04-sagemaker"
)
ROLE = "arn:aws:iam::123456789012:role/peagle"
CHECK = "speculative.rejection_sample_method"


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "fake")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "fake")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # never answers
    monkeypatch.setenv("PEAGLE_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv("PEAGLE_SANDBOX", raising=False)


def spec_file(
    tmp_path: Path, speculative: dict[str, Any], env: dict[str, str] | None = None
) -> str:
    doc: dict[str, Any] = {"model": "gpt-oss-20b", "role": ROLE, "speculative": speculative}
    if env:
        doc["container"] = {"env": env}
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def plan(capsys: pytest.CaptureFixture, path: str, *extra: str) -> tuple[int, str, str]:
    code = main(["plan", "-f", path, "--vllm-version", "0.33.0", "--image", IMAGE, *extra])
    out, err = capsys.readouterr()
    return code, out, err


def checks_of(out: str) -> dict[str, dict[str, Any]]:
    doc = json.loads(out[: out.index("\n}\n") + 2])
    return {c["name"]: c for c in doc["checks"]}


def test_fly_warns_citing_vllm_and_exits_0(capsys, tmp_path: Path) -> None:
    path = spec_file(tmp_path, {"mode": "p-eagle", "rejection_sample_method": "fly"})
    code, out, err = plan(capsys, path, "--json")
    assert code == 0, err
    check = checks_of(out)[CHECK]
    assert check["status"] == "warn"
    assert FLY_TEXT in check["message"] and "outputs may differ" in check["message"]
    assert "rejection_sample_method: standard" in check["fix"]
    # the SDK plans the same: the config it would send carries fly, and strict=True fails
    p = sm_peagle.plan(path, vllm_version="0.33.0", image=IMAGE)
    assert p.speculative_config is not None
    assert p.speculative_config["rejection_sample_method"] == "fly"
    env = p.create_model["PrimaryContainer"]["Environment"]
    assert json.loads(env["SM_VLLM_SPECULATIVE_CONFIG"])["rejection_sample_method"] == "fly"


def test_strict_fails_fly_with_exit_2_and_says_why(capsys, tmp_path: Path) -> None:
    path = spec_file(tmp_path, {"mode": "p-eagle", "rejection_sample_method": "fly"})
    code, out, err = plan(capsys, path, "--strict")
    assert code == 2
    line = next(ln for ln in err.splitlines() if CHECK in ln)
    assert FLY_TEXT in line
    p = sm_peagle.plan(path, vllm_version="0.33.0", image=IMAGE, strict=True)
    failed = {c.name: c.message for c in p.checks if c.status == "fail"}
    assert FLY_TEXT in failed[CHECK]


def test_standard_is_not_flagged(capsys, tmp_path: Path) -> None:
    path = spec_file(tmp_path, {"mode": "p-eagle", "rejection_sample_method": "standard"})
    code, out, err = plan(capsys, path, "--json")
    assert code == 0, err
    assert checks_of(out).get(CHECK, {"status": "pass"})["status"] == "pass"


def test_forcing_model_runner_v2_with_p_eagle_is_refused(capsys, tmp_path: Path) -> None:
    path = spec_file(tmp_path, {"mode": "p-eagle"}, env={"VLLM_USE_V2_MODEL_RUNNER": "1"})
    code, out, err = plan(capsys, path)
    assert code == 2
    line = next(ln for ln in err.splitlines() if "VLLM_USE_V2_MODEL_RUNNER" in ln)
    assert "vllm PR #44816" in line and "parallel drafting" in line and "(fix: " in line
