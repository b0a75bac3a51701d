"""`peagle models`, `peagle instances` and `peagle schema` as a user (or a script) sees them."""

from __future__ import annotations

import json

import jsonschema
import pytest

from tests.plan_helpers import run_cli


def _json(capsys, *argv: str):
    code, out, err = run_cli(capsys, *argv)
    assert code == 0, err
    return json.loads(out)


def test_models_json_lists_the_seed_models_with_jumpstart_ids(capsys) -> None:
    models = {m["alias"]: m for m in _json(capsys, "models", "--json")}
    assert {
        "gpt-oss-20b",
        "gpt-oss-120b",
        "qwen3-coder-30b-a3b-instruct",
        "gemma-4-31b-it",
    } <= set(models)
    assert models["gpt-oss-20b"]["jumpstart_id"] == "openai-reasoning-gpt-oss-20b"
    assert models["gpt-oss-120b"]["jumpstart_id"] == "openai-reasoning-gpt-oss-120b"
    assert models["gemma-4-31b-it"]["jumpstart_id"] == "huggingface-vlm-gemma-4-31b-it"
    assert models["qwen3-coder-30b-a3b-instruct"]["jumpstart_id"] is None  # resolved live
    # Only the wiring actually read from a JumpStart spec is marked confirmed.
    confirmed = [a for a, m in models.items() if m["jumpstart_wiring_confirmed"]]
    assert confirmed == ["gpt-oss-20b"]
    head = models["gpt-oss-20b"]["drafter"]
    assert (head["trained_k"], head["recommended_k"]) == (10, 7)


EXPECTED_INSTANCES = {
    *(f"ml.g7e.{s}" for s in ("2xlarge", "4xlarge", "8xlarge", "12xlarge", "24xlarge", "48xlarge")),
    "ml.p6-b200.48xlarge",
    "ml.p6-b300.48xlarge",
    "ml.p6e-gb200.36xlarge",
    *(f"ml.g6e.{s}" for s in ("xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge")),
    *(f"ml.g6e.{s}" for s in ("16xlarge", "24xlarge", "48xlarge")),
    "ml.p5.48xlarge",
    "ml.p5e.48xlarge",
    "ml.p5en.48xlarge",
}


def test_instances_json_lists_the_gpu_types(capsys) -> None:
    items = {i["name"]: i for i in _json(capsys, "instances", "--json")}
    assert set(items) >= EXPECTED_INSTANCES
    g7e = items["ml.g7e.48xlarge"]
    assert (g7e["gpus"], g7e["gpu_memory_gb"], g7e["total_gpu_memory_gb"]) == (8, 96, 768)
    assert items["ml.p6e-gb200.36xlarge"]["arm_host"] is True
    assert not any(i["arm_host"] for n, i in items.items() if n != "ml.p6e-gb200.36xlarge")
    # A price is either a published figure with its source, or unknown: never a guess.
    for i in items.values():
        assert (i["usd_per_hour"] is None) is (i["price_source"] is None), i["name"]


def test_every_catalog_instance_is_a_real_sagemaker_hosting_type() -> None:
    from sm_peagle.catalog.instances import INSTANCES
    from sm_peagle.planning.steps.aws_shapes import shape_enum

    assert set(INSTANCES) <= shape_enum("sagemaker", "ProductionVariantInstanceType")


@pytest.fixture(scope="module")
def schema() -> dict:
    # capsys is function-scoped; render the schema the way the CLI does.
    import contextlib
    import io

    from sm_peagle.cli.app import main

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["schema"]) == 0
    return json.loads(buf.getvalue())


def test_schema_is_a_valid_json_schema_that_forbids_unknown_keys(schema) -> None:
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["additionalProperties"] is False
    sections = ("SpeculativeSpec", "DrafterSpec", "ContainerSpec", "EndpointSpec", "NetworkSpec")
    for name in sections:
        assert schema["$defs"][name]["additionalProperties"] is False, name


GOOD = {
    "model": "gpt-oss-20b",
    "region": "us-east-1",
    "speculative": {"mode": "p-eagle", "num_speculative_tokens": 5},
    "drafter": {"channel": "eagle"},
    "container": {"vllm_version": "0.18.0", "engine_args": {"max_model_len": 8192}},
    "endpoint": {"instance_type": "ml.g7e.2xlarge", "instance_count": 1},
    "network": {"enable_network_isolation": True},
    "tags": {"team": "inference"},
}


def test_schema_accepts_a_good_spec(schema) -> None:
    jsonschema.validate(GOOD, schema)


@pytest.mark.parametrize(
    "bad",
    [
        {**GOOD, "colour": "red"},
        {**GOOD, "endpoint": {"instance_typ": "ml.g7e.2xlarge"}},
        {**GOOD, "speculative": {"mode": "fast"}},
        {**GOOD, "endpoint": {"instance_count": 0}},
        {k: v for k, v in GOOD.items() if k != "model"},
    ],
    ids=["unknown-top-level", "unknown-nested", "bad-enum", "below-minimum", "missing-model"],
)
def test_schema_rejects_what_the_spec_rejects(schema, bad) -> None:
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)
    from sm_peagle.errors import SpecError
    from sm_peagle.planning.spec.loading import spec_from_data

    with pytest.raises(SpecError):
        spec_from_data(bad)


def test_the_k_origin_in_the_models_table_is_one_phrase(capsys) -> None:
    """`peagle models` shows `K (reason)`: the reason names its source once, with no
    parentheses of its own (it read `3 (peagle's default (peagle default (no head card
    read)))` for gemma)."""
    from sm_peagle.catalog.models import MODELS
    from sm_peagle.cli.app import main

    for m in MODELS:
        reason = m.default_k_origin()[1]
        assert "(" not in reason and reason.lower().count("default") <= 1, (m.alias, reason)
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    assert "(peagle's default; no head card read)" in " ".join(out.split())
