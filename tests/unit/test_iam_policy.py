"""`peagle iam-policy`: the execution-role policy grants exactly what the plan needs.

The assertions are written from the plan's requests, not from the policy builder: the S3
objects are the plan's prefixes, the ECR repository is the plan's image, and "*" appears
only for the actions AWS cannot scope (a fixed, asserted set).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from sm_peagle import plan
from sm_peagle.iac.iam import PLACEHOLDER_ACCOUNT, WILDCARD_ACTIONS, execution_role_policy
from tests.plan_helpers import make_offline, run_cli

TEMPLATE = Path(__file__).resolve().parents[2] / "templates" / "specs" / "gpt-oss-20b-p-eagle.yaml"
ACCOUNT = "111122223333"
KMS = f"arn:aws:kms:eu-west-1:{ACCOUNT}:key/1234abcd-12ab-34cd-56ef-1234567890ab"
VPC_SPEC: dict[str, Any] = {
    "model": "qwen3-coder-30b-a3b-instruct",
    "region": "eu-west-1",
    "role": f"arn:aws:iam::{ACCOUNT}:role/peagle-exec",
    "model_data": "s3://acme-models/qwen/model.tar.gz",
    "speculative": {"mode": "p-eagle"},
    "drafter": {"source": "s3://acme-heads/qwen/p-eagle/"},
    "network": {
        "subnets": ["subnet-0123abcd4567ef890", "subnet-0fedcba987654321f"],
        "security_group_ids": ["sg-0123abcd4567ef890"],
        "kms_key_id": KMS,
    },
}
BASE_WILDCARDS = {"ecr:GetAuthorizationToken", "cloudwatch:PutMetricData"}
VPC_WILDCARDS = {
    "ec2:DescribeDhcpOptions",
    "ec2:DescribeNetworkInterfaces",
    "ec2:DescribeSecurityGroups",
    "ec2:DescribeSubnets",
    "ec2:DescribeVpcs",
}
# The only wildcards allowed inside an ARN: an object prefix the plan names, the log
# group's own ":*" form, ENIs SageMaker creates (ids unknown in advance).
_ARN_WILDCARD_OK = (
    re.compile(r"^arn:aws:s3:::[a-z0-9.\-]+/[^*]*\*$"),
    re.compile(r"^arn:aws:logs:[a-z0-9-]+:\d{12}:log-group:/aws/sagemaker/Endpoints/[\w-]+:\*$"),
    re.compile(r"^arn:aws:ec2:[a-z0-9-]+:\d{12}:network-interface/\*$"),
)


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    make_offline(monkeypatch, tmp_path)


def _statements(policy: dict[str, Any]) -> list[dict[str, Any]]:
    assert policy["Version"] == "2012-10-17"
    return policy["Statement"]


def _resources(s: dict[str, Any]) -> list[str]:
    return [s["Resource"]] if isinstance(s["Resource"], str) else s["Resource"]


def _by_action(policy: dict[str, Any], action: str) -> list[dict[str, Any]]:
    return [s for s in _statements(policy) if action in s["Action"]]


def _plan_s3(p: Any) -> list[tuple[str, str, str]]:
    """(bucket, key, type) of every S3 source in the plan's CreateModel."""
    container = p.create_model["PrimaryContainer"]
    srcs = [container["ModelDataSource"]] + container.get("AdditionalModelDataSources", [])
    out = []
    for src in srcs:
        bucket, _, key = src["S3DataSource"]["S3Uri"][len("s3://") :].partition("/")
        out.append((bucket, key, src["S3DataSource"]["S3DataType"]))
    return out


