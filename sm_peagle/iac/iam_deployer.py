"""`peagle iam-policy --for deployer`: the least-privilege policy of whoever runs peagle.

The execution role (iac/iam.py) is what SageMaker assumes to run the container; this is the
policy of the user or role that runs `peagle deploy`, `update`, `bench` and `delete` for one
planned deployment. Its actions are the requests those commands send (the moto harness's
request log: tests/e2e/test_iam_deployer.py compares them) plus what deploy's preflight
reads, and iam:PassRole, which CreateModel needs for the execution role without sending a
request of its own (SageMaker API reference, CreateModel: "the caller of this API must have
the iam:PassRole permission").

Resources: writes (create, update, delete, tag, invoke) are scoped to this deployment's
names; reads of endpoints, configs and models cover the region's (update and delete check
whether another endpoint still uses a model before removing it); `"*"` only where AWS offers
no resource type, each such statement's Sid saying so (see iam.py on Sids).
"""

from __future__ import annotations

from typing import Any

from .iam import (
    PolicyResult,
    partition,
    resolve_account,
    rollout_alarm_arns,
    s3_statements,
    statement,
)
from .iam_expiry import expiry_statements, spend_statement

__all__ = ["DEPLOYER_STAR_SIDS", "deployer_policy", "rollout_statements"]

# The Sid of each statement granted on "*": the reason, in the policy itself.
DEPLOYER_STAR_SIDS = {
    # SageMaker Developer Guide, "API permissions reference": "Except for the ListTags API,
    # resource-level restrictions are not available on List- calls."
    "list": "SageMakerListStarBecauseListActionsHaveNoResourceTypes",
    "quotas": "QuotaReadStarBecauseListServiceQuotasHasNoResourceTypes",
    "scaling": "ScalingReadStarBecauseDescribeScalableTargetsHasNoResourceTypes",
    # CloudWatch API reference, GetMetricData: no resource type in the Service
    # Authorization Reference; `peagle health` and `status` read the acceptance with it.
    "metrics": "MetricReadStarBecauseGetMetricDataHasNoResourceTypes",
    # CloudWatch API reference, GetMetricStatistics: no resource type either; a rollout
    # reads the live fleet's p90 latency and each bake's invocations with it.
    "rollout_metrics": "RolloutMetricReadStarBecauseMetricReadsHaveNoResourceTypes",
}
# With monitoring: what deploy, update and delete send to CloudWatch Logs for the endpoint's
# log group (lifecycle/monitoring.py), and logs:TagResource, which CreateLogGroup with
# `tags` needs as well (ASSUMED from the CreateLogGroup reference: tagging at creation is
# authorized as TagResource; not exercised by a request of its own).
_LOG_GROUP_ACTIONS = [
    "logs:CreateLogGroup",
    "logs:DeleteLogGroup",
    "logs:DeleteMetricFilter",
    "logs:DeleteTransformer",
    "logs:DescribeMetricFilters",
    "logs:GetTransformer",
    "logs:ListTagsForResource",
    "logs:PutMetricFilter",
    "logs:PutRetentionPolicy",
    "logs:PutTransformer",
    "logs:TagResource",
    "logs:UntagResource",
]
_ALARM_ACTIONS = [
    "cloudwatch:DeleteAlarms",
    "cloudwatch:DescribeAlarmHistory",
    "cloudwatch:DescribeAlarms",
    "cloudwatch:ListTagsForResource",
    "cloudwatch:PutMetricAlarm",
    "cloudwatch:TagResource",
]
_DASHBOARD_ACTIONS = [
    "cloudwatch:DeleteDashboards",
    "cloudwatch:GetDashboard",
    "cloudwatch:ListTagsForResource",
    "cloudwatch:PutDashboard",
    "cloudwatch:TagResource",
]
_WRITES = [
    "sagemaker:AddTags",
    "sagemaker:CreateEndpoint",
    "sagemaker:CreateEndpointConfig",
    "sagemaker:CreateModel",
    "sagemaker:DeleteEndpoint",
    "sagemaker:DeleteEndpointConfig",
    "sagemaker:DeleteModel",
    "sagemaker:UpdateEndpoint",
]
_READS = [
    "sagemaker:DescribeEndpoint",
    "sagemaker:DescribeEndpointConfig",
    "sagemaker:DescribeModel",
    "sagemaker:ListTags",
]
_LISTS = [
    "sagemaker:ListEndpointConfigs",
    "sagemaker:ListEndpoints",
    "sagemaker:ListInferenceComponents",
    "sagemaker:ListModels",
]


