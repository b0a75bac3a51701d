"""Goodput and SLOs, bursty arrivals and saturation, the per-request export, the
max-concurrency search and the tune-k estimate: pure functions on made-up records (no
sandbox, no clock)."""

from __future__ import annotations

import itertools
import json
import statistics

import pytest

from sm_peagle.benchmarking.export import RequestExporter, read_requests, recount_goodput
from sm_peagle.benchmarking.load import arrival_gaps
from sm_peagle.benchmarking.metrics import RequestRecord, saturation, summarize_level
from sm_peagle.benchmarking.search import search_max_concurrency
from sm_peagle.benchmarking.slo import format_slo, goodput, parse_slo, request_meets
from sm_peagle.benchmarking.tune_k import estimate_k
from sm_peagle.errors import SpecError


def rec(i: int, *, ok=True, ttft=0.05, tpot=0.01, e2e=1.0, tokens=100, sent=1000.0):
    return RequestRecord(
        index=i, ok=ok, sent_at=sent, ended_at=sent + e2e, ttft_s=ttft if ok else None,
        tpot_s=tpot if ok else None, e2e_s=e2e if ok else None, input_tokens=10,
        output_tokens=tokens if ok else None, content_chunks=10, request_id=f"r{i}",
        itl_s=(0.01,) * 3,
    )  # fmt: skip


def test_parse_slo_units_aliases_and_errors():
    assert parse_slo("ttft=500ms,tpot=50ms,e2e=20s") == {"ttft": 0.5, "tpot": 0.05, "e2e": 20.0}
    assert parse_slo("ttft:300, e2el=1m") == {"ttft": 0.3, "e2e": 60.0}  # vLLM's spelling
    assert parse_slo(None) is None and parse_slo(" ") is None
    for bad in ("ttft", "itl=5ms", "ttft=fast", "ttft=0ms", "ttft=1s,ttft=2s", ","):
        with pytest.raises(SpecError):
            parse_slo(bad)
    assert format_slo({"ttft": 0.5, "e2e": 20.0}) == "ttft<=500ms, e2e<=20s"


def test_goodput_counts_only_requests_meeting_every_slo():
    slo = {"ttft": 0.5, "tpot": 0.05}
    records = [
        rec(0),  # meets both
        rec(1, ttft=5.0),  # TTFT 10x over
        rec(2, tpot=0.5),  # TPOT 10x over
        rec(3, ok=False),  # failed: meets nothing
        rec(4, tpot=None, tokens=1),  # one token: no TPOT to miss
    ]
    gp = goodput(records, slo, wall_s=2.0)
    assert gp["requests"] == 2 and gp["output_tokens"] == 101
    assert gp["requests_per_s"] == 1.0 and gp["output_tokens_per_s"] == 50.5
    assert gp["share"] == {"ttft": 3 / 5, "tpot": 3 / 5, "all": 2 / 5}
    assert request_meets(records[3], slo) == {"ttft": False, "tpot": False}


def test_level_has_goodput_only_with_an_slo():
    records = [rec(0), rec(1, ttft=9.0)]
    assert summarize_level(records, concurrency=2)["goodput"] is None
    lv = summarize_level(records, concurrency=2, slo={"ttft": 0.5})
    assert lv["goodput"]["requests"] == 1 and lv["goodput"]["share"]["all"] == 0.5


def test_gamma_arrivals_have_the_asked_mean_and_burstiness():
    for b in (0.25, 1.0, 4.0):
        gaps = list(itertools.islice(arrival_gaps(10.0, b, seed=7), 20000))
        mean = statistics.fmean(gaps)
        cv = statistics.pstdev(gaps) / mean
        assert mean == pytest.approx(0.1, rel=0.05)
        assert cv == pytest.approx(1 / b**0.5, rel=0.08)  # CV of gamma(shape b) = 1/sqrt(b)
    a = list(itertools.islice(arrival_gaps(3.0, 0.5, seed=1), 5))
    assert a == list(itertools.islice(arrival_gaps(3.0, 0.5, seed=1), 5))  # same seed, same
    with pytest.raises(ValueError):
        next(arrival_gaps(1.0, 0.0))


def sent(times_sched, times_sent):
    return [
        RequestRecord(index=i, ok=True, sent_at=s, ended_at=s + 1, scheduled_at=d)
        for i, (d, s) in enumerate(zip(times_sched, times_sent, strict=True))
    ]


def test_saturation_is_achieved_rate_short_of_the_schedule():
    sched = [float(i) for i in range(11)]  # 1 request/s scheduled
    kept_up = saturation(sent(sched, [t + 0.01 for t in sched]), rate=1.0)
    assert kept_up["saturated"] is False and kept_up["achieved_rate_per_s"] == pytest.approx(1)
    lagging = saturation(sent(sched, [2.0 * t for t in sched]), rate=1.0)  # slots full
    assert lagging["saturated"] is True and lagging["achieved_rate_per_s"] == pytest.approx(0.5)
    assert lagging["offered_rate_per_s"] == 1.0
    assert saturation(sent(sched, sched), rate=None) is None  # closed loop: not applicable