def assert_least_privilege(policy: dict[str, Any], p: Any, wildcards: set[str]) -> None:
    star_actions: set[str] = set()
    for s in _statements(policy):
        assert s["Effect"] == "Allow" and "NotAction" not in s and "NotResource" not in s
        for action in s["Action"]:
            service, _, name = action.partition(":")
            assert service and name and "*" not in action, action  # no s3:*, no "*"
        for r in _resources(s):
            if r == "*":
                star_actions |= set(s["Action"])
                continue
            assert r.startswith("arn:aws:"), r
            if "*" in r:
                assert any(rx.match(r) for rx in _ARN_WILDCARD_OK), r
    assert star_actions == wildcards
    assert star_actions <= WILDCARD_ACTIONS

    # S3: GetObject on exactly the plan's prefixes (prefix*) and objects (exact key).
    expected = {
        f"arn:aws:s3:::{b}/{k}*" if t == "S3Prefix" else f"arn:aws:s3:::{b}/{k}"
        for b, k, t in _plan_s3(p)
    }
    [get] = _by_action(policy, "s3:GetObject")
    assert set(get["Action"]) == {"s3:GetObject"} and set(_resources(get)) == expected
    listed: dict[str, set[str]] = {}
    for s in _by_action(policy, "s3:ListBucket"):
        assert s["Action"] == ["s3:ListBucket"]
        [bucket_arn] = _resources(s)
        listed[bucket_arn] = set(s["Condition"]["StringLike"]["s3:prefix"])
    want: dict[str, set[str]] = {}
    for b, k, t in _plan_s3(p):
        if t == "S3Prefix":
            want.setdefault(f"arn:aws:s3:::{b}", set()).add(k + "*")
    assert listed == want

    # ECR: the image's repository, nothing else.
    m = re.match(r"^(\d{12})\.dkr\.ecr\.([a-z0-9-]+)\.amazonaws\.com/([^:@]+)", p.image)
    assert m
    [pull] = _by_action(policy, "ecr:BatchGetImage")
    assert _resources(pull) == [f"arn:aws:ecr:{m[2]}:{m[1]}:repository/{m[3]}"]
    assert set(pull["Action"]) == {
        "ecr:BatchGetImage",
        "ecr:GetDownloadUrlForLayer",
        "ecr:BatchCheckLayerAvailability",
    }

    [metrics] = _by_action(policy, "cloudwatch:PutMetricData")
    assert metrics["Condition"] == {
        "StringEquals": {"cloudwatch:namespace": "/aws/sagemaker/Endpoints"}
    }


def test_template_policy_is_least_privilege() -> None:
    p = plan(TEMPLATE)
    result = execution_role_policy(p)
    assert_least_privilege(result.policy, p, BASE_WILDCARDS)
    actions = {a for s in _statements(result.policy) for a in s["Action"]}
    assert not any(a.startswith(("kms:", "ec2:")) for a in actions)  # no key, no VPC
    [logs] = _by_action(result.policy, "logs:PutLogEvents")
    assert set(logs["Action"]) == {
        "logs:CreateLogGroup",
        "logs:CreateLogStream",
        "logs:DescribeLogStreams",
        "logs:PutLogEvents",
    }
    assert _resources(logs) == [
        f"arn:aws:logs:us-east-1:{PLACEHOLDER_ACCOUNT}:log-group:/aws/sagemaker/Endpoints/"
        f"{p.names['endpoint']}:*"
    ]
    assert result.account == PLACEHOLDER_ACCOUNT
    assert any("placeholder account" in w for w in result.warnings)


def test_vpc_and_kms_add_only_their_statements() -> None:
    p = plan(VPC_SPEC)
    result = execution_role_policy(p)
    assert result.account == ACCOUNT and result.warnings == []
    assert_least_privilege(result.policy, p, BASE_WILDCARDS | VPC_WILDCARDS)
    [kms] = _by_action(result.policy, "kms:Decrypt")
    assert kms["Action"] == ["kms:Decrypt"] and _resources(kms) == [KMS]
    [create] = _by_action(result.policy, "ec2:CreateNetworkInterface")
    ec2 = f"arn:aws:ec2:eu-west-1:{ACCOUNT}"
    assert set(_resources(create)) == {
        f"{ec2}:subnet/subnet-0123abcd4567ef890",
        f"{ec2}:subnet/subnet-0fedcba987654321f",
        f"{ec2}:security-group/sg-0123abcd4567ef890",
        f"{ec2}:network-interface/*",
    }
    # model.tar.gz is one object: exact key, and no ListBucket on its bucket.
    [get] = _by_action(result.policy, "s3:GetObject")
    assert "arn:aws:s3:::acme-models/qwen/model.tar.gz" in _resources(get)
    assert all(
        "acme-models" not in _resources(s)[0] for s in _by_action(result.policy, "s3:ListBucket")
    )


