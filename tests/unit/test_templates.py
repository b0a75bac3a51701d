"""templates/: every spec plans cleanly, the example exports are what `peagle export` /
`peagle iam-policy` produce today, and the exports carry the plan value by value.

Also checks the CloudFormation export against the cfn-lint installed here: its output
lints clean, its property tables stay within the AWS::SageMaker::* schemas, and the
AdditionalModelDataSources gap it refuses on is real in those schemas.
"""

from __future__ import annotations

import importlib
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from sm_peagle import plan
from sm_peagle.catalog.models import MODELS
from sm_peagle.iac.export import CFN_TABLES, export_text, tf_resource_id
from sm_peagle.iac.iam import execution_role_policy
from sm_peagle.planning.spec.model import Mode
from tests.plan_helpers import make_offline, run_cli
from tests.spec_tags_rule import documented_spec_tags, spec_data_in

ROOT = Path(__file__).resolve().parents[2]
SPECS = ROOT / "templates" / "specs"
TF_EXAMPLE = ROOT / "templates" / "terraform" / "gpt-oss-20b-p-eagle.tf.json"
IAM_EXAMPLE = ROOT / "templates" / "iam" / "execution-role-policy.json"
EXAMPLE_SPEC = SPECS / "gpt-oss-20b-p-eagle.yaml"
REGEN = (
    "regenerate: peagle export -f templates/specs/gpt-oss-20b-p-eagle.yaml --format terraform "
    "-o templates/terraform/gpt-oss-20b-p-eagle.tf.json; peagle iam-policy -f "
    "templates/specs/gpt-oss-20b-p-eagle.yaml --json | jq .policy > "
    "templates/iam/execution-role-policy.json"
)
# Every optional field the plan can carry: VPC, volume, routing, AMI, tar.gz data. No KMS
# key: every catalog type has local storage, where AWS refuses KmsKeyId (the plan fails).
RICH_SPEC: dict[str, Any] = {
    "model": "qwen3-coder-30b-a3b-instruct",
    "region": "eu-west-1",
    "role": "arn:aws:iam::111122223333:role/peagle-exec",
    "model_data": "s3://acme-models/qwen/model.tar.gz",
    "speculative": {"mode": "p-eagle", "num_speculative_tokens": 5},
    "drafter": {"source": "s3://acme-heads/qwen-p-eagle/", "channel": "draft"},
    "endpoint": {
        "instance_type": "ml.g6e.12xlarge",
        "instance_count": 2,
        "volume_size_gb": 200,
        "routing_strategy": "LEAST_OUTSTANDING_REQUESTS",
        "inference_ami_version": "al2-ami-sagemaker-inference-gpu-3-1",
        "model_data_download_timeout": 1200,
        "container_startup_health_check_timeout": 1800,
    },
    "network": {
        "subnets": ["subnet-0123abcd4567ef890"],
        "security_group_ids": ["sg-0123abcd4567ef890"],
    },
    "tags": {"team": "ml"},
}


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    make_offline(monkeypatch, tmp_path)  # templates must plan without AWS


def test_one_spec_per_model_and_mode() -> None:
    expected = {f"{m.alias}-{mode.value}.yaml" for m in MODELS for mode in Mode}
    assert {p.name for p in SPECS.glob("*.yaml")} == expected


@pytest.mark.parametrize("path", sorted(SPECS.glob("*.yaml")), ids=lambda p: p.stem)
def test_spec_template_plans_clean(path: Path) -> None:
    p = plan(path)
    not_passed = [(c.name, c.status) for c in p.checks if c.status != "pass"]
    assert not_passed == [("role", "warn")], [c for c in p.checks if c.status != "pass"]
    assert path.stem.endswith(p.spec.speculative.mode.value)
    if p.model is not None and not p.model.jumpstart_wiring_confirmed:
        # Unconfirmed wiring: the S3 locations are obvious placeholders, never guesses.
        container = p.create_model["PrimaryContainer"]
        uris = [container["ModelDataSource"]["S3DataSource"]["S3Uri"]] + [
            s["S3DataSource"]["S3Uri"] for s in container.get("AdditionalModelDataSources", [])
        ]
        assert all(u.startswith("s3://your-bucket/") for u in uris)
        assert "PLACEHOLDER" in path.read_text()


