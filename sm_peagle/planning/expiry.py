"""Endpoints that expire without a running process (`--ttl`): the exact EventBridge Scheduler
requests, the deleting role's policies and the rules on a TTL. Pure: no I/O (the start time
is an argument: AWS's clock, read by the caller).

The mechanism (docs/guides/expiry.md says why this one): a one-time schedule,
`at(yyyy-mm-ddThh:mm:ss)` in UTC with `FlexibleTimeWindow {Mode: OFF}` (required by the API,
botocore 1.44.8), whose universal target calls SageMaker's DeleteEndpoint itself
(`arn:aws:scheduler:::aws-sdk:sagemaker:deleteEndpoint`, Input `{"EndpointName": …}`), and
`ActionAfterCompletion: DELETE` so the schedule removes itself once it ran. No Lambda and no
peagle process. AWS runs a one-time schedule within the minute of its time (EventBridge
Scheduler's schedule types page: 60 s precision), so the expiry is rounded up to the whole
minute and that is the instant the `peagle:expires` tag names.

DeleteEndpoint fails while inference components remain (user reports and the console's
note; not in the API reference), so an endpoint with components gets one schedule per
component (DeleteInferenceComponent) COMPONENT_LEAD_S before the endpoint's, and the
endpoint's schedule retries (RetryPolicy at its maxima: 185 attempts over 24 h) a delete
that meets a component still Deleting, or an endpoint Creating or Updating.

Schedules carry no tags (only schedule groups do), so peagle's own are found by their
group (`peagle`, `peagle-components`) and name (the endpoint's or the component's), and
their Description names the operation that made them.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from ..errors import Param, SpecError, text

__all__ = [
    "short_ttl_error",
    "COMPONENT_GROUP",
    "COMPONENT_LEAD_S",
    "EXPIRES_TAG",
    "GROUP",
    "MIN_TTL_S",
    "ROLE_NAME",
    "ExpiryPlan",
    "expiry_at",
    "iso",
    "parse_expiry",
    "permission_policy",
    "schedule_request",
    "trust_policy",
]

GROUP = "peagle"  # the endpoints' schedules
COMPONENT_GROUP = "peagle-components"  # the components' (their names may equal an endpoint's)
ROLE_NAME = "peagle-ttl-deleter"  # the role peagle makes (one per account), unless --ttl-role
EXPIRES_TAG = "peagle:expires"  # on the endpoint: its expiry, ISO 8601 UTC
ROLE_TAG = "peagle:expires-role"  # on the endpoint, with --ttl-role: the role it named
# botocore's RetryPolicy maxima: a delete that meets Creating/Updating, or a component still
# Deleting, is retried for up to a day.
RETRY_POLICY = {"MaximumEventAgeInSeconds": 86400, "MaximumRetryAttempts": 185}
# The components' schedules run this long before the endpoint's (DeleteEndpoint is refused
# while components remain; their deletion takes minutes).
COMPONENT_LEAD_S = 300
# The shortest TTL peagle takes: a schedule fires within a minute of its time (60 s
# precision), the components' lead is 5 minutes, and the schedule must still be in the
# future once the deploy's first requests are sent. An assumption built on those figures.
MIN_TTL_S = 900
ENDPOINT_TARGET = "arn:{p}:scheduler:::aws-sdk:sagemaker:deleteEndpoint"
COMPONENT_TARGET = "arn:{p}:scheduler:::aws-sdk:sagemaker:deleteInferenceComponent"
_ISO = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?(Z|\+00:00)?$")


def parse_expiry(value: str | float | int) -> tuple[str, float]:
    """A TTL: a duration ("4h", "90m", "1d", "1h30m" or seconds) -> ("relative", seconds),
    or an instant in UTC ("2026-12-01T18:00Z") -> ("absolute", epoch seconds). ValueError
    for anything else (the spec's validator turns it into the field's SpecError)."""
    if isinstance(value, bool):
        raise ValueError(f"ttl {value!r} is not a duration (4h) or a UTC time (2026-12-01T18:00Z)")
    if isinstance(value, int | float):
        if value <= 0:
            raise ValueError(f"ttl {value} must be positive")
        return "relative", float(value)
    text = str(value).strip()
    if _ISO.match(text):
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        return "absolute", when.timestamp()
    m = re.fullmatch(r"(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?", text.lower())
    if text.isdigit():
        return "relative", float(text)
    if not text or not m or not any(m.groups()):
        raise ValueError(
            f"ttl {value!r} is not a duration (4h, 90m, 1d) or a UTC time (2026-12-01T18:00Z)"
        )
    d, h, mnt, s = (int(g or 0) for g in m.groups())
    return "relative", float(d * 86400 + h * 3600 + mnt * 60 + s)


def expiry_at(ttl: str | float | int, start: datetime) -> datetime:
    """The instant the endpoint expires: `start` (the deploy's start on AWS's clock) plus a
    relative TTL, or the absolute time given; rounded up to the whole minute (a schedule
    fires within its minute). ValueError when it is less than MIN_TTL_S after `start`
    (that covers a time in the past)."""
    kind, amount = parse_expiry(ttl)
    base = start.astimezone(UTC)
    when = (
        base + timedelta(seconds=amount)
        if kind == "relative"
        else datetime.fromtimestamp(amount, UTC)
    )
    rounded = datetime.fromtimestamp(math.ceil(when.timestamp() / 60) * 60, UTC)
    left = (rounded - base).total_seconds()
    if left < MIN_TTL_S:
        said = f"{left / 60:.0f} min from now" if left > 0 else "in the past"
        raise ValueError(
            f"the endpoint would expire {said}; a TTL is {MIN_TTL_S // 60} minutes at least "
            "(a schedule fires within its minute, components go 5 minutes before)"
        )
    return rounded


def short_ttl_error(ttl: Any, message: str) -> SpecError:
    """The one SpecError (field "ttl") for a TTL under MIN_TTL_S or in the past, for plan
    (a duration, known without a clock) and deploy/update/adopt (on AWS's clock) alike."""
    return SpecError(
        message,
        remedy=text("give {ttl} or longer", ttl=Param("ttl", f"{MIN_TTL_S // 60}m")),
        field="ttl",
        value=str(ttl),
        rule=f"{MIN_TTL_S // 60} minutes or more",
    )


def iso(when: datetime) -> str:
    """`2026-11-30T05:01:00Z`: the tag's and the Description's form."""
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def schedule_request(
    name: str,
    expires: datetime,
    role_arn: str,
    operation: str,
    *,
    partition: str = "aws",
    component: str | None = None,
) -> dict[str, Any]:
    """CreateSchedule (and, whole, UpdateSchedule: it resets what it is not given) for the
    endpoint `name`, or for its inference component `component` COMPONENT_LEAD_S earlier."""
    at = expires - timedelta(seconds=COMPONENT_LEAD_S) if component else expires
    target, group, key, value = (
        (COMPONENT_TARGET, COMPONENT_GROUP, "InferenceComponentName", component)
        if component
        else (ENDPOINT_TARGET, GROUP, "EndpointName", name)
    )
    what = f"component={component} endpoint={name}" if component else f"endpoint={name}"
    return {
        "Name": value,
        "GroupName": group,
        "ScheduleExpression": f"at({at.astimezone(UTC).strftime('%Y-%m-%dT%H:%M:%S')})",
        "ScheduleExpressionTimezone": "UTC",
        "FlexibleTimeWindow": {"Mode": "OFF"},
        "ActionAfterCompletion": "DELETE",
        "State": "ENABLED",
        "Description": f"peagle ttl: {what} op={operation} expires={iso(expires)}",
        "Target": {
            "Arn": target.format(p=partition),
            "RoleArn": role_arn,
            "Input": json.dumps({key: value}, separators=(",", ":")),
            "RetryPolicy": dict(RETRY_POLICY),
        },
    }


def _group_arns(account: str, partition: str) -> str:
    """peagle's schedule groups in any region (`peagle`, `peagle-components`)."""
    return f"arn:{partition}:scheduler:*:{account}:schedule-group/{GROUP}*"


def trust_policy(account: str, partition: str = "aws") -> dict[str, Any]:
    """Who may assume the deleting role: EventBridge Scheduler, for this account's schedules
    in peagle's groups (AWS's confused-deputy conditions for Scheduler's execution role)."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "SchedulerAssumesRole",
                "Effect": "Allow",
                "Principal": {"Service": "scheduler.amazonaws.com"},
                "Action": "sts:AssumeRole",
                "Condition": {
                    "StringEquals": {"aws:SourceAccount": account},
                    "ArnLike": {"aws:SourceArn": _group_arns(account, partition)},
                },
            }
        ],
    }


def permission_policy(account: str, partition: str = "aws") -> dict[str, Any]:
    """What the deleting role may do: delete peagle's endpoints and inference components
    (by their `peagle:managed` tag), and deregister their scaling (DeleteEndpoint needs it
    when autoscaling is registered; scalable targets have no ARN to name)."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "DeleteExpiredPeagleEndpoints",
                "Effect": "Allow",
                "Action": ["sagemaker:DeleteEndpoint", "sagemaker:DeleteInferenceComponent"],
                "Resource": [
                    f"arn:{partition}:sagemaker:*:{account}:endpoint/*",
                    f"arn:{partition}:sagemaker:*:{account}:inference-component/*",
                ],
                "Condition": {"StringEquals": {"aws:ResourceTag/peagle:managed": "true"}},
            },
            {
                "Sid": "DeregisterScalingOfExpiredEndpoints",
                "Effect": "Allow",
                "Action": "application-autoscaling:DeregisterScalableTarget",
                "Resource": "*",
            },
        ],
    }


@dataclass(frozen=True)
class ExpiryPlan:
    """What `--ttl` adds to a deploy: the schedules (components' first), the role, the tag.

    Attributes:
        endpoint: the endpoint's name.
        expires: when it expires (UTC, whole minute).
        role_arn: the deleting role (peagle's, or `--ttl-role`'s).
        own_role: peagle makes (or reuses) the role; False with `--ttl-role`.
        schedules: CreateSchedule requests, in send order (the components' first).
    """

    endpoint: str
    expires: datetime
    role_arn: str
    own_role: bool
    schedules: list[dict[str, Any]] = field(default_factory=list)

    @property
    def tags(self) -> list[dict[str, str]]:
        """The endpoint's expiry tags."""
        out = [{"Key": EXPIRES_TAG, "Value": iso(self.expires)}]
        if not self.own_role:
            out.append({"Key": ROLE_TAG, "Value": self.role_arn})
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "endpoint": self.endpoint,
            "expires": iso(self.expires),
            "role": self.role_arn,
            "own_role": self.own_role,
            "schedules": self.schedules,
        }