def test_kms_key_id_becomes_a_key_arn() -> None:
    spec = json.loads(json.dumps(VPC_SPEC))
    spec["network"]["kms_key_id"] = "1234abcd-12ab-34cd-56ef-1234567890ab"
    [kms] = _by_action(execution_role_policy(plan(spec)).policy, "kms:Decrypt")
    assert _resources(kms) == [
        f"arn:aws:kms:eu-west-1:{ACCOUNT}:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    ]


def test_trust_policy_is_sagemaker_for_this_account() -> None:
    trust = execution_role_policy(plan(VPC_SPEC)).trust_policy
    [s] = trust["Statement"]
    assert s["Principal"] == {"Service": "sagemaker.amazonaws.com"}
    assert s["Action"] == "sts:AssumeRole" and s["Effect"] == "Allow"
    assert s["Condition"] == {"StringEquals": {"aws:SourceAccount": ACCOUNT}}


def test_account_override_wins_with_a_warning() -> None:
    result = execution_role_policy(plan(VPC_SPEC), account="444455556666")
    assert result.account == "444455556666"
    assert any("differs" in w for w in result.warnings)
    assert result.trust_policy["Statement"][0]["Condition"]["StringEquals"] == {
        "aws:SourceAccount": "444455556666"
    }


def test_cli_json_and_human(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "iam-policy", "-f", str(TEMPLATE), "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc.keys() == {"for", "policy", "trust_policy", "label"} and doc["label"] == "AWS"
    assert doc["for"] == "execution-role"
    assert doc["policy"] == execution_role_policy(plan(TEMPLATE)).policy
    assert "placeholder account" in err

    code, out, _ = run_cli(capsys, "iam-policy", "-f", str(TEMPLATE), "--account", ACCOUNT)
    assert code == 0
    assert out.count('"Version": "2012-10-17"') == 2  # both documents, pretty-printed
    assert '"sagemaker.amazonaws.com"' in out and f'"{ACCOUNT}"' in out

    code, _, err = run_cli(capsys, "iam-policy", "-f", str(TEMPLATE), "--account", "12")
    assert code == 2 and "--account" in err


# Written by hand from the rules, not from the builder: JumpStart's spec for
# openai-reasoning-gpt-oss-20b (v3.38.0) puts the weights under
# hosting_prepacked_artifact_key and the P-EAGLE head under lmi-eagle-heads/ in the
# region's jumpstart-cache-prod bucket; AWS's vLLM images live in account 763104351884,
# repository "vllm"; SageMaker writes an endpoint's logs to /aws/sagemaker/Endpoints/<name>
# and its metrics to that namespace. The account is unknown offline: 000000000000.
_JS = "arn:aws:s3:::jumpstart-cache-prod-us-east-1"
_WEIGHTS = "openai-reasoning/openai-reasoning-gpt-oss-20b/artifacts/inference-prepack/v1.0.0/*"
_HEAD = "lmi-eagle-heads/models/gpt-oss-20b-p-eagle/*"
TEMPLATE_POLICY = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Sid": "ReadModelArtifacts",
            "Effect": "Allow",
            "Action": ["s3:GetObject"],
            "Resource": [f"{_JS}/{_HEAD}", f"{_JS}/{_WEIGHTS}"],
        },
        {
            "Sid": "ListModelArtifactPrefixes0",
            "Effect": "Allow",
            "Action": ["s3:ListBucket"],
            "Resource": [_JS],
            "Condition": {"StringLike": {"s3:prefix": [_HEAD, _WEIGHTS]}},
        },
        {
            "Sid": "PullServingImage",
            "Effect": "Allow",
            "Action": [
                "ecr:BatchCheckLayerAvailability",
                "ecr:BatchGetImage",
                "ecr:GetDownloadUrlForLayer",
            ],
            "Resource": ["arn:aws:ecr:us-east-1:763104351884:repository/vllm"],
        },
        {
            "Sid": "EcrAuthTokenStarBecauseTheTokenIsRegistryWide",
            "Effect": "Allow",
            "Action": ["ecr:GetAuthorizationToken"],
            "Resource": "*",
        },
        {
            "Sid": "EndpointLogs",
            "Effect": "Allow",
            "Action": [
                "logs:CreateLogGroup",
                "logs:CreateLogStream",
                "logs:DescribeLogStreams",
                "logs:PutLogEvents",
            ],
            "Resource": [
                "arn:aws:logs:us-east-1:000000000000:log-group:"
                "/aws/sagemaker/Endpoints/peagle-gpt-oss-20b-p-eagle:*"
            ],
        },
        {
            "Sid": "MetricsStarBecausePutMetricDataHasNoResourceTypesScopedByNamespace",
            "Effect": "Allow",
            "Action": ["cloudwatch:PutMetricData"],
            "Resource": "*",
            "Condition": {"StringEquals": {"cloudwatch:namespace": "/aws/sagemaker/Endpoints"}},
        },
    ],
}


