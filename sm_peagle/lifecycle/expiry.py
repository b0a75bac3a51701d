"""Endpoints that expire (`--ttl`): the EventBridge Scheduler schedules and the role they run
as, made, moved and removed. The requests themselves are `planning/expiry.py` (pure); this
module sends them.

The lead's decisions (docs/guides/expiry.md): one peagle role per account
(`peagle-ttl-deleter`, made on first use and reused; `--ttl-role` names the user's own,
which peagle never edits or deletes); the schedules go in peagle's groups (`peagle`,
`peagle-components`, made on first use) before CreateEndpoint, so an interrupted deploy
still expires; a rolled-back deploy removes them (kind "schedule", name "<group>/<name>").
A schedule carries no tags, so peagle knows its own by group, name and Description.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from ..errors import Call, SpecError, text
from ..planning.expiry import (
    COMPONENT_GROUP,
    GROUP,
    ROLE_NAME,
    ExpiryPlan,
    expiry_at,
    schedule_request,
    short_ttl_error,
)
from ..planning.steps.expiry import role_requests

__all__ = [
    "SCHEDULE",
    "arm",
    "delete_schedule",
    "plan_expiry",
    "remove_stale",
    "schedule_key",
]

SCHEDULE = "schedule"  # the rollback kind; its name is "<group>/<schedule name>"
# A role IAM has just made may not be assumable for some seconds (IAM is eventually
# consistent): CreateSchedule refuses it meanwhile. An assumption, retried this long.
PROPAGATION_S = 30.0
# A deploy writes its schedules seconds before CreateEndpoint (after its models and config):
# a schedule of the name written this recently, without its endpoint, may be a racing
# deploy's, not a stale one.
RACING_S = 600
_DESCRIPTION = "peagle ttl:"  # how every peagle schedule's Description starts


def schedule_key(group: str, name: str) -> str:
    return f"{group}/{name}"


def error_code(e: Exception) -> str:
    return str(getattr(e, "response", {}).get("Error", {}).get("Code", ""))


def is_missing(e: Exception) -> bool:
    return error_code(e) in ("ResourceNotFoundException", "NoSuchEntity", "NoSuchEntityException")


def ttl_error(ttl: Any, e: ValueError) -> SpecError:
    """`expiry_at`'s ValueError as the one short-TTL SpecError (planning/expiry.py)."""
    return short_ttl_error(ttl, str(e))


def check_ttl(aws: Any, plan: Any) -> datetime | None:
    """With a TTL: AWS's now (the deploy's start: its expiry counts from here), after
    checking the TTL against it: SpecError (field "ttl") before anything is sent. Without
    one: None, and no request (the deploy reads AWS's time after its preflight, as before
    TTLs: an unreachable AWS then fails the preflight's first call, not a silent extra one)."""
    ttl = getattr(plan.spec.endpoint, "ttl", None)
    if ttl is None:
        return None
    now: datetime = aws.synced_aws_now()
    try:
        expiry_at(ttl, now)
    except ValueError as e:
        raise ttl_error(ttl, e) from None
    return now


def plan_expiry(
    aws: Any,
    endpoint: str,
    ttl: str | float | int,
    ttl_role: str | None,
    start: datetime,
    operation: str,
    components: list[str] | None = None,
) -> ExpiryPlan:
    """The schedules a deploy (or `update --ttl`, `adopt --ttl`) sends, the components'
    first. SpecError (field "ttl") for a TTL under the minimum or in the past: raised
    before anything is sent (the account comes from STS, a read)."""
    from ..iac.iam import partition

    try:
        expires = expiry_at(ttl, start)
    except ValueError as e:
        raise ttl_error(ttl, e) from None
    part = partition(aws.region)
    role = ttl_role or f"arn:{part}:iam::{aws.account_id()}:role/{ROLE_NAME}"
    schedules = [
        schedule_request(endpoint, expires, role, operation, partition=part, component=c)
        for c in components or []
    ]
    schedules.append(schedule_request(endpoint, expires, role, operation, partition=part))
    return ExpiryPlan(endpoint, expires, role, ttl_role is None, schedules)


