"""The spend arithmetic (sm_peagle/planning/spend.py), worked by hand: instance-hours over
a count history, the 30-day projection (720 h), "unknown" for an unknown price, and the
GetMetricData period of an idle window (botocore's MetricStat.Period rules)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from sm_peagle.planning.spend import Fleet, desired_count, estimate, idle_period, instance_hours

T0 = datetime(2026, 12, 1, tzinfo=UTC)
H = timedelta(hours=1)


def test_instance_hours_follow_the_count_history() -> None:
    # 1 instance 0-1 h, 3 instances 1-1.5 h: 1 + 1.5 = 2.5 instance-hours
    assert instance_hours(T0, T0 + 1.5 * H, 1, [(T0 + H, 3)]) == 2.5
    # Out of order; a change before creation is an earlier endpoint's of the same name
    # (the history is kept by resource id) and is ignored:
    # 1 from T0 to 2 h, then 4 to 3 h: 2 + 4 = 6
    assert instance_hours(T0, T0 + 3 * H, 1, [(T0 + 2 * H, 4), (T0 - H, 0)]) == 6.0
    # Scaled to zero for the last hour: 1 x 1 h only
    assert instance_hours(T0, T0 + 2 * H, 1, [(T0 + H, 0)]) == 1.0


def test_desired_count_reads_application_auto_scaling_s_description() -> None:
    assert desired_count("Setting desired instance count to 3.") == 3
    assert desired_count("Setting desired instance count to 0.") == 0
    assert desired_count("something else") is None
    assert desired_count(None) is None


def _fleet(**kw: object) -> Fleet:
    base: dict[str, object] = {
        "variant": "AllTraffic",
        "instance_type": "ml.g7e.2xlarge",
        "usd_per_hour": 4.20,
        "initial_count": 1,
        "current_count": 1,
    }
    return Fleet(**{**base, **kw})  # type: ignore[arg-type]


def test_estimate_by_hand() -> None:
    est = estimate(T0, T0 + 1.5 * H, [_fleet()])
    assert (est.spend_usd, est.projected_30d_usd) == (6.30, 3024.00)  # 4.20 x 1.5; x 720
    assert est.note.startswith("estimate: ")
    # Two variants are summed: 4.20 x 2 x 1 h + 1.00 x 1 x 1 h
    two = [
        _fleet(initial_count=2, current_count=2),
        _fleet(variant="B", usd_per_hour=1.00),
    ]
    assert estimate(T0, T0 + H, two).spend_usd == 9.40


def test_an_expiring_endpoint_is_projected_only_until_it_expires() -> None:
    """A schedule deletes it at its expiry, so nothing is billed after: 4 h left at 4.20 x 2
    is 33.60, not 30 days' 6048; past its expiry (overdue) the projection is 0; an expiry
    beyond 30 days changes nothing. The note says why the figure is short."""
    two = [_fleet(initial_count=2, current_count=2)]
    est = estimate(T0, T0 + H, two, expires_in_s=4 * 3600)
    assert est.projected_30d_usd == 33.60
    assert "projected until its expiry, 4 h from now" in est.note
    assert estimate(T0, T0 + H, two, expires_in_s=-120).projected_30d_usd == 0.0
    assert estimate(T0, T0 + H, two, expires_in_s=40 * 86400).projected_30d_usd == 6048.00
    assert estimate(T0, T0 + H, two).projected_30d_usd == 6048.00


def test_an_unknown_price_makes_the_whole_estimate_unknown() -> None:
    """One fleet without a price: spend and projection None, never the known fleet's
    figure alone or another type's price; the note names the type and why."""
    fleets = [_fleet(), _fleet(variant="B", instance_type="ml.x", usd_per_hour=None,
                               price_note="peagle has no price for ml.x")]  # fmt: skip
    est = estimate(T0, T0 + H, fleets)
    assert (est.spend_usd, est.projected_30d_usd) == (None, None)
    assert est.note == "unknown: ml.x: peagle has no price for ml.x"


def test_components_count_the_current_size_over_the_uptime_and_say_so() -> None:
    est = estimate(T0, T0 + 2 * H, [_fleet(initial_count=1, current_count=2,
                                           current_for_uptime=True)])  # fmt: skip
    assert est.spend_usd == 16.80  # 2 x 2 h x 4.20
    assert "managed instance scaling" in est.note


def test_history_older_than_six_weeks_is_said_to_be_missing() -> None:
    est = estimate(T0, T0 + timedelta(days=50), [_fleet()])
    assert "six weeks" in est.note
    assert "six weeks" not in estimate(T0, T0 + timedelta(days=40), [_fleet()]).note


@pytest.mark.parametrize(
    ("window", "age", "period"),
    [
        (7200, 7200, 7200),  # 2 h: one 2 h period
        (90, 90, 120),  # rounded up to whole minutes
        (20 * 86400, 20 * 86400, 20 * 86400),  # past 15 days: a multiple of 300
        (16 * 86400 + 30, 16 * 86400 + 30, 16 * 86400 + 300),
        (70 * 86400 + 60, 70 * 86400 + 60, 70 * 86400 + 3600),  # past 63 days: of 3600
    ],
)
def test_idle_period(window: float, age: float, period: int) -> None:
    assert idle_period(window, age) == period
