"""`peagle iam-policy --for trainer | training-role`: the policies `drafter train` needs.

- trainer: whoever runs `peagle drafter train`. The requests it sends (ops/training_run.py,
  lifecycle/training.py): iam:GetRole (preflight) and iam:PassRole to SageMaker
  (CreateTrainingJob passes the execution role: SageMaker API reference,
  CreateTrainingJob, "the caller of this API must have the iam:PassRole permission");
  servicequotas:ListServiceQuotas (preflight, no resource type); pricing:GetProducts (the
  cost estimate's training price, no resource type; without it the price is "unknown");
  CreateTrainingJob,
  DescribeTrainingJob, StopTrainingJob and AddTags (tags given at creation are authorized
  as AddTags) on `training-job/peagle-train-*` (the job names peagle makes); the job's log
  lines from `/aws/sagemaker/TrainingJobs`; S3 put/get/delete/list on the bucket's
  `peagle/training/*`, and HeadBucket/CreateBucket for the default bucket. And what
  `peagle gc` sends for training jobs (lifecycle/training_gc.py): ListTrainingJobs (on
  "*": "Except for the ListTags API, resource-level restrictions are not available on
  List- calls", SageMaker Developer Guide, API permissions reference), ListTags,
  DescribeTrainingJob and DeleteTrainingJob on `training-job/peagle-train-*`, and the
  S3 listing and deletes (DeleteObjects is authorized per key as s3:DeleteObject, S3 API
  reference) under `peagle/training/*`, both granted above; `gc --training JOB` also
  reads every model (ListModels on "*", DescribeModel) to refuse a head one serves.
- training-role: the execution role the job runs as: S3 read of its channels (the
  `code` channel, the job's source files, included), write of the output, CloudWatch
  Logs for the job's streams, and the ECR pull of the training image. A target or data
  elsewhere than the bucket needs read there too: the policy says so (it cannot know them).
Pure: no AWS calls.
"""

from __future__ import annotations

from ..errors import Call, Param, text
from .iam import PolicyResult, partition, statement

__all__ = ["trainer_policy", "training_role_policy"]

PREFIX = "peagle/training/"
JOB_PATTERN = "peagle-train-*"
LOG_GROUP = "/aws/sagemaker/TrainingJobs"
# The Sid of each statement granted on "*": the reason, in the policy itself.
TRAINER_STAR_SIDS = {
    "quotas": "QuotaReadStarBecauseListServiceQuotasHasNoResourceTypes",
    "ecr_token": "EcrTokenStarBecauseGetAuthorizationTokenHasNoResourceTypes",
    "list_jobs": "ListTrainingJobsStarBecauseListActionsHaveNoResourceTypes",
    "list_models": "ListModelsAndEndpointsStarBecauseListActionsHaveNoResourceTypes",
    "prices": "PriceListReadStarBecauseGetProductsHasNoResourceTypes",
}
SAGEMAKER_TRUST = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Effect": "Allow",
            "Principal": {"Service": "sagemaker.amazonaws.com"},
            "Action": "sts:AssumeRole",
        }
    ],
}


def _bucket(region: str, account: str, bucket: str | None) -> str:
    return bucket or f"sagemaker-{region}-{account}"


