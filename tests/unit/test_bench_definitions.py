"""peagle.bench/2's latency fields are `vllm bench serve`'s, as docs/bench-schema.md
documents them (vLLM 0.31.0 benchmarks/lib/endpoint_request_func.py and
benchmarks/serve.py `calculate_metrics`), checked on a hand-computed stream:

    sent at 0; role-only chunk at 0.05; content chunks at 0.20 (1 token), 0.26 (3 tokens),
    0.30 (2 tokens); a chunk with choices but no token (the finish) at 0.32; the usage-only
    chunk at 0.40; [DONE].

- TTFT = first chunk carrying tokens - sent = 0.20 (the role-only chunk is not a token);
- ITL = each later chunk carrying choices minus the one before: 0.06, 0.04, 0.02;
- E2EL = last chunk carrying choices - sent = 0.32 (the usage-only chunk carries none);
- TPOT = (E2EL - TTFT) / (output tokens - 1) = 0.12 / 5 = 0.024;
- itl_per_token_s (peagle's) = each gap over its chunk's tokens: 0.02 x 3, 0.02 x 2, 0.02;
- goodput = requests meeting every SLO (TTFT, TPOT, E2EL; <=) / the level's wall time.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from sm_peagle.benchmarking.load import chunk_timing, record_from_completion
from sm_peagle.benchmarking.metrics import RequestRecord, summarize_level
from sm_peagle.runtime.chunks import StreamParser, collect

DOC = Path(__file__).resolve().parents[2] / "docs" / "bench-schema.md"


def stream() -> list:
    def ev(delta: dict | None, tokens: int, finish: str | None = None) -> bytes:
        usage = {"prompt_tokens": 7, "completion_tokens": tokens}
        choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
        return f"data: {json.dumps({'choices': choices, 'usage': usage})}\n\n".encode()

    parser = StreamParser()
    out = []
    for data, t in (
        (ev({"role": "assistant", "content": ""}, 0), 0.05),
        (ev({"content": "a"}, 1), 0.20),
        (ev({"content": "bcd"}, 4), 0.26),
        (ev({"content": "ef"}, 6), 0.30),
        (ev({"content": ""}, 6, "stop"), 0.32),
        (ev(None, 6), 0.40),
        (b"data: [DONE]\n\n", 0.40),
    ):
        out += parser.feed(data, t)
    return out


def the_record(sent: float = 0.0) -> RequestRecord:
    chunks = stream()
    return record_from_completion(
        collect(chunks, 0.0), index=0, sent_at=sent, chunks=chunk_timing(chunks, 0.0)
    )


def test_the_fields_are_vllm_bench_serves_on_a_hand_computed_stream() -> None:
    r = the_record()
    assert r.ok and r.output_tokens == 6
    assert r.ttft_s == pytest.approx(0.20)
    assert list(r.itl_s) == pytest.approx([0.06, 0.04, 0.02])
    assert r.e2e_s == pytest.approx(0.32)
    assert r.tpot_s == pytest.approx((0.32 - 0.20) / (6 - 1))
    assert r.itl_per_token() == pytest.approx([0.02] * 6)
    assert r.ended_at == pytest.approx(0.40)  # the last byte: the level's wall time ends here
    level = summarize_level([r], concurrency=1)
    assert level["itl_s"]["n"] == 3 and level["itl_s"]["mean"] == pytest.approx(0.04)
    assert level["itl_per_token_s"]["n"] == 6
    assert level["e2e_s"]["p50"] == pytest.approx(0.32)


def test_a_one_token_answer_has_no_tpot_and_meets_any_tpot_objective() -> None:
    one = RequestRecord(index=0, ok=True, sent_at=0.0, ended_at=0.3, ttft_s=0.2, e2e_s=0.2,
                        output_tokens=1)  # fmt: skip
    level = summarize_level([one], concurrency=1, slo={"tpot": 0.001})
    assert level["tpot_s"]["n"] == 0  # vLLM: tpots only for output_len > 1 ...
    assert level["goodput"]["requests"] == 1  # ... and 0 for goodput


def test_goodput_counts_requests_meeting_every_objective_over_wall_time() -> None:
    good = the_record(0.0)  # TTFT 0.20, TPOT 0.024, E2EL 0.32
    slow = the_record(1.0)
    slow.ttft_s = 0.6  # misses TTFT <= 0.5
    failed = RequestRecord(index=2, ok=False, sent_at=0.5, ended_at=0.6, error_kind="X")
    level = summarize_level(
        [good, slow, failed], concurrency=2, slo={"ttft": 0.5, "tpot": 0.024, "e2e": 0.32}
    )
    gp = level["goodput"]
    assert gp["requests"] == 1  # <= on each objective: 0.024 and 0.32 still meet theirs
    assert level["wall_s"] == pytest.approx(1.40)  # first send 0.0 -> last byte 1.40
    assert gp["requests_per_s"] == pytest.approx(1 / 1.40)
    assert gp["share"]["all"] == pytest.approx(1 / 3)  # the failed request counts, unmet


def test_the_schema_page_documents_these_formulas_and_cites_vllm() -> None:
    text = DOC.read_text()
    for formula in (
        "TTFT = first chunk carrying tokens - sent",
        "E2EL = last chunk carrying choices - sent",
        "TPOT = (E2EL - TTFT) / (output tokens - 1)",
        "ITL = each chunk carrying choices - the chunk before it",
        "itl_per_token_s",
    ):
        assert formula in text, formula
    assert re.search(r"vllm/benchmarks/lib/endpoint_request_func\.py", text)
    assert re.search(r"vllm/benchmarks/serve\.py", text)
    assert "peagle.bench/1" in text and "peagle.bench/2" in text
