"""Per-request acceptance end to end on the sandbox (SIMULATED engine), through the real CLI:
the plan sets SM_VLLM_PER_REQUEST_SPEC_DECODE_METRICS=summary for p-eagle and eagle3 on an
image whose vLLM has the flag, never for baseline nor for an older image (the boundary is
read from the vLLM source facts, `per_request_metrics_min()`), as the sandbox's request log
shows in CreateModel; the SIMULATED engine then reports each request's acceptance, which
`invoke` shows, `invoke --json` carries and `race` puts on each lane.

Expected acceptance comes from the sandbox's ground truth (the accepted/drafted count of
every step the engine simulated for that request) and vLLM's definitions
(`v1/metrics/stats.py`): one histogram entry per step that drafted, mean acceptance length
1 + accepted / steps, draft acceptance rate accepted / drafted.
"""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from sm_peagle.catalog.images import classic_versions
from sm_peagle.vllm.versions import per_request_metrics_min
from tests.e2e.test_sandbox import Sandbox, running_sandbox

pytestmark = pytest.mark.e2e

VAR = "SM_VLLM_PER_REQUEST_SPEC_DECODE_METRICS"
FIRST = per_request_metrics_min()
assert FIRST is not None, "the vLLM source facts name no version with the flag"
# Versions AWS published an image for (a deploy needs one): the newest before the first
# with the flag, and the newest of all.
BEFORE = max(v for v in classic_versions() if v < FIRST)
NEWEST = max(classic_versions())
# Away from AWS the line leads with the label (issue 33: made-up figures never read as
# measurements).
LINE = re.compile(
    r"^\[SANDBOX \(SIMULATED\)\] acceptance: (\d+\.\d) tokens/step \((\d+)% of drafts\), "
    r"per request$",
    re.M,
)


@pytest.fixture(scope="module")
def sb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    yield from running_sandbox(tmp_path_factory.mktemp("sandbox-per-request"))


def requests_log(sb: Sandbox) -> list[dict[str, Any]]:
    with urllib.request.urlopen(f"{sb.url}/_peagle/requests", timeout=10) as r:
        return json.loads(r.read())["requests"]


def deploy(sb: Sandbox, name: str, mode: str, version: object) -> dict[str, str]:
    """Deploy tiny-llama; return the Environment CreateModel sent, from the request log."""
    urllib.request.urlopen(
        urllib.request.Request(f"{sb.url}/_peagle/requests", method="DELETE"), timeout=10
    )
    sb.cli("--sandbox", "deploy", "tiny-llama", "--mode", mode, "--vllm-version", str(version),
           "--name", name, "--yes")  # fmt: skip
    [create] = [r["params"] for r in requests_log(sb) if r["operation"] == "CreateModel"]
    return create["PrimaryContainer"]["Environment"]


def expected(truth: dict[str, Any], k: int) -> dict[str, Any]:
    """vLLM's summary object for one request, from the engine's own steps."""
    hist = [0] * (k + 1)
    drafted = 0
    for step in truth["steps"]:
        if step.get("drafted"):
            hist[step["accepted"]] += 1
            drafted += step["drafted"]
    steps = sum(hist)
    accepted = sum(j * n for j, n in enumerate(hist))
    return {
        "mean_acceptance_length": 1 + accepted / steps,
        "draft_acceptance_rate": accepted / drafted,
        "acceptance_histogram": hist,
        "num_spec_steps": steps,
        "num_accepted_draft_tokens": accepted,
        "num_draft_tokens": drafted,
        "num_spec_tokens": k,
    }


def same(got: dict[str, Any] | None, want: dict[str, Any]) -> bool:
    """Counts exactly, the two ratios to float precision."""
    assert got is not None and set(got) == set(want), got
    ratios = ("mean_acceptance_length", "draft_acceptance_rate")
    assert {k: got[k] for k in want if k not in ratios} == {
        k: v for k, v in want.items() if k not in ratios
    }
    assert [got[k] for k in ratios] == pytest.approx([want[k] for k in ratios])
    return True


def last_truth(sb: Sandbox, name: str) -> dict[str, Any]:
    return [r for r in sb.ground_truth(name) if r["status"] == "ok"][-1]


@pytest.mark.parametrize(
    ("mode", "version", "value"),
    [
        ("p-eagle", FIRST, "summary"),  # the first version with the flag
        ("eagle3", NEWEST, "summary"),
        ("baseline", NEWEST, None),  # vLLM refuses the flag without speculation
        ("p-eagle", BEFORE, None),  # the newest version before it: vLLM would not start
    ],
)
def test_create_model_carries_the_flag_exactly_where_vllm_takes_it(
    sb: Sandbox, mode: str, version: object, value: str | None
) -> None:
    name = f"pr-{mode}-{str(version).replace('.', '-')}"
    env = deploy(sb, name, mode, version)
    assert env.get(VAR) == value
    if mode != "baseline":
        assert "SM_VLLM_SPECULATIVE_CONFIG" in env