def test_template_policy_is_the_hand_written_one() -> None:
    assert execution_role_policy(plan(TEMPLATE)).policy == TEMPLATE_POLICY
    # ... and so is the checked-in example (test_templates keeps it fresh).
    example = TEMPLATE.parents[1] / "iam" / "execution-role-policy.json"
    assert json.loads(example.read_text()) == TEMPLATE_POLICY


# IAM User Guide, "IAM JSON policy elements: Sid": ASCII letters and digits only, unique
# within a policy. JSON carries no comments, so the Sid is where a "*" says why.
_SID = re.compile(r"^[A-Za-z0-9]+$")
# Hand-written: each action AWS only authorizes on "*", and the reason its Sid gives.
STAR_REASONS = {
    "ecr:GetAuthorizationToken": "EcrAuthTokenStarBecauseTheTokenIsRegistryWide",
    "cloudwatch:PutMetricData": (
        "MetricsStarBecausePutMetricDataHasNoResourceTypesScopedByNamespace"
    ),
    **{a: "VpcDescribeStarBecauseEc2DescribeActionsHaveNoResourceTypes" for a in VPC_WILDCARDS},
    **{
        f"sagemaker:{a}": "SageMakerListStarBecauseListActionsHaveNoResourceTypes"
        for a in ("ListEndpointConfigs", "ListEndpoints", "ListInferenceComponents", "ListModels")
    },
    "servicequotas:ListServiceQuotas": "QuotaReadStarBecauseListServiceQuotasHasNoResourceTypes",
    "application-autoscaling:DescribeScalableTargets": (
        "ScalingReadStarBecauseDescribeScalableTargetsHasNoResourceTypes"
    ),
    # issue 39: status/ls read the scaling history for the spend
    "application-autoscaling:DescribeScalingActivities": (
        "SpendReadStarBecauseDescribeScalingActivitiesHasNoResourceTypes"
    ),
}


@pytest.mark.parametrize("for_", ["execution-role", "deployer"])
@pytest.mark.parametrize("spec", [TEMPLATE, VPC_SPEC], ids=["template", "vpc-kms"])
def test_every_star_says_why_in_its_sid(for_: str, spec: Any) -> None:
    from sm_peagle.iac.iam_deployer import deployer_policy

    build = deployer_policy if for_ == "deployer" else execution_role_policy
    statements = _statements(build(plan(spec)).policy)
    sids = [s["Sid"] for s in statements]
    assert all(_SID.match(sid) for sid in sids), sids
    assert len(set(sids)) == len(sids)
    for s in statements:
        if s["Resource"] == "*":
            assert {STAR_REASONS[a] for a in s["Action"]} == {s["Sid"]}, s
        else:
            assert "StarBecause" not in s["Sid"]


def test_iam_policy_does_not_warn_about_the_role_it_is_making(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # docs/aws.md runs iam-policy to create the role: a missing role is expected there.
    monkeypatch.delenv("PEAGLE_ROLE_ARN", raising=False)
    code, out, err = run_cli(capsys, "iam-policy", "gpt-oss-20b", "--account", ACCOUNT)
    assert code == 0 and json.loads(out.split("\n# Trust policy")[0].split("\n", 1)[1])
    assert "role" not in err, err
    # ... while plan, for a deploy, still says so.
    code, out, _ = run_cli(capsys, "plan", "gpt-oss-20b", "--json")
    [role] = [c for c in json.loads(out)["checks"] if c["name"] == "role"]
    assert code == 0 and role["status"] == "warn"


def test_deployer_policy_passes_only_the_execution_role_to_sagemaker() -> None:
    from sm_peagle.iac.iam_deployer import deployer_policy

    p = plan(VPC_SPEC)
    result = deployer_policy(p)
    role = f"arn:aws:iam::{ACCOUNT}:role/peagle-exec"
    [passes] = _by_action(result.policy, "iam:PassRole")
    assert _resources(passes) == [role]
    assert passes["Condition"] == {
        "StringEquals": {"iam:PassedToService": "sagemaker.amazonaws.com"}
    }
    # Writes name this deployment's endpoint; its KMS key needs a grant it does not give.
    [writes] = _by_action(result.policy, "sagemaker:CreateEndpoint")
    assert f"arn:aws:sagemaker:eu-west-1:{ACCOUNT}:endpoint/{p.names['endpoint']}" in _resources(
        writes
    )
    assert any("kms:CreateGrant" in w for w in result.warnings)