def trainer_policy(region: str, account: str, role: str, bucket: str | None = None) -> PolicyResult:
    """The policy of the principal that runs `drafter train` (attach to your user/role)."""
    part = partition(region)
    b = _bucket(region, account, bucket)
    jobs = f"arn:{part}:sagemaker:{region}:{account}:training-job/{JOB_PATTERN}"
    group = f"arn:{part}:logs:{region}:{account}:log-group:{LOG_GROUP}"
    statements = [
        statement(
            "PassExecutionRoleToSageMakerOnly",
            ["iam:PassRole"],
            [role],
            {"StringEquals": {"iam:PassedToService": "sagemaker.amazonaws.com"}},
        ),
        statement("PreflightReadsExecutionRole", ["iam:GetRole"], [role]),
        statement(TRAINER_STAR_SIDS["quotas"], ["servicequotas:ListServiceQuotas"], "*"),
        # The cost estimate: the instance's training price (without it, "unknown").
        statement(TRAINER_STAR_SIDS["prices"], ["pricing:GetProducts"], "*"),
        statement(
            "CreateWatchStopPeagleTrainingJobs",
            [
                "sagemaker:AddTags",
                "sagemaker:CreateTrainingJob",
                "sagemaker:DescribeTrainingJob",
                "sagemaker:StopTrainingJob",
            ],
            [jobs],
        ),
        # gc: finds peagle's ended jobs by listing and their tags, removes them.
        statement(
            "CollectEndedPeagleTrainingJobs",
            ["sagemaker:DeleteTrainingJob", "sagemaker:ListTags"],
            [jobs],
        ),
        statement(TRAINER_STAR_SIDS["list_jobs"], ["sagemaker:ListTrainingJobs"], "*"),
        # gc --training: no model may serve the head it deletes (training_gc.head_users).
        # Then which endpoints serve those models, to name them in the refusal
        # (inventory.resource_users: components, endpoints, their configs).
        statement(
            TRAINER_STAR_SIDS["list_models"],
            [
                "sagemaker:ListEndpoints",
                "sagemaker:ListInferenceComponents",
                "sagemaker:ListModels",
            ],
            "*",
        ),  # fmt: skip
        statement(
            "GcReadsModelsServingAHead",
            [
                "sagemaker:DescribeEndpoint",
                "sagemaker:DescribeEndpointConfig",
                "sagemaker:DescribeInferenceComponent",
                "sagemaker:DescribeModel",
            ],
            [
                f"arn:{part}:sagemaker:{region}:{account}:{kind}/*"
                for kind in ("endpoint", "endpoint-config", "inference-component", "model")
            ],
        ),  # fmt: skip
        # The wait reads each of the job's streams from its own position (LogTail).
        statement(
            "ReadTrainingJobLogs",
            ["logs:DescribeLogStreams", "logs:GetLogEvents"],
            [group, f"{group}:*"],
        ),
        statement(
            "UploadsAndHeadUnderPeagleTraining",
            ["s3:DeleteObject", "s3:GetObject", "s3:PutObject"],
            [f"arn:{part}:s3:::{b}/{PREFIX}*"],
        ),
        statement(
            "ListAndMakeTheTrainingBucket",
            ["s3:CreateBucket", "s3:ListBucket"],
            [f"arn:{part}:s3:::{b}"],
        ),
    ]
    warnings = [
        "a target or data in another bucket is read by drafter train's preflight "
        "(s3:GetObject on its config.json or jsonl, s3:ListBucket on the target's prefix): "
        "grant those on it",
        text(
            "{d} also needs the deployer policy ({c})",
            d=Param("deploy"),
            c=Call("iam_policy", for_="deployer"),
        ),  # fmt: skip
    ]
    policy = {"Version": "2012-10-17", "Statement": statements}
    return PolicyResult(policy=policy, trust_policy={}, account=account, warnings=warnings)


def training_role_policy(region: str, account: str, bucket: str | None = None) -> PolicyResult:
    """The execution role a training job runs as, with its trust policy."""
    part = partition(region)
    b = _bucket(region, account, bucket)
    group = f"arn:{part}:logs:{region}:{account}:log-group:{LOG_GROUP}"
    statements = [
        statement(
            "ReadChannelsAndSourceUnderPeagleTraining",
            ["s3:GetObject"],
            [f"arn:{part}:s3:::{b}/{PREFIX}*"],
        ),
        statement(
            "WriteTheHeadUnderPeagleTraining",
            ["s3:PutObject"],
            [f"arn:{part}:s3:::{b}/{PREFIX}*/output/*"],
        ),
        statement(
            "ListTheTrainingPrefix",
            ["s3:ListBucket"],
            [f"arn:{part}:s3:::{b}"],
            {"StringLike": {"s3:prefix": [f"{PREFIX}*"]}},
        ),
        statement(
            "TrainingJobLogs",
            [
                "logs:CreateLogGroup",
                "logs:CreateLogStream",
                "logs:DescribeLogStreams",
                "logs:PutLogEvents",
            ],
            [group, f"{group}:*"],
        ),  # fmt: skip
        statement(
            "PullTheTrainingImage",
            ["ecr:BatchCheckLayerAvailability", "ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"],
            [f"arn:{part}:ecr:{region}:*:repository/*"],
        ),
        statement(TRAINER_STAR_SIDS["ecr_token"], ["ecr:GetAuthorizationToken"], "*"),
    ]
    warnings = [
        "a target or data outside s3://" + b + "/" + PREFIX + " (an S3 model prefix, an S3 "
        "jsonl) is a channel too: add s3:GetObject on it and s3:ListBucket on its prefix",
    ]
    policy = {"Version": "2012-10-17", "Statement": statements}
    return PolicyResult(
        policy=policy, trust_policy=SAGEMAKER_TRUST, account=account, warnings=warnings
    )
