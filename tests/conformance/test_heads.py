"""Heads, differentially: peagle's `drafter check` verdict equals what the real engine does.

Each head (built by `sm_peagle/sandbox/vllm_engine/heads.py`; one property varied from
the aligned P-EAGLE head) is judged twice:

- peagle: `check_drafter(inspect_local(dir), vllm_version=<engine>, mode="p-eagle", K=3,
  target hidden 256, target vocab 512)` (what `peagle drafter check DIR --vllm-version V
  --mode p-eagle --target-hidden-size 256 --target-vocab-size 512` prints);
- the engine: tiny-llama + that head with `parallel_drafting: true`, K=3, real weights
  (never `load_format=dummy`, which skips the `mask_hidden` check), enforce_eager, greedy,
  2 prompts x 24 tokens; all heads in ONE engine process (`offline_runs`).

peagle "fail" <=> the engine fails to start or serve. For a failure, both must name the
same property (the regexes of `HEADS`, searched in peagle's failing checks and in the
engine's exception + traceback). Where peagle only warns (draft vocab 128 without `d2t`)
the engine starts, and the measured acceptance collapse vs the same head with `d2t` is
asserted (aligned pair: with `d2t` every greedy draft is accepted by design).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from sm_peagle.drafter import check_drafter, inspect_local
from sm_peagle.vllm.versions import VllmVersion
from tests.conformance.engine_proc import run_engine_module

_MASK_KEYS = r"ptd_token_id|pard_token|mask_token_id"
# head dir (under models/) -> regexes the failure must name on BOTH sides (empty: starts)
HEADS: dict[str, list[str]] = {
    "p-eagle-aligned": [],  # LlamaForCausalLMEagle3, the control
    "eagle3-aligned": [_MASK_KEYS],  # an EAGLE-3 head: no mask token, no mask_hidden
    "variants/no-mask-token-key": [_MASK_KEYS],
    "variants/mask-token-pard": [],
    "variants/mask-token-top-level": [],  # top-level mask_token_id (vLLM >= 0.28)
    "variants/mask-token-dflash": [],  # dflash_config.mask_token_id (vLLM >= 0.20)
    "variants/no-mask-hidden": ["mask_hidden"],
    "variants/mask-hidden-wrong-size": ["mask_hidden", "512", "768"],
    "variants/fc-wrong-width": [r"256, 512\]", r"256, 768\]"],
    "variants/aux-layers-2-fc-768": ["mask_hidden", "512", "768"],
    "variants/arch-llama": [],  # LlamaForCausalLM -> Eagle3LlamaForCausalLM
    "variants/arch-peagle-plain": ["Eagle3PEagleDraftModel"],
    "variants/speculators-mask-token-id": [],
    "variants/speculators-no-mask-token-id": ["mask_token_id"],
    "variants/draft-vocab-128": [],
    "variants/draft-vocab-128-no-d2t": [],  # peagle warns; acceptance collapses
    "variants/full-draft-vocab": [],
    "variants/no-config-json": [r"config\.json"],
    "variants/sharded-3": [],
    "variants/fp32-weights": [],
}
PROMPTS = ["user: how many tokens does the drafter propose?\nassistant:", "the verifier"]


def _peagle(path: Path, version: str) -> tuple[str, str, list[Any]]:
    checks = check_drafter(
        inspect_local(str(path)),
        target_hidden_size=256,
        target_vocab_size=512,
        vllm_version=VllmVersion(version),
        mode="p-eagle",
        k=3,
    )
    fails = [f"{c.name}: {c.message}" for c in checks if c.status == "fail"]
    return ("fail" if fails else "starts"), " | ".join(fails), checks


@pytest.fixture(scope="module")
def engine_runs(engine, tmp_path_factory) -> dict[str, dict[str, Any]]:
    runs = [
        {
            "id": head,
            "model": str(engine.models / "tiny-llama"),
            "speculative_config": {
                "model": str(engine.models / head),
                "method": "eagle3",
                "num_speculative_tokens": 3,
                "parallel_drafting": True,
            },
            "prompts": PROMPTS,
            "temperature": 0.0,
            "max_tokens": 24,
            "max_model_len": 512,
        }
        for head in HEADS
    ]
    logs = tmp_path_factory.mktemp("heads")
    out = run_engine_module(
        engine,
        "peagle_sandbox.vllm_engine.offline_runs",
        {"log_dir": str(logs), "runs": runs},
        stderr_path=logs / "offline_runs.stderr",
    )
    return {r["id"]: r for r in out["results"]}


def _engine_text(r: dict[str, Any]) -> str:
    log = Path(r["log"])
    tail = "\n".join(log.read_text(errors="replace").splitlines()[-80:]) if log.exists() else ""
    return f"{r['error']}\n{r.get('log_errors', '')}\n{tail}"


@pytest.mark.parametrize("head", list(HEADS))
def test_peagle_verdict_equals_engine(engine, engine_runs, head) -> None:
    verdict, said, _ = _peagle(engine.models / head, engine.version)
    r = engine_runs[head]
    served = r["ok"] and all(len(x) == 24 for x in r["token_ids"])
    actual = "starts" if served else "fail"
    assert verdict == actual, (
        f"{head}: peagle says {verdict!r} ({said or 'no failing check'}) but vLLM "
        f"{engine.version} {'starts and serves' if served else 'fails: ' + str(r['error'])}"
    )
    want = HEADS[head]
    assert bool(want) == (actual == "fail"), f"{head}: HEADS table expects the other outcome"
    text = _engine_text(r)
    for pattern in want:
        assert re.search(pattern, said), (
            f"{head}: the engine's error names {pattern!r} but peagle's does not: {said}"
        )
        assert re.search(pattern, text), (
            f"{head}: peagle names {pattern!r} but the engine's error does not: {r['error']}"
        )


def test_small_draft_vocab_without_d2t_warns_and_collapses(engine, engine_runs) -> None:
    with_d2t = engine_runs["variants/draft-vocab-128"]["spec"]
    without = engine_runs["variants/draft-vocab-128-no-d2t"]["spec"]
    rate = {
        k: s["num_accepted_tokens"] / s["num_draft_tokens"]
        for k, s in (("with", with_d2t), ("without", without))
    }
    print(
        f"\ndraft vocab 128: acceptance with d2t {rate['with']:.1%}, without {rate['without']:.1%}"
    )
    _, _, checks = _peagle(engine.models / "variants/draft-vocab-128-no-d2t", engine.version)
    vocab = next(c for c in checks if c.name == "drafter.vocab")
    assert vocab.status == "warn" and "d2t" in vocab.message, (
        f"peagle does not warn about the missing d2t: {vocab}"
    )
    assert rate["with"] >= 0.9, (
        f"aligned head with d2t accepts only {rate['with']:.1%} ({with_d2t})"
    )
    assert rate["without"] <= 0.1, (
        f"no d2t, yet acceptance {rate['without']:.1%} did not collapse ({without}): "
        "peagle's warning would be unfounded"
    )
