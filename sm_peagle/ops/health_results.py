"""`health`'s result (`HealthReport`) and the verdict behind it. Pure: no AWS, no CLI.

The verdict reads what the engine itself wrote: vLLM's `SpecDecoding metrics` lines (one per
stats interval in which it drafted; `VLLM_LOG_STATS_INTERVAL`, 10 s by default in vllm
0.31.0 `envs.py`), either as the CloudWatch metrics peagle's metric filters made of them
(one sample per period) or as the lines themselves. The rules (docs/guides/health.md, "The
verdicts"), in order:

- a baseline endpoint (no speculative config) is "off": there is no speculation;
- no SpecDecoding data in the window: "off" when the endpoint served (traffic seen), since
  an engine that generates while drafting writes the line; else "no data" (idle);
- the acceptance length L over the window below `OFF_BELOW` (1.01) is "off", below the
  threshold "degraded", else "paying".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

from ..lifecycle.health_read import Sample
from ..planning.monitoring import OFF_BELOW, default_threshold
from .result import KeyAccess

__all__ = ["VERDICTS", "HealthReport", "Sample", "health_verdict"]

VERDICTS = ("paying", "degraded", "off", "no data")


@dataclass(frozen=True, kw_only=True)
class HealthReport(KeyAccess):
    """`health`: is speculation paying on the endpoint? `to_dict()` is the `peagle health
    --json` document (every field, always).

    Attributes:
        endpoint: The endpoint's name (`ENDPOINT/COMPONENT`, the short name, with `component`).
        verdict: "paying", "degraded", "off" or "no data".
        source: Where the data came from: "metric" (peagle's CloudWatch metrics of the
            SpecDecoding lines) or "log lines" (the lines themselves).
        window_start: The window's start (ISO 8601, AWS's clock, on a period boundary).
        window_end: The window's end (ISO 8601, AWS's now).
        k: The K served (draft tokens per step), or None (baseline, or unknown).
        threshold: The acceptance length below which speculation does not pay, or None
            (baseline).
        threshold_source: Where the threshold came from (the alarm's, or the default for K).
        acceptance_length: The mean acceptance length over the window, or None (no data).
        draft_acceptance_rate: Accepted / drafted tokens over the window, or None.
        samples: SpecDecoding lines counted (one per engine stats interval that drafted).
        periods_with_data: Periods of the window with at least one line.
        periods: Periods in the window.
        period_seconds: The period's length (the alarm's Period, else 60 s).
        alarm: peagle's alarm on the endpoint (`name`, `state`, `reason`), or None.
        evidence: Why, one human line each.
    """

    endpoint: str
    verdict: str
    source: str
    window_start: str
    window_end: str
    k: int | None
    threshold: float | None
    threshold_source: str | None
    acceptance_length: float | None
    draft_acceptance_rate: float | None
    samples: int
    periods_with_data: int
    periods: int
    period_seconds: int = 60
    alarm: dict[str, Any] | None = None
    evidence: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The `peagle health --json` document."""
        return asdict(self)


def iso(t: float) -> str:
    """Epoch seconds as ISO 8601 UTC, to the second."""
    return datetime.fromtimestamp(t, UTC).replace(microsecond=0).isoformat()


def period_count(start: float, end: float, period: int) -> int:
    """Periods of `period` seconds from `start` (a boundary) until `end` (a partial one
    counts)."""
    return max(1, math.ceil((end - start) / period))


def acceptance(samples: Sequence[Sample], k: int | None, k_schedule: bool) -> tuple:
    """(acceptance length, draft acceptance rate, how it was computed) over `samples`.

    Exact when every sample has its counts and K is fixed: a draft step proposes K tokens,
    so drafts = drafted / K (INFERRED from K, not read), and L = 1 + K x accepted / drafted
    (vLLM's own formula, 1 + accepted / drafts). With a K schedule the step's K varies,
    so drafts cannot be inferred: the mean of the lines' own acceptance lengths, each
    weighted by the lines it stands for (labelled so)."""
    counted = all(s.accepted is not None and s.drafted is not None for s in samples)
    drafted = sum(s.drafted or 0 for s in samples)
    accepted = sum(s.accepted or 0 for s in samples)
    rate = accepted / drafted if counted and drafted > 0 else None
    if k and not k_schedule and counted and drafted > 0:
        how = (
            f"1 + K x accepted / drafted = 1 + {k} x {accepted} / {drafted} (inferred: a "
            f"draft step proposes K={k} tokens)"
        )
        return 1.0 + k * accepted / drafted, rate, how
    weight = sum(s.count for s in samples)
    mean = sum(s.acceptance_length * s.count for s in samples) / weight
    why = "a K schedule varies K per step" if k_schedule else "no accepted/drafted counts"
    return mean, rate, f"the mean of the lines' acceptance lengths ({why})"


