"""benchmarking/metrics.py's definitions, each with numbers worked out by hand from the module
docstring (not from the code): wall time from the FIRST REQUEST SENT (failed ones too) to
the last response, the 85%-of-a-core client CPU warning, the 95% saturation rule,
numpy-style percentiles, and the level's TTFT over completed requests only."""

from __future__ import annotations

import pytest

from sm_peagle.benchmarking.metrics import (
    RequestRecord,
    cost_per_million,
    cpu_summary,
    distribution,
    percentile,
    saturation,
    summarize_level,
)


def rec(i: int, ok: bool, sent: float, ended: float, **kw) -> RequestRecord:
    return RequestRecord(index=i, ok=ok, sent_at=sent, ended_at=ended, **kw)


def test_wall_time_starts_at_the_first_request_sent_even_if_it_failed() -> None:
    records = [
        # Sent first; streamed a first token at 0.1 s, then failed mid-stream.
        rec(0, False, 100.0, 100.5, ttft_s=0.1, output_tokens=5, error_kind="ModelError"),
        rec(1, True, 101.0, 103.0, ttft_s=0.4, e2e_s=2.0, output_tokens=30, content_chunks=10),
        rec(2, True, 101.5, 104.0, ttft_s=0.6, e2e_s=2.5, output_tokens=50, content_chunks=20),
    ]
    level = summarize_level(records, concurrency=2)
    # 100.0 -> 104.0: 4 s (from the first *successful* send it would be 3 s).
    assert (level["started_at"], level["ended_at"], level["wall_s"]) == (100.0, 104.0, 4.0)
    assert level["output_tokens"] == 80 and level["output_tokens_per_s"] == 20.0  # 80 / 4
    assert level["request_throughput_per_s"] == 0.5  # 2 completed / 4 s
    assert level["requests"] == {
        "total": 3,
        "ok": 2,
        "failed": 1,
        "failure_reasons": {"ModelError": 1},
    }
    # TTFT over the completed requests only: mean (0.4 + 0.6) / 2, p90 0.4 + 0.2 x 0.9.
    ttft = level["ttft_s"]
    assert (ttft["n"], ttft["min"], ttft["max"]) == (2, 0.4, 0.6)
    assert ttft["mean"] == pytest.approx(0.5) and ttft["p90"] == pytest.approx(0.58)
    assert level["mean_tokens_per_chunk"] == pytest.approx(80 / 30)
    # Per request: 30 / 2.0 = 15 and 50 / 2.5 = 20 tokens/s.
    assert level["per_request_output_tokens_per_s"]["mean"] == pytest.approx(17.5)
    assert level["load"] == "closed" and level["queue_s"] is None and level["saturation"] is None


def test_the_last_response_ends_the_wall_time_even_if_it_failed() -> None:
    records = [
        rec(0, True, 10.0, 12.0, output_tokens=10),
        rec(1, False, 10.5, 15.0, error_kind=None),  # a timeout, 5 s after the first send
    ]
    level = summarize_level(records, concurrency=2)
    assert level["wall_s"] == 5.0 and level["output_tokens_per_s"] == 2.0
    assert level["requests"]["failure_reasons"] == {"unknown": 1}


def test_an_empty_or_instant_level_has_no_rates() -> None:
    level = summarize_level([], concurrency=1)
    assert (level["wall_s"], level["output_tokens_per_s"], level["request_throughput_per_s"]) == (
        0.0,
        None,
        None,
    )
    assert level["ttft_s"]["n"] == 0 and level["mean_tokens_per_chunk"] is None
    same = summarize_level([rec(0, True, 5.0, 5.0, output_tokens=3)], concurrency=1)
    assert same["output_tokens_per_s"] is None


@pytest.mark.parametrize(
    ("cpu", "wall", "warns"),
    [
        ([17.0], 20.0, True),  # 17 / 20 = 85% of one core: the boundary warns
        ([16.9], 20.0, False),  # 84.5%
        ([1.0, 17.0], 20.0, True),  # any one process counts, not the sum or the mean
        ([9.0, 9.0], 20.0, False),  # 90% in total, 45% each: no single core is busy
        ([5.0], 0.0, False),  # no wall time: nothing to say
    ],
)
def test_client_cpu_warning_at_85_percent_of_one_core(cpu, wall, warns) -> None:
    s = cpu_summary(cpu, wall)
    assert (s["warning"] is not None) == warns
    assert s["processes"] == len(cpu) and s["cpu_s"] == pytest.approx(sum(cpu))
    if warns:
        assert "client CPU at 85% of one core" in s["warning"]


def test_cpu_summary_reports_the_busiest_process() -> None:
    assert cpu_summary([2.0, 6.0], 10.0)["max_process_core_fraction"] == pytest.approx(0.6)
    assert cpu_summary([], 10.0)["max_process_core_fraction"] == 0.0


