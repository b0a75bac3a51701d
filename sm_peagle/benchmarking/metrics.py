"""Per-request records -> per-level statistics, with the definitions stated once, here.

Since `peagle.bench/2` the latency metrics are `vllm bench serve`'s (vLLM 0.31.0,
vllm/benchmarks/lib/endpoint_request_func.py and vllm/benchmarks/serve.py
`calculate_metrics`; docs/bench-schema.md quotes them), so peagle's numbers and vLLM's
can be compared name for name:

- Output and input tokens come from vLLM's `usage` (completion_tokens on every chunk), never
  from chunk or character counts: under speculative decoding a chunk carries several tokens.
- TTFT: request sent -> first chunk carrying generated tokens (a role-only chunk is not).
- E2EL (`e2e_s`): request sent -> the last chunk carrying tokens (vLLM's `latency`: the
  trailing usage-only chunk and [DONE] do not count).
- TPOT: (E2EL - TTFT) / (output tokens - 1), for requests with more than one output token.
- ITL (`itl_s`): the gap between consecutive token-carrying chunks, one value per chunk
  (vLLM's `itl`), pooled over the level's requests.
- `itl_per_token_s` (peagle's own, named apart): each chunk gap divided by the tokens in
  that chunk, once per token, so percentiles are over tokens.
- Output tokens/s of a level: sum of output tokens of completed requests / the level's wall
  time (first request sent -> last response ended). Never concurrency / latency.
- Request throughput: completed requests / the same wall time (measured, not derived).
- Error rate: failed requests (errors, throttles, connections the server dropped) / all
  requests sent. Goodput (with an SLO): see `slo.py`; a failed request is never good.
- Send lag: sent - intended send time (`scheduled_at`: the moment a closed-loop slot freed,
  or the open-loop arrival, or later when every slot was busy). A client waiting for the
  CPU sends late; see `client_late`.
- Client CPU: process CPU seconds / wall seconds. Python clients parse on one core (GIL), so
  at >= 85% of one core the *client* limits the numbers and the result says so.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = [
    "CPU_WARN_FRACTION",
    "LATE_FLOOR_S",
    "LATE_TTFT_FRACTION",
    "RequestRecord",
    "client_late",
    "cost_per_million",
    "cpu_summary",
    "distribution",
    "percentile",
    "saturation",
    "summarize_level",
]

CPU_WARN_FRACTION = 0.85
SATURATION_FRACTION = 0.95
# The client cannot sustain a level when its p99 send lag exceeds the larger of these: a
# lag that is a tenth of the time to the first token already moves TTFT percentiles.
LATE_FLOOR_S = 0.010
LATE_TTFT_FRACTION = 0.10
LATE_FIX = (
    "use --workers N to spread the client over processes, run fewer levels, or run the "
    "client on another machine"
)


@dataclass
class RequestRecord:
    """One request as the client saw it. Times are epoch seconds (one clock for all
    worker processes); durations are seconds."""

    index: int
    ok: bool
    sent_at: float
    ended_at: float
    ttft_s: float | None = None
    tpot_s: float | None = None
    e2e_s: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    content_chunks: int = 0
    finish_reason: str | None = None
    request_id: str | None = None
    error: str | None = None
    error_kind: str | None = None
    # When the client meant to send it: the moment its closed-loop slot freed, or its
    # open-loop arrival time. `ready_at`: when it could be sent (the arrival, or later when
    # every slot was busy); sent_at - ready_at is the client's own lateness (send lag).
    scheduled_at: float | None = None
    ready_at: float | None = None
    worker: int = 0
    # vLLM's per-request `metrics.speculative_decoding` (summary keys, verbatim), or None.
    spec_decode: dict[str, Any] | None = None
    itl_s: tuple[float, ...] = field(default=(), repr=False)  # per chunk (vLLM's ITL)
    chunk_tokens: tuple[int, ...] = field(default=(), repr=False)  # tokens of each ITL chunk

    def to_dict(self) -> dict[str, Any]:
        doc = asdict(self)
        # Per-chunk lists would dwarf the file; summarised per level instead.
        doc.pop("itl_s")
        doc.pop("chunk_tokens")
        return doc

    def export_dict(self) -> dict[str, Any]:
        """Everything, per-chunk ITLs included: one line of `--requests-out`."""
        doc = asdict(self)
        doc["itl_s"] = list(self.itl_s)
        doc["chunk_tokens"] = list(self.chunk_tokens)
        return doc

    @property
    def send_lag_s(self) -> float | None:
        """sent - when the request could have been sent (None without a schedule)."""
        ready = self.ready_at if self.ready_at is not None else self.scheduled_at
        return None if ready is None else self.sent_at - ready

    def itl_per_token(self) -> list[float]:
        """peagle's per-token ITL: each chunk gap split evenly over that chunk's tokens."""
        if len(self.chunk_tokens) != len(self.itl_s):
            return list(self.itl_s)  # a record without token counts: one value per chunk
        out: list[float] = []
        for gap, n in zip(self.itl_s, self.chunk_tokens, strict=True):
            n = max(int(n), 1)
            out.extend([gap / n] * n)
        return out

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> RequestRecord:
        known = {f for f in cls.__dataclass_fields__ if f not in ("itl_s", "chunk_tokens")}
        return cls(**{k: v for k, v in doc.items() if k in known})


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default), q in [0, 100]."""
    if not sorted_values:
        raise ValueError("no values")
    if len(sorted_values) == 1:
        return float(sorted_values[0])
    pos = (len(sorted_values) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    frac = pos - lo
    return float(sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * frac)


def distribution(values: Iterable[float | None]) -> dict[str, float | int | None]:
    vals = sorted(float(v) for v in values if v is not None)
    if not vals:
        return {
            "n": 0,
            "mean": None,
            "p50": None,
            "p90": None,
            "p99": None,
            "min": None,
            "max": None,
        }
    return {
        "n": len(vals),
        "mean": sum(vals) / len(vals),
        "p50": percentile(vals, 50),
        "p90": percentile(vals, 90),
        "p99": percentile(vals, 99),
        "min": vals[0],
        "max": vals[-1],
    }


def cpu_summary(cpu_seconds: Sequence[float], wall_s: float) -> dict[str, Any]:
    """`cpu_seconds`: one entry per client process. The warning fires when any one process
    used >= 85% of a core: beyond that, its threads queue for the GIL and measured latencies
    include client-side waiting."""
    per = [c / wall_s if wall_s > 0 else 0.0 for c in cpu_seconds]
    busiest = max(per, default=0.0)
    warning = None
    if busiest >= CPU_WARN_FRACTION:
        warning = (
            f"client CPU at {busiest:.0%} of one core: the client, not the endpoint, may be "
            "the bottleneck; use --workers N to spread load over processes"
        )
    return {
        "processes": len(cpu_seconds),
        "cpu_s": sum(cpu_seconds),
        "max_process_core_fraction": busiest,
        "warning": warning,
    }


def client_late(
    records: Sequence[RequestRecord], ttft_p50_s: float | None, *, closed: bool = True
) -> dict[str, Any]:
    """Did the client send when it meant to? `send_lag_s`: sent - ready (see RequestRecord)
    of every request. Judged on the steady state: in a closed loop every slot's first
    request is due at the level's start, and sending c of them at once takes the client c
    sends, so that ramp is left out of the verdict when later requests exist. Late when the
    judged lags' p99 exceeds `bound_s` (recorded, so a reader can judge it too)."""
    timed = [r for r in records if r.send_lag_s is not None]
    judged = timed
    if closed and timed:
        start = min(r.scheduled_at for r in timed if r.scheduled_at is not None)
        steady = [r for r in timed if r.scheduled_at != start]
        judged = steady or timed
    bound = max(LATE_FLOOR_S, LATE_TTFT_FRACTION * (ttft_p50_s or 0.0))
    dist = distribution(r.send_lag_s for r in timed)
    p99 = distribution(r.send_lag_s for r in judged)["p99"]
    late = p99 is not None and float(p99) > bound
    warning = None
    if late:
        warning = (
            f"the client cannot sustain this level: its requests went out late (send lag p99 "
            f"{float(p99) * 1000:.1f} ms > bound {bound * 1000:.1f} ms), so TTFT and E2EL "
            f"include client waiting; {LATE_FIX}"
        )
    return {
        "send_lag_s": dist,
        "judged_p99_s": p99,
        "bound_s": bound,
        "late": late,
        "warning": warning,
    }


def cost_per_million(usd_per_hour: float | None, output_tokens_per_s: float | None) -> float | None:
    if not usd_per_hour or not output_tokens_per_s:
        return None
    return usd_per_hour / (output_tokens_per_s * 3600.0) * 1e6


def saturation(records: Sequence[RequestRecord], rate: float | None) -> dict[str, Any] | None:
    """Open loop: did the client send at the rate it was asked for? `offered` is the nominal
    rate, `scheduled` the rate of the arrival times actually drawn (a finite gamma sample
    differs from its mean), `achieved` the rate requests were really sent at. When requests
    wait for one of the `concurrency` slots, sends fall behind the schedule: saturated when
    `achieved` < 95% of `scheduled` (the endpoint does not keep up with the offered load)."""
    if not rate:
        return None
    sched = sorted(r.scheduled_at for r in records if r.scheduled_at is not None)
    sent = sorted(r.sent_at for r in records)

    def per_s(times: Sequence[float]) -> float | None:
        span = times[-1] - times[0] if len(times) > 1 else 0.0
        return (len(times) - 1) / span if span > 0 else None

    scheduled, achieved = per_s(sched), per_s(sent)
    saturated = None
    if scheduled and achieved:
        saturated = achieved < SATURATION_FRACTION * scheduled
    return {
        "offered_rate_per_s": rate,
        "scheduled_rate_per_s": scheduled,
        "achieved_rate_per_s": achieved,
        "saturated": saturated,
    }


def summarize_level(
    records: Sequence[RequestRecord],
    *,
    concurrency: int,
    rate: float | None = None,
    cpu_seconds: Sequence[float] = (),
    usd_per_hour: float | None = None,
    slo: dict[str, float] | None = None,
    burstiness: float | None = None,
) -> dict[str, Any]:
    """The level's statistics (see the module docstring for each definition)."""
    from .slo import goodput

    ok = [r for r in records if r.ok]
    failed = [r for r in records if not r.ok]
    start = min((r.sent_at for r in records), default=0.0)
    end = max((r.ended_at for r in records), default=0.0)
    wall = max(end - start, 0.0)
    out_tokens = sum(r.output_tokens or 0 for r in ok)
    in_tokens = sum(r.input_tokens or 0 for r in ok)
    chunks = sum(r.content_chunks for r in ok)
    otps = out_tokens / wall if wall > 0 else None
    per_request_otps = [
        r.output_tokens / r.e2e_s for r in ok if r.output_tokens is not None and r.e2e_s
    ]
    itl = [x for r in ok for x in r.itl_s]
    itl_token = [x for r in ok for x in r.itl_per_token()]
    # Open loop: the time a request waited for a free slot after its arrival.
    queue = [r.sent_at - r.scheduled_at for r in records if rate and r.scheduled_at is not None]
    ttft = distribution(r.ttft_s for r in ok)
    return {
        "concurrency": concurrency,
        "rate": rate,
        "load": "open" if rate else "closed",
        "started_at": start,
        "ended_at": end,
        "wall_s": wall,
        "requests": {
            "total": len(records),
            "ok": len(ok),
            "failed": len(failed),
            "failure_reasons": dict(Counter(r.error_kind or "unknown" for r in failed)),
        },
        "error_rate": len(failed) / len(records) if records else None,
        "input_tokens": in_tokens,
        "output_tokens": out_tokens,
        "output_tokens_per_s": otps,
        "request_throughput_per_s": len(ok) / wall if wall > 0 else None,
        "per_request_output_tokens_per_s": distribution(per_request_otps),
        "ttft_s": ttft,
        "tpot_s": distribution(r.tpot_s for r in ok),
        "itl_s": distribution(itl),
        "itl_per_token_s": distribution(itl_token),
        "e2e_s": distribution(r.e2e_s for r in ok),
        "queue_s": distribution(queue) if queue else None,
        "mean_tokens_per_chunk": out_tokens / chunks if chunks else None,
        "client_cpu": cpu_summary(list(cpu_seconds), wall),
        "client_late": client_late(records, ttft["p50"], closed=not rate),
        "usd_per_million_output_tokens": cost_per_million(usd_per_hour, otps),
        "acceptance": None,
        "goodput": goodput(records, slo, wall) if slo else None,
        "burstiness": burstiness if rate else None,
        "saturation": saturation(records, rate),
        "records": [r.to_dict() for r in records],
    }
