"""Fidelity, items 2/3/5 and Build 2-4: images from the published list, CUDA 13 for both
families, per-model minimum vLLM, old DLC entrypoints.

Mirrors aws/deep-learning-containers `docs/src/data/vllm/<version>-gpu-sagemaker.yml`
(classic tags), its changelog (`server-sagemaker-cuda-v*`), the entrypoint history of
`scripts/docker/vllm/sagemaker_entrypoint.sh` (facts 3), and vLLM's
`model_executor/models/registry.py` / `v1/spec_decode/eagle.py` for the model minimums.
"""

from __future__ import annotations

from typing import Any

import pytest

from sm_peagle.catalog.images import classic_versions, find_image, nearest_classic
from sm_peagle.errors import SpecError
from sm_peagle.planning.build import plan
from sm_peagle.planning.spec.loading import spec_from_data
from sm_peagle.vllm.versions import VllmVersion as V
from tests.plan_helpers import run_cli

AMI = "al2023-ami-sagemaker-inference-gpu-4-1"
ECR = "763104351884.dkr.ecr.us-east-1.amazonaws.com/vllm"
MINE = "123456789012.dkr.ecr.us-east-1.amazonaws.com"
DATA = {"model_data": "s3://my-bucket/weights/", "drafter": {"source": "s3://my-bucket/head/"}}


def make(model: str = "gpt-oss-20b", **spec: Any):
    return plan(spec_from_data({"model": model, "region": "us-east-1", **DATA, **spec}))


def checks(p) -> dict[str, Any]:
    return {c.name: c for c in p.checks}


def ami(p) -> str | None:
    return p.create_endpoint_config["ProductionVariants"][0].get("InferenceAmiVersion")


# (version asked, nearest published classic, server image carrying it or None)
UNPUBLISHED = [
    ("0.27.0", "0.27.1", "server-sagemaker-cuda-v2.3.0"),
    ("0.14.1", "0.14.0", None),
    ("0.15.0", "0.15.1", None),
    ("0.32.0", "0.31.0", None),
]


@pytest.mark.parametrize(("version", "nearest", "server"), UNPUBLISHED)
def test_unpublished_classic_version_is_refused_with_the_nearest(
    capsys: pytest.CaptureFixture[str], version: str, nearest: str, server: str | None
) -> None:
    assert nearest_classic(V(version)) == V(nearest)
    with pytest.raises(SpecError) as err:
        make(container={"vllm_version": version})
    assert f"vllm_version={nearest!r}" in (err.value.remedy or "")  # --vllm-version at the CLI
    assert err.value.field == "vllm_version"
    if server:
        assert server in (err.value.remedy or "")
    code, _, errout = run_cli(
        capsys,
        "plan",
        "gpt-oss-20b",
        "--model-data",
        DATA["model_data"],
        "--drafter",
        DATA["drafter"]["source"],
        "--vllm-version",
        version,
    )
    assert code == 2 and f"--vllm-version {nearest}" in errout


def test_published_classic_versions_are_the_dlc_list() -> None:
    expected = [
        "0.13.0",
        "0.14.0",
        "0.15.1",
        "0.16.0",
        "0.17.0",
        "0.17.1",
        "0.18.0",
        "0.18.1",
        "0.19.0",
        "0.19.1",
        "0.20.0",
        "0.20.1",
        "0.20.2",
        "0.21.0",
        "0.22.0",
        "0.22.1",
        "0.23.0",
        "0.24.0",
        "0.25.0",
        "0.25.1",
        "0.26.0",
        "0.27.1",
        "0.28.0",
        "0.29.0",
        "0.30.0",
        "0.31.0",
    ]
    assert [str(v) for v in classic_versions()] == expected


# (tag, vLLM, CUDA 13?, floating?, entrypoint rules)
ROWS = [
    ("0.16.0-gpu-py312-cu129-ubuntu22.04-sagemaker", "0.16.0", False, False, "pre-2026-03-17"),
    ("0.18.0-gpu-py312-cu129-ubuntu22.04-sagemaker", "0.18.0", False, False, "2026-03-17"),
    ("0.20.0-gpu-py312-cu130-ubuntu22.04-sagemaker", "0.20.0", True, False, "2026-03-17"),
    ("0.31.0-gpu-py312-cu130-ubuntu24.04-sagemaker", "0.31.0", True, False, "2026-08-19"),
    ("server-sagemaker-cuda-v2.3", "0.27.0", True, True, "2026-03-17"),
    ("server-sagemaker-cuda-v2.4.0", "0.27.1", True, False, "2026-08-19"),
    ("server-sagemaker-cuda-v1.0.0", "0.19.1", False, False, "2026-03-17"),
    ("server-sagemaker-cuda", "0.30.0", True, True, "2026-08-19"),
]