def test_terraform_example_is_a_fresh_export() -> None:
    assert TF_EXAMPLE.read_text() == export_text(plan(EXAMPLE_SPEC), "terraform"), REGEN


def test_iam_example_is_a_fresh_policy() -> None:
    policy = execution_role_policy(plan(EXAMPLE_SPEC)).policy
    assert IAM_EXAMPLE.read_text() == json.dumps(policy, indent=2) + "\n", REGEN


# --- Terraform: value by value against the plan ------------------------------------------
def _s3(src: dict[str, Any]) -> dict[str, Any]:
    s3 = src["S3DataSource"]
    return {
        "s3_uri": s3["S3Uri"],
        "s3_data_type": s3["S3DataType"],
        "compression_type": s3["CompressionType"],
    }


def _resolve(tf: dict[str, Any], ref: str) -> str:
    """`${aws_x.id.name}` -> that resource's name in the same document."""
    assert ref.startswith("${") and ref.endswith(".name}"), ref
    rtype, rid, _ = ref[2:-1].split(".")
    return tf["resource"][rtype][rid]["name"]


def assert_terraform_matches(tf: dict[str, Any], p: Any) -> None:
    rid = tf_resource_id(p)
    res = tf["resource"]
    assert set(res) == {
        "aws_sagemaker_model",
        "aws_sagemaker_endpoint_configuration",
        "aws_sagemaker_endpoint",
    }
    # 6.22.0 adds additional_model_data_source; a CUDA 13 plan's inference_ami_version
    # al2023-ami-sagemaker-inference-gpu-4-1 needs a provider whose AWS SDK knows it (6.39.0).
    variants = p.create_endpoint_config["ProductionVariants"]
    cuda13 = any(
        v.get("InferenceAmiVersion") == "al2023-ami-sagemaker-inference-gpu-4-1" for v in variants
    )
    assert tf["terraform"]["required_providers"]["aws"] == {
        "source": "hashicorp/aws",
        "version": ">= 6.39.0" if cuda13 else ">= 6.22.0",
    }
    cm, cfg, ep = p.create_model, p.create_endpoint_config, p.create_endpoint
    # The plan's tags plus the spec, as `peagle deploy` tags: `update` and `diff` read it.
    tags = {t["Key"]: t["Value"] for t in cm["Tags"]} | documented_spec_tags(p.spec)

    model = res["aws_sagemaker_model"][rid]
    container = cm["PrimaryContainer"]
    expected_pc: dict[str, Any] = {
        "image": p.image,
        "environment": container["Environment"],
    }
    assert container["Image"] == p.image
    if "ModelDataSource" in container:
        expected_pc["model_data_source"] = {"s3_data_source": _s3(container["ModelDataSource"])}
    if container.get("AdditionalModelDataSources"):
        expected_pc["additional_model_data_source"] = [
            {"channel_name": s["ChannelName"], "s3_data_source": _s3(s)}
            for s in container["AdditionalModelDataSources"]
        ]
    expected_model: dict[str, Any] = {
        "name": p.names["model"],
        "execution_role_arn": cm["ExecutionRoleArn"],
        "primary_container": expected_pc,
        "enable_network_isolation": cm["EnableNetworkIsolation"],
        "tags": tags,
        "region": p.region,
    }
    if "VpcConfig" in cm:
        expected_model["vpc_config"] = {
            "subnets": cm["VpcConfig"]["Subnets"],
            "security_group_ids": cm["VpcConfig"]["SecurityGroupIds"],
        }
    assert model == expected_model

    config = res["aws_sagemaker_endpoint_configuration"][rid]
    variants = []
    for v in cfg["ProductionVariants"]:
        tv: dict[str, Any] = {
            "variant_name": v["VariantName"],
            "model_name": f"${{aws_sagemaker_model.{rid}.name}}",
            "instance_type": v["InstanceType"],
            "initial_instance_count": v["InitialInstanceCount"],
            "container_startup_health_check_timeout_in_seconds": v[
                "ContainerStartupHealthCheckTimeoutInSeconds"
            ],
            "model_data_download_timeout_in_seconds": v["ModelDataDownloadTimeoutInSeconds"],
        }
        if "VolumeSizeInGB" in v:
            tv["volume_size_in_gb"] = v["VolumeSizeInGB"]
        if "RoutingConfig" in v:
            tv["routing_config"] = {"routing_strategy": v["RoutingConfig"]["RoutingStrategy"]}
        if "InferenceAmiVersion" in v:
            tv["inference_ami_version"] = v["InferenceAmiVersion"]
        variants.append(tv)
        assert v["ModelName"] == p.names["model"]
    expected_config: dict[str, Any] = {
        "name": p.names["endpoint_config"],
        "production_variants": variants,
        "tags": tags,
        "region": p.region,
    }
    if "KmsKeyId" in cfg:
        expected_config["kms_key_arn"] = cfg["KmsKeyId"]
    assert config == expected_config
    for tv in config["production_variants"]:
        assert _resolve(tf, tv["model_name"]) == p.names["model"]

    endpoint = res["aws_sagemaker_endpoint"][rid]
    assert endpoint == {
        "name": ep["EndpointName"],
        "endpoint_config_name": f"${{aws_sagemaker_endpoint_configuration.{rid}.name}}",
        "tags": tags,
        "region": p.region,
    }
    assert _resolve(tf, endpoint["endpoint_config_name"]) == ep["EndpointConfigName"]


