"""Faithful adopt (issue 24, item 7): a spec can say what an endpoint made by hand really
has — extra environment variables, and, with `KEY: null`, the absence of a variable peagle
would set by default — so `peagle adopt` reconstructs a spec that plans to exactly the
requests the endpoint runs, and a later `update` changes only what the user asked for.
`--accept-differences` remains for what a spec cannot express.

The endpoint is JumpStart's GPT-OSS-20B deployment made with raw boto3 calls
(test_adopt.create_jumpstart_endpoint), its environment edited as a person might have:
without TENSOR_PARALLEL_DEGREE and with one variable of their own. Expected values come
from that environment (what the endpoint has is what the plan must send), never from the
code under test.
"""

from __future__ import annotations

import json
from pathlib import Path

import boto3
import pytest
import yaml

import sm_peagle
from sm_peagle.errors import SpecError
from sm_peagle.lifecycle.spec_tags import decode_spec, deployed_spec
from sm_peagle.planning.spec.loading import spec_from_data
from tests.integration.lifecycle_env import REGION, run, sagemaker_inventory
from tests.integration.test_adopt import (
    CONFIG,
    MODEL,
    NAME,
    SPEC_ENV,
    all_tags,
    create_jumpstart_endpoint,
    js_env,
)
from tests.integration.test_adopt_refusals import one_error_line

EXTRA = {"MY_LOG_LEVEL": "debug"}
# What peagle (from JumpStart's spec) sets by default and the issue's endpoint lacked.
DEFAULTS_THE_ISSUE_NAMED = (
    "TENSOR_PARALLEL_DEGREE",
    "SAGEMAKER_MODEL_SERVER_TIMEOUT",
    "SAGEMAKER_MODEL_SERVER_WORKERS",
    "SAGEMAKER_PROGRAM",
    "SAGEMAKER_SUBMIT_DIRECTORY",
)
READS = ("Describe", "List", "Get")


