"""Mean acceptance length per benchmark level, from the endpoint's CloudWatch logs.

Acceptance length (mean tokens per target step, including the target's own bonus token;
1.0 without speculation) is not visible to a client: SageMaker exposes no /metrics, and
tokens per *chunk* only approximates it (vLLM may merge steps into one chunk). vLLM logs
`SpecDecoding metrics: Mean acceptance length: …, Accepted: A tokens, Drafted: D tokens, …`
every ~10 s while it has work; each line covers the interval since the previous one.

A level is attributed every line whose interval overlaps the level's time window. Those
intervals are whole logging periods, so they can include a little traffic from just before
or after the level; the result records how many lines it used and the window they span.
With the accepted/drafted counts the lines are combined exactly (1 + sum accepted / sum
drafts); without them (older vLLM) they are averaged.
"""

from __future__ import annotations

import re
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

from ..lifecycle.endpoint_logs import parse_spec_decoding

__all__ = [
    "acceptance_for_levels",
    "combine",
    "combine_per_position",
    "per_position_rates",
    "read_spec_lines",
]

_COUNTS = re.compile(r"Accepted:\s*(\d+)\s*tokens,\s*Drafted:\s*(\d+)\s*tokens")
_PER_POSITION = re.compile(r"Per-position acceptance rate:\s*([0-9.,\s]+?)(?:,\s*[A-Za-z]|$)")
SOURCE = "CloudWatch: vLLM 'SpecDecoding metrics' log lines"
DEFAULT_INTERVAL_S = 10.0  # vLLM's stats logging interval


def read_spec_lines(
    aws: Any, endpoint: str, start: float, end: float, component: str | None = None
) -> list[dict[str, Any]]:
    """Parsed SpecDecoding lines logged between `start` and `end` (epoch seconds), from
    the endpoint's logs or its inference `component`'s."""
    from ..lifecycle.endpoint_logs import fetch_log_events

    out = []
    events = fetch_log_events(
        aws, endpoint, since=0, start_ms=int(start * 1000), until=end + 1.0, component=component
    )
    for e in events:
        parsed = parse_spec_decoding(e.get("message", ""))
        if not parsed or "mean_acceptance_length" not in parsed:
            continue
        m = _COUNTS.search(e["message"])
        out.append(
            {
                "t": e["timestamp"] / 1000.0,
                **parsed,
                "accepted": int(m.group(1)) if m else None,
                "drafted": int(m.group(2)) if m else None,
                "per_position": per_position_rates(e["message"]),
            }
        )
    return out


def per_position_rates(message: str) -> list[float] | None:
    """`Per-position acceptance rate: 0.618, 0.360, 0.169` (vLLM >= 0.16) -> the rates:
    the share of drafts whose position i was accepted (so 1 + their sum is the mean
    acceptance length)."""
    m = _PER_POSITION.search(message)
    if not m:
        return None
    try:
        return [float(x) for x in m.group(1).split(",") if x.strip()]
    except ValueError:
        return None


def combine_per_position(lines: Sequence[dict[str, Any]], k: int | None) -> list[float] | None:
    """Per-position rates over several lines, each weighted by its number of drafts
    (drafted tokens / K); None unless every line has them."""
    rows = [ln.get("per_position") for ln in lines]
    if not rows or any(not r for r in rows):
        return None
    width = max(len(r) for r in rows)
    weights = [(ln["drafted"] / k) if k and ln.get("drafted") else 1.0 for ln in lines]
    total = sum(weights)
    if total <= 0:
        return None
    return [
        sum(w * (r[i] if i < len(r) else 0.0) for w, r in zip(weights, rows, strict=True)) / total
        for i in range(width)
    ]


def _intervals(lines: Sequence[dict[str, Any]]) -> list[tuple[float, float, dict[str, Any]]]:
    """(covered from, covered to, line): each line covers the time since the previous one;
    the first covers one typical gap."""
    gaps = [b["t"] - a["t"] for a, b in zip(lines, lines[1:], strict=False) if b["t"] > a["t"]]
    first_gap = statistics.median(gaps) if gaps else DEFAULT_INTERVAL_S
    out, prev = [], None
    for line in lines:
        begin = prev if prev is not None else line["t"] - first_gap
        out.append((begin, line["t"], line))
        prev = line["t"]
    return out


def combine(lines: Sequence[dict[str, Any]], k: int | None) -> dict[str, Any]:
    """Aggregate lines into one mean acceptance length (and draft acceptance rate)."""
    return {**_combine(lines, k), "per_position": combine_per_position(lines, k)}


def _combine(lines: Sequence[dict[str, Any]], k: int | None) -> dict[str, Any]:
    counted = [ln for ln in lines if ln["accepted"] is not None and ln["drafted"]]
    if k and counted and len(counted) == len(lines):
        accepted = sum(ln["accepted"] for ln in counted)
        drafted = sum(ln["drafted"] for ln in counted)
        return {
            "mean_acceptance_length": 1.0 + accepted / (drafted / k),
            "draft_acceptance_rate": accepted / drafted,
            "accepted_tokens": accepted,
            "drafted_tokens": drafted,
            "method": "counts",
        }
    rates = [ln["draft_acceptance_rate"] for ln in lines if "draft_acceptance_rate" in ln]
    return {
        "mean_acceptance_length": statistics.fmean(ln["mean_acceptance_length"] for ln in lines),
        "draft_acceptance_rate": statistics.fmean(rates) if rates else None,
        "method": "mean of lines",
    }


def unavailable(reason: str) -> dict[str, Any]:
    return {"status": "unavailable", "mean_acceptance_length": None, "reason": reason}


def acceptance_for_levels(
    aws: Any,
    endpoint: str,
    windows: Sequence[tuple[float, float]],
    *,
    mode: str | None,
    k: int | None,
    wait_s: float = 25.0,
    poll_s: float = 2.0,
    sleep: Callable[[float], None] = time.sleep,
    component: str | None = None,
) -> list[dict[str, Any]]:
    """One acceptance dict per (start, end) window. Waits up to `wait_s` for the line that
    covers the end of the last window (vLLM logs it up to one interval later)."""
    if mode in (None, "baseline"):
        return [
            {
                "status": "by definition",
                "mean_acceptance_length": 1.0,
                "source": "baseline: one token per target step, no drafting",
            }
            for _ in windows
        ]
    if not windows:
        return []
    first, last = min(w[0] for w in windows), max(w[1] for w in windows)
    start = first - 2 * DEFAULT_INTERVAL_S
    deadline = time.monotonic() + wait_s
    try:
        while True:
            lines = read_spec_lines(aws, endpoint, start, time.time(), component)
            if any(ln["t"] >= last for ln in lines) or time.monotonic() >= deadline:
                break
            sleep(poll_s)
    except Exception as e:  # no logs permission, throttled: the run still has its numbers
        return [unavailable(f"cannot read CloudWatch logs: {type(e).__name__}: {e}")] * len(windows)
    spans = _intervals(lines)
    out = []
    for begin, end in windows:
        used = [(a, b, ln) for a, b, ln in spans if a < end and b > begin]
        if not used:
            why = (
                "no SpecDecoding line covers this level (logs lag, or none within "
                f"{wait_s:.0f}s of the end)"
                if lines
                else "no SpecDecoding lines in the endpoint's logs"
            )
            out.append(unavailable(why))
            continue
        out.append(
            {
                "status": "measured",
                "source": SOURCE,
                "lines": len(used),
                "covered_from": min(a for a, _, _ in used),
                "covered_to": max(b for _, b, _ in used),
                **combine([ln for _, _, ln in used], k),
            }
        )
    return out