@pytest.mark.parametrize(
    ("q", "expected"),
    [(0, 1.0), (50, 2.5), (90, 3.7), (99, 3.97), (100, 4.0)],  # numpy.percentile([1,2,3,4])
)
def test_percentile_is_numpys_linear_interpolation(q, expected) -> None:
    assert percentile([1.0, 2.0, 3.0, 4.0], q) == pytest.approx(expected)


def test_percentile_edges_and_distribution() -> None:
    assert percentile([7.0], 99) == 7.0
    with pytest.raises(ValueError):
        percentile([], 50)
    assert distribution([None, 3.0, 1.0]) == {
        "n": 2,
        "mean": 2.0,
        "p50": 2.0,
        "p90": pytest.approx(2.8),
        "p99": pytest.approx(2.98),
        "min": 1.0,
        "max": 3.0,
    }
    assert distribution([None]) == dict.fromkeys(["mean", "p50", "p90", "p99", "min", "max"]) | {
        "n": 0
    }


def test_cost_per_million_output_tokens() -> None:
    # 3.6 $/h at 1000 tokens/s: 3.6 M tokens per hour -> 1 $ per million.
    assert cost_per_million(3.6, 1000.0) == pytest.approx(1.0)
    assert cost_per_million(None, 1000.0) is None and cost_per_million(3.6, None) is None
    assert cost_per_million(0.0, 1000.0) is None and cost_per_million(3.6, 0.0) is None


def _open_loop(sent: list[float], scheduled: list[float]) -> list[RequestRecord]:
    return [
        rec(i, True, s, s + 1, scheduled_at=t)
        for i, (s, t) in enumerate(zip(sent, scheduled, strict=True))
    ]


def test_saturation_is_achieved_below_95_percent_of_scheduled() -> None:
    sched = [0.0, 0.5, 1.0]  # 2 intervals in 1.0 s: 2 per second
    late = saturation(_open_loop([0.0, 0.6, 1.1], sched), 2.0)  # 2 / 1.1 = 1.82 < 1.9
    assert late == {
        "offered_rate_per_s": 2.0,
        "scheduled_rate_per_s": 2.0,
        "achieved_rate_per_s": pytest.approx(2 / 1.1),
        "saturated": True,
    }
    kept_up = saturation(_open_loop([0.0, 0.5, 1.05], sched), 2.0)  # 2 / 1.05 = 1.905
    assert kept_up["saturated"] is False
    assert saturation(_open_loop([0.0], [0.0]), 2.0)["saturated"] is None  # one request
    assert saturation(_open_loop([0.0, 1.0], [0.0, 1.0]), None) is None  # closed loop


def test_open_loop_level_reports_queueing_and_burstiness() -> None:
    records = _open_loop([0.25, 1.0], [0.0, 0.5])  # waited 0.25 s and 0.5 s for a slot
    level = summarize_level(records, concurrency=1, rate=2.0, burstiness=0.5)
    assert level["load"] == "open" and level["burstiness"] == 0.5
    assert level["queue_s"]["mean"] == pytest.approx(0.375)
    closed = summarize_level(records, concurrency=1, burstiness=0.5)
    assert closed["burstiness"] is None


def test_level_cost_uses_the_measured_rate() -> None:
    records = [rec(0, True, 0.0, 10.0, output_tokens=10_000)]  # 1000 tokens/s
    assert summarize_level(records, concurrency=1, usd_per_hour=3.6)[
        "usd_per_million_output_tokens"
    ] == pytest.approx(1.0)


def test_record_round_trip_keeps_itl_only_in_the_export() -> None:
    r = rec(3, True, 1.0, 2.0, itl_s=(0.1, 0.2), worker=2)
    assert "itl_s" not in r.to_dict() and r.to_dict()["worker"] == 2
    assert r.export_dict()["itl_s"] == [0.1, 0.2]
    back = RequestRecord.from_dict({**r.export_dict(), "unknown_field": 1})
    assert back == rec(3, True, 1.0, 2.0, worker=2)