def health_verdict(
    *,
    endpoint: str,
    source: str,
    window: tuple[float, float],
    period_seconds: int,
    samples: Sequence[Sample],
    traffic: str | None,
    k: int | None,
    k_schedule: bool = False,
    baseline: bool = False,
    threshold: float | None = None,
    threshold_source: str | None = None,
    alarm: dict[str, Any] | None = None,
) -> HealthReport:
    """The verdict on `samples` (SpecDecoding data in `window`, AWS's clock).

    Args:
        endpoint: the endpoint's name.
        source: "metric" or "log lines".
        window: (start, end), epoch seconds; start on a period boundary.
        period_seconds: the period the data is counted in.
        samples: the SpecDecoding data in the window.
        traffic: what shows the endpoint served in the window ("engine lines with
            generation throughput > 0", "Invocations 12"), or None when nothing does.
        k: the K served (None: unknown or baseline).
        k_schedule: K varies per batch size (dynamic K).
        baseline: the endpoint runs without speculation.
        threshold: the alarm's threshold; None: `default_threshold(k)`.
        threshold_source: where `threshold` came from.
        alarm: peagle's alarm (`name`, `state`, `reason`), or None.
    """
    start, end = window
    periods = period_count(start, end, period_seconds)
    with_data = len({int((s.t - start) // period_seconds) for s in samples})
    lines = sum(s.count for s in samples)
    if threshold is None and not baseline:
        threshold = default_threshold(k or 1)
        threshold_source = f"default for K={k or 1} (1 + 0.05 x (1 + K))"
    evidence = [
        f"window {iso(start)} .. {iso(end)} (AWS's clock), {periods} period(s) of "
        f"{period_seconds}s; source: {source}"
    ]
    length = rate = None
    if baseline:
        verdict = "off"
        evidence.append("a baseline endpoint: no speculation (no speculative config)")
    elif not samples:
        if traffic:
            verdict = "off"
            evidence.append(
                f"serving ({traffic}) but no SpecDecoding line in the window: speculation "
                "is not running (vLLM writes one per stats interval in which it drafted)"
            )
        else:
            verdict = "no data"
            evidence.append(
                "no SpecDecoding line and no traffic in the window: idle, so no data (not "
                "paying, not off)"
            )
    else:
        length, rate, how = acceptance(samples, k, k_schedule)
        assert threshold is not None
        if length < OFF_BELOW:
            verdict = "off"
            why = f"below {OFF_BELOW}: drafts are (nearly) never accepted"
        elif length < threshold:
            verdict = "degraded"
            why = f"below the threshold {threshold} ({threshold_source})"
        else:
            verdict = "paying"
            why = f"at or above the threshold {threshold} ({threshold_source})"
        evidence.append(f"acceptance length {length:.2f}, {why}; computed as {how}")
        if rate is not None:
            evidence.append(f"draft acceptance rate {100 * rate:.1f}% (accepted / drafted)")
    if not baseline:
        evidence.append(
            f"data in {with_data} of {periods} periods ({lines} SpecDecoding line(s)); a "
            "period without a line had no drafting (idle, or speculation off), so it is "
            "not counted"
        )
    if alarm is not None:
        reason = f": {alarm['reason']}" if alarm.get("reason") else ""
        evidence.append(f"alarm {alarm['name']}: {alarm['state']}{reason}")
    return HealthReport(
        endpoint=endpoint,
        verdict=verdict,
        source=source,
        window_start=iso(start),
        window_end=iso(end),
        k=k,
        threshold=threshold,
        threshold_source=threshold_source,
        acceptance_length=round(length, 4) if length is not None else None,
        draft_acceptance_rate=round(rate, 4) if rate is not None else None,
        samples=lines,
        periods_with_data=with_data,
        periods=periods,
        period_seconds=period_seconds,
        alarm=alarm,
        evidence=evidence,
    )
