"""Shared helpers for the plan tests: drive the real CLI in-process, read the real
JumpStart spec fixture, and derive what JumpStart's lmi-optimized config deploys
straight from that file (never from peagle's own output)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

FIXTURE = (
    Path(__file__).parent / "fixtures" / "openai-reasoning-gpt-oss-20b.specs_v3.38.0.trimmed.json"
)
SPEC_ENV = "SM_VLLM_SPECULATIVE_CONFIG"
# gpt-oss-20b with two inference components (p-eagle K=7 and a baseline), one GPU each,
# scaling to zero: the component scenario that the plan, moto and sandbox tests share.
TWO_COMPONENTS = (
    "gpt-oss-20b",
    "-t",
    "ml.g7e.12xlarge",
    "--component",
    "p-eagle:k=7",
    "--component",
    "baseline",
    "--accelerators-per-copy",
    "1",
    "--scale-to-zero",
)
# The tiny model with the same two components (K=3, the tiny head's), one accelerator
# each on an 8-GPU instance: the engine-host sandbox tests' scenario (fake and real vLLM).
TINY_TWO_COMPONENTS = (
    "tiny-llama",
    "-t",
    "ml.g7e.12xlarge",
    "--component",
    "p-eagle:k=3",
    "--component",
    "baseline",
    "--accelerators-per-copy",
    "1",
)


def load_fixture() -> dict[str, Any]:
    return json.loads(FIXTURE.read_text())


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """`peagle <argv>` in this process: (exit code, stdout, stderr)."""
    from sm_peagle.cli.app import main

    capsys.readouterr()  # drop anything printed before
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def plan_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    code, out, err = run_cli(capsys, "plan", *argv, "--json")
    assert code == 0, err
    return json.loads(out)


def make_offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No AWS credentials, region, profile or config file can be found: the plan path must
    not go live (and cannot, if it tried)."""
    for name in list(os.environ):
        if name.startswith("AWS_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))


def lmi_optimized(
    spec: dict[str, Any], *, region: str = "us-east-1", instance_type: str | None = None
) -> dict[str, Any]:
    """What JumpStart's top-ranked config (lmi-optimized) deploys, read from the spec file:
    the config's components override the base spec, the family variant names an image
    alias, and the region's alias table resolves it."""
    config = spec["inference_config_rankings"]["overall"]["rankings"][0]
    assert config == "lmi-optimized"  # the fixture is the spec we think it is
    view = dict(spec)
    for component in spec["inference_configs"][config]["component_names"]:
        view.update(spec["inference_config_components"][component])
    instance_type = instance_type or view["default_inference_instance_type"]
    family = instance_type.split(".")[1]
    variants = view["hosting_instance_type_variants"]
    alias = variants["variants"][family]["regional_properties"]["image_uri"]
    assert alias.startswith("$")
    image = variants["regional_aliases"][region][alias[1:]]
    bucket = f"jumpstart-cache-prod-{region}"
    head = view["hosting_additional_data_sources"]["speculative_decoding"][0]
    env = {v["name"]: str(v["default"]) for v in view["inference_environment_variables"]}
    return {
        "config": config,
        "instance_type": instance_type,
        "image": image,
        "model_data": {
            "S3DataSource": {
                "S3Uri": f"s3://{bucket}/{view['hosting_prepacked_artifact_key']}",
                "S3DataType": view["hosting_artifact_s3_data_type"],
                "CompressionType": view["hosting_artifact_compression_type"],
            }
        },
        "channel": head["channel_name"],
        "head_uri": f"s3://{bucket}/{head['s3_data_source']['s3_uri']}",
        "head_data_type": head["s3_data_source"]["s3_data_type"],
        "head_compression": head["s3_data_source"]["compression_type"],
        "env": env,
        "speculative_config": json.loads(env[SPEC_ENV]),
        "network_isolation": view["inference_enable_network_isolation"],
        "startup_timeout": view["deploy_kwargs"]["container_startup_health_check_timeout"],
        "download_timeout": view["deploy_kwargs"]["model_data_download_timeout"],
        "vllm_version": view["hosting_ecr_specs"]["framework_version"],
    }


def assert_matches_lmi_optimized(
    create_model: dict[str, Any], variant: dict[str, Any], expected: dict[str, Any]
) -> None:
    """Field by field: image, weights, the drafter channel, env, isolation, timeouts."""
    container = create_model["PrimaryContainer"]
    assert container["Image"] == expected["image"]
    assert container["ModelDataSource"] == expected["model_data"]
    (head,) = container["AdditionalModelDataSources"]
    assert head == {
        "ChannelName": expected["channel"],
        "S3DataSource": {
            "S3Uri": expected["head_uri"],
            "S3DataType": expected["head_data_type"],
            "CompressionType": expected["head_compression"],
        },
    }
    env = container["Environment"]
    assert json.loads(env[SPEC_ENV]) == expected["speculative_config"]
    for name in (
        "SM_VLLM_MAX_MODEL_LEN",
        "SM_VLLM_TENSOR_PARALLEL_SIZE",
        "HF_MODEL_ID",
        "TIKTOKEN_ENCODINGS_BASE",
    ):
        assert env[name] == expected["env"][name], name
    assert create_model["EnableNetworkIsolation"] is expected["network_isolation"]
    assert variant["InstanceType"] == expected["instance_type"]
    assert variant["ContainerStartupHealthCheckTimeoutInSeconds"] == expected["startup_timeout"]
    assert variant["ModelDataDownloadTimeoutInSeconds"] == expected["download_timeout"]
