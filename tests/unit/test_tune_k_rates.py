"""tune-k's per-position rates: from the level's own requests' acceptance histograms when
vLLM reported them (per-request), else from the SpecDecoding log lines. Expected rates are
worked out by hand from the definition: rate[i] = verify steps that accepted more than i
drafts / verify steps (vLLM's per-position counter over its drafts counter)."""

from __future__ import annotations

import pytest

from sm_peagle.benchmarking.tune_k import (
    RATES_FROM_HISTOGRAM,
    RATES_FROM_LOG_LINES,
    estimate_for_level,
    level_rates,
)


def spec(hist: list[int], drafted_per_step: int = 3) -> dict:
    steps = sum(hist)
    accepted = sum(j * n for j, n in enumerate(hist))
    return {
        "acceptance_histogram": hist,
        "num_spec_steps": steps,
        "num_accepted_draft_tokens": accepted,
        "num_draft_tokens": steps * drafted_per_step,
        "num_spec_tokens": len(hist) - 1,
    }


def test_the_levels_summed_histogram_comes_first() -> None:
    # 10 steps: 2 took none, 3 took one, 1 took two, 4 took all three.
    level = {
        "acceptance": {"acceptance_histogram": [2, 3, 1, 4], "per_position": [0.9, 0.9, 0.9]},
        "output_tokens_per_s": 100.0,
    }
    rates, source = level_rates(level)
    assert rates == pytest.approx([8 / 10, 5 / 10, 4 / 10]) and source == RATES_FROM_HISTOGRAM


def test_the_records_histograms_are_summed_when_the_level_has_none() -> None:
    level = {
        "acceptance": {"per_position": [0.9, 0.9, 0.9]},  # log lines, other traffic mixed in
        "records": [
            {"ok": True, "spec_decode": spec([1, 1, 0, 2])},
            {"ok": True, "spec_decode": spec([1, 2, 1, 2])},
            {"ok": False, "spec_decode": None},  # a failed request has no final chunk
        ],
        "output_tokens_per_s": 100.0,
    }
    # summed: [2, 3, 1, 4] as above
    rates, source = level_rates(level)
    assert rates == pytest.approx([0.8, 0.5, 0.4]) and source == RATES_FROM_HISTOGRAM


def test_log_lines_only_when_a_completed_request_lacks_its_histogram() -> None:
    level = {
        "acceptance": {"per_position": [0.7, 0.4, 0.2]},
        "records": [{"ok": True, "spec_decode": spec([1, 1, 0, 2])}, {"ok": True}],
    }
    assert level_rates(level) == ([0.7, 0.4, 0.2], RATES_FROM_LOG_LINES)
    assert level_rates({"acceptance": {}, "records": []}) is None


def test_the_estimate_says_where_its_rates_came_from() -> None:
    level = {"acceptance": {"acceptance_histogram": [2, 3, 1, 4]}, "output_tokens_per_s": 270.0}
    est = estimate_for_level(level, 3)
    assert est is not None and est["rates_from"] == RATES_FROM_HISTOGRAM
    # AL(3) = 1 + 0.8 + 0.5 + 0.4 = 2.7; AL(1) = 1.8: the estimate scales 270 tok/s by AL
    by_k = {r["k"]: r["output_tokens_per_s"] for r in est["by_k"]}
    assert by_k[3] == pytest.approx(270.0) and by_k[1] == pytest.approx(270.0 * 1.8 / 2.7)
