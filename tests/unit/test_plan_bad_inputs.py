"""Bad input to `peagle plan`: exit 2, one `error: <field>: …` line on stderr, no traceback.

Each case names the spec field a user has to change; the test asserts the error line
starts with exactly that field (or, for a file that cannot be read, names the file).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from tests.plan_helpers import make_offline, run_cli

VLLM_015 = (
    "763104351884.dkr.ecr.us-east-1.amazonaws.com/vllm:0.15.1-gpu-py312-cu129-ubuntu22.04-sagemaker"
)
S3 = ("--model-data", "s3://peagle-test-bucket/weights/", "--drafter", "s3://peagle-test-bucket/d/")


@dataclass(frozen=True)
class Case:
    id: str
    argv: tuple[str, ...]
    field: str  # the error line must start with "error: <field>:"
    files: dict[str, str] = field(default_factory=dict)  # name -> content, under tmp_path
    names_file: bool = False  # the error is about the file itself: it must name its path


def spec_case(id: str, body: str, field: str, *extra: str, suffix: str = "yaml") -> Case:
    name = f"spec.{suffix}"
    return Case(id, ("-f", "{tmp}/" + name, *extra), field, {name: body})


_BIG = "x" * 1025
_MANY_TAGS = "".join(f"  team-{i}: v\n" for i in range(47))

CASES = [
    # -- K -----------------------------------------------------------------------------
    Case("k-zero", ("gpt-oss-20b", "-k", "0"), "speculative.num_speculative_tokens"),
    Case("k-negative", ("gpt-oss-20b", "-k", "-1"), "speculative.num_speculative_tokens"),
    Case("k-above-trained", ("gpt-oss-20b", "-k", "11"), "speculative.num_speculative_tokens"),
    Case("k-above-vllm-limit", ("gpt-oss-20b", "-k", "129"), "speculative.num_speculative_tokens"),
    Case("k-not-a-number", ("gpt-oss-20b", "-k", "abc"), "Invalid value for '-k'"),
    # -- model ---------------------------------------------------------------------------
    Case("unknown-model", ("no-such-model",), "model"),
    Case("model-bad-characters", ("gpt oss",), "model"),
    Case("120b-without-weights-offline", ("gpt-oss-120b",), "model_data"),
    Case("bucket-too-short", ("gpt-oss-120b", "--model-data", "s3://b/m/"), "model_data"),
    Case("malformed-s3-uri", ("gpt-oss-20b", "--model-data", "s3://Bad_Bucket/x/"), "model_data"),
    Case(
        "weights-not-prefix", ("gpt-oss-20b", "--model-data", "s3://my-bucket/w.bin"), "model_data"
    ),
    Case(
        "hf-weights-with-isolation",
        ("gpt-oss-20b", "--model-data", "hf://openai/gpt-oss-20b"),
        "network.enable_network_isolation",
    ),
    # -- instance ------------------------------------------------------------------------
    Case("cpu-instance", ("gpt-oss-20b", "-t", "ml.t2.medium"), "endpoint.instance_type"),
    Case("bogus-instance", ("gpt-oss-20b", "-t", "ml.bogus.large"), "endpoint.instance_type"),
    Case("arm-host", ("gpt-oss-20b", "-t", "ml.p6e-gb200.36xlarge"), "endpoint.instance_type"),
    Case("not-an-instance-name", ("gpt-oss-20b", "-t", "g7e.2xlarge"), "endpoint.instance_type"),
    Case(
        "does-not-fit",
        ("gpt-oss-120b", "-t", "ml.g6e.xlarge", *S3),
        "endpoint.instance_type",
    ),
    Case(
        "instance-count-zero", ("gpt-oss-20b", "--instance-count", "0"), "endpoint.instance_count"
    ),
    # -- names -----------------------------------------------------------------------------
    Case("name-underscore", ("gpt-oss-20b", "--name", "my_endpoint"), "endpoint.name"),
    Case("name-64-chars", ("gpt-oss-20b", "--name", "e" * 64), "endpoint.name"),
    spec_case(
        "variant-name-dot",
        "model: gpt-oss-20b\nendpoint: {variant_name: a.b}\n",
        "endpoint.variant_name",
    ),
    # -- drafter ---------------------------------------------------------------------------
    Case("drafter-not-prefix", ("gpt-oss-20b", "--drafter", "s3://my-bucket/d"), "drafter.source"),
    Case(
        "drafter-dir-missing", ("gpt-oss-20b", "--drafter", "{tmp}/no-such-dir"), "drafter.source"
    ),
    Case(
        "gemma-head-unknown",
        ("gemma-4-31b-it", "--model-data", "s3://peagle-test-bucket/weights/"),
        "drafter.source",
    ),
    spec_case(
        "channel-with-slash", 'model: gpt-oss-20b\ndrafter: {channel: "a/b"}\n', "drafter.channel"
    ),
    # -- image and vLLM version ------------------------------------------------------------
    Case(
        "p-eagle-on-vllm-0.15",
        ("gpt-oss-20b", "--mode", "p-eagle", "--image", VLLM_015),
        "speculative.mode",
    ),
    Case(
        "version-contradicts-image",
        ("gpt-oss-20b", "--vllm-version", "0.18.0", "--image", VLLM_015),
        "container.vllm_version",
    ),
    Case(
        "no-dlc-for-version", ("gpt-oss-20b", "--vllm-version", "0.12.0"), "container.vllm_version"
    ),
    Case("not-a-version", ("gpt-oss-20b", "--vllm-version", "banana"), "container.vllm_version"),
    Case("image-without-tag", ("gpt-oss-20b", "--image", "myimage"), "container.image"),
    Case("unknown-mode", ("gpt-oss-20b", "--mode", "fast"), "speculative.mode"),
    spec_case(
        "cuda13-with-old-ami",
        "model: gpt-oss-20b\ncontainer: {vllm_version: '0.22.0'}\n"
        "endpoint: {inference_ami_version: al2-ami-sagemaker-inference-gpu-3-1}\n",
        "endpoint.inference_ami_version",
    ),
    spec_case(
        "unknown-ami",
        "model: gpt-oss-20b\nendpoint: {inference_ami_version: bogus}\n",
        "endpoint.inference_ami_version",
    ),
    spec_case(
        "disable-by-batch-size-on-0.18",
        "model: gpt-oss-20b\nspeculative: {disable_by_batch_size: 8}\n",
        "speculative.disable_by_batch_size",
    ),
    spec_case(
        "draft-tp-not-1-or-target",
        "model: gpt-oss-20b\nspeculative: {draft_tensor_parallel_size: 2}\n",
        "speculative.draft_tensor_parallel_size",
    ),
    # -- container env and engine args -----------------------------------------------------
    spec_case(
        "env-value-over-1024",
        f"model: gpt-oss-20b\ncontainer:\n  env: {{BIG: {_BIG}}}\n",
        "container.env.BIG",
    ),
    spec_case(
        "env-sets-speculative-config",
        "model: gpt-oss-20b\ncontainer:\n  env: {SM_VLLM_SPECULATIVE_CONFIG: '{}'}\n",
        "container.env.SM_VLLM_SPECULATIVE_CONFIG",
    ),
    spec_case(
        "tp-3-on-8-gpus",
        "model: gpt-oss-20b\nendpoint: {instance_type: ml.g7e.48xlarge}\n"
        "container: {engine_args: {tensor_parallel_size: 3}}\n",
        "container.engine_args.tensor_parallel_size",
    ),
    spec_case(
        "tp-not-a-number",
        "model: gpt-oss-20b\ncontainer: {engine_args: {tensor_parallel_size: abc}}\n",
        "container.engine_args.tensor_parallel_size",
    ),
    spec_case(
        "tp-fractional",
        "model: gpt-oss-20b\ncontainer: {engine_args: {tensor_parallel_size: 2.5}}\n",
        "container.engine_args.tensor_parallel_size",
    ),
    spec_case(
        "max-model-len-not-a-number",
        "model: gpt-oss-20b\ncontainer: {engine_args: {max_model_len: lots}}\n",
        "container.engine_args.max_model_len",
    ),
    spec_case(
        "gpu-util-above-1",
        "model: gpt-oss-20b\ncontainer: {env: {SM_VLLM_GPU_MEMORY_UTILIZATION: '1.5'}}\n",
        "container.env.SM_VLLM_GPU_MEMORY_UTILIZATION",
    ),
    spec_case(
        "speculative-config-as-engine-arg",
        "model: gpt-oss-20b\ncontainer: {engine_args: {speculative_config: x}}\n",
        "container.engine_args",
    ),
    # -- endpoint settings -----------------------------------------------------------------
    spec_case(
        "download-timeout-30",
        "model: gpt-oss-20b\nendpoint: {model_data_download_timeout: 30}\n",
        "endpoint.model_data_download_timeout",
    ),
    spec_case(
        "startup-timeout-4000",
        "model: gpt-oss-20b\nendpoint: {container_startup_health_check_timeout: 4000}\n",
        "endpoint.container_startup_health_check_timeout",
    ),
    spec_case(
        "volume-zero",
        "model: gpt-oss-20b\nendpoint: {volume_size_gb: 0}\n",
        "endpoint.volume_size_gb",
    ),
    spec_case(
        "jumpstart-config-unknown",
        "model: gpt-oss-20b\njumpstart_config: fastest\n",
        "jumpstart_config",
    ),
    # -- account, region, network, tags ----------------------------------------------------
    Case("bad-region", ("gpt-oss-20b", "--region", "us-east"), "region"),
    Case("region-jumpstart-lacks", ("gpt-oss-20b", "--region", "eu-west-9"), "region"),
    Case("bad-role-arn", ("gpt-oss-20b", "--role", "arn:aws:iam::123:role/x"), "role"),
    spec_case(
        "subnets-without-sgs",
        "model: gpt-oss-20b\nnetwork: {subnets: [subnet-0123abcd]}\n",
        "network",
    ),
    spec_case("reserved-tag-key", "model: gpt-oss-20b\ntags: {'aws:x': y}\n", "tags.aws:x"),
    spec_case("too-many-tags", f"model: gpt-oss-20b\ntags:\n{_MANY_TAGS}", "tags"),
    # -- monitoring (speculation health) -----------------------------------------------------
    Case("monitor-a-baseline", ("gpt-oss-20b", "--mode", "baseline", "--monitor"), "monitoring"),
    spec_case(
        "monitoring-period-not-minutes",
        "model: gpt-oss-20b\nmonitoring: {period_seconds: 90}\n",
        "monitoring.period_seconds",
    ),
    spec_case(
        "monitoring-retention-not-offered",
        "model: gpt-oss-20b\nmonitoring: {log_retention_days: 10}\n",
        "monitoring.log_retention_days",
    ),
    spec_case(
        "monitoring-more-datapoints-than-periods",
        "model: gpt-oss-20b\nmonitoring: {evaluation_periods: 2, datapoints_to_alarm: 3}\n",
        "monitoring",
    ),
    spec_case(
        "monitoring-threshold-not-above-one",
        "model: gpt-oss-20b\nmonitoring: {threshold: 1.0}\n",
        "monitoring.threshold",
    ),
    # -- the spec file itself --------------------------------------------------------------
    spec_case("unknown-top-level-key", "model: gpt-oss-20b\ncolour: red\n", "colour"),
    spec_case(
        "unknown-nested-key",
        "model: gpt-oss-20b\nendpoint: {instance_typ: ml.g7e.2xlarge}\n",
        "endpoint.instance_typ",
    ),
    spec_case("spec-missing-model", "region: us-east-1\n", "model"),
    Case(
        "spec-file-not-found", ("-f", "{tmp}/missing.yaml"), "{tmp}/missing.yaml", names_file=True
    ),
    Case(
        "invalid-yaml",
        ("-f", "{tmp}/bad.yaml"),
        "{tmp}/bad.yaml",
        {"bad.yaml": "a: [b\n"},
        names_file=True,
    ),
    Case(
        "invalid-json",
        ("-f", "{tmp}/bad.json"),
        "{tmp}/bad.json",
        {"bad.json": "{'a': 1}"},
        names_file=True,
    ),
    Case(
        "spec-not-a-mapping",
        ("-f", "{tmp}/list.yaml"),
        "{tmp}/list.yaml",
        {"list.yaml": "- a\n- b\n"},
        names_file=True,
    ),
]


# Spec sections whose bad inputs are tested elsewhere, and where.
ELSEWHERE = {
    "autoscaling": "tests/integration/test_scaling.py",
    "inference_components": "tests/unit/test_plan_components.py",
}


def test_every_spec_section_has_a_bad_input_case_and_ids_are_unique() -> None:
    # A new section of the spec comes with a case here (or says where its cases are).
    from sm_peagle.planning.spec.model import DeploymentSpec

    covered = {c.field.split(".")[0] for c in CASES}
    missing = set(DeploymentSpec.model_fields) - covered - set(ELSEWHERE)
    assert missing == set(), f"no bad-input case for {sorted(missing)}"
    assert len({c.id for c in CASES}) == len(CASES)


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    make_offline(monkeypatch, tmp_path)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_exits_2_with_one_line_naming_the_field(case: Case, capsys, tmp_path, offline):
    for name, body in case.files.items():
        (tmp_path / name).write_text(body)
    argv = [a.replace("{tmp}", str(tmp_path)) for a in case.argv]

    code, out, err = run_cli(capsys, "plan", *argv)

    assert code == 2, (code, err)
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, err
    line = lines[0]
    where = case.field.replace("{tmp}", str(tmp_path))
    if case.names_file:
        assert line.startswith("error: ") and where in line, line
    else:
        assert line.startswith(f"error: {where}"), line
        if not where.startswith("Invalid value"):
            assert line.startswith(f"error: {where}: "), line


def test_failed_checks_still_print_the_json_plan_then_exit_2(capsys, offline) -> None:
    """With --json the document is printed (it says which checks failed) before the exit."""
    import json

    code, out, err = run_cli(capsys, "plan", "gpt-oss-20b", "-k", "11", "--json")
    assert code == 2
    doc = json.loads(out)
    failed = [c for c in doc["checks"] if c["status"] == "fail"]
    assert [c["name"] for c in failed] == ["speculative.num_speculative_tokens"]
    assert err.startswith("error: speculative.num_speculative_tokens: K=11 exceeds")
