"""The expiry of a plan (`Plan.expiry`: planning/steps/expiry.py) in the exports: the
EventBridge Scheduler schedule that deletes the endpoint, and the role it runs as.

The absolute time is fixed when the export is written: a relative TTL ("4h") counts from
the export's clock (this machine's, UTC), not from the stack's apply, since a template has
no "deploy start" to count from. A template applied after that instant carries a past
`at()`; AWS documents nothing for one (run at once? refused?), so re-export before
applying. Both formats say so in their comment, and the 15-minute minimum is checked
against the export's clock.

What a stack does not own: the schedule group `peagle`. peagle makes it on its first
`--ttl` deploy and every peagle schedule lives in it; a stack that owned it would delete
every peagle schedule of the region when destroyed (deleting a group deletes its
schedules). So the schedule names the group and the export says it must exist (peagle
creates it, or a CreateScheduleGroup of your own). The role: the
`ttl_role` given, or a role of the stack's own (a generated name: Terraform's
`name_prefix`, CloudFormation's generated RoleName) with peagle's trust and permission
policies; never the account's shared `peagle-ttl-deleter`, which other endpoints' schedules
use and a stack would delete with it.

Terraform (hashicorp/aws `aws_scheduler_schedule`, internal/service/scheduler/schedule.go):
`name`, `group_name`, `schedule_expression`, `schedule_expression_timezone`,
`flexible_time_window { mode }`, `action_after_completion` (NONE|DELETE), `state`,
`description`, `target { arn, role_arn, input, retry_policy { maximum_event_age_in_seconds,
maximum_retry_attempts } }` (`action_after_completion` came with
hashicorp/terraform-provider-aws#44264, merged 2025-09-12: within the 6.22.0 floor);
`aws_iam_role` (`name_prefix`, `assume_role_policy`, `description`, `tags`) and
`aws_iam_role_policy` (`name`, `role`, `policy`).
CloudFormation `AWS::Scheduler::Schedule` (the schema cfn-lint ships: Name, GroupName,
ScheduleExpression, ScheduleExpressionTimezone, FlexibleTimeWindow, State, Description,
Target {Arn, RoleArn, Input, RetryPolicy}) has NO ActionAfterCompletion: the schedule stays
(ENABLED, never firing again) until the stack is deleted. `AWS::IAM::Role` with
AssumeRolePolicyDocument and an inline Policies entry.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from ..errors import Call, SpecError, text
from ..planning.expiry import GROUP, expiry_at, iso, schedule_request

__all__ = ["cfn_expiry", "expiry_comment", "fixed_schedule", "tf_expiry"]

_OPERATION = "export"  # the Description's op: no peagle operation made it


def fixed_schedule(plan: Any, now: datetime | None) -> tuple[dict[str, Any], datetime]:
    """(the CreateSchedule request, the expiry) with the time fixed now: `now` (tests),
    else this machine's UTC clock. SpecError when it is under 15 minutes away."""
    e = plan.expiry
    start = now or datetime.now(UTC)
    try:
        expires = expiry_at(plan.spec.endpoint.ttl, start)
    except ValueError as err:
        raise SpecError(
            text("export: endpoint.ttl: {e} (counted from the export's clock)", e=str(err)),
            remedy=text("give a later time, or a duration; or deploy with `{a}`", a=Call("apply")),
            field="ttl",
        ) from None
    request = schedule_request(plan.names["endpoint"], expires, e.role_arn, _OPERATION)
    return request, expires


def expiry_comment(plan: Any, expires: datetime, *, cloudformation: bool) -> str:
    """What the exported expiry is and what it is not, in one paragraph."""
    e = plan.expiry
    parts = [
        f"endpoint.ttl {e.ttl}: an EventBridge Scheduler schedule deletes the endpoint at "
        f"{iso(expires)}, a time fixed when this file was exported "
        + ("(the TTL counted from then, not from the apply); " if not e.absolute else "; ")
        + "applied after that instant, the schedule is in the past: re-export before applying",
        f"the schedule group {GROUP!r} must exist (peagle makes it on its first deploy with a "
        f"TTL, or send CreateScheduleGroup with Name {GROUP}); the stack does not own it, as "
        "deleting a group deletes every schedule in it",
    ]
    if cloudformation:
        parts.append(
            "AWS::Scheduler::Schedule has no ActionAfterCompletion: the schedule stays "
            "(it never fires again) until the stack is deleted"
        )
    parts.append(
        f"the schedule runs as {e.role_arn} (given; the stack does not manage it)"
        if not e.own_role
        else "the schedule runs as a role of this stack's own (generated name), with "
        "peagle's trust and permission policies for the deleting role"
    )
    return "; ".join(parts)


