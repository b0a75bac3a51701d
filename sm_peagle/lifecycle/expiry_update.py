"""Moving an endpoint's expiry after its deploy: `update --ttl` (`set_ttl`) and `apply` of a
spec that newly has `endpoint.ttl` (`follow_ttl`). Only the schedules and the endpoint's
expiry tags are sent; see `lifecycle/expiry.py` for the schedules themselves."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from ..errors import Call, SpecError, text
from ..planning.expiry import ExpiryPlan
from .expiry import SCHEDULE, arm, get_schedule, plan_expiry, remove_schedules, schedule_key

__all__ = ["follow_ttl", "set_ttl"]


def set_ttl(
    lc: Any, endpoint: str, ttl: str | float, ttl_role: str | None, *, dry_run: bool = False
) -> tuple[list[str], list[tuple[str, str]], str | None]:
    """`update NAME --ttl`: the new expiry counts from AWS's now (or is the time given);
    UpdateSchedule (the whole request: it resets what it is not given) of each schedule
    there, CreateSchedule of each missing (a TTL given to an endpoint without one), then
    the endpoint's tags. `ttl="none"` deletes the schedules and the tags. Nothing else is
    sent. Returns (the changes, the schedules written, the new expiry or None)."""
    from botocore.exceptions import ClientError

    from ..errors import NotFound
    from ..planning.expiry import EXPIRES_TAG, ROLE_TAG
    from .components import split_components
    from .operation import Operation
    from .resources import not_found
    from .spec_tags import tag_dict

    try:
        desc = lc.sm.describe_endpoint(EndpointName=endpoint)
    except ClientError as e:
        if not_found(e):
            raise NotFound(f"endpoint {endpoint} does not exist") from None
        raise
    arn = desc["EndpointArn"]
    tags = tag_dict(lc.sm.list_tags(ResourceArn=arn).get("Tags", []))
    if tags.get("peagle:managed") != "true":
        # peagle's role may delete only peagle:managed endpoints, and `delete` refuses
        # this one: an expiry would be a countdown that never fires, or a deletion delete
        # itself would refuse. Adopting it first makes it peagle's (and takes a TTL).
        raise SpecError(
            f"endpoint {endpoint} was not created by peagle (no peagle:managed tag); "
            "nothing was sent",
            remedy=text("adopt it with a TTL: `{a}`", a=Call("adopt", endpoint, ttl=str(ttl))),
            field="name",
            value=endpoint,
        )
    was = tags.get(EXPIRES_TAG)
    components = split_components(lc.sm, endpoint)[0]
    if str(ttl).strip().lower() == "none":
        if dry_run:
            return [f"expires {was or 'never'} -> never"], [], None
        gone = remove_schedules(lc, endpoint, components)
        old = [k for k in (EXPIRES_TAG, ROLE_TAG) if k in tags]
        if old:
            lc.sm.delete_tags(ResourceArn=arn, TagKeys=old)
        return [f"expires {was or 'never'} -> never"], [(SCHEDULE, k) for k in gone], None
    now = lc.aws.synced_aws_now()
    op = Operation.start(0, now)
    op.end()  # only its id: the Description names the run that wrote the schedule
    role = ttl_role or tags.get(ROLE_TAG)
    exp = plan_expiry(lc.aws, endpoint, ttl, role, now, op.id, components)
    change = [f"expires {was or 'never'} -> {exp.tags[0]['Value']}"]
    if dry_run:
        return change, [], exp.tags[0]["Value"]
    written: list[tuple[str, str]] = []
    live = {id(r): get_schedule(lc.aws, r["GroupName"], r["Name"]) for r in exp.schedules}
    missing = [r for r in exp.schedules if live[id(r)] is None]
    if missing:  # only what CreateSchedule needs: the groups and peagle's role
        arm(lc, ExpiryPlan(endpoint, exp.expires, exp.role_arn, exp.own_role, missing), [], [])
    for req in exp.schedules:
        key = schedule_key(req["GroupName"], req["Name"])
        if req not in missing and not _same_time_and_role(live[id(req)], req):
            lc.aws.client("scheduler").update_schedule(**req)
            lc.say(f"updated schedule {key} ({req['ScheduleExpression']})")
        written.append((SCHEDULE, key))
    wanted = {t["Key"]: t["Value"] for t in exp.tags}
    add = [{"Key": k, "Value": v} for k, v in wanted.items() if tags.get(k) != v]
    if add:
        lc.sm.add_tags(ResourceArn=arn, Tags=add)
    if ROLE_TAG in tags and ROLE_TAG not in wanted:
        lc.sm.delete_tags(ResourceArn=arn, TagKeys=[ROLE_TAG])
    return change, written, exp.tags[0]["Value"]


def _same_time_and_role(live: dict[str, Any] | None, req: dict[str, Any]) -> bool:
    """The schedule already fires at this time as this role: nothing to send (only the
    Description's operation id would differ)."""
    if live is None:
        return False
    return live.get("ScheduleExpression") == req["ScheduleExpression"] and (
        live.get("Target", {}).get("RoleArn") == req["Target"]["RoleArn"]
    )


def follow_ttl(
    lc: Any,
    plan: Any,
    name: str | None,
    dry_run: bool = False,
    confirm: Callable[[str], None] | None = None,
) -> bool:
    """`apply` of a spec with `endpoint.ttl` on the endpoint `name` (None: the plan's
    name), which exists: one
    without an expiry gets one counted from now (CreateSchedule + AddTags only, after
    `confirm`; True; a dry run says it would). One that has an expiry keeps it
    (re-applying never extends it); a spec naming another time says that `update --ttl`
    moves it."""
    from datetime import UTC

    from ..planning.expiry import EXPIRES_TAG, parse_expiry
    from .spec_tags import tag_dict

    ttl = getattr(plan.spec.endpoint, "ttl", None)
    if ttl is None:
        return False
    say, name = lc.say, name or plan.names["endpoint"]
    arn = lc.sm.describe_endpoint(EndpointName=name)["EndpointArn"]
    has = tag_dict(lc.sm.list_tags(ResourceArn=arn).get("Tags", [])).get(EXPIRES_TAG)
    if has is None:
        role = plan.spec.endpoint.ttl_role
        changes, _, _ = set_ttl(lc, name, ttl, role, dry_run=True)
        if dry_run:
            say(f"{name}: would set {', '.join(changes)}")
            return False
        if confirm is not None:
            confirm(f"Give {name} an expiry ({', '.join(changes)})?")
        changes, _, _ = set_ttl(lc, name, ttl, role)
        say(f"{name}: {', '.join(changes)}")
        return True
    kind, at = parse_expiry(ttl)
    if kind == "absolute" and datetime.fromtimestamp(at, UTC).strftime("%H:%M") not in has:
        say(
            text(
                "{name} keeps its expiry {has}; `{u}` moves it",
                name=name,
                has=has,
                u=Call("update", name, ttl=str(ttl)),
            )
        )
    return False