def ensure_group(aws: Any, group: str) -> None:
    """peagle's schedule group, made on first use (only groups take tags)."""
    sch = aws.client("scheduler")
    try:
        sch.get_schedule_group(Name=group)
        return
    except Exception as e:
        if not is_missing(e):
            raise
    try:
        sch.create_schedule_group(Name=group, Tags=[{"Key": "peagle:managed", "Value": "true"}])
    except Exception as e:
        if error_code(e) != "ConflictException":  # a deploy racing this one made it
            raise


def ensure_role(aws: Any, say: Callable[[str], None]) -> bool:
    """peagle's deleting role, made on first use and reused (True: made now)."""
    from ..iac.iam import partition

    iam = aws.client("iam")
    # The plan's own requests (planning/steps/expiry.py): plan shows what deploy sends.
    create, put = role_requests(aws.account_id(), partition(aws.region))
    try:
        iam.get_role(RoleName=ROLE_NAME)
    except Exception as e:
        if not is_missing(e):
            raise
        iam.create_role(**create[1])
        iam.put_role_policy(**put[1])
        say(f"created role {ROLE_NAME} (EventBridge Scheduler deletes expired endpoints with it)")
        return True
    _repair_policy(iam, put[1], say)
    return False


def _repair_policy(iam: Any, put: dict[str, Any], say: Callable[[str], None]) -> None:
    """A role whose CreateRole went through and whose PutRolePolicy did not (a boundary, an
    SCP, an interrupt) would run every schedule without permission, and nothing would say
    so until an expiry failed: its permission policy is read and written again when it is
    missing or differs (a read otherwise)."""
    from urllib.parse import unquote

    try:
        doc = iam.get_role_policy(RoleName=ROLE_NAME, PolicyName=put["PolicyName"])
        have = doc["PolicyDocument"]
        have = json.loads(unquote(have)) if isinstance(have, str) else have
        if have == json.loads(put["PolicyDocument"]):
            return
    except Exception as e:
        if not is_missing(e):
            raise
    iam.put_role_policy(**put)
    say(f"wrote the permission policy of role {ROLE_NAME} again (it was missing or changed)")


def check_user_role(aws: Any, role_arn: str, say: Callable[[str], None]) -> None:
    """`--ttl-role`: warn (never refuse: its conditions may be stricter than peagle can
    judge) when its trust does not name scheduler.amazonaws.com. Never edited."""
    from urllib.parse import unquote

    name = role_arn.rsplit("/", 1)[-1]
    try:
        doc = aws.client("iam").get_role(RoleName=name)["Role"]["AssumeRolePolicyDocument"]
    except Exception as e:
        say(f"warning: could not read role {name} to check its trust: {e}")
        return
    if isinstance(doc, str):
        doc = json.loads(unquote(doc))
    if "scheduler.amazonaws.com" not in json.dumps(doc):
        say(
            text(
                "warning: role {name} does not trust scheduler.amazonaws.com; the expiry "
                "schedule will fail to run (see `{p}`)",
                name=name,
                p=Call("iam_policy", for_="ttl-role"),
            )
        )


