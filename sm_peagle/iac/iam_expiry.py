"""The expiry (`--ttl`, planning/expiry.py) in the IAM policies.

`peagle iam-policy --for ttl-role`: the trust and permission policies of the role the
expiry schedules run as, for whoever creates it themselves and passes `--ttl-role` (peagle
makes its own, `peagle-ttl-deleter`, with exactly these). The trust names
`scheduler.amazonaws.com` with the confused-deputy conditions EventBridge Scheduler's guide
gives (aws:SourceAccount, and aws:SourceArn = the schedule GROUP's ARN: "Do not scope the
aws:SourceArn statement to a specific schedule").

The deployer's statements: what deploy, update, delete and status send for an expiry, as
the request names of design39 decision 4-9 give them:
- every deploy reads `GetSchedule(peagle/<endpoint>)` (a stale schedule of an earlier
  endpoint of the same name would delete the new one: deploy deletes it) and delete removes
  the endpoint's and its components' schedules (`DeleteSchedule`, not-found ok), TTL or not;
- with a TTL: `GetScheduleGroup`/`CreateScheduleGroup` (+ `TagResource`: the groups are
  tagged at creation) on peagle's groups, `CreateSchedule`/`UpdateSchedule`, and
  `iam:PassRole` of the deleting role to `scheduler.amazonaws.com` only (CreateSchedule
  hands the role to Scheduler without a request of its own: the managed policy
  AmazonEventBridgeSchedulerFullAccess grants it with that condition); peagle's own role:
  `GetRole`, `CreateRole`, `TagRole` (CreateRole with Tags), `PutRolePolicy`; a
  `--ttl-role`: `GetRole` only (peagle checks its trust, never edits it);
- status/ls spend: Application Auto Scaling `DescribeScalingActivities` (no resource type).
gc's account-wide sweep (ListSchedules, schedules of gone endpoints, the unused role:
DeleteRolePolicy, DeleteRole) is not one deployment's, and not in this policy
(docs/guides/expiry.md); neither is `status`'s GetSchedule of an overdue endpoint beyond
this one's.
"""

from __future__ import annotations

from typing import Any

from ..planning.expiry import COMPONENT_GROUP, GROUP, ROLE_NAME
from .iam import PolicyResult, partition, resolve_account, statement

__all__ = [
    "EXPIRY_STAR_SIDS",
    "expiry_statements",
    "spend_statement",
    "ttl_role_policy",
]

EXPIRY_STAR_SIDS = {
    # Application Auto Scaling's Describe* actions have no resource types; status and ls
    # read the endpoint's instance-count history for its spend.
    "spend": "SpendReadStarBecauseDescribeScalingActivitiesHasNoResourceTypes",
}


def ttl_role_policy(plan: Any, *, account: str | None = None) -> PolicyResult:
    """The deleting role's permission and trust policies (pure): what `--ttl-role` must
    allow; peagle's own role has exactly these."""
    from ..planning.expiry import permission_policy, trust_policy

    warnings: list[str] = []
    part = partition(plan.region)
    acct = resolve_account(plan, account, warnings)
    return PolicyResult(
        policy=permission_policy(acct, part),
        trust_policy=trust_policy(acct, part),
        account=acct,
        warnings=warnings,
    )


def _arns(plan: Any, part: str, acct: str) -> tuple[str, list[str], list[str]]:
    """(scheduler ARN prefix, the endpoint's and components' schedules, the groups)."""
    sch = f"arn:{part}:scheduler:{plan.region}:{acct}"
    endpoint = plan.names["endpoint"]
    schedules = [f"{sch}:schedule/{GROUP}/{endpoint}", f"{sch}:schedule/{COMPONENT_GROUP}/*"]
    groups = [f"{sch}:schedule-group/{GROUP}", f"{sch}:schedule-group/{COMPONENT_GROUP}"]
    return sch, schedules, groups


def expiry_statements(plan: Any, part: str, acct: str) -> list[dict[str, Any]]:
    """The deployer's statements for the expiry of `plan`'s endpoint (see the module)."""
    _, schedules, groups = _arns(plan, part, acct)
    expiry = getattr(plan, "expiry", None)
    if expiry is None:
        # No TTL: deploy still removes a stale schedule of the endpoint's name, and delete
        # removes one another peagle (an apply with a TTL, update --ttl) made.
        return [
            statement(
                "FindAndRemoveExpirySchedulesOfThisEndpoint",
                ["scheduler:DeleteSchedule", "scheduler:GetSchedule"],
                schedules,
            )
        ]
    given = plan.spec.endpoint.ttl_role
    role = given or f"arn:{part}:iam::{acct}:role/{ROLE_NAME}"
    out = [
        statement(
            "ExpirySchedulesOfThisEndpoint",
            [
                "scheduler:CreateSchedule",
                "scheduler:DeleteSchedule",
                "scheduler:GetSchedule",
                "scheduler:UpdateSchedule",
            ],
            schedules,
        ),
        statement(
            "PeagleScheduleGroups",
            [
                "scheduler:CreateScheduleGroup",
                "scheduler:GetScheduleGroup",
                "scheduler:TagResource",  # CreateScheduleGroup with Tags
            ],
            groups,
        ),
        statement(
            "PassTtlRoleToSchedulerOnly",
            ["iam:PassRole"],
            [role],
            {"StringEquals": {"iam:PassedToService": "scheduler.amazonaws.com"}},
        ),
    ]
    if given:
        out.append(statement("ReadTtlRoleTrust", ["iam:GetRole"], [role]))
    else:
        out.append(
            statement(
                "MakePeagleTtlRoleOnFirstUse",
                [
                    "iam:CreateRole",
                    "iam:GetRole",
                    "iam:GetRolePolicy",
                    "iam:PutRolePolicy",
                    "iam:TagRole",
                ],
                [role],
            )
        )
    return out


def spend_statement() -> dict[str, Any]:
    """status/ls: the instance-count history behind the spend."""
    return statement(
        EXPIRY_STAR_SIDS["spend"], ["application-autoscaling:DescribeScalingActivities"], "*"
    )
