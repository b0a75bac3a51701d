"""`peagle plan` in text mode shows the requests deploy sends (README: "It prints the exact
CreateModel, CreateEndpointConfig and CreateEndpoint requests"), each value whole on one
line, and says where K came from. Expected values come from JumpStart's own spec file (the
fixture) and the head's model card, never from peagle's output."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from tests.plan_helpers import (
    SPEC_ENV,
    TWO_COMPONENTS,
    lmi_optimized,
    load_fixture,
    make_offline,
    plan_json,
    run_cli,
)

# amazon/GPT-OSS-20B-P-EAGLE's model card: trained for K=10, serves K=7.
HEAD_TRAINED_K, HEAD_CARD_K = 10, 7


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    make_offline(monkeypatch, tmp_path)


def _plan_text(capsys: pytest.CaptureFixture[str], *argv: str) -> list[str]:
    code, out, err = run_cli(capsys, "plan", *argv)
    assert code == 0, err
    return out.splitlines()


def _field(lines: list[str], key: str) -> list[str]:
    """The values of every `key: value` line (any indentation; `- key: value` too)."""
    pattern = re.compile(rf"^\s*(?:- )?{re.escape(key)}: (.*)$")
    return [m.group(1) for line in lines if (m := pattern.match(line))]


def _section(lines: list[str], heading: str, nth: int = 0) -> list[str]:
    """The lines of the `nth` request whose heading line starts with `heading`: the
    indented lines after it, up to the next unindented line."""
    starts = [i for i, line in enumerate(lines) if line.split("  ")[0] == heading]
    assert len(starts) > nth, f"no request {heading!r} (#{nth}) in:\n" + "\n".join(lines)
    out = []
    for line in lines[starts[nth] + 1 :]:
        if not line.startswith(" "):
            break
        out.append(line)
    return out


def test_plan_text_shows_the_three_requests_with_jumpstarts_values_whole(capsys) -> None:
    expected = lmi_optimized(load_fixture())
    lines = _plan_text(capsys, "gpt-oss-20b")

    model = _section(lines, "CreateModel")
    config = _section(lines, "CreateEndpointConfig")
    endpoint = _section(lines, "CreateEndpoint")
    # The image and both S3 URIs, each whole on one line (a copied value is the value sent).
    assert _field(model, "Image") == [expected["image"]]
    assert _field(model, "S3Uri") == [
        expected["model_data"]["S3DataSource"]["S3Uri"],
        expected["head_uri"],
    ]
    # The drafter is the additional model data source, under its channel.
    assert _field(model, "ChannelName") == [expected["channel"]]
    # The environment, the speculative config as JumpStart sets it.
    (spec_config,) = _field(model, SPEC_ENV)
    assert json.loads(spec_config) == expected["speculative_config"]
    for name in ("SM_VLLM_MAX_MODEL_LEN", "HF_MODEL_ID", "TIKTOKEN_ENCODINGS_BASE"):
        assert _field(model, name) == [expected["env"][name]], name
    assert _field(config, "InstanceType") == [expected["instance_type"]]
    assert _field(config, "ModelDataDownloadTimeoutInSeconds") == [
        str(expected["download_timeout"])
    ]
    # The names link the three requests as deploy sends them.
    (model_name,) = _field(model, "ModelName")
    assert _field(config, "ModelName") == [model_name]
    (config_name,) = _field(config, "EndpointConfigName")
    assert _field(endpoint, "EndpointConfigName") == [config_name]
    assert _field(endpoint, "EndpointName") == ["peagle-gpt-oss-20b-p-eagle"]
    # In deploy's order.
    headings = [line for line in lines if line in ("CreateModel", "CreateEndpointConfig")]
    assert headings == ["CreateModel", "CreateEndpointConfig"]


def test_plan_text_says_where_the_default_k_came_from(capsys) -> None:
    expected_k = lmi_optimized(load_fixture())["speculative_config"]["num_speculative_tokens"]
    lines = _plan_text(capsys, "gpt-oss-20b")
    want = (
        f"K={expected_k} (JumpStart's default for this model; the head was trained for "
        f"{HEAD_TRAINED_K}, {HEAD_CARD_K} recommended)"
    )
    assert want in [line.strip() for line in lines]


def test_plan_text_says_a_given_k_was_given(capsys) -> None:
    lines = [line.strip() for line in _plan_text(capsys, "gpt-oss-20b", "-k", "5")]
    assert any(line.startswith("K=5 (given with -k") for line in lines), lines
    assert not any("JumpStart's default" in line for line in lines)


def test_k_origin_is_data_on_the_plan_and_in_json(capsys) -> None:
    import sm_peagle

    expected_k = lmi_optimized(load_fixture())["speculative_config"]["num_speculative_tokens"]
    origin = sm_peagle.plan("gpt-oss-20b").k_origin
    assert origin is not None
    assert (origin.k, origin.source) == (expected_k, "jumpstart")
    assert (origin.trained_k, origin.recommended_k) == (HEAD_TRAINED_K, HEAD_CARD_K)

    doc = plan_json(capsys, "gpt-oss-20b", "-k", "6")
    assert doc["k_origin"]["k"] == 6 == doc["speculative_config"]["num_speculative_tokens"]
    assert doc["k_origin"]["source"] == "spec"
    assert plan_json(capsys, "gpt-oss-20b", "--mode", "baseline")["k_origin"] is None
    schedule = plan_json(
        capsys,
        "gpt-oss-20b",
        "--mode",
        "eagle3",
        "--vllm-version",
        "0.24.0",
        "--k-schedule",
        "1-4:7,5-32:5",
    )
    assert (schedule["k_origin"]["source"], schedule["k_origin"]["k"]) == ("k_schedule", 7)


def test_component_plan_text_shows_every_request(capsys) -> None:
    doc: dict[str, Any] = plan_json(capsys, *TWO_COMPONENTS)
    lines = _plan_text(capsys, *TWO_COMPONENTS)

    # One CreateModel per component model, one CreateInferenceComponent per component.
    assert sum(line == "CreateModel" for line in lines) == len(doc["component_models"]) == 2
    components = [line for line in lines if line.startswith("CreateInferenceComponent")]
    assert len(components) == 2
    # The p-eagle component's heading says its K and why; its model carries that K.
    assert components[0] == (
        "CreateInferenceComponent  p-eagle, K=7 (given with -k or in the spec; the head was "
        f"trained for {HEAD_TRAINED_K}, {HEAD_CARD_K} recommended)"
    )
    (p_eagle_config,) = _field(_section(lines, "CreateModel", 0), SPEC_ENV)
    assert json.loads(p_eagle_config)["num_speculative_tokens"] == 7
    assert _field(_section(lines, "CreateModel", 1), SPEC_ENV) == []  # the baseline
    names = _field(lines, "InferenceComponentName")
    assert names == [ic["InferenceComponentName"] for ic in doc["create_inference_components"]]
    # Its autoscaling, registered once the endpoint is in service.
    assert any(line.startswith("RegisterScalableTarget") for line in lines)


def test_k_help_shows_the_default(capsys) -> None:
    code, out, _ = run_cli(capsys, "plan", "--help")
    assert code == 0
    text = " ".join(out.split())
    assert re.search(r"-k, --k \S+ K, the speculative tokens per step \[default: ", text), text


def test_models_says_the_default_k_and_where_it_comes_from(capsys) -> None:
    """`models` showed only trained/recommended 10/7, and a deploy without -k got K=3 with
    nothing saying why: it now names that default and its source."""
    expected_k = lmi_optimized(load_fixture())["speculative_config"]["num_speculative_tokens"]
    code, out, err = run_cli(capsys, "models")
    assert code == 0, err
    assert f"{expected_k} (JumpStart's default for this model)" in out