def test_terraform_example_matches_its_plan() -> None:
    assert_terraform_matches(json.loads(TF_EXAMPLE.read_text()), plan(EXAMPLE_SPEC))


def test_terraform_export_carries_every_optional_field() -> None:
    p = plan(RICH_SPEC)
    tf = json.loads(export_text(p, "terraform"))
    assert_terraform_matches(tf, p)
    variant = tf["resource"]["aws_sagemaker_endpoint_configuration"][tf_resource_id(p)][
        "production_variants"
    ][0]
    assert {"volume_size_in_gb", "routing_config", "inference_ami_version"} <= set(variant)
    model = tf["resource"]["aws_sagemaker_model"][tf_resource_id(p)]
    assert model["primary_container"]["model_data_source"]["s3_data_source"]["s3_data_type"] == (
        "S3Object"
    )


def test_terraform_needs_a_kms_key_arn() -> None:
    spec = json.loads(json.dumps(RICH_SPEC))
    spec["network"]["kms_key_id"] = "1234abcd-12ab-34cd-56ef-1234567890ab"
    from sm_peagle.errors import SpecError

    with pytest.raises(SpecError, match="kms_key_arn"):
        export_text(plan(spec), "terraform")


# --- CloudFormation ------------------------------------------------------------------------
def _cfn_schema(type_name: str) -> dict[str, Any]:
    """The resource schema the installed cfn-lint validates `type_name` with."""
    cfnlint = pytest.importorskip("cfnlint")
    base = Path(cfnlint.__file__).parent / "data" / "schemas"
    # cfn-lint >= 1.5x maps type -> schema file in JSON; older releases in a Python module.
    json_map = base / "providers" / "us-east-1.json"
    if json_map.exists():
        types = json.loads(json_map.read_text())
    else:
        types = importlib.import_module("cfnlint.data.schemas.providers.us_east_1").types
    return json.loads((base / "resources" / f"{types[type_name]}.json").read_text())


def test_cfn_tables_stay_within_the_installed_schemas() -> None:
    for (type_name, definition), table in CFN_TABLES.items():
        schema = _cfn_schema(type_name)
        props = (schema["definitions"][definition] if definition else schema)["properties"]
        assert set(table) <= set(props), (type_name, definition, set(table) - set(props))
    container = _cfn_schema("AWS::SageMaker::Model")["definitions"]["ContainerDefinition"]
    # The gap the exporter refuses on: if a newer schema adds it, lift the refusal.
    assert "AdditionalModelDataSources" not in container["properties"]
    assert "ModelDataSource" in container["properties"]
    variant = _cfn_schema("AWS::SageMaker::EndpointConfig")["definitions"]["ProductionVariant"]
    assert {"InferenceAmiVersion", "RoutingConfig", "VolumeSizeInGB"} <= set(variant["properties"])


