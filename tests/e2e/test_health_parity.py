"""`peagle health` and `sm_peagle.health` on the SIMULATED sandbox: one verdict, one
document. An endpoint deployed with `--monitor` (the sandbox's harness evaluates its
transformer and metric filters on the engine's lines) that served traffic is "paying" from
the metrics AWS would compute; a fresh endpoint that served nothing is "no data". The
CLI's `--json` document is the SDK's `to_dict()` (plus its `label`), but for the window,
which ends at AWS's now at each call.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_sandbox import Sandbox, running_sandbox
from tests.sandbox_helpers import point_at_sandbox

pytestmark = pytest.mark.e2e

NAME = "peagle-gpt-oss-20b-p-eagle"
FRESH = "health-fresh"


@pytest.fixture(scope="module")
def sb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    root = tmp_path_factory.mktemp("sandbox-health")
    yield from running_sandbox(root, "gpt-oss-20b", "--monitor")


@pytest.fixture
def sdk_env(sb: Sandbox, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    point_at_sandbox(sb.state, monkeypatch, tmp_path)


def settled(name: str) -> Any:
    """The SDK's report once the engine's last SpecDecoding line is in (the count stops
    growing between two reads; vLLM, and the sandbox, write one per stats interval)."""
    import sm_peagle

    last = sm_peagle.health(name)
    for _ in range(40):
        time.sleep(0.25)
        now = sm_peagle.health(name)
        if now.samples == last.samples and now.samples:
            return now
        last = now
    return last


WINDOW_KEYS = ("window_start", "window_end")


def comparable(doc: dict[str, Any]) -> dict[str, Any]:
    """The document but for the window (AWS's now at each call) and its evidence line."""
    out = {k: v for k, v in doc.items() if k not in (*WINDOW_KEYS, "label")}
    out["evidence"] = [e for e in doc["evidence"] if not e.startswith("window ")]
    return out


def test_monitored_with_traffic_is_paying_and_fresh_is_no_data_in_both_faces(
    sb: Sandbox, sdk_env: None
) -> None:
    import sm_peagle

    sb.cli("--sandbox", "deploy", "gpt-oss-20b", "--name", FRESH, "--monitor", "--yes")
    for _ in range(4):
        sm_peagle.invoke(NAME, "Tell me about speculative decoding.", max_tokens=48, stream=False)

    settled(NAME)
    # The two faces are compared at one sandbox time: with the clock running, a period
    # boundary between the two calls lets the alarm be evaluated (INSUFFICIENT_DATA -> OK)
    # and the documents differ for that reason alone.
    sb.cli("sandbox", "clock", "freeze")
    try:
        sdk = sm_peagle.health(NAME)
        cli = json.loads(sb.cli("--sandbox", "health", NAME, "--json").stdout)
        assert sdk.verdict == cli["verdict"] == "paying", sdk.evidence
        assert sdk.source == "metric" and sdk.alarm is not None and sdk.samples > 0
        assert cli["label"] == "SANDBOX (SIMULATED)"
        assert comparable(cli) == comparable(sdk.to_dict())

        text = sb.cli("--sandbox", "health", NAME).stdout
        assert text.startswith(f"{NAME}: paying (acceptance length "), text

        fresh = sm_peagle.health(FRESH)
        fresh_cli = json.loads(sb.cli("--sandbox", "health", FRESH, "--json").stdout)
        assert fresh.verdict == fresh_cli["verdict"] == "no data", fresh.evidence
        assert comparable(fresh_cli) == comparable(fresh.to_dict())
        assert sm_peagle.Client().endpoint(FRESH).health().verdict == "no data"
    finally:
        sb.cli("sandbox", "clock", "resume")

    # status's speculation row carries the same alarm, from one DescribeAlarms.
    st = json.loads(sb.cli("--sandbox", "status", NAME, "--json").stdout)
    assert st["speculation"]["alarm"] == f"{NAME}-speculation"
    assert st["speculation"]["acceptance_length_1h"] == pytest.approx(
        sdk.acceptance_length, abs=1e-3
    )
