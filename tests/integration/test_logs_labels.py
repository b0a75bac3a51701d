"""`peagle logs` says where each line came from (issue 26, item 5), in process against the
moto harness: `[AWS] HH:MM:SS <event>` talking to AWS, and the label of the sandbox's real
vLLM engine, `SANDBOX (vllm X.Y.Z, CPU, tiny model)`, when this process is pointed at such
a sandbox (`--sandbox` sets PEAGLE_SANDBOX_URL and PEAGLE_SANDBOX_ENGINE_LABEL, the engine
saying "vllm 0.31.0 (CPU, tiny model)"). The events themselves stay as stored. The
expected labels are the issue's strings, written out."""

from __future__ import annotations

import json
import re
from typing import Any

import boto3
import pytest

import sm_peagle
from tests.integration.lifecycle_env import REGION, World, run

NAME = "peagle-gpt-oss-20b-p-eagle"
REAL = "SANDBOX (vllm 0.31.0, CPU, tiny model)"
# vLLM's own lines, with the [file.py:123] tags that are not rich markup.
LINES = [
    "(APIServer pid=1) INFO 11-26 10:02:58 [api_server.py:1880] Starting vLLM API server on "
    "http://0.0.0.0:8080",
    "(APIServer pid=1) INFO 11-26 10:03:08 [metrics.py:96] SpecDecoding metrics: Mean "
    "acceptance length: 3.41, Accepted: 120 tokens, Drafted: 249 tokens, Avg Draft "
    "acceptance rate: 48.2%",
]


@pytest.fixture
def deployed(world: World, sagemaker_harness: Any) -> Any:
    sm_peagle.deploy("gpt-oss-20b", role=world.role_arn, region=REGION)
    sagemaker_harness.seed_logs(NAME, LINES)
    return sagemaker_harness


def real_engine_sandbox(monkeypatch: pytest.MonkeyPatch) -> None:
    """The settings `--sandbox` gives a command when the sandbox runs the real engine."""
    monkeypatch.setenv("PEAGLE_TARGET", "sandbox")  # as the sandbox's activate() sets it
    monkeypatch.setenv("PEAGLE_SANDBOX_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("PEAGLE_SANDBOX_ENGINE_LABEL", "vllm 0.31.0 (CPU, tiny model)")


def stored() -> list[str]:
    logs = boto3.client("logs", region_name=REGION)
    events = logs.filter_log_events(logGroupName=f"/aws/sagemaker/Endpoints/{NAME}")["events"]
    return [e["message"] for e in events]


def printed(out: str, label: str) -> list[str]:
    """The events of `logs`'s stdout, each line checked to be `[label] HH:MM:SS event`."""
    line = re.compile(rf"^{re.escape(f'[{label}]')} \d\d:\d\d:\d\d (?P<event>.*)$")
    matches = [line.match(text) for text in out.splitlines()]
    assert all(matches), out
    return [m.group("event") for m in matches if m]


@pytest.mark.parametrize("label", ["AWS", REAL])
def test_every_line_carries_the_label_and_the_event_as_stored(
    deployed: Any, capsys: Any, monkeypatch: pytest.MonkeyPatch, label: str
) -> None:
    if label == REAL:
        real_engine_sandbox(monkeypatch)
    code, out, err = run(capsys, "logs", NAME)
    assert code == 0, err
    assert printed(out, label) == LINES == stored()


def test_json_events_carry_the_real_engine_s_label(
    deployed: Any, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_engine_sandbox(monkeypatch)
    code, out, err = run(capsys, "logs", NAME, "--json")
    assert code == 0, err
    events = json.loads(out)
    assert [(e["label"], e["message"]) for e in events] == [(REAL, m) for m in LINES]
    assert events[1]["spec_decoding"] == {
        "mean_acceptance_length": 3.41,
        "draft_acceptance_rate": 0.482,
    }  # parsed from the stored line, which the label is not part of
    # The SDK's events carry the same label.
    assert {e.label for e in sm_peagle.logs(NAME)} == {REAL}


def test_no_lines_in_the_window_is_said_with_the_label(
    deployed: Any, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An endpoint that has logged nothing: the one line `logs` prints is labelled too."""
    sm_peagle.deploy("gpt-oss-20b", name="peagle-quiet", region=REGION)
    real_engine_sandbox(monkeypatch)
    code, out, err = run(capsys, "logs", "peagle-quiet", "--since", "5m")
    assert code == 0, err
    assert out == ""
    assert f"[{REAL}] no log lines for peagle-quiet in the last 5m" in err.splitlines()
