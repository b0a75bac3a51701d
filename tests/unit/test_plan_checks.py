"""planning/plan_checks.py rule by rule, expected values from their sources: AWS's tag
limits (key 1..128 characters, value up to 256, at most 50 tags per resource, the `aws:`
prefix reserved), the catalog's GPU counts, TP must divide the GPUs (vLLM shards the
weights evenly), and CUDA 13 images needing NVIDIA driver 580 (host AMI
al2023-ami-sagemaker-inference-gpu-4-1)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sm_peagle.catalog.instances import INSTANCES
from sm_peagle.planning.build import plan
from sm_peagle.planning.spec.loading import spec_from_data
from sm_peagle.planning.steps.checks import (
    check_host_ami,
    check_instance,
    check_tags,
    check_tensor_parallel,
)
from tests.plan_helpers import make_offline

AMI_4_1 = "al2023-ami-sagemaker-inference-gpu-4-1"
AMIS = frozenset(
    {"al2-ami-sagemaker-inference-gpu-2", "al2-ami-sagemaker-inference-gpu-3-1", AMI_4_1}
)


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    make_offline(monkeypatch, tmp_path)


def test_a_gpu_type_passes_with_its_gpus() -> None:
    inst, c = check_instance("ml.g6e.12xlarge", frozenset())
    assert inst is INSTANCES["ml.g6e.12xlarge"]
    assert (c.name, c.status, c.message) == (
        "endpoint.instance_type",
        "pass",
        "ml.g6e.12xlarge: 4x L40S 48 GB",
    )


def test_a_known_type_without_a_gpu_and_an_unknown_name_differ() -> None:
    inst, c = check_instance("ml.m5.xlarge", frozenset({"ml.m5.xlarge"}))
    assert inst is None and c.status == "fail"
    assert c.message == "ml.m5.xlarge has no GPU peagle can serve vLLM on"
    assert c.fix.startswith("use a GPU type (sm_peagle.instances()): ")
    assert "ml.g7e.2xlarge" in c.fix
    assert c.field == "instance_type"
    inst, c = check_instance("ml.nope.large", frozenset({"ml.m5.xlarge"}))
    assert inst is None and c.status == "fail"
    assert c.message == "ml.nope.large is not a SageMaker hosting instance type"
    assert c.fix == "see `sm_peagle.instances()` for the GPU types peagle supports"


def test_an_arm_host_is_refused_for_the_x86_image() -> None:
    inst, c = check_instance("ml.p6e-gb200.36xlarge", frozenset())
    assert inst is not None and inst.arm_host and c.status == "fail"
    assert "Arm (Grace) host" in c.message
    assert c.fix == "use ml.p6-b200.48xlarge or ml.p6-b300.48xlarge"


@pytest.mark.parametrize(
    ("tp", "status"),
    [(1, "warn"), (2, "warn"), (4, "pass"), (3, "fail"), (0, "fail"), (5, "fail"), (8, "fail")],
)
def test_tp_must_divide_the_gpus(tp: int, status: str) -> None:
    c = check_tensor_parallel(INSTANCES["ml.g6e.12xlarge"], tp, overridden=True)  # 4 GPUs
    assert (c.name, c.status) == ("container.engine_args.tensor_parallel_size", status)
    if status == "fail":
        assert c.message == f"tensor-parallel size {tp} must divide the 4 GPUs of ml.g6e.12xlarge"
        assert c.fix == "use one of [1, 2, 4]"
    elif status == "warn":
        assert c.message == f"TP={tp} uses {tp} of 4 GPUs on ml.g6e.12xlarge"


def test_default_tp_is_all_gpus_and_not_a_warning() -> None:
    c = check_tensor_parallel(INSTANCES["ml.g6e.12xlarge"], 2, overridden=False)
    assert (c.status, c.message) == ("pass", "SM_VLLM_TENSOR_PARALLEL_SIZE=2")


@pytest.mark.parametrize(
    ("cuda", "requested", "ami", "status"),
    [
        ("cu130", None, AMI_4_1, "pass"),  # set for the user
        ("cu131", None, AMI_4_1, "pass"),
        ("cu130", AMI_4_1, AMI_4_1, "pass"),
        (
            "cu130",
            "al2-ami-sagemaker-inference-gpu-3-1",
            "al2-ami-sagemaker-inference-gpu-3-1",
            "fail",
        ),
        ("cu129", None, None, "pass"),  # SageMaker's default AMI is fine
        (
            "cu129",
            "al2-ami-sagemaker-inference-gpu-3-1",
            "al2-ami-sagemaker-inference-gpu-3-1",
            "pass",
        ),
        (None, None, None, "pass"),
    ],
)
def test_host_ami_follows_the_images_cuda(cuda, requested, ami, status) -> None:
    got, c = check_host_ami(cuda, requested, AMIS)
    assert (got, c.status, c.name) == (ami, status, "endpoint.inference_ami_version")
    if status == "fail":
        assert c.message == f"{cuda} images need driver 580; host AMI {requested} is too old"
        assert c.fix == f"use {AMI_4_1} (or leave it unset)"


def test_host_ami_messages() -> None:
    assert check_host_ami("cu130", None, AMIS)[1].message == (
        f"cu130 image: host AMI set to {AMI_4_1} (driver 580)"
    )
    assert check_host_ami("cu130", AMI_4_1, AMIS)[1].message == f"{AMI_4_1} supports cu130"
    assert check_host_ami("cu129", None, AMIS)[1].message == "cu129: default host AMI is fine"
    assert check_host_ami(None, None, AMIS)[1].message == "image: default host AMI is fine"
    ami = "al2-ami-sagemaker-inference-gpu-2"
    assert check_host_ami("cu129", ami, AMIS)[1].message == ami


def test_an_ami_that_is_not_an_inference_ami_version_fails_first() -> None:
    got, c = check_host_ami("cu130", "al2-bogus", AMIS)
    assert got is None and c.status == "fail"
    assert c.message == "'al2-bogus' is not an InferenceAmiVersion"
    assert c.fix == "use one of " + ", ".join(sorted(AMIS))
    # Without a known enum, any value is passed on (AWS validates it).
    assert check_host_ami("cu129", "al2-bogus", frozenset())[0] == "al2-bogus"


@pytest.mark.parametrize(
    ("tags", "messages"),
    [
        ({"k" * 128: "v" * 256}, []),  # at the limits
        ({"k" * 129: "v"}, ["tag key is 129 characters; max is 128"]),
        ({"": "v"}, ["tag key is 0 characters; max is 128"]),
        ({"k": "v" * 257}, ["tag value is 257 characters; max is 256"]),
        ({"aws:team": "x"}, ["tag keys starting with 'aws:' are reserved"]),
        ({"AWS:team": "x"}, ["tag keys starting with 'aws:' are reserved"]),  # any case
        ({"awsteam": "x"}, []),
    ],
)
def test_tag_limits(tags: dict[str, str], messages: list[str]) -> None:
    got = check_tags(tags)
    if not messages:
        assert [(c.name, c.status, c.message) for c in got] == [("tags", "pass", "1 tags")]
    else:
        assert [c.message for c in got] == messages and all(c.status == "fail" for c in got)
        assert {c.name for c in got} == {f"tags.{next(iter(tags))}"}


def test_at_most_50_tags() -> None:
    assert check_tags({f"k{i}": "v" for i in range(50)})[0].status == "pass"
    (c,) = check_tags({f"k{i}": "v" for i in range(51)})
    assert (c.name, c.status, c.message, c.fix) == (
        "tags",
        "fail",
        "51 tags including peagle's own; max is 50",
        "remove some",
    )
    assert check_tags({})[0].message == "0 tags"


# --- check_deployment, through plan() ------------------------------------------------------
def checks_of(**data: Any) -> dict[str, Any]:
    spec = {"model": "gpt-oss-20b", "region": "us-east-1", **data}
    return {c.name: c for c in plan(spec_from_data(spec)).checks}


def test_deployment_checks_fit_with_the_default_length_and_utilization() -> None:
    # gpt-oss-20b on ml.g7e.2xlarge: 96 x 0.9 = 86.4 GB usable; 13.8 + 3.6 + 2 = 19.4 GB
    # fixed leaves 67 GB; one 8192-token sequence is 24 x 8 x 64 x 4 x 8192 = 0.40 GB.
    c = checks_of()["fit"]
    assert c.status == "pass" and "KV room 67 GB (~166 x 8192 tokens)" in c.message
    c = checks_of(container={"env": {"SM_VLLM_MAX_MODEL_LEN": "131072"}})["fit"]
    assert "~10 x 131072 tokens" in c.message  # 67.0 GB / 6.44 GB
    c = checks_of(container={"env": {"SM_VLLM_GPU_MEMORY_UTILIZATION": "0.5"}})["fit"]
    assert "vs 48 GB usable" in c.message  # 96 x 0.5


def test_baseline_plans_fit_without_a_head() -> None:
    c = checks_of(speculative={"mode": "baseline"})["fit"]
    assert "drafter 0.0 GB" in c.message


def test_no_role_warns_and_local_nvme_warns_about_volume_size() -> None:
    checks = checks_of(endpoint={"volume_size_gb": 100})
    assert checks["role"].status == "warn" and "placeholder" in checks["role"].message
    assert checks["role"].fix == "pass role= or set PEAGLE_ROLE_ARN"  # --role at the CLI
    assert checks["endpoint.volume_size_gb"].status == "warn"
    assert "has local NVMe storage" in checks["endpoint.volume_size_gb"].message
    with_role = checks_of(role="arn:aws:iam::123456789012:role/r")
    assert "role" not in with_role and "endpoint.volume_size_gb" not in with_role


def test_without_a_planned_length_the_fit_assumes_8192_tokens() -> None:
    # qwen3-coder-30b-a3b-instruct: no JumpStart env, so no SM_VLLM_MAX_MODEL_LEN. 61.1 GB of
    # weights + 4 GB head of unknown size + 2 GB on one 96 GB GPU (86.4 usable): 19.3 GB of
    # room; 48 layers x 4 KV heads x 128 x 4 bytes x 8192 tokens = 0.805 GB a sequence.
    c = checks_of(
        model="qwen3-coder-30b-a3b-instruct",
        model_data="s3://acme-models/qwen/",
        drafter={"source": "s3://acme-models/qwen-head/"},
    )["fit"]
    assert c.message.endswith("KV room 19 GB (~23 x 8192 tokens)")


def test_a_head_given_by_source_has_no_catalog_size() -> None:
    c = checks_of(drafter={"source": "s3://acme-models/head/"})["fit"]
    assert "drafter 4.0 GB" in c.message  # the assumed size, not the catalog head's 3.6


def test_the_images_cuda_and_the_requested_ami_reach_the_ami_check() -> None:
    c = checks_of(container={"vllm_version": "0.20.0"})["endpoint.inference_ami_version"]
    assert c.message == f"cu130 image: host AMI set to {AMI_4_1} (driver 580)"
    c = checks_of(endpoint={"inference_ami_version": "al2-bogus"})["endpoint.inference_ami_version"]
    assert c.status == "fail" and c.message == "'al2-bogus' is not an InferenceAmiVersion"
    assert AMI_4_1 in c.fix  # the enum from botocore's service model


def test_deployment_warning_messages_in_full() -> None:
    checks = checks_of(endpoint={"volume_size_gb": 100})
    assert checks["endpoint.volume_size_gb"].message == (
        "ml.g7e.2xlarge has local NVMe storage; "
        "SageMaker may reject VolumeSizeInGB (an EBS volume size) for it"
    )
    assert checks["role"].message == (
        "no execution role given; the plan uses a placeholder ARN and deploy will refuse it"
    )


KEY = "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"


@pytest.mark.parametrize(
    # facts 6 / AWS's EC2 instance store specifications: each has NVMe instance storage
    "instance",
    ["ml.g7e.2xlarge", "ml.g7e.48xlarge", "ml.g6e.12xlarge", "ml.p5.48xlarge",
     "ml.p5en.48xlarge", "ml.p6-b200.48xlarge"],
)  # fmt: skip
def test_a_kms_key_on_a_local_storage_instance_fails_naming_the_field(instance: str) -> None:
    # CreateEndpointConfig API reference, KmsKeyId: "If you specify a value for KmsKeyId when
    # using any nitro-based instances with local storage, the call to CreateEndpointConfig
    # fails." A failure, not a warning, and on the field that causes it.
    checks = checks_of(endpoint={"instance_type": instance}, network={"kms_key_id": KEY})
    c = checks["network.kms_key_id"]
    assert c.status == "fail", c
    assert instance in c.message and "local NVMe instance storage" in c.message
    assert "CreateEndpointConfig fails" in c.message
    assert c.fix == "remove network.kms_key_id from the spec"
    assert "endpoint.volume_size_gb" not in checks  # no volume size given: nothing to warn


def test_the_instance_store_fact_is_catalog_data_with_its_source() -> None:
    for name in ("ml.g7e.2xlarge", "ml.p6-b200.48xlarge", "ml.p5.48xlarge"):
        inst = INSTANCES[name]
        assert inst.local_nvme is True
        assert "instance store" in (inst.storage_source or "")
        assert inst.to_dict()["local_nvme"] is True
    # A type outside the local-storage families is EBS-only: a KMS key is fine there.
    from sm_peagle.catalog.instances import InstanceType

    assert InstanceType("ml.m5.xlarge", 0, "-", 0, 4, 16).local_nvme is False


def test_failed_instance_checks_name_the_instance_type_field() -> None:
    for name, known in (
        ("ml.m5.xlarge", {"ml.m5.xlarge"}),
        ("ml.nope", set()),
        ("ml.p6e-gb200.36xlarge", set()),
    ):
        assert check_instance(name, frozenset(known))[1].name == "endpoint.instance_type"
    assert check_host_ami(None, "al2-bogus", AMIS)[1].name == "endpoint.inference_ami_version"
    fix = check_instance("ml.m5.xlarge", frozenset({"ml.m5.xlarge"}))[1].fix
    assert "ml.g6e.12xlarge, ml.g6e.16xlarge, ml.g6e.24xlarge" in fix  # sorted, comma-separated


def test_the_tags_deploy_adds_count_against_the_50() -> None:
    """SageMaker refuses a Create* with more than 50 tags. Deploy adds the spec's
    `peagle:spec:*` chunks (one for a small spec) and the operation's 4 keys to the
    user's tags and peagle's own 4 (managed, deployment, spec-sha256, version), so a spec
    with 41 tags of its own reaches 41 + 4 + 1 + 4 = 50 and 42 is refused at plan time,
    before anything is created, not by AWS halfway through a deploy."""
    fits = checks_of(tags={f"k{i}": "v" for i in range(41)})["tags"]
    assert (fits.status, fits.message) == ("pass", "50 tags")
    over = checks_of(tags={f"k{i}": "v" for i in range(42)})["tags"]
    assert over.status == "fail"
    assert over.message.startswith("51 tags including peagle's own (5 written at deploy time")