def arm(
    lc: Any,
    plan: ExpiryPlan | None,
    created: list[tuple[str, str]],
    trying: list[tuple[str, str]],
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """The groups and the role, then each schedule, each recorded in `created` (kind
    SCHEDULE) as AWS answers, so a rollback removes it. Before CreateEndpoint, so that a
    deploy stopped anywhere after still expires. Nothing without a TTL (None)."""
    if plan is None:
        return
    groups = {s["GroupName"] for s in plan.schedules}
    for group in (GROUP, COMPONENT_GROUP):
        if group in groups:
            ensure_group(lc.aws, group)
    made_role = ensure_role(lc.aws, lc.say) if plan.own_role else False
    if not plan.own_role:
        check_user_role(lc.aws, plan.role_arn, lc.say)
    for req in plan.schedules:
        key = schedule_key(req["GroupName"], req["Name"])
        trying[:] = [(SCHEDULE, key)]
        _create_schedule(lc.aws, req, made_role, sleep)
        created.append(trying.pop())
        lc.say(f"created schedule {key} ({req['ScheduleExpression']})")


def _create_schedule(
    aws: Any, req: dict[str, Any], fresh_role: bool, sleep: Callable[[float], None]
) -> None:
    sch = aws.client("scheduler")
    deadline = time.monotonic() + (PROPAGATION_S if fresh_role else 0)
    while True:
        try:
            sch.create_schedule(**req)
            return
        except Exception as e:
            assume = error_code(e) == "ValidationException" and "assume" in str(e).lower()
            if not assume or time.monotonic() > deadline:
                raise
            sleep(2.0)


def delete_schedule(aws: Any, key: str) -> bool:
    """DeleteSchedule of "<group>/<name>"; False when it was gone already."""
    group, name = key.split("/", 1)
    try:
        aws.client("scheduler").delete_schedule(Name=name, GroupName=group)
        return True
    except Exception as e:
        if is_missing(e):
            return False
        raise


def undo_schedule(lc: Any, key: str, op: Any = None) -> None:
    """A rollback's step for kind SCHEDULE: only a schedule this operation wrote (its
    Description names `op=<id>`). A CreateSchedule that met a ConflictException found
    another deploy's schedule of the name: that one stays."""
    group, name = key.split("/", 1)
    found = get_schedule(lc.aws, group, name)
    if found is None:
        return
    if op is not None and f"op={op.id}" not in str(found.get("Description", "")).split():
        lc.say(f"kept schedule {key}: another operation wrote it")
        return
    lc.say(f"rolling back schedule {key}")
    delete_schedule(lc.aws, key)


def is_denied(e: Exception) -> bool:
    """Scheduler's AccessDeniedException (AccessDenied from some callers' wrappers): a
    permission the caller lacks, reported as a warning where the schedule is optional."""
    return error_code(e) in ("AccessDeniedException", "AccessDenied")


def get_schedule(aws: Any, group: str, name: str, *, quiet: bool = False) -> dict | None:
    """GetSchedule, None when there is none (or, `quiet`, when it may not be read)."""
    try:
        return dict(aws.client("scheduler").get_schedule(Name=name, GroupName=group))
    except Exception as e:
        if is_missing(e) or (quiet and is_denied(e)):
            return None
        raise


def is_peagle_schedule(schedule: dict[str, Any]) -> bool:
    return str(schedule.get("Description", "")).startswith(_DESCRIPTION)


def described_endpoint(schedule: dict[str, Any]) -> str | None:
    """The endpoint a peagle schedule's Description names."""
    for word in str(schedule.get("Description", "")).split():
        if word.startswith("endpoint="):
            return word[len("endpoint=") :]
    return None


def remove_stale(lc: Any, endpoint: str, *, quiet: bool) -> None:
    """A schedule peagle/<endpoint> left by an earlier endpoint of this name (deleted
    outside peagle) would delete the new one at the old time: a deploy removes it when
    the endpoint it names is gone. `quiet`: a caller who may not read schedules (a
    deployer policy from before TTLs) deploys without a TTL all the same."""

    _remove_stale_one(lc, GROUP, endpoint, endpoint, quiet=quiet)


def remove_stale_components(lc: Any, endpoint: str, components: list[str]) -> None:
    """The same for the components' schedules (`peagle-components/<component>`): a
    component of this name deleted outside peagle left one that would delete the new
    component at the old time. Stale when the endpoint it names is gone."""
    for component in components:
        _remove_stale_one(lc, COMPONENT_GROUP, component, endpoint, quiet=True)


def _remove_stale_one(lc: Any, group: str, name: str, endpoint: str, *, quiet: bool) -> None:
    from botocore.exceptions import ClientError

    from .resources import not_found

    found = get_schedule(lc.aws, group, name, quiet=quiet)
    if found is None or not is_peagle_schedule(found):
        return
    written = found.get("LastModificationDate") or found.get("CreationDate")
    if written is not None and (lc.aws.synced_aws_now() - written).total_seconds() < RACING_S:
        return  # a deploy racing this one wrote it just now and may still create its endpoint
    named = described_endpoint(found) or endpoint
    try:
        lc.sm.describe_endpoint(EndpointName=named)
        return  # its endpoint is there: not stale (CreateEndpoint will say the name is taken)
    except ClientError as e:
        if not not_found(e):
            raise
    delete_schedule(lc.aws, schedule_key(group, name))
    lc.say(f"deleted stale schedule {group}/{name} (its endpoint was deleted outside peagle)")


def for_deploy(lc: Any, plan: Any, op: Any, start: datetime) -> ExpiryPlan | None:
    """The deploy's expiry (None without a TTL), after removing a stale schedule of this
    name. Raises SpecError for a bad TTL before anything is created."""
    endpoint_spec = plan.spec.endpoint
    ttl = getattr(endpoint_spec, "ttl", None)
    name = plan.names["endpoint"]
    components = [c["InferenceComponentName"] for c in plan.inference_components or []]
    remove_stale_components(lc, name, components)
    if ttl is None:
        remove_stale(lc, name, quiet=True)
        return None
    exp = plan_expiry(lc.aws, name, ttl, endpoint_spec.ttl_role, start, op.id, components)
    remove_stale(lc, name, quiet=False)
    return exp


def start_expiry(
    lc: Any, plan: Any, op: Any, start: datetime, endpoint_req: dict[str, Any]
) -> ExpiryPlan | None:
    """`for_deploy`, and the expiry tags added to CreateEndpoint's. A bad TTL ends the
    operation (nothing was sent) and raises its SpecError."""
    try:
        exp = for_deploy(lc, plan, op, start)
    except BaseException:
        op.end()
        raise
    if exp is not None:
        endpoint_req["Tags"] = [*endpoint_req.get("Tags", []), *exp.tags]
    return exp


def existing_schedules(lc: Any, endpoint: str, components: list[str]) -> list[str]:
    """The keys ("<group>/<name>") of the endpoint's and its components' peagle schedules
    that exist, read only (GetSchedule each): what `delete` removes, and what its dry run
    lists. A caller who may not read schedules (a deployer policy from before TTLs) is
    warned and gets none."""
    keys = [schedule_key(COMPONENT_GROUP, c) for c in components]
    keys.append(schedule_key(GROUP, endpoint))
    found: list[str] = []
    for key in keys:
        group, name = key.split("/", 1)
        try:
            schedule = get_schedule(lc.aws, group, name)
        except Exception as e:
            if not is_denied(e):
                raise
            lc.say(f"warning: schedule {key} not checked: {e}")
            continue
        if schedule is not None and is_peagle_schedule(schedule):
            found.append(key)
    return found


def remove_schedules(
    lc: Any, endpoint: str, components: list[str], keys: list[str] | None = None
) -> list[str]:
    """`delete`, first of all (nothing may fire mid-delete): the endpoint's and its
    components' schedules that exist (`keys`, else `existing_schedules`), so an endpoint
    without a TTL gets no DeleteSchedule (no mutating request when nothing needs to
    change). The keys deleted."""
    if keys is None:
        keys = existing_schedules(lc, endpoint, components)
    gone: list[str] = []
    for key in keys:
        try:
            if delete_schedule(lc.aws, key):
                gone.append(key)
        except Exception as e:
            if not is_denied(e):
                raise
            lc.say(f"warning: schedule {key} not deleted: {e}")
    return gone