def _deployment_arns(plan: Any, sm: str) -> list[str]:
    """The endpoint, and every config and model name a deploy or an update of it makes
    (`<base>-<spec sha>-cfg|mdl`, planning/steps/requests.py). SageMaker ARNs carry names
    in lower case."""
    endpoint = plan.names["endpoint"].lower()
    # "<base>-<sha8>-cfg": the sha changes with every update, so it is the starred part.
    config_base = plan.names["endpoint_config"].lower().rsplit("-", 2)[0]
    model_base = plan.names["model"].lower().rsplit("-", 2)[0]
    return [
        f"{sm}:endpoint/{endpoint}",
        f"{sm}:endpoint-config/{config_base}-*-cfg",
        f"{sm}:model/{model_base}-*-mdl",
    ]


def deployer_policy(plan: Any, *, account: str | None = None) -> PolicyResult:
    """The policy of the principal that deploys, updates, benchmarks and deletes `plan`'s
    endpoint (pure; no AWS calls). `trust_policy` is empty: this is not a role SageMaker
    assumes, attach it to your own user or role."""
    from ..planning.plan_result import PLACEHOLDER_ROLE

    warnings: list[str] = []
    region = plan.region
    part = partition(region)
    acct = resolve_account(plan, account, warnings)
    # No role given: the placeholder's name, in the account the policy names.
    role = plan.spec.role or f"arn:{part}:iam::{acct}:role/{PLACEHOLDER_ROLE.rsplit('/', 1)[1]}"
    sm = f"arn:{part}:sagemaker:{region}:{acct}"
    endpoint = plan.names["endpoint"]
    statements = [
        statement(
            "PassExecutionRoleToSageMakerOnly",
            ["iam:PassRole"],
            [role],
            {"StringEquals": {"iam:PassedToService": "sagemaker.amazonaws.com"}},
        ),
        statement("PreflightReadsExecutionRole", ["iam:GetRole"], [role]),
        statement("CreateUpdateDeleteThisDeployment", _WRITES, _deployment_arns(plan, sm)),
        statement(
            "InvokeThisEndpoint",
            ["sagemaker:InvokeEndpoint"],
            [f"{sm}:endpoint/{endpoint.lower()}"],
        ),
        statement(
            "ReadEndpointsConfigsModelsToFindSharedModels",
            _READS,
            [f"{sm}:endpoint/*", f"{sm}:endpoint-config/*", f"{sm}:model/*"],
        ),
        statement(DEPLOYER_STAR_SIDS["list"], _LISTS, "*"),
        statement(DEPLOYER_STAR_SIDS["quotas"], ["servicequotas:ListServiceQuotas"], "*"),
        statement(
            DEPLOYER_STAR_SIDS["scaling"], ["application-autoscaling:DescribeScalableTargets"], "*"
        ),
        statement(
            "ReadEndpointLogs",
            ["logs:FilterLogEvents"],
            [f"arn:{part}:logs:{region}:{acct}:log-group:/aws/sagemaker/Endpoints/{endpoint}:*"],
        ),
        *s3_statements(plan, part, "Preflight"),
    ]
    if not plan.spec.role:
        warnings.append(
            # Pure, so it cannot know the caller: neither --role nor role= by name.
            f"no role given: iam:PassRole and iam:GetRole name {role}; give the execution "
            "role's ARN before use"
        )
    if plan.inference_components or plan.autoscaling:
        warnings.append(
            "this policy covers an endpoint's deploy, update, bench and delete; inference "
            "components and autoscaling need more actions (sagemaker:*InferenceComponent*, "
            "application-autoscaling:*) that it does not grant"
        )
    if plan.create_endpoint_config.get("KmsKeyId"):
        warnings.append(
            "a KmsKeyId is set: CreateEndpointConfig also needs kms:CreateGrant on that key "
            "for the caller, which this policy does not grant"
        )
    if plan.monitoring is not None:
        statements += _monitoring_statements(plan, part, acct)
    else:
        statements += _monitoring_reads(plan, part, acct)
    if plan.spec.endpoint.rollout is not None:
        statements += rollout_statements(plan, part, acct, monitored=plan.monitoring is not None)
    statements += [*expiry_statements(plan, part, acct), spend_statement()]
    policy = {"Version": "2012-10-17", "Statement": statements}
    return PolicyResult(policy=policy, trust_policy={}, account=acct, warnings=warnings)


