"""What `status` and `ls` say of an endpoint's expiry, on AWS's clock: when it expires
(`peagle:expires`, written at deploy or `update --ttl`), the time left, and whether the
scheduled deletion is late ("overdue": two minutes past the expiry, 60 s precision plus a
margin, and the endpoint still there). For an overdue one `status` reads the schedule
(is it still there?) and, on the sandbox, its last attempt's error.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from ..planning.expiry import EXPIRES_TAG, GROUP, ROLE_TAG

__all__ = ["OVERDUE_AFTER_S", "expiry_fields", "schedule_problem"]

# A schedule fires within its minute (60 s precision); a minute more for the deletion to
# show in DescribeEndpoint. Past that the deletion is late.
OVERDUE_AFTER_S = 120


def _parse(value: str) -> datetime | None:
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(UTC)
    except ValueError:
        return None


def expiry_fields(tags: dict[str, str], now: datetime, status: str | None = None) -> dict[str, Any]:
    """`expires_at` (ISO UTC), `expires_in_s` (negative once past), `expiry` ("scheduled",
    "overdue", "none") and `expiry_role` (a `--ttl-role`'s ARN) from the endpoint's tags
    and AWS's `now`. An endpoint already Deleting (`status`) is never overdue: its
    deletion is under way."""
    when = _parse(tags.get(EXPIRES_TAG, ""))
    if when is None:
        return {"expires_at": None, "expires_in_s": None, "expiry": "none", "expiry_role": None}
    left = int((when - now.astimezone(UTC)).total_seconds())
    return {
        "expires_at": tags[EXPIRES_TAG],
        "expires_in_s": left,
        "expiry": "overdue" if left < -OVERDUE_AFTER_S and status != "Deleting" else "scheduled",
        "expiry_role": tags.get(ROLE_TAG),
    }


def schedule_problem(aws: Any, endpoint: str) -> str:
    """Why an overdue endpoint is still there, as far as can be read: its schedule is gone
    (deleted, or it ran and its delete failed) or still there, with the last attempt's
    error when the sandbox publishes its runs (AWS keeps none: a dead-letter queue would)."""
    from .expiry import get_schedule

    try:
        found = get_schedule(aws, GROUP, endpoint, quiet=True)
    except Exception as e:  # a read for a message: never fail `status` over it
        return f"the scheduled deletion has not happened (schedule not read: {e})"
    if found is None:
        return (
            f"the scheduled deletion has not happened and schedule {GROUP}/{endpoint} is "
            "gone; delete the endpoint"
        )
    why = f"the scheduled deletion has not happened (schedule {GROUP}/{endpoint} remains"
    error = _local_attempt_error(aws, endpoint)
    if error:
        return f"{why}; its last attempt failed: {error})"
    return f"{why}: its role, a component left, or a Creating endpoint may block it)"


def _local_attempt_error(aws: Any, endpoint: str) -> str | None:
    """The last failed attempt of schedule peagle/<endpoint>, from a plugin's target that
    runs schedules itself and keeps their runs (the contract's optional
    `AwsTarget.schedule_error`); None on AWS, which publishes no such history."""
    from .. import plugins

    base = aws.endpoint_url_for("sagemaker") if hasattr(aws, "endpoint_url_for") else None
    if not base:
        return None
    for target in plugins.targets():
        ask = getattr(target, "schedule_error", None)
        if ask is None:
            continue
        try:
            error = ask(base, f"{GROUP}/{endpoint}")
        except Exception:  # a read for a message: never fail `status` over it
            continue
        if error:
            return str(error)
    return None
