"""Per-request records -> per-level statistics, with the definitions stated once, here.

- Output and input tokens come from vLLM's `usage` (completion_tokens on every chunk), never
  from chunk or character counts: under speculative decoding a chunk carries several tokens.
- TTFT: request sent -> first chunk carrying generated tokens (a role-only chunk is not).
- TPOT: (last content chunk - first content chunk) / (output tokens - tokens in the first
  chunk); with the usual 1-token first chunk that is (end - TTFT) / (output tokens - 1).
- ITL: the gap between content chunks divided by the tokens in the later chunk, once per
  token, so percentiles are over tokens, not chunks.
- Output tokens/s of a level: sum of output tokens of completed requests / the level's wall
  time (first request sent -> last response ended). Never concurrency / latency.
- Request throughput: completed requests / the same wall time (measured, not derived).
- Goodput (with an SLO): see `slo.py`. Saturation (open loop): see `saturation`.
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
    "RequestRecord",
    "cost_per_million",
    "cpu_summary",
    "distribution",
    "percentile",
    "saturation",
    "summarize_level",
]

CPU_WARN_FRACTION = 0.85
SATURATION_FRACTION = 0.95


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
    scheduled_at: float | None = None  # open loop: when the Poisson process wanted it sent
    worker: int = 0
    itl_s: tuple[float, ...] = field(default=(), repr=False)

    def to_dict(self) -> dict[str, Any]:
        doc = asdict(self)
        doc.pop("itl_s")  # per-token lists would dwarf the file; summarised per level instead
        return doc

    def export_dict(self) -> dict[str, Any]:
        """Everything, per-token ITLs included: one line of `--requests-out`."""
        doc = asdict(self)
        doc["itl_s"] = list(self.itl_s)
        return doc

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> RequestRecord:
        known = {f for f in cls.__dataclass_fields__ if f != "itl_s"}
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
    queue = [r.sent_at - r.scheduled_at for r in records if r.scheduled_at is not None]
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
        "input_tokens": in_tokens,
        "output_tokens": out_tokens,
        "output_tokens_per_s": otps,
        "request_throughput_per_s": len(ok) / wall if wall > 0 else None,
        "per_request_output_tokens_per_s": distribution(per_request_otps),
        "ttft_s": distribution(r.ttft_s for r in ok),
        "tpot_s": distribution(r.tpot_s for r in ok),
        "itl_s": distribution(itl),
        "e2e_s": distribution(r.e2e_s for r in ok),
        "queue_s": distribution(queue) if queue else None,
        "mean_tokens_per_chunk": out_tokens / chunks if chunks else None,
        "client_cpu": cpu_summary(list(cpu_seconds), wall),
        "usd_per_million_output_tokens": cost_per_million(usd_per_hour, otps),
        "acceptance": None,
        "goodput": goodput(records, slo, wall) if slo else None,
        "burstiness": burstiness if rate else None,
        "saturation": saturation(records, rate),
        "records": [r.to_dict() for r in records],
    }
