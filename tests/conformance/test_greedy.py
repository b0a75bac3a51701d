"""Greedy equivalence: speculative decoding on the real engine is lossless at temperature 0.

For each target, P-EAGLE (aligned and random heads, K=3 and K=7) and EAGLE-3 must return
exactly the baseline's token ids for the same prompts (4 prompts in one batch, 48
tokens each, `ignore_eos`). Two targets cover both paths of the rejection sampler:

- `tiny-llama` (aligned): the aligned heads' drafts are all accepted (K tokens + the
  bonus token per step); the random P-EAGLE head's drafts are rejected;
- `tiny-llama-random`: varied output (no favoured token), random heads, drafts rejected.

Proof that speculation really ran (not silently off): every speculative run reports
drafts in vLLM's own counters, and the aligned runs accept >= 90% of them (by design
100% at temperature 0, see `sm_peagle/sandbox/vllm_engine/alignment.py`).
All runs: one engine process, `vllm.LLM` offline (`offline_runs`), enforce_eager.
"""

from __future__ import annotations

import pytest

from tests.conformance.engine_proc import BF16_KERNELS, run_engine_module

PROMPTS = [
    "user: how many tokens does the drafter propose?\nassistant:",
    "the verifier accepts four tokens at once.",
    "Quick brown foxes jump over lazy dogs",
    "SageMaker deploys a vLLM container",
]
MAX_TOKENS = 48
# id -> (target, head or None, K, parallel drafting, aligned pair)
RUNS: dict[str, tuple[str, str | None, int, bool, bool]] = {
    "aligned/baseline": ("tiny-llama", None, 0, False, False),
    "aligned/p-eagle-aligned-k3": ("tiny-llama", "p-eagle-aligned", 3, True, True),
    "aligned/p-eagle-aligned-k7": ("tiny-llama", "p-eagle-aligned", 7, True, True),
    "aligned/p-eagle-random-k3": ("tiny-llama", "p-eagle-random", 3, True, False),
    "aligned/eagle3-aligned-k3": ("tiny-llama", "eagle3-aligned", 3, False, True),
    "random/baseline": ("tiny-llama-random", None, 0, False, False),
    "random/p-eagle-random-k3": ("tiny-llama-random", "p-eagle-random", 3, True, False),
    "random/eagle3-random-k3": ("tiny-llama-random", "eagle3-random", 3, False, False),
}


@pytest.fixture(scope="module")
def outputs(engine, tmp_path_factory) -> dict[str, dict]:
    runs = []
    for rid, (target, head, k, parallel, _) in RUNS.items():
        spec = None
        if head:
            spec = {"model": str(engine.models / head), "method": "eagle3"}
            spec["num_speculative_tokens"] = k
            if parallel:
                spec["parallel_drafting"] = True
        runs.append(
            {
                "id": rid,
                "model": str(engine.models / target),
                "speculative_config": spec,
                "prompts": PROMPTS,
                "temperature": 0.0,
                "max_tokens": MAX_TOKENS,
                "max_model_len": 512,
            }
        )
    logs = tmp_path_factory.mktemp("greedy")
    job = {"log_dir": str(logs), "runs": runs}
    out = run_engine_module(
        engine,
        "peagle_sandbox.vllm_engine.offline_runs",
        job,
        stderr_path=logs / "offline_runs.stderr",
    )
    res = {r["id"]: r for r in out["results"]}
    for rid, r in res.items():
        assert r["ok"], f"engine failed on {rid}: {r['error']} {r.get('log_errors', '')}"
    return res


def _kernel_marks(rid: str) -> list:
    """On a host whose vLLM loads the bf16 kernel build (engine_proc.BF16_KERNELS), the
    random target (near-ties among its logits) with heads whose drafts are rejected
    (changing the batch shapes) may not equal the baseline token for token: an expected
    failure there, named as such, not a skip."""
    if BF16_KERNELS and rid.startswith("random/"):
        return [
            pytest.mark.xfail(
                reason="vLLM's AVX512-BF16/AMX kernels are not batch invariant: greedy "
                "speculative output can differ from the baseline at a near-tie",
                strict=False,
            )
        ]
    return []


@pytest.mark.parametrize(
    "rid",
    [pytest.param(r, marks=_kernel_marks(r)) for r in RUNS if not r.endswith("baseline")],
)
def test_speculative_tokens_equal_baseline(outputs, rid) -> None:
    target, head, k, parallel, aligned = RUNS[rid]
    base = outputs[f"{rid.split('/')[0]}/baseline"]["token_ids"]
    got = outputs[rid]["token_ids"]
    assert len(got) == len(PROMPTS) and all(len(x) == MAX_TOKENS for x in got), rid
    for i, (b, s) in enumerate(zip(base, got, strict=True)):
        first = next((j for j, (x, y) in enumerate(zip(b, s, strict=True)) if x != y), None)
        assert first is None, (
            f"{rid} ({head}, K={k}, parallel={parallel}) differs from baseline on prompt {i} "
            f"at token {first}: baseline {b[first : first + 5]} vs speculative "
            f"{s[first : first + 5]}"
        )
    spec = outputs[rid]["spec"] or {}
    assert spec.get("num_drafts", 0) > 0, f"{rid}: vLLM reports no drafts: {spec}"
    rate = spec["num_accepted_tokens"] / spec["num_draft_tokens"]
    if aligned:
        assert rate >= 0.9, f"{rid}: aligned pair accepted only {rate:.1%} at T=0 ({spec})"
    print(f"\n{rid}: equal to baseline, draft acceptance {rate:.1%} ({spec})")


def test_random_target_output_is_not_trivial(outputs) -> None:
    """The random target's baseline is varied, so equality there is a real comparison."""
    ids = {t for seq in outputs["random/baseline"]["token_ids"] for t in seq}
    assert len(ids) >= 5, f"random target's greedy output uses only {sorted(ids)}"
