"""A client that knows when it is late, and failures that count.

The load generator runs against a fake runtime that shares one injected clock with it: the
fake moves the clock forward (a client too busy to send on time, the server's answer), so
nothing sleeps and nothing busy-waits, and every time is known exactly:

- a closed-loop request is due when its slot frees (the level's start, then the previous
  answer's last byte); it is sent `lag` later; the client is late when the p99 of those lags
  exceeds max(10 ms, 10% of TTFT p50), and the level then says so and names the fix;
- requests on connections the server dropped are failures: they count in the error rate
  and are never good for goodput.
"""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest

from sm_peagle.benchmarking.datasets import builtin
from sm_peagle.benchmarking.load import LoadSpec, run_level
from sm_peagle.benchmarking.metrics import RequestRecord, summarize_level
from sm_peagle.runtime.chunks import StreamParser, collect


def approx(value: Any) -> Any:
    # Records carry epoch seconds (about 1.8e9): microsecond resolution is what survives.
    return pytest.approx(value, abs=1e-6)


TTFT = 0.100  # the fake server's first token, after the send
GAP = 0.050  # then one 2-token chunk every 50 ms


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def sse(doc: dict[str, Any]) -> bytes:
    return f"data: {json.dumps(doc)}\n\n".encode()


class FakeStream:
    """One streamed answer: a role chunk, `chunks` 2-token content chunks, usage."""

    def __init__(self, clock: Clock, chunks: int, drop_after: int | None) -> None:
        self.clock, self.sent_at = clock, clock()
        parser, out, done = StreamParser(), [], 0
        role = {"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}],
                "usage": {"prompt_tokens": 5, "completion_tokens": 0}}  # fmt: skip
        out += parser.feed(sse(role), self.sent_at + TTFT)
        for i in range(chunks):
            done += 2
            delta = {"index": 0, "delta": {"content": "ab"},
                     "finish_reason": "length" if i == chunks - 1 else None}  # fmt: skip
            doc = {"choices": [delta], "usage": {"prompt_tokens": 5, "completion_tokens": done}}
            out += parser.feed(sse(doc), self.sent_at + TTFT + i * GAP)
        self.chunks, self.drop_after = out, drop_after

    def __iter__(self):
        for i, ch in enumerate(self.chunks):
            if self.drop_after is not None and i == self.drop_after:
                self.clock.t = ch.arrived_at
                raise ConnectionResetError("Connection reset by peer")  # the server dropped it
            self.clock.t = ch.arrived_at  # the client reads it when it arrives
            yield ch

    def completion(self):
        return collect(self.chunks, self.sent_at)


class FakeRuntime:
    """`stream()` first lets `lag` pass (the client is busy), then sends. Requests whose
    number is in `drop` lose their connection after their first content chunk."""

    def __init__(self, clock: Clock, lag: float, drop: set[int] = frozenset()) -> None:
        self.clock, self.lag, self.drop, self.sent = clock, lag, set(drop), 0
        events = SimpleNamespace(register=lambda *a, **k: None)
        self.client = SimpleNamespace(meta=SimpleNamespace(events=events))

    def stream(self, **params: Any) -> FakeStream:
        if params["max_tokens"] == 1:  # the unrecorded pool-opening request
            return FakeStream(self.clock, 1, None)
        n, self.sent = self.sent, self.sent + 1
        self.clock.t += self.lag
        return FakeStream(self.clock, 4, 2 if n in self.drop else None)


def level_of(rt: FakeRuntime, clock: Clock, requests: int = 8, slo: dict | None = None) -> dict:
    spec = LoadSpec(concurrency=1, requests=requests, max_tokens=8)
    run = run_level(rt, builtin(), spec, clock=clock)
    return summarize_level(run.records, concurrency=1, slo=slo)