def hand_made_env(*without: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    """JumpStart's environment for the endpoint, less `without`, plus `extra`."""
    env = {k: v for k, v in js_env().items() if k not in without}
    return {**env, **(extra or {})}


def create_hand_made_endpoint(role: str, env: dict[str, str]) -> None:
    """The JumpStart-shaped endpoint, made with raw boto3, running `env`."""
    create_jumpstart_endpoint(role, env=env)


def as_json(env: dict[str, str]) -> dict:
    """The environment with the speculative config parsed (vLLM reads it as JSON)."""
    return {**env, SPEC_ENV: json.loads(env[SPEC_ENV])} if SPEC_ENV in env else dict(env)


def model_env(model_name: str) -> dict[str, str]:
    sm = boto3.client("sagemaker", region_name=REGION)
    return sm.describe_model(ModelName=model_name)["PrimaryContainer"]["Environment"]


def serving_model(name: str = NAME) -> str:
    sm = boto3.client("sagemaker", region_name=REGION)
    config = sm.describe_endpoint(EndpointName=name)["EndpointConfigName"]
    (variant,) = sm.describe_endpoint_config(EndpointConfigName=config)["ProductionVariants"]
    return variant["ModelName"]


def mutating(harness) -> list[str]:
    ops = harness.requests.operations("sagemaker") + harness.requests.operations(
        "application-autoscaling"
    )
    return [op for op in ops if not op.startswith(READS)]


@pytest.fixture
def hand_made(world):
    """The issue's endpoint: no TENSOR_PARALLEL_DEGREE, one variable of its own."""
    env = hand_made_env("TENSOR_PARALLEL_DEGREE", extra=EXTRA)
    create_hand_made_endpoint(world.role_arn, env)
    return env


# -- adopt, diff, update -k 7 (the issue's acceptance) --------------------------------


def test_adopted_without_accept_differences_and_planned_key_by_key(
    hand_made, capsys, tmp_path, sagemaker_harness
):
    spec_file = tmp_path / "adopted.yaml"
    code, out, err = run(capsys, "adopt", NAME, "--yes", "--json", "-o", str(spec_file))
    assert code == 0, err
    doc = json.loads(out)
    assert doc["differences"] == []
    # What the spec says about the environment: the absent default, the extra variable.
    assert doc["spec"]["container"]["env"] == {"TENSOR_PARALLEL_DEGREE": None, **EXTRA}
    assert yaml.safe_load(spec_file.read_text())["container"]["env"] == {
        "TENSOR_PARALLEL_DEGREE": None,
        **EXTRA,
    }
    # The spec read back from the tags plans to the endpoint's environment, key by key.
    sm = boto3.client("sagemaker", region_name=REGION)
    spec = deployed_spec(sm, NAME)
    planned = sm_peagle.plan(spec).create_model["PrimaryContainer"]["Environment"]
    assert sorted(planned) == sorted(hand_made)
    assert as_json(planned) == as_json(hand_made)
    assert all(t.get("peagle:managed") == "true" for t in all_tags().values())

    # diff: nothing to change, and apply of the same file sends nothing.
    code, out, err = run(capsys, "diff", "-f", str(spec_file), "--json", "--detailed-exitcode")
    assert (code, json.loads(out)["action"]) == (0, "noop"), err
    sagemaker_harness.requests.clear()
    code, out, err = run(capsys, "apply", "-f", str(spec_file), "--yes", "--json")
    assert (code, json.loads(out)["action"]) == (0, "noop"), err
    assert mutating(sagemaker_harness) == []


def test_update_k7_after_adopt_changes_only_k(hand_made, capsys):
    assert run(capsys, "adopt", NAME, "--yes")[0] == 0
    code, out, err = run(capsys, "update", NAME, "-k", "7", "--yes", "--json")
    assert code == 0, err
    assert json.loads(out)["changes"] == ["K 3 -> 7"]
    new_model = serving_model()
    assert new_model != MODEL
    new_env = model_env(new_model)
    # Key by key: the same variables (none added, none dropped), the same values but the
    # speculative config, whose num_speculative_tokens alone went from 3 to 7.
    assert sorted(new_env) == sorted(hand_made)
    assert "TENSOR_PARALLEL_DEGREE" not in new_env and new_env["MY_LOG_LEVEL"] == "debug"
    changed = sorted(k for k in hand_made if new_env[k] != hand_made[k])
    assert changed == [SPEC_ENV]
    old_cfg, new_cfg = json.loads(hand_made[SPEC_ENV]), json.loads(new_env[SPEC_ENV])
    assert {k for k in old_cfg.keys() | new_cfg.keys() if old_cfg.get(k) != new_cfg.get(k)} == {
        "num_speculative_tokens"
    }
    assert (old_cfg["num_speculative_tokens"], new_cfg["num_speculative_tokens"]) == (3, 7)
    # The adopted config and model were retired, the new pair serves.
    assert sagemaker_inventory()["models"] == [new_model]
    assert CONFIG not in sagemaker_inventory()["endpoint_configs"]


def test_the_sdk_adopts_and_updates_the_same(hand_made):
    ep = sm_peagle.Endpoint.adopt(NAME, region=REGION)
    assert ep.adoption.differences == []
    assert ep.adoption.spec.container.env == {"TENSOR_PARALLEL_DEGREE": None, **EXTRA}
    assert ep.spec() == ep.adoption.spec  # read back from the tags, nulls and all
    result = sm_peagle.update(NAME, k=7, region=REGION)
    assert result.changes == ["K 3 -> 7"]
    new_env = model_env(serving_model())
    assert sorted(new_env) == sorted(hand_made)
    assert {k for k in hand_made if new_env[k] != hand_made[k]} == {SPEC_ENV}


def test_every_default_the_issue_named_can_be_absent(world, capsys):
    """After --accept-differences, `update -k 7` used to add these five back."""
    env = hand_made_env(*DEFAULTS_THE_ISSUE_NAMED)
    create_hand_made_endpoint(world.role_arn, env)
    code, out, err = run(capsys, "adopt", NAME, "--yes", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["differences"] == []
    assert doc["spec"]["container"]["env"] == dict.fromkeys(DEFAULTS_THE_ISSUE_NAMED)
    assert run(capsys, "update", NAME, "-k", "7", "--yes")[0] == 0
    new_env = model_env(serving_model())
    assert sorted(new_env) == sorted(env)
    assert not set(DEFAULTS_THE_ISSUE_NAMED) & set(new_env)


def test_the_tags_carry_the_nulls(hand_made, capsys):
    """spec -> tags -> spec: the null survives the tag encoding on all three resources."""
    code, out, _ = run(capsys, "adopt", NAME, "--yes", "--json")
    assert code == 0
    written = json.loads(out)["spec"]
    for tags in all_tags().values():
        data = decode_spec(tags)
        assert data["container"]["env"] == {"TENSOR_PARALLEL_DEGREE": None, **EXTRA}
        assert spec_from_data(data).model_dump(mode="json", exclude_defaults=True) == written


# -- what a spec cannot express still needs --accept-differences ----------------------


def test_a_missing_model_location_is_still_a_difference(world, capsys):
    """HF_MODEL_ID says where the container finds the model: a spec cannot remove it, so
    an endpoint without it is refused unless the user accepts the difference."""
    create_hand_made_endpoint(world.role_arn, hand_made_env("HF_MODEL_ID"))
    before = all_tags()
    code, out, err = run(capsys, "adopt", NAME, "--yes")
    assert code == 2 and out == ""
    line = one_error_line(err)
    assert "model.PrimaryContainer.Environment.HF_MODEL_ID: endpoint has nothing" in line
    assert "(fix: " in line and "--accept-differences" in line
    assert all_tags() == before
    code, out, err = run(capsys, "adopt", NAME, "--yes", "--accept-differences", "--json")
    assert code == 0, err
    paths = [d["path"] for d in json.loads(out)["differences"]]
    assert paths == ["model.PrimaryContainer.Environment.HF_MODEL_ID"]


# -- validation of a null ----------------------------------------------------------------


REFUSED = [
    (
        {SPEC_ENV: None},
        f"container.env.{SPEC_ENV}: null would remove the speculative config",
        "speculative.mode: baseline",
    ),
    (
        {"HF_MODEL_ID": None},
        "container.env.HF_MODEL_ID: null would remove where the container finds the model",
        "model_data",
    ),
    (
        {"SM_VLLM_MODEL": None},
        "container.env.SM_VLLM_MODEL: null would remove where the container finds the model",
        "model_data",
    ),
]


def _spec(env: dict, **more) -> dict:
    return {"model": "gpt-oss-20b", "region": REGION, "container": {"env": env}, **more}


@pytest.mark.parametrize(("env", "what", "fix"), REFUSED)
def test_a_null_cannot_remove_what_the_endpoint_needs(env, what, fix):
    with pytest.raises(SpecError) as e:
        sm_peagle.plan(spec_from_data(_spec(env)))
    assert e.value.message.startswith(what)
    assert fix in (e.value.remedy or "")


def test_a_null_cannot_contradict_an_engine_arg():
    data = _spec({"SM_VLLM_MAX_MODEL_LEN": None})
    data["container"]["engine_args"] = {"max_model_len": 4096}
    with pytest.raises(SpecError) as e:
        sm_peagle.plan(spec_from_data(data))
    assert "removes what container.engine_args.max_model_len sets" in e.value.message
    assert e.value.remedy


@pytest.mark.parametrize(("env", "what", "fix"), REFUSED)
def test_deploy_with_such_a_null_is_refused_before_anything_is_sent(
    world, capsys, sagemaker_harness, tmp_path, env, what, fix
):
    spec = Path(tmp_path / "spec.yaml")
    spec.write_text(yaml.safe_dump(_spec(env)))
    for argv in (("plan", "-f", str(spec)), ("deploy", "-f", str(spec), "--yes")):
        code, out, err = run(capsys, *argv)
        assert code == 2, (argv, out, err)
        line = one_error_line(err)
        assert line.startswith(f"error: {what}") and "(fix: " in line and fix in line
        assert "Traceback" not in out + err
    assert mutating(sagemaker_harness) == []
    assert sagemaker_inventory() == {"models": [], "endpoint_configs": [], "endpoints": []}
    with pytest.raises(SpecError, match="null would remove"):
        sm_peagle.deploy(_spec(env))
    assert mutating(sagemaker_harness) == []


def test_a_null_baseline_speculative_config_removes_nothing():
    """Baseline sends no speculative config: a null of it is allowed, and removes nothing."""
    data = _spec({SPEC_ENV: None}, speculative={"mode": "baseline"})
    p = sm_peagle.plan(spec_from_data(data))
    assert SPEC_ENV not in p.create_model["PrimaryContainer"]["Environment"]


def test_a_null_removes_exactly_its_variable_and_a_spec_without_one_plans_as_before():
    plain = sm_peagle.plan(spec_from_data(_spec({})))
    env = plain.create_model["PrimaryContainer"]["Environment"]
    assert "TENSOR_PARALLEL_DEGREE" in env  # the default the null is about
    removed = sm_peagle.plan(spec_from_data(_spec({"TENSOR_PARALLEL_DEGREE": None})))
    expected = {k: v for k, v in env.items() if k != "TENSOR_PARALLEL_DEGREE"}
    assert removed.create_model["PrimaryContainer"]["Environment"] == expected
    # Only the environment differs: the config is the same but for the model's name.
    strip = {"ModelName", "EndpointConfigName", "Tags"}
    a, b = plain.create_endpoint_config, removed.create_endpoint_config
    assert [{k: v for k, v in x.items() if k not in strip} for x in a["ProductionVariants"]] == [
        {k: v for k, v in x.items() if k not in strip} for x in b["ProductionVariants"]
    ]
    # A null of a variable nothing sets changes no request, and says so in a warning.
    noop = sm_peagle.plan(spec_from_data(_spec({"NOT_SET_BY_ANYONE": None})))
    assert noop.create_model["PrimaryContainer"]["Environment"] == env
    (warning,) = [c for c in noop.checks if c.name == "container.env.NOT_SET_BY_ANYONE"]
    assert warning.status == "warn" and "removes nothing" in warning.message
