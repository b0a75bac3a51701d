"""Reading vLLM's per-request acceptance (`Completion.spec_decode`).

vLLM >= 0.29 with `--per-request-spec-decode-metrics summary|detailed` reports, per
request (n == 1), `metrics.speculative_decoding` (`v1/metrics/stats.py`,
`RequestSpecDecodeMetrics.to_dict`):

- `acceptance_histogram[j]`: verify steps that accepted exactly j draft tokens
  (length num_spec_tokens + 1; the always-accepted bonus token is not counted);
- `num_spec_steps` = sum of the histogram; `num_accepted_draft_tokens` = sum of j * h[j];
- `mean_acceptance_length` = 1 + accepted / steps (tokens per verify step, bonus included);
- `draft_acceptance_rate` = accepted / `num_draft_tokens` (draft tokens only);
- `detailed` adds `per_step_accepted` / `per_step_drafted`, one entry per verify step.

Per-position rates follow vLLM's Prometheus definition
(`vllm:spec_decode_num_accepted_tokens_per_pos` / `vllm:spec_decode_num_drafts`): the draft
at position i is accepted exactly when a step accepts more than i drafts, so
rate[i] = sum(h[j] for j > i) / steps.
Pure functions of the dict; nothing here imports boto3.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "acceptance_line",
    "combine",
    "draft_rate",
    "per_position_rates",
    "tokens_per_step",
]


def _int(spec: Mapping[str, Any], key: str) -> int:
    value = spec.get(key)
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def _histogram(spec: Mapping[str, Any]) -> list[int]:
    raw = spec.get("acceptance_histogram")
    if not isinstance(raw, list):
        return []
    return [int(x) for x in raw if isinstance(x, (int, float)) and not isinstance(x, bool)]


def tokens_per_step(spec: Mapping[str, Any]) -> float | None:
    """Tokens per verify step (bonus included), from the counts; None without steps."""
    steps = _int(spec, "num_spec_steps")
    if steps <= 0:
        return None
    return 1.0 + _int(spec, "num_accepted_draft_tokens") / steps


def draft_rate(spec: Mapping[str, Any]) -> float | None:
    drafted = _int(spec, "num_draft_tokens")
    if drafted <= 0:
        return None
    return _int(spec, "num_accepted_draft_tokens") / drafted


def per_position_rates(spec: Mapping[str, Any]) -> list[float]:
    """rate[i] = share of verify steps that accepted the draft at position i (module doc);
    [] when the histogram is missing or there were no verify steps."""
    hist = _histogram(spec)
    steps = sum(hist)
    if steps <= 0:
        return []
    return [sum(hist[i + 1 :]) / steps for i in range(len(hist) - 1)]


def combine(specs: list[Mapping[str, Any]]) -> dict[str, Any] | None:
    """Several requests' objects summed into one (counts and histograms add; the two
    ratios are recomputed from the sums, as vLLM computes them). None for no input;
    histograms of different lengths (different K) are padded with zeros."""
    if not specs:
        return None
    width = max(len(_histogram(s)) for s in specs)
    hist = [0] * width
    for s in specs:
        for j, n in enumerate(_histogram(s)):
            hist[j] += n
    steps = sum(hist)
    accepted = sum(j * n for j, n in enumerate(hist))
    drafted = sum(_int(s, "num_draft_tokens") for s in specs)
    return {
        "mean_acceptance_length": 1.0 + accepted / steps if steps else 1.0,
        "draft_acceptance_rate": accepted / drafted if drafted else 0.0,
        "acceptance_histogram": hist,
        "num_spec_steps": steps,
        "num_accepted_draft_tokens": accepted,
        "num_draft_tokens": drafted,
        "num_spec_tokens": max(_int(s, "num_spec_tokens") for s in specs),
    }


def acceptance_line(spec: Mapping[str, Any] | None) -> str | None:
    """`3.2 tokens/step (73% of drafts), per request` for humans; None without data."""
    if not spec:
        return None
    per_step = tokens_per_step(spec)
    if per_step is None:
        return "no verify steps (nothing was drafted), per request"
    rate = draft_rate(spec)
    share = f" ({rate:.0%} of drafts)" if rate is not None else ""
    return f"{per_step:.1f} tokens/step{share}, per request"