def _lit(value: Any) -> Any:
    if isinstance(value, str):
        return value.replace("${", "$${").replace("%{", "%%{")
    return value


def tf_expiry(plan: Any, rid: str, now: datetime | None) -> tuple[dict[str, Any], datetime]:
    """(resources by type, the expiry) for Terraform JSON: the schedule and, without a
    `ttl_role`, the stack's role and its inline policy."""
    import json

    e = plan.expiry
    request, expires = fixed_schedule(plan, now)
    target = request["Target"]
    resources: dict[str, Any] = {}
    role_ref = _lit(target["RoleArn"])
    if e.own_role:
        resources["aws_iam_role"] = {
            f"{rid}_ttl": {
                "name_prefix": "peagle-ttl-",
                "description": "Deletes the peagle endpoint when its TTL ends "
                "(EventBridge Scheduler)",
                "assume_role_policy": _lit(json.dumps(e.trust_policy)),
                "tags": {"peagle:managed": "true"},
            }
        }
        resources["aws_iam_role_policy"] = {
            f"{rid}_ttl": {
                "name": "peagle-ttl-delete",
                "role": f"${{aws_iam_role.{rid}_ttl.id}}",
                "policy": _lit(json.dumps(e.permission_policy)),
            }
        }
        role_ref = f"${{aws_iam_role.{rid}_ttl.arn}}"
    schedule: dict[str, Any] = {
        "name": request["Name"],
        "group_name": request["GroupName"],
        "schedule_expression": request["ScheduleExpression"],
        "schedule_expression_timezone": request["ScheduleExpressionTimezone"],
        "flexible_time_window": {"mode": request["FlexibleTimeWindow"]["Mode"]},
        "action_after_completion": request["ActionAfterCompletion"],
        "state": request["State"],
        "description": _lit(request["Description"]),
        "target": {
            "arn": target["Arn"],
            "role_arn": role_ref,
            "input": _lit(target["Input"]),
            "retry_policy": {
                "maximum_event_age_in_seconds": target["RetryPolicy"]["MaximumEventAgeInSeconds"],
                "maximum_retry_attempts": target["RetryPolicy"]["MaximumRetryAttempts"],
            },
        },
        "region": plan.region,
    }
    if e.own_role:  # the policy must be on the role before the schedule can use it
        schedule["depends_on"] = [f"aws_iam_role_policy.{rid}_ttl"]
    resources["aws_scheduler_schedule"] = {rid: schedule}
    return resources, expires


def cfn_expiry(plan: Any, now: datetime | None) -> tuple[dict[str, Any], datetime]:
    """(resources by logical id, the expiry) for a CloudFormation template."""
    e = plan.expiry
    request, expires = fixed_schedule(plan, now)
    resources: dict[str, Any] = {}
    target = dict(request["Target"])
    if e.own_role:
        resources["PeagleTtlRole"] = {
            "Type": "AWS::IAM::Role",
            "Properties": {
                "Description": "Deletes the peagle endpoint when its TTL ends "
                "(EventBridge Scheduler)",
                "AssumeRolePolicyDocument": e.trust_policy,
                "Policies": [
                    {"PolicyName": "peagle-ttl-delete", "PolicyDocument": e.permission_policy}
                ],
                "Tags": [{"Key": "peagle:managed", "Value": "true"}],
            },
        }
        target["RoleArn"] = {"Fn::GetAtt": ["PeagleTtlRole", "Arn"]}
    props = {k: v for k, v in request.items() if k != "ActionAfterCompletion"}
    props["Target"] = target
    resources["PeagleExpirySchedule"] = {"Type": "AWS::Scheduler::Schedule", "Properties": props}
    return resources, expires
