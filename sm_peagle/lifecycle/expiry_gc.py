"""What `gc` removes of expiries: the schedules in peagle's groups whose endpoint (or
component) is gone, and peagle's own role once no schedule in peagle's groups runs as it.
A `--ttl-role` role is the user's: never touched. A schedule that ran removes itself
(ActionAfterCompletion DELETE); these are the ones left by an endpoint deleted outside
peagle, or a schedule whose every attempt failed.

A deploy makes its schedule before CreateEndpoint, so a schedule without its endpoint may
be a deploy in progress: one whose operation may still be running (its id's start plus
RUNNING_S, or this process's own) is left alone, like the rest of gc's rules.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from ..planning.expiry import COMPONENT_GROUP, GROUP, ROLE_NAME
from ..planning.steps.expiry import ROLE_POLICY_NAME
from .expiry import delete_schedule, error_code, get_schedule, is_missing, schedule_key

__all__ = ["ROLE_LABEL", "find_expiry_garbage", "remove_expiry_garbage"]

ROLE_LABEL = f"role {ROLE_NAME}"
# The longest a deploy can still be running after its start: the longest wait peagle
# allows by default plus a rollback's worst case (lifecycle/operation.py), rounded up.
RUNNING_S = 6 * 3600


def _schedules(aws: Any, group: str) -> list[dict[str, Any]]:
    sch = aws.client("scheduler")
    try:
        pages = sch.get_paginator("list_schedules").paginate(GroupName=group)
        return [s for page in pages for s in page.get("Schedules", [])]
    except Exception as e:
        if is_missing(e):
            return []
        raise


def _may_run(schedule: dict[str, Any], now: datetime) -> bool:
    """Its operation (named in the Description; the id says when it started) may still
    be running: until that start plus RUNNING_S, judged as gc judges any operation."""
    from .operation import Operation

    for word in str(schedule.get("Description", "")).split():
        if word.startswith("op="):
            op = word[3:]
            try:
                started = datetime.strptime(op.split("-")[1], "%Y%m%dT%H%M%SZ")
            except (IndexError, ValueError):
                return False
            until = started.replace(tzinfo=UTC) + timedelta(seconds=RUNNING_S)
            return Operation(id=op, owner="", until=until).may_be_running(now)
    return False


def find_expiry_garbage(
    aws: Any, endpoints: set[str], components: set[str], now: datetime
) -> list[str]:
    """Labels of what gc removes: "schedule <group>/<name>" whose endpoint (not in
    `endpoints`, those staying) or component (not in `components`) is gone, then
    ROLE_LABEL when peagle's role would be left with no schedule naming it."""
    out: list[str] = []
    keep_role = False
    role_tail = f":role/{ROLE_NAME}"
    for group, live in ((COMPONENT_GROUP, components), (GROUP, endpoints)):
        for summary in _schedules(aws, group):
            name = summary["Name"]
            full = get_schedule(aws, group, name) or {}
            if name not in live and not _may_run(full, now):
                out.append(f"schedule {schedule_key(group, name)}")
                continue
            keep_role = keep_role or str(full.get("Target", {}).get("RoleArn", "")).endswith(
                role_tail
            )
    if not keep_role and _role_is_peagle_s(aws) and not _schedules_elsewhere(aws):
        out.append(ROLE_LABEL)
    return out


# The errors of a region this account has not enabled (opt-in regions): it holds nothing.
_NOT_ENABLED = ("UnrecognizedClientException", "InvalidSignatureException", "AuthFailure")


def _schedules_elsewhere(aws: Any) -> bool:
    """Whether peagle's groups hold a schedule in another region. The role is the
    account's (IAM is global) and its policies name every region, so a gc in one region
    must not delete it while another region's endpoints expire with it. Read only when the
    role would otherwise go (ListSchedules per region); a region that cannot be read keeps
    it, except one the account has not enabled."""
    regions = aws.session.get_available_regions("scheduler") or []
    for region in regions:
        if region == aws.region:
            continue
        sch = aws.client("scheduler", region=region)
        for group in (GROUP, COMPONENT_GROUP):
            try:
                if sch.list_schedules(GroupName=group, MaxResults=1).get("Schedules"):
                    return True
            except Exception as e:
                if is_missing(e) or error_code(e) in _NOT_ENABLED:
                    continue  # no such group there, or the region is not enabled
                return True  # cannot tell: keep the role
    return False


def _role_is_peagle_s(aws: Any) -> bool:
    """peagle's role exists and is tagged as peagle's. (A deploy that makes or reuses it
    between this gc's listing and its DeleteRole would meet a missing role: its schedule
    then fails visibly, and `status` says "overdue"; the window is a few requests.)"""
    try:
        role = aws.client("iam").get_role(RoleName=ROLE_NAME)["Role"]
    except Exception as e:
        if is_missing(e) or error_code(e) == "AccessDenied":
            return False
        raise
    tags = {t["Key"]: t["Value"] for t in role.get("Tags", [])}
    return tags.get("peagle:managed") == "true"


def remove_expiry_garbage(aws: Any, labels: list[str]) -> list[str]:
    """Delete what `find_expiry_garbage` found (the schedules first); the labels gone."""
    gone: list[str] = []
    for label in labels:
        if label.startswith("schedule "):
            if delete_schedule(aws, label[len("schedule ") :]):
                gone.append(label)
        elif label == ROLE_LABEL:
            iam = aws.client("iam")
            try:
                iam.delete_role_policy(RoleName=ROLE_NAME, PolicyName=ROLE_POLICY_NAME)
            except Exception as e:
                if not is_missing(e):
                    raise
            iam.delete_role(RoleName=ROLE_NAME)
            gone.append(label)
    return gone
