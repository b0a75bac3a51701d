"""K from one deployment: an ESTIMATE of output tokens/s at every K' <= K.

The per-position acceptance rate r_i is the share of drafts whose position i was accepted.
Where the level's requests carry vLLM's per-request acceptance (vLLM >= 0.29 with
`--per-request-spec-decode-metrics`, which plan sets), r_i comes from their summed
histogram: exactly this level's drafts, r_i = steps accepting more than i-1 drafts / steps
(`runtime/acceptance.py`). Otherwise it comes from the `SpecDecoding metrics` log lines
(0.16 onwards) the level's acceptance was read from, which may include other
traffic. Position i can only
be accepted if positions 1..i-1 were, so a deployment at K' <= K would accept exactly the
first K' positions of the same drafts: its mean acceptance length is

    AL(K') = 1 + r_1 + ... + r_K'          (AL(K) is the measured one)

Throughput is AL / step time. The step time is measured at K (one benchmark level: TPOT x
tokens per step); for K' it is modelled as

    step(K') = step(K) x (1 + position_cost x (K' - K))

`position_cost` is the share of one step that each draft position costs (drafting +
verifying it). Default 0: P-EAGLE drafts every position in one forward pass and, at low
batch, the target's verify pass is memory-bound, so the step barely depends on K. Then

    estimate(K') = measured tokens/s at K x AL(K') / AL(K)

which can only fall for K' < K. The recommendation is the smallest K' whose estimate is
within `tolerance` (default 2%) of the best: positions that add almost nothing cost
compute that other requests could use at higher concurrency. Everything here is labelled
an ESTIMATE; `benchmarks/tune_k_real.py` measures its error against a real sweep.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ESTIMATE_LABEL",
    "RATES_FROM_HISTOGRAM",
    "RATES_FROM_LOG_LINES",
    "estimate_for_level",
    "estimate_k",
    "level_rates",
]

ESTIMATE_LABEL = "ESTIMATE (from per-position acceptance at one K; not measured)"
RATES_FROM_HISTOGRAM = "per-request acceptance histograms (vLLM metrics.speculative_decoding)"
RATES_FROM_LOG_LINES = "SpecDecoding metrics log lines"
DEFAULT_TOLERANCE = 0.02


def estimate_k(
    per_position: list[float],
    k: int,
    output_tokens_per_s: float,
    *,
    position_cost: float = 0.0,
    tolerance: float = DEFAULT_TOLERANCE,
) -> dict[str, Any]:
    """Estimated output tokens/s for K' = 1..K from the rates measured at K."""
    if k < 1 or not per_position:
        raise ValueError("need K >= 1 and per-position acceptance rates")
    if position_cost < 0 or not 0 <= tolerance < 1:
        raise ValueError("position_cost must be >= 0 and tolerance in [0, 1)")
    rates = [max(0.0, float(r)) for r in per_position[:k]]
    rates += [0.0] * (k - len(rates))
    al_k = 1.0 + sum(rates)
    rows = []
    for kk in range(1, k + 1):
        al = 1.0 + sum(rates[:kk])
        step = 1.0 + position_cost * (kk - k)
        if step <= 0:
            raise ValueError(f"position_cost {position_cost} makes the step at K'={kk} free")
        rows.append(
            {
                "k": kk,
                "acceptance_length": al,
                "marginal_rate": rates[kk - 1],
                "output_tokens_per_s": output_tokens_per_s * (al / al_k) / step,
            }
        )
    best = max(r["output_tokens_per_s"] for r in rows)
    pick = next(r["k"] for r in rows if r["output_tokens_per_s"] >= (1 - tolerance) * best)
    return {
        "label": ESTIMATE_LABEL,
        "measured_k": k,
        "measured_output_tokens_per_s": output_tokens_per_s,
        "per_position_acceptance_rate": rates,
        "position_cost": position_cost,
        "tolerance": tolerance,
        "by_k": rows,
        "recommended_k": pick,
    }


def level_rates(level: dict[str, Any]) -> tuple[list[float], str] | None:
    """(per-position rates, where they came from) for one bench level, or None.

    The level's own requests' histograms first: the level's summed
    `acceptance.acceptance_histogram`, else its records' `spec_decode` objects when every
    completed request carries one; then the log lines' `acceptance.per_position`."""
    from ..runtime.acceptance import combine, per_position_rates

    acc = level.get("acceptance") or {}
    hist = acc.get("acceptance_histogram")
    if hist:
        rates = per_position_rates({"acceptance_histogram": hist})
        if rates:
            return rates, RATES_FROM_HISTOGRAM
    ok = [r for r in level.get("records") or [] if r.get("ok")]
    specs = [r.get("spec_decode") for r in ok]
    if specs and all(specs):
        rates = per_position_rates(combine(specs) or {})
        if rates:
            return rates, RATES_FROM_HISTOGRAM
    lines = acc.get("per_position")
    return (list(lines), RATES_FROM_LOG_LINES) if lines else None


def estimate_for_level(level: dict[str, Any], k: int | None, **kw: Any) -> dict[str, Any] | None:
    """The estimate for one bench level, when per-position rates are known for it."""
    found = level_rates(level)
    otps = level.get("output_tokens_per_s")
    if not k or found is None or not otps:
        return None
    rates, source = found
    return {**estimate_k(rates, k, otps, **kw), "rates_from": source}
