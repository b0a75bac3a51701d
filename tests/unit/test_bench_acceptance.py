"""A level's acceptance: exact from its own requests (vLLM's per-request
`metrics.speculative_decoding`), or windowed from vLLM's log lines, which are marked as such
and warn when other traffic is mixed in. Expected values are computed here by hand from
vLLM's formulas (vLLM 0.31.0, v1/metrics/stats.py `RequestSpecDecodeMetrics.to_dict` and
v1/spec_decode/metrics.py `SpecDecodingLogging.log`):

- mean acceptance length = 1 + accepted / spec steps;
- draft acceptance rate = accepted / drafted tokens;
- per-position rate i = steps that accepted more than i drafts / steps.
"""

from __future__ import annotations

import pytest

import sm_peagle.benchmarking.acceptance as acc_mod
from sm_peagle.benchmarking.acceptance import (
    acceptance_for_levels,
    acceptance_from_requests,
    max_drafted_tokens,
)
from sm_peagle.benchmarking.load import record_from_completion
from sm_peagle.benchmarking.metrics import RequestRecord
from sm_peagle.runtime.chunks import Completion, Usage


def sd(hist: list[int], drafted: int) -> dict:
    """vLLM's summary object for a request with this histogram (K = len(hist) - 1)."""
    steps = sum(hist)
    accepted = sum(j * n for j, n in enumerate(hist))
    return {
        "mean_acceptance_length": 1 + accepted / steps,
        "draft_acceptance_rate": accepted / drafted,
        "acceptance_histogram": hist,
        "num_spec_steps": steps,
        "num_accepted_draft_tokens": accepted,
        "num_draft_tokens": drafted,
        "num_spec_tokens": len(hist) - 1,
        "per_step_accepted": [3] * steps,  # `detailed` arrays: not kept in the record
    }


def completion(tokens: int, spec: dict | None) -> Completion:
    return Completion(
        text="x", finish_reason="length", usage=Usage(5, tokens, 5 + tokens), chunks=3,
        e2e=1.0, ttft=0.1, spec_decode=spec,
    )  # fmt: skip


def record(i: int, tokens: int, spec: dict | None) -> RequestRecord:
    return record_from_completion(completion(tokens, spec), index=i, sent_at=100.0 + i)


def failed(i: int) -> RequestRecord:
    return RequestRecord(index=i, ok=False, sent_at=100.0, ended_at=100.5, error_kind="X")


def test_a_request_keeps_its_counts_and_histogram_verbatim() -> None:
    r = record(0, 12, sd([1, 0, 2, 1], 12))
    assert r.spec_decode == {
        "mean_acceptance_length": 1 + 7 / 4,
        "draft_acceptance_rate": 7 / 12,
        "acceptance_histogram": [1, 0, 2, 1],
        "num_spec_steps": 4,
        "num_accepted_draft_tokens": 7,
        "num_draft_tokens": 12,
        "num_spec_tokens": 3,
    }
    assert r.to_dict()["spec_decode"] == r.spec_decode  # in the results file
    assert record(1, 12, None).spec_decode is None  # an image without the flag


def test_per_request_acceptance_is_summed_over_the_levels_own_requests() -> None:
    # A: histogram [1, 0, 2, 1]: 4 steps, 0+0+4+3 = 7 accepted, 12 drafted.
    # B: histogram [2, 1, 0, 0]: 3 steps, 1 accepted, 9 drafted.
    # A failed request carries nothing and adds nothing.
    records = [record(0, 12, sd([1, 0, 2, 1], 12)), record(1, 4, sd([2, 1, 0, 0], 9)), failed(2)]
    acc = acceptance_from_requests(records)
    assert acc is not None
    assert acc["source"] == "per-request" and acc["status"] == "measured"
    assert (acc["requests"], acc["failed_requests"]) == (2, 1)
    assert (acc["accepted_tokens"], acc["drafted_tokens"], acc["drafts"]) == (8, 21, 7)
    assert acc["acceptance_histogram"] == [3, 1, 2, 1]
    assert acc["mean_acceptance_length"] == pytest.approx(1 + 8 / 7)
    assert acc["draft_acceptance_rate"] == pytest.approx(8 / 21)
    # Steps accepting more than 0, 1, 2 drafts: 4, 3 and 1 of 7.
    assert acc["per_position"] == pytest.approx([4 / 7, 3 / 7, 1 / 7])
    # vLLM's identity: 1 + the per-position rates is the mean acceptance length.
    assert 1 + sum(acc["per_position"]) == pytest.approx(acc["mean_acceptance_length"])


def test_a_level_with_a_request_lacking_the_metrics_is_not_called_exact() -> None:
    records = [record(0, 12, sd([1, 0, 2, 1], 12)), record(1, 4, None)]
    assert acceptance_from_requests(records) is None  # -> the windowed fallback
    assert acceptance_from_requests([failed(0)]) is None