def test_invoke_shows_the_requests_own_acceptance(sb: Sandbox) -> None:
    name = "pr-p-eagle-" + str(FIRST).replace(".", "-")
    out = sb.cli("--sandbox", "invoke", name, "Explain parallel drafting.", "--max-tokens", "64")
    want = expected(last_truth(sb, name), k=3)
    [(length, share)] = LINE.findall(out.stderr)
    assert length == f"{want['mean_acceptance_length']:.1f}"
    assert share == f"{want['draft_acceptance_rate'] * 100:.0f}"
    assert "acceptance" not in out.stdout  # stdout is the answer only

    doc = json.loads(
        sb.cli(
            "--sandbox", "invoke", name, "Another prompt.", "--max-tokens", "64", "--json"
        ).stdout
    )
    want = expected(last_truth(sb, name), k=3)
    assert same(doc["spec_decode"], want)
    assert doc["usage"]["completion_tokens"] == last_truth(sb, name)["completion_tokens"]


def test_not_streamed_it_is_in_the_response_too(sb: Sandbox) -> None:
    name = "pr-p-eagle-" + str(FIRST).replace(".", "-")
    doc = json.loads(
        sb.cli(
            "--sandbox", "invoke", name, "Hi.", "--max-tokens", "32", "--no-stream", "--json"
        ).stdout
    )
    assert same(doc["spec_decode"], expected(last_truth(sb, name), k=3))


@pytest.mark.parametrize("which", ["baseline", "older image"])
def test_without_the_flag_nothing_is_claimed(sb: Sandbox, which: str) -> None:
    name = (
        "pr-baseline-" + str(NEWEST).replace(".", "-")
        if which == "baseline"
        else "pr-p-eagle-" + str(BEFORE).replace(".", "-")
    )
    out = sb.cli("--sandbox", "invoke", name, "Hello.", "--max-tokens", "16")
    assert "acceptance:" not in out.stderr
    doc = json.loads(sb.cli("--sandbox", "invoke", name, "Hello.", "--json").stdout)
    assert doc["spec_decode"] is None


def test_race_puts_each_lanes_acceptance_on_it(sb: Sandbox) -> None:
    speculative = "pr-eagle3-" + str(NEWEST).replace(".", "-")
    baseline = "pr-baseline-" + str(NEWEST).replace(".", "-")
    doc = json.loads(
        sb.cli("--sandbox", "race", speculative, baseline, "--max-tokens", "48", "--json").stdout
    )
    want = expected(last_truth(sb, speculative), k=3)
    assert same(doc["a"]["spec_decode"], want)
    assert doc["a"]["acceptance_length"] == pytest.approx(want["mean_acceptance_length"])
    assert doc["a"]["draft_acceptance_rate"] == pytest.approx(want["draft_acceptance_rate"])
    assert doc["b"]["spec_decode"] is None and doc["b"]["acceptance_length"] is None
    text = sb.cli("--sandbox", "race", speculative, baseline, "--max-tokens", "48").stdout
    want = expected(last_truth(sb, speculative), k=3)
    [a_line] = [ln for ln in text.splitlines() if ln.startswith("A: ")]
    assert a_line.endswith(
        f"acc {want['mean_acceptance_length']:.1f} tok/step "
        f"({want['draft_acceptance_rate'] * 100:.0f}%)"
    )
    [b_line] = [ln for ln in text.splitlines() if ln.startswith("B: ")]
    assert "acc " not in b_line


def test_chat_shows_each_turns_acceptance(sb: Sandbox) -> None:
    import subprocess
    import sys

    name = "pr-p-eagle-" + str(FIRST).replace(".", "-")
    proc = subprocess.run(
        [sys.executable, "-m", "sm_peagle.cli", "--sandbox", "chat", name, "--max-tokens", "32"],
        input="Hello.\nAnd again.\n/exit\n",
        env=sb.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    turns = [r for r in sb.ground_truth(name) if r["status"] == "ok"][-2:]
    shown = LINE.findall(proc.stderr)
    assert len(shown) == 2
    for (length, share), truth in zip(shown, turns, strict=True):
        want = expected(truth, k=3)
        assert length == f"{want['mean_acceptance_length']:.1f}"
        assert share == f"{want['draft_acceptance_rate'] * 100:.0f}"
