"""Acceptance per benchmark level: exactly from the level's own requests, or windowed.

**Per request (exact, `"source": "per-request"`).** vLLM >= 0.29 with
`--per-request-spec-decode-metrics summary` (on SageMaker
`SM_VLLM_PER_REQUEST_SPEC_DECODE_METRICS=summary`) puts `metrics.speculative_decoding` in
each response's final usage chunk. A level's acceptance is then summed over its own
measured requests only (pool-opening and warm-up requests are never recorded), with vLLM's
own formulas (vLLM 0.31.0: `RequestSpecDecodeMetrics.to_dict` in v1/metrics/stats.py and
`SpecDecodingLogging.log` in v1/spec_decode/metrics.py):

- mean acceptance length = 1 + accepted draft tokens / spec steps (the bonus token counted);
- draft acceptance rate = accepted draft tokens / drafted tokens;
- per-position rate i = steps that accepted more than i drafts / steps (accepted drafts are
  a prefix, so histogram bucket j counts towards positions 0..j-1): vLLM's
  `num_accepted_tokens_per_pos[i] / num_drafts`.

These sums equal the deltas of vLLM's `vllm:spec_decode_num_accepted_tokens_total`,
`..._num_draft_tokens_total` and `..._num_drafts_total` over the same requests.

**Windowed (fallback, `"source": "windowed"`)**, for images without the flag (JumpStart's
vLLM 0.18.0, for one), from the endpoint's CloudWatch logs.

Acceptance length (mean tokens per target step, including the target's own bonus token;
1.0 without speculation) is not visible to a client: SageMaker exposes no /metrics, and
tokens per *chunk* only approximates it (vLLM may merge steps into one chunk). vLLM logs
`SpecDecoding metrics: Mean acceptance length: …, Accepted: A tokens, Drafted: D tokens, …`
every ~10 s while it has work; each line covers the interval since the previous one.

A level is attributed every line whose interval overlaps the level's time window. Those
intervals are whole logging periods, so they include whatever else the engine served just
before or after the level (other clients, peagle's own pool opening and warm-up): the
result records the lines it used and the window they span, and warns when they began
before the level's first send, ended after its last answer, or count more drafted tokens
than the level's own requests can have drafted (K per output token after the first).
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
    "acceptance_from_requests",
    "max_drafted_tokens",
    "overlap_warning",
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


def _histogram_sum(rows: Sequence[Sequence[int]]) -> list[int]:
    width = max((len(r) for r in rows), default=0)
    return [sum(int(r[j]) for r in rows if j < len(r)) for j in range(width)]


def acceptance_from_requests(records: Sequence[Any]) -> dict[str, Any] | None:
    """The level's exact acceptance from its completed requests' `spec_decode` (vLLM's
    per-request metrics); None unless every completed request carries them. Failed
    requests carry none (no final usage chunk): their drafts are not in these sums, and
    `failed_requests` says how many there were."""
    ok = [r for r in records if r.ok]
    if not ok or any(not r.spec_decode for r in ok):
        return None
    sds = [r.spec_decode for r in ok]
    hist = _histogram_sum([sd.get("acceptance_histogram") or [] for sd in sds])
    steps = sum(int(sd.get("num_spec_steps", 0)) for sd in sds)
    accepted = sum(int(sd.get("num_accepted_draft_tokens", 0)) for sd in sds)
    drafted = sum(int(sd.get("num_draft_tokens", 0)) for sd in sds)
    per_position = (
        [sum(hist[i + 1 :]) / steps for i in range(len(hist) - 1)] if steps and hist else None
    )
    return {
        "status": "measured",
        "source": "per-request",
        "from": "vLLM per-request metrics.speculative_decoding of this level's requests",
        "requests": len(ok),
        "failed_requests": len(records) - len(ok),
        "mean_acceptance_length": 1.0 + accepted / steps if steps else 1.0,
        "draft_acceptance_rate": accepted / drafted if drafted else None,
        "per_position": per_position,
        "accepted_tokens": accepted,
        "drafted_tokens": drafted,
        "drafts": steps,
        "acceptance_histogram": hist,
    }


def max_drafted_tokens(records: Sequence[Any], k: int | None) -> int | None:
    """The most drafted tokens the level's own requests can account for: each target step
    after the prefill makes at least one output token and drafts at most K."""
    if not k:
        return None
    return k * sum(max(int(r.output_tokens or 0) - 1, 0) for r in records if r.ok)


def overlap_warning(
    acc: dict[str, Any], begin: float, end: float, own_max_drafted: int | None
) -> str | None:
    """Why a windowed level's lines include other traffic, or None when nothing shows it."""
    why = []
    before = begin - acc["covered_from"]
    after = acc["covered_to"] - end
    if before > 0:
        why.append(f"began {before:.1f}s before the level's first request")
    if after > 0:
        why.append(f"ended {after:.1f}s after its last answer")
    drafted = acc.get("drafted_tokens")
    if own_max_drafted is not None and drafted is not None and drafted > own_max_drafted:
        why.append(
            f"count {drafted} drafted tokens where this level's requests can have drafted "
            f"at most {own_max_drafted}"
        )
    if not why:
        return None
    return (
        f"windowed acceptance: the {acc['lines']} SpecDecoding log line(s) used "
        + " and ".join(why)
        + ", so other traffic (other clients, peagle's pool opening and warm-up) is mixed "
        "in; images with vLLM >= 0.29 report it per request "
        "(SM_VLLM_PER_REQUEST_SPEC_DECODE_METRICS=summary)"
    )