def test_export_lines_recount_to_the_same_goodput(tmp_path):
    slo = {"ttft": 0.5, "e2e": 2.0}
    records = [rec(i, ttft=0.05 if i % 3 else 6.0, sent=1000.0 + i * 0.1) for i in range(9)]
    records.append(rec(9, ok=False))
    ex = RequestExporter(tmp_path / "r.jsonl")
    ex.write_level(records, endpoint="ep", configuration="p-eagle K=3", concurrency=4,
                   rate=None, slo=slo)  # fmt: skip
    ex.finish()  # the run completed: the file is put in place
    lines = read_requests(tmp_path / "r.jsonl")
    assert ex.lines == len(lines) == 10
    first = lines[0]
    assert first["schema"] == "peagle.bench.request/2" and first["itl_s"] == [0.01] * 3
    assert first["chunk_tokens"] == []  # a hand-made record without token counts
    assert first["status"] == "ok" and lines[-1]["status"] == "error"
    assert sum(ln["slo_met"]["all"] for ln in lines) == 6
    level = summarize_level(records, concurrency=4, slo=slo)
    assert recount_goodput(lines, slo, concurrency=4) == level["goodput"]
    json.dumps(lines)  # plain JSON


def knee_probe(knee: int, calls: list[int]):
    """A fake endpoint: every request meets the SLO up to `knee`, then a quarter miss."""

    def probe(c: int) -> dict:
        calls.append(c)
        share = 1.0 if c <= knee else 0.75
        return {"concurrency": c, "output_tokens_per_s": 100.0 * min(c, knee),
                "usd_per_million_output_tokens": 1.0 / max(min(c, knee), 1),
                "goodput": {"share": {"all": share}, "requests_per_s": 1.0,
                            "output_tokens_per_s": 100.0 * min(c, knee) * share}}  # fmt: skip

    return probe


@pytest.mark.parametrize("knee", [1, 2, 6, 7, 8, 37, 100])
def test_search_doubles_then_bisects_to_the_knee(knee):
    calls: list[int] = []
    s = search_max_concurrency(knee_probe(knee, calls), slo={"ttft": 0.5}, max_concurrency=128)
    assert s["max_concurrency"] == knee and s["first_failing_concurrency"] == knee + 1
    assert [p["concurrency"] for p in s["probes"]] == calls
    assert all(p["passed"] == (p["concurrency"] <= knee) for p in s["probes"])
    assert s["bounded"] is False and s["output_tokens_per_s"] == 100.0 * knee
    doubling = list(itertools.takewhile(lambda c: c <= knee, (2**i for i in range(8))))
    assert calls[: len(doubling)] == doubling  # 1, 2, 4, ... while passing


def test_search_limits_and_edges():
    calls: list[int] = []
    s = search_max_concurrency(knee_probe(1000, calls), slo={"ttft": 1}, max_concurrency=20)
    assert calls == [1, 2, 4, 8, 16, 20] and s["max_concurrency"] == 20 and s["hit_limit"]
    s = search_max_concurrency(knee_probe(0, []), slo={"ttft": 1})
    assert s["max_concurrency"] is None and s["first_failing_concurrency"] == 1
    assert s["bounded"] is False
    calls = []
    s = search_max_concurrency(knee_probe(37, calls), slo={"ttft": 1}, max_probes=7)
    assert len(calls) == 7 and s["bounded"] is True  # ran out of probes: says so
    assert s["max_concurrency"] == max(c for c in calls if c <= 37)


def test_tune_k_estimate_follows_per_position_rates():
    est = estimate_k([0.8, 0.64, 0.512], 3, 116.0)
    al = [1.8, 2.44, 2.952]
    assert [r["acceptance_length"] for r in est["by_k"]] == pytest.approx(al)
    assert [r["output_tokens_per_s"] for r in est["by_k"]] == pytest.approx(
        [116.0 * a / al[-1] for a in al]
    )
    assert est["recommended_k"] == 3 and "ESTIMATE" in est["label"]
    # Positions that add nothing are not worth their cost: the smallest K' near the best.
    flat = estimate_k([0.9, 0.001, 0.0], 3, 100.0)
    assert flat["recommended_k"] == 1
    costly = estimate_k([0.5, 0.25, 0.125], 3, 100.0, position_cost=0.2)
    assert costly["recommended_k"] < 3
    with pytest.raises(ValueError):
        estimate_k([], 3, 1.0)


def test_export_lines_match_the_documented_schema(tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    from pathlib import Path

    schema_file = Path(__file__).resolve().parents[2] / "docs" / "peagle.bench-4.schema.json"
    schema = json.loads(schema_file.read_text())
    line_schema = {"$ref": "#/$defs/request_line", "$defs": schema["$defs"]}
    ex = RequestExporter(tmp_path / "r.jsonl")
    ex.write_level([rec(0), rec(1, ok=False)], endpoint="ep", configuration=None,
                   concurrency=2, rate=0.5, slo={"ttft": 0.5})  # fmt: skip
    ex.finish()
    for line in read_requests(tmp_path / "r.jsonl"):
        jsonschema.Draft202012Validator(line_schema).validate(line)
