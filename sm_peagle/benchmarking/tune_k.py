"""K from one deployment: an ESTIMATE of output tokens/s at every K' <= K.

vLLM logs, on every `SpecDecoding metrics` line (0.16 onwards), the per-position
acceptance rate r_i: the share of drafts whose position i was accepted. Position i can only
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

__all__ = ["ESTIMATE_LABEL", "estimate_for_level", "estimate_k"]

ESTIMATE_LABEL = "ESTIMATE (from per-position acceptance at one K; not measured)"
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


def estimate_for_level(level: dict[str, Any], k: int | None, **kw: Any) -> dict[str, Any] | None:
    """The estimate for one bench level, when its acceptance has per-position rates."""
    acc = level.get("acceptance") or {}
    rates = acc.get("per_position")
    otps = level.get("output_tokens_per_s")
    if not k or not rates or not otps:
        return None
    return estimate_k(rates, k, otps, **kw)
