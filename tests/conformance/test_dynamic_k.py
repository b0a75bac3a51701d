"""Dynamic K (`num_speculative_tokens_per_batch_size`) on the REAL vLLM CPU engine: what peagle
promises for it (`sm_peagle/vllm/dynamic_k.py`) is what this measures.

- P-EAGLE (`parallel_drafting: true`) with schedule [[1,4,3],[5,256,2]]: the engine starts
  and serves one stream (batch size 1 -> K=3, exactly 3 draft tokens per draft), but six
  streams at once (batch size 5+ -> K=2) kill it with the error peagle quotes when it
  refuses the schedule for p-eagle (`P_EAGLE_ENGINE_ERRORS`). When a vLLM fixes that, this
  test fails: lift the refusal then.
- EAGLE-3 with the same schedule: serves both phases in full and really switches K
  (fewer than 3 draft tokens per draft at batch sizes 5-6), from /metrics counters.

Uses the tier's `engine` fixture (conftest.py: skips locally without an engine, fails in
CI) and `ServeProcess` (one engine at a time, its process group killed after each test).
Greedy decoding with the aligned heads (every draft accepted), so the counts are exact.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

from sm_peagle.vllm.dynamic_k import P_EAGLE_DYNAMIC_K, P_EAGLE_ENGINE_ERRORS
from tests.conformance.engine_proc import ServeProcess

K = 3
SCHEDULE = [[1, 4, 3], [5, 256, 2]]
MAX_TOKENS = 64
FAILURES: list[str] = []  # why requests failed (shown when an assertion does)


def _serve(engine, head: str, parallel: bool, log_path: Path) -> ServeProcess:
    cfg = {
        "model": str(engine.models / head),
        "method": "eagle3",
        "num_speculative_tokens": K,
        "num_speculative_tokens_per_batch_size": SCHEDULE,
    }
    if parallel:
        cfg["parallel_drafting"] = True
    return ServeProcess(
        engine,
        str(engine.models / "tiny-llama"),
        "--speculative-config",
        json.dumps(cfg),
        log_path=log_path,
    )


def _streams(sp: ServeProcess, n: int) -> list[int]:
    """Completion tokens of each of `n` concurrent requests (0 for a failed one)."""
    tokens: list[int] = []

    def one(i: int) -> None:
        try:
            doc = sp.complete(f"Explain parallel drafting, part {i}.", max_tokens=MAX_TOKENS,
                              temperature=0.0)  # fmt: skip
            tokens.append(int(doc["usage"]["completion_tokens"]))
        except Exception as e:  # the engine died under this request
            tokens.append(0)
            FAILURES.append(f"{type(e).__name__}: {e}")

    # Released together: under a busy CPU, threads started one by one can reach the
    # engine one by one, and the batch never grows past the first schedule range.
    barrier = threading.Barrier(n)

    def together(i: int) -> None:
        barrier.wait()
        one(i)

    threads = [threading.Thread(target=together, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sorted(tokens, reverse=True)


def _phase(sp: ServeProcess, n: int) -> dict[str, float]:
    """`n` requests at once, all served in full; the spec-decode counters they moved."""
    before = sp.spec_counters()
    assert _streams(sp, n) == [MAX_TOKENS] * n
    after = sp.spec_counters()
    return {k: after[k] - before[k] for k in ("num_drafts", "num_draft_tokens")}


def test_p_eagle_dynamic_k_kills_the_engine_as_peagle_says(engine, tmp_path, capsys):
    allowed, reason = P_EAGLE_DYNAMIC_K
    log = tmp_path / "p-eagle-dynamic-k.log"
    with _serve(engine, "p-eagle-aligned", True, log) as sp:
        sp.wait_ready()  # it starts: the schedule passes vLLM's validator
        alone = _phase(sp, 1)
        # Batch size 1 -> range [1, 4] -> K=3: exactly 3 draft tokens per draft.
        assert alone["num_draft_tokens"] == K * alone["num_drafts"] > 0, alone
        served = _streams(sp, 6)
    text = log.read_text(errors="replace")
    died = sorted({ln.split("] ", 1)[-1] for ln in text.splitlines()
                   if any(e in ln for e in P_EAGLE_ENGINE_ERRORS)})  # fmt: skip
    with capsys.disabled():
        print(f"\np-eagle + dynamic K, 6 requests at once: completion tokens {served}; {died}")
    assert served != [MAX_TOKENS] * 6, FAILURES  # not every request completed...
    # ...because the drafting path broke, with one of the errors peagle quotes:
    lines = [ln for ln in text.splitlines() if "Error" in ln][-8:]
    assert died, (FAILURES[:3], lines)
    assert "propose_draft_token_ids" in text and "EngineDeadError" in text
    assert not allowed and "propose_draft_token_ids" in reason


def test_eagle3_dynamic_k_serves_and_switches_k(engine, tmp_path):
    log = tmp_path / "eagle3-dynamic-k.log"
    with _serve(engine, "eagle3-aligned", False, log) as sp:
        sp.wait_ready()
        alone = _phase(sp, 1)
        assert alone["num_draft_tokens"] == K * alone["num_drafts"] > 0, alone
        crowd = _phase(sp, 10)
        text = log.read_text(errors="replace")  # before the stop: shutdown logs tracebacks
    per_draft = crowd["num_draft_tokens"] / crowd["num_drafts"]
    # Batch sizes 5-10 -> range [5, 256] -> K=2 (steps at smaller batches keep K=3).
    assert 2.0 <= per_draft < K, crowd
    assert "Traceback" not in text