def test_cloudformation_baselines_pass_cfn_lint(tmp_path: Path) -> None:
    rich = json.loads(json.dumps(RICH_SPEC))
    rich["speculative"] = {"mode": "baseline"}
    plans = [plan(SPECS / "gpt-oss-20b-baseline.yaml"), plan(rich)]
    paths = []
    for i, p in enumerate(plans):
        path = tmp_path / f"stack{i}.json"
        path.write_text(export_text(p, "cloudformation"))
        paths.append(path)
        props = json.loads(path.read_text())["Resources"]["PeagleModel"]["Properties"]
        assert props["PrimaryContainer"] == p.create_model["PrimaryContainer"]
    exe = shutil.which("cfn-lint")
    if exe is None:
        pytest.skip("cfn-lint is not installed")
    # One cfn-lint run for both files: its start-up dominates.
    result = subprocess.run(
        [exe, "--", *map(str, paths)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr
    # Each resource carries the plan's tags and the spec, as `peagle deploy` tags them.
    for p, path in zip(plans, paths, strict=True):
        for resource in json.loads(path.read_text())["Resources"].values():
            expected = {t["Key"]: t["Value"] for t in p.create_model["Tags"]}
            assert {t["Key"]: t["Value"] for t in resource["Properties"]["Tags"]} == (
                expected | documented_spec_tags(p.spec)
            )
    for p, path in zip(plans, paths, strict=True):
        template = json.loads(path.read_text())
        res = template["Resources"]
        # Linked by Fn::GetAtt, not literal names + DependsOn: moto's CloudFormation ignores
        # the names and generates its own (facts 14); each GetAtt resolves to the plan's name.
        assert all("DependsOn" not in r for r in res.values())
        cfg = res["PeagleEndpointConfig"]["Properties"]
        [variant] = cfg["ProductionVariants"]
        assert variant["ModelName"] == {"Fn::GetAtt": ["PeagleModel", "ModelName"]}
        assert res["PeagleEndpoint"]["Properties"]["EndpointConfigName"] == {
            "Fn::GetAtt": ["PeagleEndpointConfig", "EndpointConfigName"]
        }
        resolved = [{**variant, "ModelName": _cfn_get_att(template, variant["ModelName"])}]
        assert resolved == p.create_endpoint_config["ProductionVariants"]
        assert (
            _cfn_get_att(template, res["PeagleEndpoint"]["Properties"]["EndpointConfigName"])
            == p.create_endpoint["EndpointConfigName"]
        )


def _cfn_get_att(template: dict[str, Any], ref: dict[str, Any]) -> Any:
    """What `{"Fn::GetAtt": [resource, attribute]}` names: ModelName / EndpointConfigName
    are the resource's name properties (AWS::SageMaker::* return values)."""
    logical, attribute = ref["Fn::GetAtt"]
    return template["Resources"][logical]["Properties"][attribute]


def test_cloudformation_refuses_a_drafter_channel(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(
        capsys, "export", "-f", str(EXAMPLE_SPEC), "--format", "cloudformation"
    )
    assert code == 2 and out == ""
    line = [ln for ln in err.splitlines() if ln.startswith("error:")]
    assert len(line) == 1
    assert "AdditionalModelDataSources" in line[0] and "'eagle'" in line[0]
    assert "--format terraform" in line[0] and "peagle apply" in line[0]


# --- the CLI -------------------------------------------------------------------------------
def test_export_output_file_equals_stdout(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, _ = run_cli(capsys, "export", "-f", str(EXAMPLE_SPEC), "--format", "terraform")
    assert code == 0 and out == TF_EXAMPLE.read_text()
    target = tmp_path / "main.tf.json"
    code, out, err = run_cli(capsys, "export", "-f", str(EXAMPLE_SPEC), "-o", str(target))
    assert code == 0 and out == "" and str(target) in err
    assert target.read_text() == TF_EXAMPLE.read_text()


def test_export_json_is_the_plan(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "export", "-f", str(EXAMPLE_SPEC), "--format", "json")
    assert code == 0
    assert json.loads(out) == json.loads(json.dumps(plan(EXAMPLE_SPEC).to_dict()))


def test_export_bad_format_and_failed_plan(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "export", "-f", str(EXAMPLE_SPEC), "--format", "pulumi")
    assert code == 2 and "--format" in err
    # A plan with a failed check is not exported (offline, qwen's weights have no known home).
    code, out, err = run_cli(
        capsys, "export", "qwen3-coder-30b-a3b-instruct", "--format", "terraform"
    )
    assert code == 2 and out == "" and "error:" in err


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        ({"endpoint": {"fallback_instance_types": ["ml.g7e.4xlarge"]}}, "fallback pools"),
        ({"autoscaling": {"min_instances": 1, "max_instances": 2}}, "autoscaling"),
    ],
    ids=["fallback-pools", "autoscaling"],
)
@pytest.mark.parametrize("fmt", ["terraform", "cloudformation"])
def test_export_refuses_what_it_cannot_carry(extra: dict, needle: str, fmt: str) -> None:
    """Requests outside the three resources are refused, never silently dropped."""
    from sm_peagle.errors import SpecError

    spec = {"model": "gpt-oss-20b", "region": "us-east-1", "speculative": {"mode": "baseline"}}
    p = plan({**spec, **extra})
    with pytest.raises(SpecError, match=needle):
        export_text(p, fmt)
    assert json.loads(export_text(p, "json"))["create_model"] == p.create_model


def test_terraform_escapes_template_sequences() -> None:
    """Terraform JSON strings are templates: a literal "${X}" must not be interpolated."""
    spec = {
        "model": "gpt-oss-20b",
        "region": "us-east-1",
        "container": {"env": {"GREETING": "${HOME} and %{ if }"}},
    }
    p = plan(spec)
    tf = json.loads(export_text(p, "terraform"))
    env = tf["resource"]["aws_sagemaker_model"][tf_resource_id(p)]["primary_container"][
        "environment"
    ]
    assert env["GREETING"] == "$${HOME} and %%{ if }"
    cfn = json.loads(
        export_text(plan({**spec, "speculative": {"mode": "baseline"}}), "cloudformation")
    )
    assert (
        cfn["Resources"]["PeagleModel"]["Properties"]["PrimaryContainer"]["Environment"]["GREETING"]
        == "${HOME} and %{ if }"
    )


def test_terraform_example_values_by_hand() -> None:
    """The example export's key values, written from their sources (not from the exporter):
    JumpStart's lmi-optimized config of openai-reasoning-gpt-oss-20b v3.38.0 (image, the
    P-EAGLE config with K=3, prepacked weights, the head under lmi-eagle-heads/, 3600 s
    timeouts), the catalog's default instance (ml.g7e.2xlarge), and the AWS provider
    release that added additional_model_data_source (6.22.0)."""
    tf = json.loads(TF_EXAMPLE.read_text())
    assert tf["terraform"]["required_providers"]["aws"]["version"] == ">= 6.22.0"
    res = tf["resource"]
    (model,) = res["aws_sagemaker_model"].values()
    pc = model["primary_container"]
    assert pc["image"] == (
        "763104351884.dkr.ecr.us-east-1.amazonaws.com/"
        "vllm:0.18.0-gpu-py312-cu129-ubuntu22.04-sagemaker"
    )
    assert json.loads(pc["environment"]["SM_VLLM_SPECULATIVE_CONFIG"]) == {
        "model": "/opt/ml/additional-model-data-sources/eagle",
        "method": "eagle3",
        "num_speculative_tokens": 3,
        "parallel_drafting": True,
    }
    js = "s3://jumpstart-cache-prod-us-east-1/"
    assert pc["model_data_source"]["s3_data_source"] == {
        "s3_uri": js
        + "openai-reasoning/openai-reasoning-gpt-oss-20b/artifacts/inference-prepack/v1.0.0/",
        "s3_data_type": "S3Prefix",
        "compression_type": "None",
    }
    assert pc["additional_model_data_source"] == [
        {
            "channel_name": "eagle",
            "s3_data_source": {
                "s3_uri": js + "lmi-eagle-heads/models/gpt-oss-20b-p-eagle/",
                "s3_data_type": "S3Prefix",
                "compression_type": "None",
            },
        }
    ]
    assert model["enable_network_isolation"] is True
    (cfg,) = res["aws_sagemaker_endpoint_configuration"].values()
    (variant,) = cfg["production_variants"]
    assert (variant["instance_type"], variant["initial_instance_count"]) == ("ml.g7e.2xlarge", 1)
    assert variant["container_startup_health_check_timeout_in_seconds"] == 3600
    assert variant["model_data_download_timeout_in_seconds"] == 3600
    (ep,) = res["aws_sagemaker_endpoint"].values()
    assert ep["name"] == "peagle-gpt-oss-20b-p-eagle"
    # The spec rides along (what `peagle update` reads): the example spec's non-default
    # fields (p-eagle is the default mode), so the endpoint is peagle's once applied.
    for resource in (model, cfg, ep):
        assert resource["tags"]["peagle:managed"] == "true"
        assert spec_data_in(resource["tags"]) == {"model": "gpt-oss-20b", "region": "us-east-1"}
