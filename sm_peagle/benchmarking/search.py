"""Max concurrency under an SLO: the highest closed-loop concurrency whose goodput share
(requests meeting every objective / all requests) is at least `target_share`.

A bounded search, as `vllm bench sweep serve_sla` and SageMaker's AI benchmark jobs do:

1. doubling from `start` (1, 2, 4, ...) while the level passes, up to `max_concurrency`;
2. at the first failing level F (the last passing one P = F/2), bisection between P and F
   until they are adjacent;
3. at most `max_probes` levels in all; when the budget runs out first, the answer is the
   highest level that passed and the result says `"bounded": true`.

It assumes goodput falls as concurrency rises (one knee). Every probe is reported, in the
order it ran, with its share, goodput and output tokens/s, so a non-monotonic endpoint is
visible in the output instead of hidden by the search.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["DEFAULT_TARGET_SHARE", "passes", "search_max_concurrency"]

DEFAULT_TARGET_SHARE = 0.99


def passes(level: dict[str, Any], target_share: float) -> bool:
    share = ((level.get("goodput") or {}).get("share") or {}).get("all")
    return share is not None and share >= target_share


def _probe_row(level: dict[str, Any], ok: bool) -> dict[str, Any]:
    gp = level.get("goodput") or {}
    return {
        "concurrency": level["concurrency"],
        "passed": ok,
        "share_meeting_slo": (gp.get("share") or {}).get("all"),
        "share": gp.get("share"),
        "goodput_requests_per_s": gp.get("requests_per_s"),
        "goodput_output_tokens_per_s": gp.get("output_tokens_per_s"),
        "output_tokens_per_s": level.get("output_tokens_per_s"),
        "usd_per_million_output_tokens": level.get("usd_per_million_output_tokens"),
    }


def search_max_concurrency(
    probe: Callable[[int], dict[str, Any]],
    *,
    slo: dict[str, float],
    target_share: float = DEFAULT_TARGET_SHARE,
    start: int = 1,
    max_concurrency: int = 1024,
    max_probes: int = 16,
    say: Callable[[str], None] = lambda _m: None,
) -> dict[str, Any]:
    """Run the search; `probe(c)` benchmarks concurrency c and returns the level (with its
    `goodput`). Returns the `search` section of a results document."""
    if not 0 < target_share <= 1:
        raise ValueError("target_share must be in (0, 1]")
    if start < 1 or max_concurrency < start or max_probes < 1:
        raise ValueError("need 1 <= start <= max_concurrency and max_probes >= 1")
    probes: list[dict[str, Any]] = []
    levels: dict[int, dict[str, Any]] = {}

    def run(c: int) -> bool:
        level = probe(c)
        levels[c] = level
        ok = passes(level, target_share)
        probes.append(_probe_row(level, ok))
        share = probes[-1]["share_meeting_slo"]
        say(
            f"probe c={c}: {'pass' if ok else 'fail'} "
            f"({'-' if share is None else f'{share:.1%}'} met the SLO)"
        )
        return ok

    good: int | None = None
    bad: int | None = None
    c = start
    while len(probes) < max_probes:  # 1. doubling
        if run(c):
            good = c
            if c >= max_concurrency:
                break
            c = min(c * 2, max_concurrency)
        else:
            bad = c
            break
    while (  # 2. bisection between the last pass and the first failure
        bad is not None and good is not None and bad - good > 1 and len(probes) < max_probes
    ):
        mid = (good + bad) // 2
        if run(mid):
            good = mid
        else:
            bad = mid
    converged = (
        (good is not None and bad is not None and bad - good <= 1)
        or (good is None and bad == 1)  # even one request at a time misses the SLO
        or (bad is None and good == max_concurrency)  # passes up to the limit
    )
    best = levels.get(good) if good is not None else None
    return {
        "slo_s": dict(slo),
        "target_share": target_share,
        "start": start,
        "max_concurrency_limit": max_concurrency,
        "max_probes": max_probes,
        "max_concurrency": good,
        "first_failing_concurrency": bad,
        "output_tokens_per_s": best.get("output_tokens_per_s") if best else None,
        "goodput_output_tokens_per_s": (
            (best.get("goodput") or {}).get("output_tokens_per_s") if best else None
        ),
        "usd_per_million_output_tokens": (
            best.get("usd_per_million_output_tokens") if best else None
        ),
        "bounded": not converged,
        "hit_limit": bad is None and good == max_concurrency,
        "probes": probes,
    }