def unavailable(reason: str) -> dict[str, Any]:
    return {
        "status": "unavailable",
        "source": "windowed",
        "mean_acceptance_length": None,
        "reason": reason,
    }


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
    own_max_drafted: Sequence[int | None] | None = None,
) -> list[dict[str, Any]]:
    """One windowed acceptance dict per (start, end) window. Waits up to `wait_s` for the
    line that covers the end of the last window (vLLM logs it up to one interval later).
    `own_max_drafted[i]`: the most drafted tokens window i's own requests can account for
    (`max_drafted_tokens`), for the overlap warning."""
    if mode in (None, "baseline"):
        return [
            {
                "status": "by definition",
                "mean_acceptance_length": 1.0,
                "source": "by definition",
                "from": "baseline: one token per target step, no drafting",
            }
            for _ in windows
        ]
    if not windows:
        return []
    from ..lifecycle.endpoint_logs import aws_epoch, aws_offset

    # The windows are the requests' own times (this machine's clock, real time); the log
    # lines are stamped on AWS's clock (a sandbox's may be days ahead). A measuring phase
    # counts 1:1 on both, so one offset, taken now from AWS's Date, maps the windows onto
    # AWS's clock, and the read ends at AWS's now.
    offset = aws_offset(aws)
    windows = [(begin + offset, end + offset) for begin, end in windows]
    first, last = min(w[0] for w in windows), max(w[1] for w in windows)
    start = first - 2 * DEFAULT_INTERVAL_S
    deadline = time.monotonic() + wait_s
    try:
        while True:
            lines = read_spec_lines(aws, endpoint, start, aws_epoch(aws), component)
            if any(ln["t"] >= last for ln in lines) or time.monotonic() >= deadline:
                break
            sleep(poll_s)
    except Exception as e:  # no logs permission, throttled: the run still has its numbers
        return [unavailable(f"cannot read CloudWatch logs: {type(e).__name__}: {e}")] * len(windows)
    spans = _intervals(lines)
    out = []
    own = list(own_max_drafted) if own_max_drafted is not None else [None] * len(windows)
    for (begin, end), own_max in zip(windows, own, strict=True):
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
        acc = {
            "status": "measured",
            "source": "windowed",
            "from": SOURCE,
            "lines": len(used),
            "covered_from": min(a for a, _, _ in used),
            "covered_to": max(b for _, b, _ in used),
            **combine([ln for _, _, ln in used], k),
        }
        acc["warning"] = overlap_warning(acc, begin, end, own_max)
        out.append(acc)
    return out
