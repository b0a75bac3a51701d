"""The pure half of `peagle adopt` (planning/adopt_spec.py, adopt_refusals.py): Describe*
answers written by hand, as botocore's DescribeEndpointConfig / DescribeModel shapes
name their fields, in; a spec, its differences or a refusal out. No AWS, no moto."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sm_peagle.errors import SpecError
from sm_peagle.planning.adopt.spec import Deployed, reconstruct

REGION = "us-east-1"
ROLE = "arn:aws:iam::123456789012:role/exec"
# Facts 3: JumpStart's own P-EAGLE config for GPT-OSS-20B pins this image (cu129).
IMAGE = (
    f"763104351884.dkr.ecr.{REGION}.amazonaws.com/vllm:0.18.0-gpu-py312-cu129-ubuntu22.04-sagemaker"
)
HEAD = "s3://my-heads/gpt-oss-20b-p-eagle/"
WEIGHTS = "s3://my-models/gpt-oss-20b/"
MOUNT = "/opt/ml/additional-model-data-sources"


def spec_env(method: str = "eagle3", k: int = 5, parallel: bool | None = True, **extra: Any) -> str:
    cfg: dict[str, Any] = {"model": f"{MOUNT}/eagle", "method": method, "num_speculative_tokens": k}
    if parallel is not None:
        cfg["parallel_drafting"] = parallel
    return json.dumps({**cfg, **extra})


def deployed(
    *,
    env: dict[str, str] | None = None,
    variant: dict[str, Any] | None = None,
    container: dict[str, Any] | None = None,
    config: dict[str, Any] | None = None,
    model: dict[str, Any] | None = None,
    **fields: Any,
) -> Deployed:
    """A hand-made endpoint serving gpt-oss-20b from its own buckets."""
    prim = {
        "Image": IMAGE,
        "Environment": {"SM_VLLM_SPECULATIVE_CONFIG": spec_env()} if env is None else env,
        "ModelDataSource": {
            "S3DataSource": {"S3Uri": WEIGHTS, "S3DataType": "S3Prefix", "CompressionType": "None"}
        },
        "AdditionalModelDataSources": [
            {
                "ChannelName": "eagle",
                "S3DataSource": {
                    "S3Uri": HEAD,
                    "S3DataType": "S3Prefix",
                    "CompressionType": "None",
                },
            }
        ],
        **(container or {}),
    }
    v = {
        "VariantName": "AllTraffic",
        "ModelName": "m",
        "InstanceType": "ml.g7e.2xlarge",
        "InitialInstanceCount": 1,
        "ContainerStartupHealthCheckTimeoutInSeconds": 3600,
        "ModelDataDownloadTimeoutInSeconds": 3600,
        **(variant or {}),
    }
    return Deployed(
        name="ep",
        region=REGION,
        endpoint={"EndpointName": "ep", "EndpointConfigName": "c", "EndpointStatus": "InService"},
        config={"EndpointConfigName": "c", "ProductionVariants": [v], **(config or {})},
        models={
            "m": {
                "ModelName": "m",
                "ExecutionRoleArn": ROLE,
                "PrimaryContainer": prim,
                "EnableNetworkIsolation": True,
                **(model or {}),
            }
        },
        **fields,
    )


def paths(adoption: Any) -> dict[str, tuple[Any, Any]]:
    return {d.path: (d.deployed, d.planned) for d in adoption.differences}


@pytest.mark.parametrize(
    ("env", "mode", "k"),
    [
        ({"SM_VLLM_SPECULATIVE_CONFIG": spec_env(k=5)}, "p-eagle", 5),
        ({"SM_VLLM_SPECULATIVE_CONFIG": spec_env(k=4, parallel=None)}, "eagle3", 4),
        ({"SM_VLLM_SPECULATIVE_CONFIG": spec_env(k=4, parallel=False)}, "eagle3", 4),
        ({}, "baseline", None),
    ],
)
def test_mode_and_k_come_from_the_speculative_config(env, mode, k):
    a = reconstruct(deployed(env=env), model="gpt-oss-20b")
    assert a.spec.speculative.mode.value == mode
    assert a.spec.speculative.num_speculative_tokens == k
    if mode == "baseline":
        assert (
            "SM_VLLM_SPECULATIVE_CONFIG"
            not in a.plan.create_model["PrimaryContainer"]["Environment"]
        )
        return
    assert (a.spec.drafter.channel, a.spec.drafter.source) == ("eagle", HEAD)
    env_out = a.plan.create_model["PrimaryContainer"]["Environment"]
    want = json.loads(env["SM_VLLM_SPECULATIVE_CONFIG"])
    if want.get("parallel_drafting") is False:  # vLLM's default: peagle leaves it out
        del want["parallel_drafting"]
        assert paths(a)[
            "model.PrimaryContainer.Environment.SM_VLLM_SPECULATIVE_CONFIG.parallel_drafting"
        ] == (False, None)
    assert json.loads(env_out["SM_VLLM_SPECULATIVE_CONFIG"]) == want


def test_the_sources_and_endpoint_fields_are_read_as_they_are():
    d = deployed(
        variant={
            "InstanceType": "ml.g7e.4xlarge",
            "InitialInstanceCount": 2,
            "ContainerStartupHealthCheckTimeoutInSeconds": 1800,
            "ModelDataDownloadTimeoutInSeconds": 1200,
            "VolumeSizeInGB": 200,
            "RoutingConfig": {"RoutingStrategy": "LEAST_OUTSTANDING_REQUESTS"},
        },
        model={
            "EnableNetworkIsolation": False,
            "VpcConfig": {"Subnets": ["subnet-0123abcd"], "SecurityGroupIds": ["sg-0123abcd"]},
        },
        config={"KmsKeyId": "alias/my-key"},
        tags={"team": "ml", "aws:cloudformation:stack-name": "s", "peagle:stale": "x"},
    )
    a = reconstruct(d, model="gpt-oss-20b")
    s = a.spec
    assert (s.model_data, s.drafter.source, s.role) == (WEIGHTS, HEAD, ROLE)
    # The image is JumpStart's own for this region and family: the spec need not pin it.
    assert s.container.image is None and a.plan.create_model["PrimaryContainer"]["Image"] == IMAGE
    assert (s.endpoint.instance_type, s.endpoint.instance_count) == ("ml.g7e.4xlarge", 2)
    assert s.endpoint.container_startup_health_check_timeout == 1800
    assert s.endpoint.model_data_download_timeout == 1200
    assert (s.endpoint.volume_size_gb, s.endpoint.routing_strategy) == (
        200,
        "LEAST_OUTSTANDING_REQUESTS",
    )
    assert s.network.enable_network_isolation is False
    assert (s.network.subnets, s.network.security_group_ids) == (
        ["subnet-0123abcd"],
        ["sg-0123abcd"],
    )
    assert s.network.kms_key_id == "alias/my-key"
    assert s.tags == {"team": "ml"}  # aws: is reserved, peagle: is peagle's own
    variant = a.plan.create_endpoint_config["ProductionVariants"][0]
    assert variant["VolumeSizeInGB"] == 200 and variant["InitialInstanceCount"] == 2


def test_environment_entries_the_plan_does_not_make_are_pinned():
    env = {
        "SM_VLLM_SPECULATIVE_CONFIG": spec_env(),
        "SM_VLLM_MAX_MODEL_LEN": "4096",
        "MY_FLAG": "on",
    }
    a = reconstruct(deployed(env=env), model="gpt-oss-20b")
    assert a.spec.container.env["MY_FLAG"] == "on"
    planned = a.plan.create_model["PrimaryContainer"]["Environment"]
    assert planned["MY_FLAG"] == "on" and planned["SM_VLLM_MAX_MODEL_LEN"] == "4096"


def test_what_the_plan_adds_and_cannot_drop_is_listed():
    """A variant without timeouts gets SageMaker's defaults; peagle always sends both
    (3600, the API's maximum, facts 5). A spec cannot remove them: listed, not hidden."""
    d = deployed(
        variant={
            "ContainerStartupHealthCheckTimeoutInSeconds": None,
            "ModelDataDownloadTimeoutInSeconds": None,
        }
    )
    got = paths(reconstruct(d, model="gpt-oss-20b"))
    assert got["variant.ContainerStartupHealthCheckTimeoutInSeconds"] == (None, 3600)
    assert got["variant.ModelDataDownloadTimeoutInSeconds"] == (None, 3600)


def test_a_cuda13_image_without_its_host_ami_is_a_difference():
    tag = "0.31.0-gpu-py312-cu130-ubuntu24.04-sagemaker"  # facts 3: 0.31.0 is cu130
    image = f"763104351884.dkr.ecr.{REGION}.amazonaws.com/vllm:{tag}"
    a = reconstruct(deployed(container={"Image": image}), model="gpt-oss-20b")
    assert a.spec.container.image == image  # not JumpStart's: pinned
    # facts 3: CUDA 13 images need al2023-ami-sagemaker-inference-gpu-4-1.
    assert paths(a)["variant.InferenceAmiVersion"] == (
        None,
        "al2023-ami-sagemaker-inference-gpu-4-1",
    )
    d = deployed(
        container={"Image": image},
        variant={"InferenceAmiVersion": "al2023-ami-sagemaker-inference-gpu-4-1"},
    )
    assert "variant.InferenceAmiVersion" not in paths(reconstruct(d, model="gpt-oss-20b"))


def test_autoscaling_with_one_target_tracking_policy_is_in_the_spec():
    target = {"MinCapacity": 1, "MaxCapacity": 4}
    policy = {
        "PolicyName": "their-policy",
        "PolicyType": "TargetTrackingScaling",
        "TargetTrackingScalingPolicyConfiguration": {
            "TargetValue": 6.0,
            "PredefinedMetricSpecification": {
                "PredefinedMetricType": "SageMakerVariantConcurrentRequestsPerModelHighResolution"
            },
            "ScaleOutCooldown": 300,
            "ScaleInCooldown": 900,
        },
    }
    a = reconstruct(deployed(scaling_target=target, scaling_policies=[policy]), model="gpt-oss-20b")
    got = a.spec.autoscaling
    assert (got.min_instances, got.max_instances, got.target_concurrency) == (1, 4, 6.0)
    assert (got.scale_out_cooldown, got.scale_in_cooldown) == (300, 900)
    step = {**policy, "PolicyType": "StepScaling"}
    a = reconstruct(deployed(scaling_target=target, scaling_policies=[step]), model="gpt-oss-20b")
    assert a.spec.autoscaling is None
    assert [c.status for c in a.notes if c.name == "autoscaling"] == ["warn"]


def test_k_below_the_heads_recommendation_gets_the_verdict():
    """gpt-oss-20b's head card (amazon/GPT-OSS-20B-P-EAGLE) recommends K=7; JumpStart's
    head lives under lmi-eagle-heads/models/gpt-oss-20b-p-eagle/ (facts 4)."""
    js_head = f"s3://jumpstart-cache-prod-{REGION}/lmi-eagle-heads/models/gpt-oss-20b-p-eagle/"

    def advice(k: int, head: str) -> list[str]:
        src = {
            "ChannelName": "eagle",
            "S3DataSource": {"S3Uri": head, "S3DataType": "S3Prefix", "CompressionType": "None"},
        }
        d = deployed(
            env={"SM_VLLM_SPECULATIVE_CONFIG": spec_env(k=k)},
            container={"AdditionalModelDataSources": [src]},
        )
        return [
            c.message
            for c in reconstruct(d, model="gpt-oss-20b").notes
            if "recommended" in c.message
        ]

    assert advice(3, js_head) == [
        "K=3 but the head's recommended K is 7 (amazon/GPT-OSS-20B-P-EAGLE)"
    ]
    assert advice(7, js_head) == []
    assert advice(3, HEAD) == []  # another head: its card is not known


@pytest.mark.parametrize(
    ("d", "reason"),
    [
        (deployed(variant={"ServerlessConfig": {"MemorySizeInMB": 2048}}), "serverless"),
        (deployed(variant={"ModelName": None}), "inference components"),
        (deployed(config={"AsyncInferenceConfig": {"OutputConfig": {}}}), "AsyncInferenceConfig"),
        (deployed(config={"DataCaptureConfig": {"EnableCapture": True}}), "DataCaptureConfig"),
        (
            deployed(variant={"InstancePools": [{"InstanceType": "ml.g7e.2xlarge"}]}),
            "InstancePools",
        ),
        (deployed(model={"Containers": [{"Image": IMAGE}, {"Image": IMAGE}]}), "2 containers"),
        (deployed(container={"Mode": "MultiModel"}), "MultiModel mode"),
        (
            deployed(container={"Image": "123.dkr.ecr.us-east-1.amazonaws.com/tgi:2.0"}),
            "not a vLLM image",
        ),
        (deployed(env={"SM_VLLM_SPECULATIVE_CONFIG": "{not json"}), "not a JSON object"),
        (deployed(env={"SM_VLLM_SPECULATIVE_CONFIG": spec_env(method="mtp")}), "'mtp'"),
    ],
)
def test_shapes_one_spec_cannot_describe_are_refused(d, reason):
    with pytest.raises(SpecError) as exc:
        reconstruct(d, model="gpt-oss-20b")
    assert exc.value.message.startswith("cannot adopt ep: ") and reason in exc.value.message


def test_an_unidentified_model_is_refused_with_the_fix():
    with pytest.raises(SpecError, match="cannot tell which model") as exc:
        reconstruct(deployed())
    assert "model='ALIAS'" in exc.value.remedy  # Python's words (the CLI says --model ALIAS)
    assert exc.value.field == "model"
    d = deployed(
        env={"SM_VLLM_SPECULATIVE_CONFIG": spec_env(), "HF_MODEL_ID": "openai/gpt-oss-20b"}
    )
    assert reconstruct(d).spec.model == "gpt-oss-20b"


@pytest.mark.parametrize(
    ("endpoint", "reason", "fix"),
    [
        (
            {
                "EndpointStatus": "Updating",
                "PendingDeploymentSummary": {"EndpointConfigName": "c2"},
            },
            "it is Updating to config c2",
            "wait until it is InService: `sm_peagle.status('ep')`",
        ),
        (
            {
                "EndpointStatus": "InService",
                "PendingDeploymentSummary": {"EndpointConfigName": "c2"},
            },
            "a deployment to config c2 is still pending",
            "wait until it is InService: `sm_peagle.status('ep')`",
        ),
        ({"EndpointStatus": "Creating"}, "it is Creating;", "`sm_peagle.status('ep')`"),
        (
            {"EndpointStatus": "Failed", "FailureReason": "CUDA out of memory"},
            "it is Failed (CUDA out of memory); SageMaker accepts only DeleteEndpoint",
            "sm_peagle.delete('ep', force=True)",  # peagle's own: it reaches what adopt reached
        ),
    ],
)
def test_an_endpoint_not_settled_in_service_is_refused(endpoint, reason, fix):
    """botocore's DescribeEndpointOutput: while Updating, EndpointConfigName is the config
    being served and PendingDeploymentSummary.EndpointConfigName the incoming one."""
    d = deployed()
    d.endpoint.update(endpoint)
    with pytest.raises(SpecError) as exc:
        reconstruct(d, model="gpt-oss-20b")
    assert exc.value.message.startswith("cannot adopt ep: ")
    assert reason in exc.value.message and fix in exc.value.remedy


def test_only_user_tags_are_carried_into_the_spec():
    """The SageMaker SDK's JumpStart tags name what JumpStart deployed (and identify the
    model); `aws:` is AWS's reserved prefix. Neither is the user's to carry."""
    tags = {
        "sagemaker-sdk:jumpstart-model-id": "openai-reasoning-gpt-oss-20b",
        "sagemaker-sdk:jumpstart-model-version": "3.38.0",
        "sagemaker-sdk:jumpstart-inference-config-name": "lmi-optimized",
        "aws:cloudformation:stack-name": "s",
        "team": "ml",
    }
    a = reconstruct(deployed(tags=tags))
    assert a.spec.model == "gpt-oss-20b"
    assert a.spec.tags == {"team": "ml"}


def test_a_difference_beside_the_heads_location_keeps_the_catalog_head_and_its_advice():
    """The head at JumpStart's location with a field the plan does not send (a
    ModelAccessConfig, botocore's S3ModelDataSource member): still the catalog's head, so
    its card's K advice stands; the field is listed, not hidden by pinning the source."""
    js_head = f"s3://jumpstart-cache-prod-{REGION}/lmi-eagle-heads/models/gpt-oss-20b-p-eagle/"
    src = {
        "ChannelName": "eagle",
        "S3DataSource": {
            "S3Uri": js_head,
            "S3DataType": "S3Prefix",
            "CompressionType": "None",
            "ModelAccessConfig": {"AcceptEula": True},
        },
    }
    d = deployed(
        env={"SM_VLLM_SPECULATIVE_CONFIG": spec_env(k=3)},
        container={"AdditionalModelDataSources": [src]},
    )
    a = reconstruct(d, model="gpt-oss-20b")
    assert a.spec.drafter.source is None
    assert "K=3 but the head's recommended K is 7 (amazon/GPT-OSS-20B-P-EAGLE)" in [
        c.message for c in a.notes
    ]
    prefix = "model.PrimaryContainer.AdditionalModelDataSources[0].S3DataSource"
    assert paths(a)[f"{prefix}.ModelAccessConfig.AcceptEula"] == (True, None)


def test_every_key_the_plan_passes_to_vllm_is_carried_not_dropped():
    """An endpoint running a setting the spec can express (here vLLM 0.18.0's
    `rejection_sample_method: strict`, one of the values its config lists) is adopted with it:
    the reconstructed plan sends the same config, and nothing is reported as changing."""
    env = {"SM_VLLM_SPECULATIVE_CONFIG": spec_env(k=5, rejection_sample_method="strict")}
    a = reconstruct(deployed(env=env), model="gpt-oss-20b")
    assert a.spec.speculative.rejection_sample_method == "strict"
    sent = a.plan.create_model["PrimaryContainer"]["Environment"]["SM_VLLM_SPECULATIVE_CONFIG"]
    assert json.loads(sent) == json.loads(env["SM_VLLM_SPECULATIVE_CONFIG"])
    assert not [p for p in paths(a) if "rejection_sample_method" in p]