def _monitoring_statements(plan: Any, part: str, acct: str) -> list[dict[str, Any]]:
    """The monitoring's log group, alarm and dashboard (`--monitor`), each on its own ARN;
    `sts:GetCallerIdentity` (the account in the dashboard) needs no permission (STS API
    reference: "No permissions are required to perform this operation")."""
    region, endpoint = plan.region, plan.names["endpoint"]
    group = f"arn:{part}:logs:{region}:{acct}:log-group:{plan.monitoring.log_group}"
    alarm = plan.monitoring.alarm["AlarmName"]
    dashboard = plan.monitoring.dashboard["DashboardName"]
    return (
        [
            # Some CloudWatch Logs actions name the group's ARN with ":*", some without.
            statement(
                "MonitoringLogGroupOfThisEndpoint", _LOG_GROUP_ACTIONS, [group, f"{group}:*"]
            ),
            statement(
                # DescribeLogGroups is authorized on the account's groups, not one group's ARN:
                # it lists them by a name prefix (Service Authorization Reference, CloudWatch Logs).
                "DescribeLogGroupsOnAllGroupsBecauseItListsByPrefix",
                ["logs:DescribeLogGroups"],
                [f"arn:{part}:logs:{region}:{acct}:log-group:*"],
            ),
            statement(
                "MonitoringAlarmOfThisEndpoint",
                _ALARM_ACTIONS,
                [f"arn:{part}:cloudwatch:{region}:{acct}:alarm:{alarm}"],
            ),
            statement(
                # Dashboard ARNs carry no region (CloudWatch dashboards are global).
                "MonitoringDashboardOfThisEndpoint",
                _DASHBOARD_ACTIONS,
                [f"arn:{part}:cloudwatch::{acct}:dashboard/{dashboard}"],
            ),
            statement(DEPLOYER_STAR_SIDS["metrics"], ["cloudwatch:GetMetricData"], "*"),
        ]
        if endpoint
        else []
    )


def _monitoring_reads(plan: Any, part: str, acct: str) -> list[dict[str, Any]]:
    """Without monitoring, update, apply, diff and delete still look for it (a spec may
    have turned it on elsewhere): peagle's alarm, its filters and the log group's tags."""
    region, endpoint = plan.region, plan.names["endpoint"]
    group = f"arn:{part}:logs:{region}:{acct}:log-group:/aws/sagemaker/Endpoints/{endpoint}"
    return [
        statement(
            "ReadsThatFindMonitoringOfThisEndpoint",
            ["cloudwatch:DescribeAlarms", "logs:DescribeMetricFilters", "logs:ListTagsForResource"],
            [
                f"arn:{part}:cloudwatch:{region}:{acct}:alarm:{endpoint}-speculation",
                group,
                f"{group}:*",
            ],
        ),
        statement(
            "DescribeLogGroupsOnAllGroupsBecauseItListsByPrefix",
            ["logs:DescribeLogGroups"],
            [f"arn:{part}:logs:{region}:{acct}:log-group:*"],
        ),
    ]


def rollout_statements(plan: Any, part: str, acct: str, *, monitored: bool) -> list[dict]:
    """`endpoint.rollout`: update makes its rollback alarms before UpdateEndpoint and
    deletes them once it settles, reads the history of every rollback alarm to name the one
    that rolled it back, checks the user's alarms exist and are not in ALARM, and reads the
    live fleet's latency and each bake's invocations (lifecycle/rollout.py)."""
    own, *user = rollout_alarm_arns(plan, part, acct)
    out = [
        statement(
            "RolloutAlarmsOfThisEndpoint",
            [
                "cloudwatch:DeleteAlarms",
                "cloudwatch:DescribeAlarmHistory",
                "cloudwatch:DescribeAlarms",
                "cloudwatch:PutMetricAlarm",
                "cloudwatch:TagResource",
            ],
            [own],
        )
    ]
    if user:
        out.append(
            statement(
                "RolloutReadsTheRollbackAlarmsYouName",
                ["cloudwatch:DescribeAlarmHistory", "cloudwatch:DescribeAlarms"],
                user,
            )
        )
    # GetMetricData is already granted with monitoring, under its own reason.
    reads = ["cloudwatch:GetMetricStatistics"] + ([] if monitored else ["cloudwatch:GetMetricData"])
    out.append(statement(DEPLOYER_STAR_SIDS["rollout_metrics"], reads, "*"))
    return out