def test_a_level_document_in_full() -> None:
    # Open loop at 2/s with an SLO of TTFT <= 0.5 s: request 0 meets it (TTFT 0.4), request
    # 1 does not (0.6), request 2 failed. Sent at 0.0, 0.5, 0.9 (scheduled 0.0, 0.5, 1.0);
    # the last response ends at 2.0: wall 2.0 s.
    records = [
        rec(0, True, 0.0, 1.0, ttft_s=0.4, tpot_s=0.1, e2e_s=1.0, input_tokens=7,
            output_tokens=7, content_chunks=3, scheduled_at=0.0),
        rec(1, True, 0.5, 2.0, ttft_s=0.6, tpot_s=0.2, e2e_s=1.5, input_tokens=None,
            output_tokens=None, content_chunks=0, scheduled_at=0.5),
        rec(2, False, 0.9, 1.2, error_kind="ModelError", scheduled_at=1.0),
    ]  # fmt: skip
    level = summarize_level(
        records,
        concurrency=4,
        rate=2.0,
        cpu_seconds=[0.5],
        usd_per_hour=3.6,
        slo={"ttft": 0.5},
        burstiness=1.0,
    )
    assert set(level) == {
        "concurrency", "rate", "load", "started_at", "ended_at", "wall_s", "requests",
        "input_tokens", "output_tokens", "output_tokens_per_s", "request_throughput_per_s",
        "per_request_output_tokens_per_s", "ttft_s", "tpot_s", "itl_s", "e2e_s", "queue_s",
        "mean_tokens_per_chunk", "client_cpu", "usd_per_million_output_tokens", "acceptance",
        "goodput", "burstiness", "saturation", "records", "error_rate", "itl_per_token_s",
        "client_late",
    }  # fmt: skip
    assert level["error_rate"] == pytest.approx(1 / 3)  # one of three requests failed
    # Sent 0.0, 0.0 and 0.1 s before their arrivals: on time, so no warning.
    assert level["client_late"]["late"] is False and level["client_late"]["warning"] is None
    assert (level["concurrency"], level["rate"], level["load"]) == (4, 2.0, "open")
    # Unknown token counts count as 0, not 1.
    assert (level["input_tokens"], level["output_tokens"]) == (7, 7)
    assert level["output_tokens_per_s"] == 3.5 and level["request_throughput_per_s"] == 1.0
    assert level["tpot_s"]["mean"] == pytest.approx(0.15)
    assert level["e2e_s"]["mean"] == pytest.approx(1.25)
    assert level["client_cpu"]["max_process_core_fraction"] == 0.25  # 0.5 CPU s / 2 s
    assert level["acceptance"] is None and level["burstiness"] == 1.0
    assert level["goodput"] == {
        "slo_s": {"ttft": 0.5},
        "requests": 1,
        "output_tokens": 7,
        "requests_per_s": 0.5,
        "output_tokens_per_s": 3.5,
        "share": {"ttft": pytest.approx(1 / 3), "all": pytest.approx(1 / 3)},
    }
    # Scheduled 2 intervals over 1.0 s (2/s); sent 2 over 0.9 s (2.22/s): kept up.
    assert level["saturation"]["saturated"] is False
    assert level["saturation"]["achieved_rate_per_s"] == pytest.approx(2 / 0.9)
    assert [r["index"] for r in level["records"]] == [0, 1, 2]
    assert "itl_s" not in level["records"][0]


def test_sub_second_levels_still_have_rates() -> None:
    level = summarize_level([rec(0, True, 10.0, 10.5, output_tokens=5)], concurrency=1)
    assert level["output_tokens_per_s"] == 10.0 and level["request_throughput_per_s"] == 2.0
    assert summarize_level([], concurrency=1)["started_at"] == 0.0


def test_cpu_warning_text_and_percentile_error() -> None:
    assert cpu_summary([9.0], 10.0)["warning"] == (
        "client CPU at 90% of one core: the client, not the endpoint, may be "
        "the bottleneck; use --workers N to spread load over processes"
    )
    with pytest.raises(ValueError, match="^no values$"):
        percentile([], 50)


def test_saturation_edges() -> None:
    # Send times 10.0 and 10.5 (2/s) against a schedule 10.0, 10.4 (2.5/s): 2 < 0.95 x 2.5.
    s = saturation(_open_loop([10.0, 10.5], [10.0, 10.4]), 2.5)
    assert s["scheduled_rate_per_s"] == pytest.approx(2.5) and s["achieved_rate_per_s"] == 2.0
    assert s["saturated"] is True
    # Exactly 95%: 1.9 achieved of 2.0 scheduled is not saturated (the rule is "below").
    s = saturation(_open_loop([0.0, 10.0], [0.0, 9.5]), 1.0)
    assert s["achieved_rate_per_s"] == pytest.approx(0.1) and s["saturated"] is False
    # One request: no rate at all, rather than a rate over an invented 1 s span.
    one = saturation(_open_loop([3.0], [3.0]), 1.0)
    assert (one["scheduled_rate_per_s"], one["achieved_rate_per_s"]) == (None, None)
    # No schedule recorded (closed-loop records at a rate): nothing to compare.
    sent_only = [rec(0, True, 0.0, 1.0), rec(1, True, 1.0, 2.0)]
    assert saturation(sent_only, 1.0)["saturated"] is None