def test_a_request_with_no_spec_steps_has_length_one_and_no_rate() -> None:
    # A one-token answer: the prefill made it, no step drafted (vLLM reports 1.0 and 0.0).
    empty = {
        "mean_acceptance_length": 1.0, "draft_acceptance_rate": 0.0,
        "acceptance_histogram": [0, 0, 0, 0], "num_spec_steps": 0,
        "num_accepted_draft_tokens": 0, "num_draft_tokens": 0, "num_spec_tokens": 3,
    }  # fmt: skip
    acc = acceptance_from_requests([record(0, 1, empty)])
    assert acc is not None
    assert acc["mean_acceptance_length"] == 1.0 and acc["draft_acceptance_rate"] is None
    assert acc["per_position"] is None


def test_the_most_a_level_can_have_drafted_is_k_per_token_after_the_first() -> None:
    records = [record(0, 12, None), record(1, 1, None), failed(2)]
    assert max_drafted_tokens(records, 3) == 3 * (11 + 0)
    assert max_drafted_tokens(records, None) is None


# -- windowed: vLLM's SpecDecoding log lines ---------------------------------------------


def line(t: float, accepted: int, drafted: int, k: int = 3) -> dict:
    drafts = drafted / k
    return {
        "t": t, "accepted": accepted, "drafted": drafted,
        "mean_acceptance_length": round(1 + accepted / drafts, 2),
        "draft_acceptance_rate": accepted / drafted, "per_position": None,
    }  # fmt: skip


@pytest.fixture
def lines(monkeypatch: pytest.MonkeyPatch) -> list[dict]:
    # One line every 10 s, each covering the 10 s before it (the first: one gap).
    logged = [line(10.0, 30, 60), line(20.0, 90, 120), line(30.0, 10, 60)]
    monkeypatch.setattr(acc_mod, "read_spec_lines", lambda *a, **k: logged)
    return logged


def test_a_windowed_level_is_marked_and_warns_about_lines_reaching_outside_it(lines) -> None:
    # The level ran from 12 s to 18 s: the line at 20 s covers 10-20 s.
    (acc,) = acceptance_for_levels(None, "ep", [(12.0, 18.0)], mode="p-eagle", k=3, wait_s=0)
    assert acc["source"] == "windowed" and acc["status"] == "measured"
    assert (acc["covered_from"], acc["covered_to"], acc["lines"]) == (10.0, 20.0, 1)
    assert acc["mean_acceptance_length"] == pytest.approx(1 + 90 / 40)
    warning = acc["warning"]
    assert "began 2.0s before the level's first request" in warning
    assert "ended 2.0s after its last answer" in warning
    assert "SM_VLLM_PER_REQUEST_SPEC_DECODE_METRICS=summary" in warning


def test_a_windowed_level_warns_when_the_lines_drafted_more_than_it_could(lines) -> None:
    # Exactly one logging interval, but 120 drafted tokens where the level's own requests
    # (say 31 tokens, K=3) can have drafted at most 3 x 30 = 90: other traffic.
    (acc,) = acceptance_for_levels(
        None, "ep", [(10.0, 20.0)], mode="p-eagle", k=3, wait_s=0, own_max_drafted=[90]
    )
    assert acc["warning"] is not None
    assert (
        "count 120 drafted tokens where this level's requests can have drafted at most 90"
        in (acc["warning"])
    )
    assert "before" not in acc["warning"] and "after its last" not in acc["warning"]


def test_a_windowed_level_matching_its_lines_exactly_has_no_warning(lines) -> None:
    (acc,) = acceptance_for_levels(
        None, "ep", [(10.0, 20.0)], mode="p-eagle", k=3, wait_s=0, own_max_drafted=[120]
    )
    assert acc["source"] == "windowed" and acc["warning"] is None
    # Two levels, two windows: each has its own line, counted exactly (1 + A / (D / K)).
    first, second = acceptance_for_levels(
        None, "ep", [(10.0, 20.0), (20.0, 30.0)], mode="p-eagle", k=3, wait_s=0,
        own_max_drafted=[120, 60],
    )  # fmt: skip
    assert first["mean_acceptance_length"] == pytest.approx(1 + 90 / 40)
    assert second["mean_acceptance_length"] == pytest.approx(1 + 10 / 20)
    assert first["warning"] is None and second["warning"] is None


def test_no_lines_is_unavailable_and_still_windowed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(acc_mod, "read_spec_lines", lambda *a, **k: [])
    (acc,) = acceptance_for_levels(None, "ep", [(0.0, 1.0)], mode="p-eagle", k=3, wait_s=0)
    assert acc["status"] == "unavailable" and acc["source"] == "windowed"
    assert acc["mean_acceptance_length"] is None and acc["reason"]


def test_baseline_is_one_by_definition(lines) -> None:
    (acc,) = acceptance_for_levels(None, "ep", [(0.0, 1.0)], mode="baseline", k=None)
    assert acc["source"] == "by definition" and acc["mean_acceptance_length"] == 1.0