def test_a_client_that_sends_late_sees_the_warning_naming_the_fix() -> None:
    clock = Clock()
    level = level_of(FakeRuntime(clock, lag=0.030), clock)
    late = level["client_late"]
    # Every request went out 30 ms after it was due (its slot freed 30 ms earlier).
    lags = [r["sent_at"] - r["scheduled_at"] for r in level["records"]]
    assert lags == approx([0.030] * 8)
    assert late["send_lag_s"]["p50"] == approx(0.030)
    assert late["send_lag_s"]["p99"] == approx(0.030)
    assert late["bound_s"] == approx(0.010)  # max(10 ms, 10% of TTFT 100 ms)
    assert late["late"] is True
    assert "the client cannot sustain this level" in late["warning"]
    assert "send lag p99 30.0 ms > bound 10.0 ms" in late["warning"]
    assert "--workers" in late["warning"] and "fewer levels" in late["warning"]
    assert "another machine" in late["warning"]
    # Closed loop: request i+1 was due when request i's last byte arrived.
    recs = level["records"]
    for before, after in zip(recs, recs[1:], strict=False):
        assert after["scheduled_at"] == approx(before["ended_at"])


def test_a_client_on_time_gets_no_warning() -> None:
    clock = Clock()
    level = level_of(FakeRuntime(clock, lag=0.002), clock)
    late = level["client_late"]
    assert late["send_lag_s"]["p99"] == approx(0.002)
    assert late["late"] is False and late["warning"] is None
    # TTFT and E2EL start at the real send, so the lag is not hidden in them either way.
    assert level["ttft_s"]["p50"] == approx(TTFT)
    assert level["e2e_s"]["p50"] == approx(TTFT + 3 * GAP)


def test_dropped_connections_count_as_errors_and_never_as_goodput() -> None:
    clock = Clock()
    rt = FakeRuntime(clock, lag=0.0, drop={1, 4})
    level = level_of(rt, clock, requests=6, slo={"ttft": 0.5})
    req = level["requests"]
    assert (req["total"], req["ok"], req["failed"]) == (6, 4, 2)
    assert req["failure_reasons"] == {"ConnectionResetError": 2}
    assert level["error_rate"] == approx(2 / 6)
    gp = level["goodput"]
    # Every completed request met TTFT <= 0.5 s; the two dropped ones met nothing.
    assert gp["requests"] == 4 and gp["share"]["all"] == approx(4 / 6)
    assert gp["requests_per_s"] == approx(4 / level["wall_s"])
    dropped = [r for r in level["records"] if not r["ok"]]
    assert [r["index"] for r in dropped] == [1, 4]
    assert all("Connection reset by peer" in r["error"] for r in dropped)


def rec(i: int, due: float, sent: float) -> RequestRecord:
    return RequestRecord(index=i, ok=True, sent_at=sent, ended_at=sent + 1.0, ttft_s=0.1,
                         e2e_s=1.0, output_tokens=10, scheduled_at=due, ready_at=due)  # fmt: skip


def test_the_closed_loop_ramp_is_reported_but_judged_only_when_nothing_else_is() -> None:
    # c=2: both slots' first requests are due at the level's start (t=0) and the second
    # goes out 50 ms late (the client sends one at a time); later requests are on time.
    ramp = [rec(0, 0.0, 0.0), rec(1, 0.0, 0.050)]
    steady = [rec(2, 1.0, 1.001), rec(3, 1.05, 1.051), rec(4, 2.0, 2.001), rec(5, 2.05, 2.051)]
    late = summarize_level(ramp + steady, concurrency=2)["client_late"]
    assert late["send_lag_s"]["n"] == 6 and late["send_lag_s"]["max"] == approx(0.050)
    assert late["judged_p99_s"] == approx(0.001) and late["late"] is False
    # A level that is only its ramp is judged on it.
    only = summarize_level(ramp, concurrency=2)["client_late"]
    assert only["judged_p99_s"] == approx(0.0495) and only["late"] is True
    # Open loop has no ramp: every arrival is its own due time.
    open_loop = summarize_level(ramp + steady, concurrency=2, rate=2.0)["client_late"]
    assert open_loop["judged_p99_s"] > 0.010 and open_loop["late"] is True
