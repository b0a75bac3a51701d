"""Step 10 of `plan()`: the expiry the spec asks for (`endpoint.ttl`), as deploy would send
it: the schedules (the components' first), the deleting role (peagle's, made on first use,
or `ttl_role`'s) and its policies, and the tags.

A plan has no deploy time: a relative TTL ("4h") becomes an absolute expiry only when the
deploy starts (AWS's clock then, rounded up to the minute), so the requests shown carry
`at(<deploy start + 4h, rounded up to the minute>)` where deploy writes the instant, and
`<deploy's operation id>` where it writes its own id. The request-shape check validates
the same requests with a sample instant, so their shape is checked all the same. An
absolute TTL ("2026-12-01T18:00Z") is known at plan time: it is shown as is and refused
by deploy if it is then less than 15 minutes away (plan does not read a clock either).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from ...checks import passed
from ..expiry import (
    COMPONENT_GROUP,
    COMPONENT_LEAD_S,
    EXPIRES_TAG,
    GROUP,
    MIN_TTL_S,
    ROLE_NAME,
    ROLE_TAG,
    parse_expiry,
    permission_policy,
    schedule_request,
    short_ttl_error,
    trust_policy,
)

__all__ = [
    "ROLE_POLICY_NAME",
    "SAMPLE_START",
    "PlannedExpiry",
    "add_expiry",
    "describe_ttl",
    "group_requests",
    "role_requests",
]

# The inline policy peagle puts on its role (PutRolePolicy's PolicyName) and the role's
# Description: as lifecycle/expiry.py sends them (a plan shows what deploy sends).
ROLE_POLICY_NAME = "peagle-ttl-delete"
ROLE_DESCRIPTION = "Deletes peagle endpoints when their TTL ends (EventBridge Scheduler)"
# The account a plan names when the spec gives no role to take it from (plan reads no
# caller identity); deploy uses the caller's.
PLACEHOLDER_ACCOUNT = "000000000000"
# The instant the shape check plans a relative TTL from: any instant gives the same shapes.
SAMPLE_START = datetime(2026, 1, 1, tzinfo=UTC)
OPERATION_PLACEHOLDER = "<deploy's operation id>"


def describe_ttl(ttl: str | int | float) -> str:
    """`deploy start + 4h` for a duration (as given), the UTC instant for a time."""
    kind, amount = parse_expiry(ttl)
    if kind == "absolute":
        return datetime.fromtimestamp(amount, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return f"deploy start + {_duration(amount)}"


def _duration(seconds: float) -> str:
    s = int(seconds)
    parts = [(s // 86400, "d"), (s % 86400 // 3600, "h"), (s % 3600 // 60, "m"), (s % 60, "s")]
    return "".join(f"{n}{u}" for n, u in parts if n) or "0s"


def role_requests(account: str, partition: str = "aws") -> list[tuple[str, dict[str, Any]]]:
    """(operation, request) that make peagle's deleting role when it does not exist yet:
    CreateRole with the trust policy (tagged `peagle:managed`, so gc knows it is peagle's),
    then PutRolePolicy with the permission policy. Both go to IAM (a global service)."""
    return [
        (
            "CreateRole",
            {
                "RoleName": ROLE_NAME,
                "AssumeRolePolicyDocument": json.dumps(trust_policy(account, partition)),
                "Description": ROLE_DESCRIPTION,
                "Tags": [{"Key": "peagle:managed", "Value": "true"}],
            },
        ),
        (
            "PutRolePolicy",
            {
                "RoleName": ROLE_NAME,
                "PolicyName": ROLE_POLICY_NAME,
                "PolicyDocument": json.dumps(permission_policy(account, partition)),
            },
        ),
    ]


def group_requests(components: bool) -> list[dict[str, Any]]:
    """CreateScheduleGroup for peagle's groups, sent only when a group does not exist yet:
    `peagle`, and `peagle-components` for an endpoint with inference components. Tagged
    `peagle:managed` (only groups take tags: a schedule cannot carry one)."""
    names = [GROUP, COMPONENT_GROUP] if components else [GROUP]
    return [{"Name": n, "Tags": [{"Key": "peagle:managed", "Value": "true"}]} for n in names]


@dataclass(frozen=True)
class PlannedExpiry:
    """The expiry of a plan (`endpoint.ttl`), for `plan` and the exports to show.

    Attributes:
        ttl: the TTL as the spec gives it ("4h", "2026-12-01T18:00Z").
        expires: "deploy start + 4h" (a duration: deploy fixes the instant) or the UTC
            instant of an absolute TTL.
        absolute: the TTL is a UTC time (known at plan time).
        role_arn: the role the schedules run as.
        own_role: peagle makes (or reuses) the role `peagle-ttl-deleter`; False with
            `ttl_role`, which peagle never edits.
        account: the account the ARNs name (the execution role's, or a placeholder).
        group_requests: CreateScheduleGroup for peagle's groups, sent only when a group
            does not exist yet.
        role_requests: CreateRole and PutRolePolicy, sent only when peagle's role does not
            exist yet (none with `ttl_role`).
        trust_policy: the role's trust policy (what a `ttl_role` must allow too).
        permission_policy: the role's permission policy (likewise).
        schedules: the CreateSchedule requests in send order (the components' first),
            with placeholders where deploy writes the instant and its operation id.
        tags: the endpoint's expiry tags (`peagle:expires` is deploy's instant).
        notes: what the plan cannot know.
    """

    ttl: str
    expires: str
    absolute: bool
    role_arn: str
    own_role: bool
    account: str
    group_requests: list[dict[str, Any]]
    role_requests: list[tuple[str, dict[str, Any]]]
    trust_policy: dict[str, Any]
    permission_policy: dict[str, Any]
    schedules: list[dict[str, Any]] = field(default_factory=list)
    tags: list[dict[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # The same schedules at SAMPLE_START (relative TTL): what the shape check validates.
    sample_schedules: list[dict[str, Any]] = field(default_factory=list, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """The `expiry` of `peagle plan --json`."""
        return {
            "ttl": self.ttl,
            "expires": self.expires,
            "absolute": self.absolute,
            "role": self.role_arn,
            "own_role": self.own_role,
            "create_schedule_groups": self.group_requests,
            "role_requests": [{"operation": op, "request": r} for op, r in self.role_requests],
            "trust_policy": self.trust_policy,
            "permission_policy": self.permission_policy,
            "create_schedules": self.schedules,
            "tags": self.tags,
            "notes": self.notes,
        }


def _partition(region: str) -> str:
    """The ARN partition of `region` (as iac/iam.partition; planning may not import iac)."""
    if region.startswith("cn-"):
        return "aws-cn"
    return "aws-us-gov" if region.startswith("us-gov-") else "aws"


def _account(p: Any) -> str:
    """The account of the spec's execution role (deploy uses the caller's)."""
    for arn in (p.spec.endpoint.ttl_role, p.spec.role):
        if arn and arn.split(":")[4:5] and arn.split(":")[4].isdigit():
            return arn.split(":")[4]
    return PLACEHOLDER_ACCOUNT


def _requests(
    endpoint: str, components: list[str], expires: datetime, role: str, op: str, part: str
) -> list[dict[str, Any]]:
    return [
        *(
            schedule_request(endpoint, expires, role, op, partition=part, component=c)
            for c in components
        ),
        schedule_request(endpoint, expires, role, op, partition=part),
    ]


def _placeholders(request: dict[str, Any], expires_text: str, lead: bool) -> dict[str, Any]:
    """A sample request with the instant deploy writes in words."""
    when = f"{expires_text} - 5m" if lead else expires_text
    out = json.loads(json.dumps(request))
    out["ScheduleExpression"] = f"at(<{when}, rounded up to the minute>)"
    desc = out["Description"]
    out["Description"] = desc[: desc.index(" expires=")] + f" expires=<{expires_text}>"
    return out


def _notes(components: bool, given: str | None, acct: str) -> list[str]:
    """What the plan of an expiry cannot know or does not show."""
    notes = [
        "a plan has no deploy time: deploy fixes the expiry when it starts (AWS's clock), "
        "rounded up to the minute, and checks it is 15 minutes away at least",
        "the schedules are created before CreateEndpoint, so an interrupted deploy still "
        "expires; a rolled-back deploy deletes them",
    ]
    if components:
        notes.append(
            f"each inference component's schedule runs {COMPONENT_LEAD_S // 60} minutes "
            "before the endpoint's (DeleteEndpoint is refused while components remain)"
        )
    if given:
        notes.append(
            "ttl_role: peagle uses this role as it is and never edits or deletes it; it must "
            "trust scheduler.amazonaws.com and allow the permission policy's actions"
        )
    else:
        notes.append(
            f"role {ROLE_NAME}: made on first use in the account (CreateRole, PutRolePolicy), "
            "then reused; gc deletes it once no schedule names it"
        )
    if acct == PLACEHOLDER_ACCOUNT:
        notes.append(
            f"account {PLACEHOLDER_ACCOUNT} is a placeholder: deploy names the caller's account"
        )
    return notes


def add_expiry(p: Any) -> None:
    """`p.expiry` (a PlannedExpiry) and an `expiry` check, when the spec has a TTL."""
    ttl = p.spec.endpoint.ttl
    if ttl is None:
        return
    part = _partition(p.region)
    acct = _account(p)
    given = p.spec.endpoint.ttl_role
    role = given or f"arn:{part}:iam::{acct}:role/{ROLE_NAME}"
    endpoint = p.names["endpoint"]
    components = [ic["InferenceComponentName"] for ic in p.inference_components]
    kind, amount = parse_expiry(ttl)
    if kind == "relative" and amount < MIN_TTL_S:
        # Known without a clock: a duration under the minimum is short from any start.
        raise short_ttl_error(
            ttl,
            f"endpoint.ttl: {ttl!r} is shorter than {MIN_TTL_S // 60} minutes, the shortest TTL "
            "(a schedule fires within its minute, components go 5 minutes before the endpoint)",
        )
    said = describe_ttl(ttl)
    if kind == "absolute":
        expires = datetime.fromtimestamp(amount, UTC)
        expires = expires + timedelta(seconds=-expires.second % 60)  # whole minute, up
        expires_text = expires.strftime("%Y-%m-%dT%H:%M:%SZ")
        schedules = _requests(endpoint, components, expires, role, OPERATION_PLACEHOLDER, part)
        sample = schedules
    else:
        sample_at = SAMPLE_START + timedelta(seconds=amount)
        sample = _requests(endpoint, components, sample_at, role, OPERATION_PLACEHOLDER, part)
        expires_text = said
        schedules = [_placeholders(r, said, lead=r["GroupName"] != GROUP) for r in sample]
    notes = _notes(bool(components), given, acct)
    tags = [{"Key": EXPIRES_TAG, "Value": expires_text if kind == "absolute" else f"<{said}>"}]
    if given:
        tags.append({"Key": ROLE_TAG, "Value": given})
    p.expiry = PlannedExpiry(
        ttl=str(ttl),
        expires=expires_text,
        absolute=kind == "absolute",
        role_arn=role,
        own_role=not given,
        account=acct,
        group_requests=group_requests(bool(components)),
        role_requests=[] if given else role_requests(acct, part),
        trust_policy=trust_policy(acct, part),
        permission_policy=permission_policy(acct, part),
        schedules=schedules,
        tags=tags,
        notes=notes,
        sample_schedules=sample,
    )
    whose = given or ROLE_NAME
    p.checks.append(
        passed(
            "expiry",
            f"expires at {expires_text}: {len(schedules)} EventBridge Scheduler "
            f"schedule(s) delete it, running as {whose}",
        )
    )
