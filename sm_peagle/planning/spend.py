"""What an endpoint has cost so far, and what 30 more days at its current size would cost: the
arithmetic (pure: no I/O; the times are AWS's, read by the caller, `lifecycle/spend.py`).

    spend_usd         = sum over the instance-count history of p x n_k x dt_k / 3600
    projected_30d_usd = p x (instances now) x min(720, hours until its expiry)

An endpoint with an expiry (`--ttl`: a schedule deletes it) costs nothing after it, so the
projection stops there (the callers pass the expiry only while the deletion is still
scheduled: an overdue endpoint's deletion failed, and it bills on).

`p` is the catalog's on-demand $/h of one instance of the variant's type in the endpoint's
region (`catalog.regional_prices.price_in`); when peagle has no price for that type in that
region the spend is unknown (None, with the reason), never another type's or region's figure.
The history starts at the endpoint's CreationTime with the config's InitialInstanceCount and
changes at each Successful Application Auto Scaling activity on the variant's
`sagemaker:variant:DesiredInstanceCount` (DescribeScalingActivities). The result is an
estimate, and says so: billing starts when instances are up (a little after CreationTime),
AWS keeps scaling activities for six weeks, and a count changed without Application Auto
Scaling (UpdateEndpointWeightsAndCapacities by hand, an inference-component endpoint's
managed instance scaling) leaves no activity.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta

__all__ = [
    "HISTORY_DAYS",
    "HOURS_30D",
    "Fleet",
    "SpendEstimate",
    "desired_count",
    "estimate",
    "idle_period",
    "instance_hours",
]

HOURS_30D = 720  # 30 days x 24 h
# DescribeScalingActivities "from the previous six weeks" (its API reference).
HISTORY_DAYS = 42
# Application Auto Scaling's Description of a SageMaker variant's scaling activity:
# "Setting desired instance count to 2." The count is only in this free text (the
# ScalingActivity shape has no capacity field, botocore's application-autoscaling model).
_COUNT = re.compile(r"count to (\d+)")


def desired_count(description: str | None) -> int | None:
    """The instance count an activity set, from its Description; None when it does not say."""
    m = _COUNT.search(description or "")
    return int(m.group(1)) if m else None


@dataclass(frozen=True)
class Fleet:
    """One production variant as it is billed: its type's price per instance-hour (None:
    unknown, `price_note` says why), its count at creation, its count now, and the counts
    its scaling activities set, (when, count), in any order."""

    variant: str
    instance_type: str | None
    usd_per_hour: float | None
    initial_count: int
    current_count: int
    changes: list[tuple[datetime, int]] = field(default_factory=list)
    price_note: str | None = None
    # No history exists for its count (an inference-component endpoint's managed instance
    # scaling): the current count is taken for the whole uptime.
    current_for_uptime: bool = False


def instance_hours(
    start: datetime, now: datetime, initial: int, changes: list[tuple[datetime, int]]
) -> float:
    """Instance-hours from `start` to `now`: `initial` instances until the first change,
    then each change's count until the next. A change before `start` is ignored: the
    scaling history is kept by resource id (`endpoint/<name>/variant/<v>`), so it belongs
    to an earlier endpoint of the same name. One after `now` counts from `now`."""
    count, t, total = initial, start, 0.0
    for at, n in sorted(changes):
        if at < start:
            continue
        at = min(at, now)
        total += count * (at - t).total_seconds()
        count, t = n, at
    total += count * max((now - t).total_seconds(), 0.0)
    return total / 3600


@dataclass(frozen=True)
class SpendEstimate:
    """The spend so far and the 30-day projection, both in USD and both estimates (None when
    a price is unknown), and `note`: the basis, and what the figure cannot see."""

    spend_usd: float | None
    projected_30d_usd: float | None
    note: str


def _money(usd: float) -> float:
    return round(usd, 2)


def estimate(
    created: datetime, now: datetime, fleets: list[Fleet], expires_in_s: float | None = None
) -> SpendEstimate:
    """The endpoint's spend from `created` to `now` (AWS's clock) over its `fleets`, and 30
    days at their current counts, or until its expiry (`expires_in_s` from `now`, negative
    once past) when that is sooner. Unknown (None) when any fleet's price is."""
    unknown = [f for f in fleets if f.usd_per_hour is None]
    if not fleets or unknown:
        why = (
            "; ".join(
                f"{f.instance_type or 'no instance type'}: {f.price_note or 'no price'}"
                for f in unknown
            )
            or "the endpoint has no instance-based variant"
        )
        return SpendEstimate(None, None, f"unknown: {why}")
    spend = projected = 0.0
    caveats: list[str] = []
    ahead = float(HOURS_30D)
    if expires_in_s is not None:  # a schedule deletes it then: nothing is billed after
        ahead = min(ahead, max(expires_in_s, 0.0) / 3600)
    for f in fleets:
        assert f.usd_per_hour is not None
        if f.current_for_uptime:
            hours = f.current_count * max((now - created).total_seconds(), 0.0) / 3600
            caveats.append(
                f"{f.variant}: managed instance scaling keeps no history, so its current "
                f"{f.current_count} instance(s) are counted since creation"
            )
        else:
            hours = instance_hours(created, now, f.initial_count, f.changes)
            oldest = now - timedelta(days=HISTORY_DAYS)
            if created < oldest:
                caveats.append(
                    f"{f.variant}: scaling activities older than {HISTORY_DAYS} days are "
                    f"gone (AWS keeps six weeks), so the count before {oldest:%Y-%m-%d} may "
                    "be wrong"
                )
        spend += f.usd_per_hour * hours
        projected += f.usd_per_hour * f.current_count * ahead
    basis = (
        "estimate: on-demand price x instances x hours since creation on AWS's clock "
        "(scaling history from Application Auto Scaling)"
    )
    if ahead < HOURS_30D:
        caveats.append(f"projected until its expiry, {ahead:.4g} h from now, not 30 days")
    return SpendEstimate(_money(spend), _money(projected), "; ".join([basis, *caveats]))


def idle_period(window_s: float, start_age_s: float) -> int:
    """GetMetricData's Period for one datapoint over a `window_s` window whose start is
    `start_age_s` old: the window rounded up to whole minutes, and to 5 min (1 h) when the
    start is past 15 (63) days, as CloudWatch requires (botocore's MetricStat.Period doc)."""
    unit = 60 if start_age_s <= 15 * 86400 else 300 if start_age_s <= 63 * 86400 else 3600
    return max(unit, math.ceil(window_s / unit) * unit)