@pytest.mark.parametrize(("tag", "version", "cuda13", "floating", "rules"), ROWS)
def test_published_rows(tag: str, version: str, cuda13: bool, floating: bool, rules: str) -> None:
    row = find_image(f"{ECR}:{tag}")
    assert row is not None
    assert (row.vllm_version, row.cuda13, row.floating, row.entrypoint_rules) == (
        version,
        cuda13,
        floating,
        rules,
    )


def test_server_image_gets_the_cuda13_ami_and_a_floating_warning() -> None:
    p = make(container={"image": f"{ECR}:server-sagemaker-cuda-v2.3"})
    assert p.vllm_version == "0.27.0" and ami(p) == AMI
    c = checks(p)["container.image"]
    assert c.status == "warn" and "floating" in c.message
    assert "server-sagemaker-cuda-v2.3.0" in (c.fix or "")
    pinned = make(container={"image": f"{ECR}:server-sagemaker-cuda-v2.3.0"})
    assert ami(pinned) == AMI and "container.image" not in checks(pinned)


@pytest.mark.parametrize(
    ("image", "extra", "version", "cuda13"),
    [
        (f"{MINE}/my-vllm:latest", {"vllm_version": "0.22.0", "cuda": "cu130"}, "0.22.0", True),
        (f"{MINE}/vllm:0.22.0-gpu-py312-cu130-custom", {}, "0.22.0", True),
        (f"{MINE}/my-vllm:latest", {"vllm_version": "0.18.0"}, "0.18.0", False),
    ],
)
def test_unlisted_image_is_allowed_with_a_warning(
    image: str, extra: dict, version: str, cuda13: bool
) -> None:
    p = make(container={"image": image, **extra})
    assert p.vllm_version == version and (ami(p) == AMI) is cuda13
    c = checks(p)["container.image"]
    assert c.status == "warn" and "not a published SageMaker vLLM image" in c.message


# Per-model minimum vLLM (registry.py: Gemma4* from 0.19.0; eagle.py: multimodal +
# parallel drafting raises NotImplementedError before 0.21.0).
@pytest.mark.parametrize(
    ("mode", "default", "too_old", "needs"),
    [
        ("p-eagle", "0.21.0", "0.20.2", "0.21.0"),
        ("eagle3", "0.19.0", "0.18.1", "0.19.0"),
        ("baseline", "0.19.0", "0.18.0", "0.19.0"),
    ],
)
def test_gemma4_minimum_vllm(mode: str, default: str, too_old: str, needs: str) -> None:
    p = make("gemma-4-31b-it", speculative={"mode": mode})
    assert p.vllm_version == default and p.ok
    assert f"vllm:{default}-gpu-py312-" in p.image
    assert (ami(p) == AMI) is (V(default) >= V("0.20.0"))  # cu130 from 0.20.0
    bad = make("gemma-4-31b-it", speculative={"mode": mode}, container={"vllm_version": too_old})
    c = checks(bad)["container.vllm_version"]
    assert not bad.ok and c.status == "fail" and f"needs vLLM >= {needs}" in c.message


def test_gemma_plan_command_yields_a_published_021_image(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import json

    code, out, _ = run_cli(
        capsys,
        "plan",
        "gemma-4-31b-it",
        "--model-data",
        DATA["model_data"],
        "--drafter",
        DATA["drafter"]["source"],
        "--json",
    )
    assert code == 0
    doc = json.loads(out)
    assert doc["vllm_version"] == "0.21.0"
    variant = doc["create_endpoint_config"]["ProductionVariants"][0]
    assert variant["InferenceAmiVersion"] == AMI
    image = doc["create_model"]["PrimaryContainer"]["Image"]
    assert find_image(image) is not None and not find_image(image).floating


def test_models_with_a_jumpstart_pin_keep_0_18_0() -> None:
    assert make().vllm_version == "0.18.0"  # JumpStart lmi-optimized pins 0.18.0


# Entrypoint rules before 2026-03-17 (0.16.0-0.17.1): no true/false, no model ladder.
@pytest.mark.parametrize(
    ("version", "old"), [("0.16.0", True), ("0.17.1", True), ("0.18.0", False)]
)
def test_old_dlc_entrypoint_gets_the_model_and_no_booleans(version: str, old: bool) -> None:
    p = make(
        "qwen3-coder-30b-a3b-instruct",
        container={
            "vllm_version": version,
            "engine_args": {"enforce_eager": True, "trust_remote_code": False},
        },
    )
    env = p.create_model["PrimaryContainer"]["Environment"]
    if old:
        assert env["SM_VLLM_MODEL"] == "/opt/ml/model"
        assert env["SM_VLLM_ENFORCE_EAGER"] == "" and "SM_VLLM_TRUST_REMOTE_CODE" not in env
        assert not [v for v in env.values() if v.strip().lower() in ("true", "false")]
    else:
        assert "SM_VLLM_MODEL" not in env
        assert (
            env["SM_VLLM_ENFORCE_EAGER"] == "true" and env["SM_VLLM_TRUST_REMOTE_CODE"] == "false"
        )
