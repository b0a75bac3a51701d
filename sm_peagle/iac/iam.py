"""`peagle iam-policy`: the least-privilege execution role for one planned deployment.

Everything the role is granted is derived from the plan: the exact S3 prefixes SageMaker
downloads (model data, every drafter channel), the image's ECR repository, the
endpoint's own log group. Only actions that AWS does not authorize per resource get
`"Resource": "*"` (see WILDCARD_ACTIONS), and the statement's `Sid` says why, in the policy
itself: JSON has no comments, and IAM allows only ASCII letters and digits in a Sid (IAM
User Guide, "IAM JSON policy elements: Sid"), so each reason is one CamelCase phrase of the
form `<What>StarBecause<Reason>`. Compare the AmazonSageMakerFullAccess policy, which grants
s3:GetObject on every bucket.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..errors import Param, text

__all__ = [
    "PLACEHOLDER_ACCOUNT",
    "WILDCARD_ACTIONS",
    "PolicyResult",
    "STAR_SIDS",
    "execution_role_policy",
    "partition",
    "resolve_account",
    "rollout_alarm_arns",
    "s3_arn",
    "s3_statements",
    "statement",
]

PLACEHOLDER_ACCOUNT = "000000000000"  # the account of plan.PLACEHOLDER_ROLE
METRICS_NAMESPACE = "/aws/sagemaker/Endpoints"
VPC_DESCRIBE = (
    "ec2:DescribeDhcpOptions",
    "ec2:DescribeNetworkInterfaces",
    "ec2:DescribeSecurityGroups",
    "ec2:DescribeSubnets",
    "ec2:DescribeVpcs",
)
# The only actions granted on "*": none of them supports resource-level permissions.
WILDCARD_ACTIONS = frozenset({"ecr:GetAuthorizationToken", "cloudwatch:PutMetricData"}) | set(
    VPC_DESCRIBE
)
# The Sid of each statement granted on "*": the reason, in the policy itself.
STAR_SIDS = {
    "ecr": "EcrAuthTokenStarBecauseTheTokenIsRegistryWide",
    "metrics": "MetricsStarBecausePutMetricDataHasNoResourceTypesScopedByNamespace",
    "vpc": "VpcDescribeStarBecauseEc2DescribeActionsHaveNoResourceTypes",
}
_S3_URI = re.compile(r"^s3://(?P<bucket>[^/]+)/?(?P<key>.*)$")
# <account>.dkr.ecr.<region>.amazonaws.com[.cn]/<repository>(:<tag>|@<digest>)
_ECR_IMAGE = re.compile(
    r"^(?P<account>\d{12})\.dkr\.ecr\.(?P<region>[a-z0-9-]+)\.amazonaws\.com(?:\.cn)?/"
    r"(?P<repo>[a-z0-9._/-]+?)(?::[\w.-]+|@sha256:[0-9a-f]{64})$"
)
_ACCOUNT_IN_ARN = re.compile(r"^arn:[^:]+:iam::(\d{12}):role/")
_KMS_KEY_ID = re.compile(r"^(mrk-[0-9a-f]{32}|[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12})$")


@dataclass
class PolicyResult:
    policy: dict[str, Any]
    trust_policy: dict[str, Any]
    account: str
    warnings: list[str] = field(default_factory=list)


def partition(region: str) -> str:
    if region.startswith("cn-"):
        return "aws-cn"
    if region.startswith("us-gov-"):
        return "aws-us-gov"
    return "aws"


def s3_arn(part: str, bucket: str, key: str) -> str:
    return f"arn:{part}:s3:::{bucket}/{key}"


def _containers(plan: Any) -> list[dict[str, Any]]:
    """The primary container of every model the plan creates (fallback pools included)."""
    models = [
        plan.create_model,
        *getattr(plan, "pool_models", []),
        *getattr(plan, "component_models", []),  # one per inference component
    ]
    containers = [m["PrimaryContainer"] for m in models]
    for ic in getattr(plan, "inference_components", []):  # a container given inline
        if "Container" in ic["Specification"]:
            containers.append(ic["Specification"]["Container"])
    return containers


def _s3_sources(plan: Any) -> list[dict[str, Any]]:
    """Every S3DataSource the models download: the target weights and each channel."""
    sources = []
    for container in _containers(plan):
        if "ModelDataSource" in container:
            sources.append(container["ModelDataSource"]["S3DataSource"])
        sources += [s["S3DataSource"] for s in container.get("AdditionalModelDataSources", [])]
        url = container.get("ArtifactUrl", "")
        if url.startswith("s3://"):  # an inline component container's artifacts
            kind = "S3Prefix" if url.endswith("/") else "S3Object"
            sources.append({"S3Uri": url, "S3DataType": kind})
    return sources


def s3_statements(plan: Any, part: str, sid_prefix: str = "") -> list[dict[str, Any]]:
    """GetObject on exactly the plan's S3 objects and prefixes, ListBucket on each prefix's
    bucket (conditioned on the prefixes): what SageMaker downloads, and what deploy's
    preflight reads (`sid_prefix` tells the two policies' statements apart)."""
    objects: list[str] = []
    prefixes: dict[str, list[str]] = {}  # bucket -> key prefixes, for ListBucket
    for src in _s3_sources(plan):
        m = _S3_URI.match(src["S3Uri"])
        assert m, src["S3Uri"]  # plan validated every URI
        bucket, key = m["bucket"], m["key"]
        if src["S3DataType"] == "S3Object":  # one object (model.tar.gz): exactly that key
            objects.append(s3_arn(part, bucket, key))
        else:  # a prefix: SageMaker lists it, then gets every object under it
            objects.append(s3_arn(part, bucket, key + "*"))
            prefixes.setdefault(bucket, []).append(key + "*")
    statements: list[dict[str, Any]] = []
    if objects:
        statements.append(
            statement(f"{sid_prefix}ReadModelArtifacts", ["s3:GetObject"], sorted(set(objects)))
        )
    for i, (bucket, keys) in enumerate(sorted(prefixes.items())):
        statements.append(
            statement(
                f"{sid_prefix}ListModelArtifactPrefixes{i}",
                ["s3:ListBucket"],
                [f"arn:{part}:s3:::{bucket}"],
                {"StringLike": {"s3:prefix": sorted(set(keys))}},
            )
        )
    return statements


def _component_log_groups(plan: Any, part: str, region: str, account: str) -> list[str]:
    """Log groups of inference components. ASSUMPTION: SageMaker writes a component's
    container logs under /aws/sagemaker/InferenceComponents/<name> (no citable source
    was found for the exact group; the endpoint's group above is kept as well)."""
    return [
        f"arn:{part}:logs:{region}:{account}:log-group:/aws/sagemaker/InferenceComponents/"
        f"{ic['InferenceComponentName']}:*"
        for ic in getattr(plan, "inference_components", [])
    ]


def statement(
    sid: str, actions: list[str], resources: list[str] | str, condition: dict | None = None
) -> dict[str, Any]:
    """One Allow statement; actions sorted so the document is stable."""
    s: dict[str, Any] = {"Sid": sid, "Effect": "Allow", "Action": sorted(actions)}
    s["Resource"] = resources
    if condition:
        s["Condition"] = condition
    return s


def resolve_account(plan: Any, account: str | None, warnings: list[str]) -> str:
    """`account`, else the role's account, else the placeholder (with a warning)."""
    m = _ACCOUNT_IN_ARN.match(plan.spec.role or "")
    role_account = m[1] if m else None
    if account:
        if role_account and role_account != account:
            warnings.append(
                text(
                    "{account} differs from the role's account {role_account}",
                    account=Param("account", account),
                    role_account=role_account,
                )
            )
        return account
    if role_account:
        return role_account
    warnings.append(
        text(
            "no role or {account} given: the policy uses the placeholder account "
            "{placeholder}; replace it (or pass {role} / {account}) before use",
            placeholder=PLACEHOLDER_ACCOUNT,
        )
    )
    return PLACEHOLDER_ACCOUNT


def _kms_statement(key: str, region: str, account: str, part: str, warnings: list[str]) -> dict:
    # kms:Decrypt lets the role read SSE-KMS-encrypted model artifacts. (Encrypting the
    # ML storage volume with KmsKeyId needs kms:CreateGrant on the *caller* of
    # CreateEndpoint, not on this role.)
    if key.startswith("arn:") and ":key/" in key:
        return statement("DecryptWithDeploymentKey", ["kms:Decrypt"], [key])
    if _KMS_KEY_ID.match(key):
        return statement(
            "DecryptWithDeploymentKey",
            ["kms:Decrypt"],
            [f"arn:{part}:kms:{region}:{account}:key/{key}"],
        )
    # An alias: IAM authorizes against the key it points to, which is unknown offline;
    # scope to keys in this account carrying that alias.
    alias = key.split(":", 5)[-1] if key.startswith("arn:") else key
    warnings.append(f"KMS key {key!r} is an alias: policy grants the key(s) that carry it")
    return statement(
        "DecryptWithDeploymentKey",
        ["kms:Decrypt"],
        [f"arn:{part}:kms:{region}:{account}:key/*"],
        {"ForAnyValue:StringEquals": {"kms:ResourceAliases": [alias]}},
    )


def _vpc_statements(plan: Any, region: str, account: str, part: str) -> list[dict[str, Any]]:
    vpc = plan.create_model.get("VpcConfig")
    if not vpc:
        return []
    ec2 = f"arn:{part}:ec2:{region}:{account}"
    eni = f"{ec2}:network-interface/*"  # ENIs SageMaker creates: ids unknown in advance
    return [
        # EC2 Describe* actions have no resource-level permissions: "*" is the only form.
        statement(STAR_SIDS["vpc"], list(VPC_DESCRIBE), "*"),
        statement(
            "VpcCreateEniInDeploymentSubnets",
            ["ec2:CreateNetworkInterface"],
            [f"{ec2}:subnet/{s}" for s in vpc["Subnets"]]
            + [f"{ec2}:security-group/{g}" for g in vpc["SecurityGroupIds"]]
            + [eni],
        ),
        statement(
            "VpcManageEni",
            [
                "ec2:CreateNetworkInterfacePermission",
                "ec2:DeleteNetworkInterface",
                "ec2:DeleteNetworkInterfacePermission",
            ],
            [eni],
        ),
    ]


def rollout_alarm_arns(plan: Any, part: str, acct: str) -> list[str]:
    """The alarms an update's rollout names in AutoRollbackConfiguration: peagle's own
    `<endpoint>-rollout-*` (planning/rollout.py) and the user's `rollout.alarms`."""
    region, endpoint = plan.region, plan.names["endpoint"]
    alarm = f"arn:{part}:cloudwatch:{region}:{acct}:alarm:"
    user = plan.spec.endpoint.rollout.alarms
    return [f"{alarm}{endpoint}-rollout-*", *(f"{alarm}{name}" for name in user)]


def execution_role_policy(plan: Any, *, account: str | None = None) -> PolicyResult:
    """The execution-role policy and trust policy for `plan` (pure; no AWS calls)."""
    warnings: list[str] = []
    region = plan.region
    part = partition(region)
    acct = resolve_account(plan, account, warnings)
    statements = s3_statements(plan, part)

    repos: set[str] = set()
    for image in dict.fromkeys(c["Image"] for c in _containers(plan)):
        m = _ECR_IMAGE.match(image)
        if m:
            repos.add(f"arn:{part}:ecr:{m['region']}:{m['account']}:repository/{m['repo']}")
        else:
            warnings.append(
                f"image {image} is not in Amazon ECR: SageMaker cannot pull it unless it is "
                "mirrored to ECR; no ECR statement emitted for it"
            )
    if repos:
        statements.append(
            statement(
                "PullServingImage",
                [
                    "ecr:BatchCheckLayerAvailability",
                    "ecr:BatchGetImage",
                    "ecr:GetDownloadUrlForLayer",
                ],
                sorted(repos),
            )
        )
        # GetAuthorizationToken issues a registry-wide token; AWS only accepts "*" here.
        statements.append(statement(STAR_SIDS["ecr"], ["ecr:GetAuthorizationToken"], "*"))

    endpoint = plan.names["endpoint"]
    # DescribeLogGroups reports a group's ARN with a trailing ":*", and that form covers
    # the group and its streams, so one resource serves all four actions.
    log_group = f"arn:{part}:logs:{region}:{acct}:log-group:/aws/sagemaker/Endpoints/{endpoint}:*"
    statements.append(
        statement(
            "EndpointLogs",
            [
                "logs:CreateLogGroup",
                "logs:CreateLogStream",
                "logs:DescribeLogStreams",
                "logs:PutLogEvents",
            ],
            [log_group, *_component_log_groups(plan, part, region, acct)],
        )
    )
    # PutMetricData has no resource-level permissions; the namespace condition is the
    # only way to scope it.
    statements.append(
        statement(
            STAR_SIDS["metrics"],
            ["cloudwatch:PutMetricData"],
            "*",
            {"StringEquals": {"cloudwatch:namespace": METRICS_NAMESPACE}},
        )
    )
    if plan.spec.endpoint.rollout is not None:
        # SageMaker reads the rollback alarms as the role: "Ensure that your IAM execution
        # role has permission to perform the cloudwatch:DescribeAlarms action on the
        # auto-rollback alarms you specify" (Developer Guide, deployment guardrails).
        statements.append(
            statement(
                "SageMakerReadsRollbackAlarms",
                ["cloudwatch:DescribeAlarms"],
                rollout_alarm_arns(plan, part, acct),
            )
        )
    kms = plan.create_endpoint_config.get("KmsKeyId")
    if kms:
        statements.append(_kms_statement(kms, region, acct, part, warnings))
    statements += _vpc_statements(plan, region, acct, part)

    trust = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "SageMakerAssumesRole",
                "Effect": "Allow",
                "Principal": {"Service": "sagemaker.amazonaws.com"},
                "Action": "sts:AssumeRole",
                # Confused-deputy guard: only SageMaker acting for this account.
                "Condition": {"StringEquals": {"aws:SourceAccount": acct}},
            }
        ],
    }
    policy = {"Version": "2012-10-17", "Statement": statements}
    return PolicyResult(policy=policy, trust_policy=trust, account=acct, warnings=warnings)
