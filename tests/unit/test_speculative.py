"""The SM_VLLM_SPECULATIVE_CONFIG builder: exactly what the container's vLLM accepts."""

from __future__ import annotations

import json
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sm_peagle.planning.build import plan
from sm_peagle.planning.spec.loading import spec_from_data
from sm_peagle.planning.spec.model import AWS_NAME_RE, Mode, SpeculativeSpec
from sm_peagle.planning.steps.requests import default_names
from sm_peagle.vllm.speculative import build_speculative_config, to_env_value
from sm_peagle.vllm.versions import CUDA13_AMI, VllmVersion, speculative_keys
from tests.plan_helpers import SPEC_ENV, load_fixture

VERSIONS = ["0.16.0", "0.17.0", "0.18.0", "0.19.1", "0.20.0", "0.22.0", "0.25.0", "0.30.0"]


def build(spec: SpeculativeSpec, version: str = "0.18.0", **kw):
    args = dict(channel="eagle", default_k=3, trained_k=10, recommended_k=7, target_tp=1)
    args.update(kw)
    return build_speculative_config(spec, vllm_version=VllmVersion(version), **args)


def statuses(result) -> dict[str, str]:
    return {c.name: c.status for c in result.checks}


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("mode", [Mode.P_EAGLE, Mode.EAGLE3])
def test_method_is_always_set(mode, version) -> None:
    result = build(SpeculativeSpec(mode=mode), version)
    assert result.config["method"] == "eagle3"
    assert result.config["num_speculative_tokens"] == 3
    assert ("parallel_drafting" in result.config) is (mode == Mode.P_EAGLE)
    assert "fail" not in statuses(result).values()


def test_baseline_has_no_config() -> None:
    result = build(SpeculativeSpec(mode=Mode.BASELINE))
    assert result.config is None and result.k is None
    with pytest.raises(ValueError, match="baseline proposes no tokens"):  # K means nothing
        SpeculativeSpec(mode=Mode.BASELINE, num_speculative_tokens=5)


optional_fields = st.fixed_dictionaries(
    {},
    optional={
        "num_speculative_tokens": st.integers(1, 10),
        "draft_tensor_parallel_size": st.just(1),
        "max_model_len": st.integers(1, 1 << 20),
        "quantization": st.sampled_from(["fp8", "mxfp4"]),
        "enforce_eager": st.booleans(),
        "disable_padded_drafter_batch": st.booleans(),
        "disable_by_batch_size": st.integers(1, 64),
    },
)


@settings(max_examples=150, deadline=None)
@given(
    fields=optional_fields,
    mode=st.sampled_from([Mode.P_EAGLE, Mode.EAGLE3]),
    version=st.sampled_from(VERSIONS),
)
def test_only_keys_the_version_accepts_are_emitted(fields, mode, version) -> None:
    spec = SpeculativeSpec(mode=mode, **fields)
    result = build(spec, version)
    allowed = speculative_keys(VllmVersion(version))
    assert set(result.config) <= allowed
    # Every field asked for is either emitted or refused with a check naming it.
    st_ = statuses(result)
    for key, value in fields.items():
        if key == "num_speculative_tokens":
            continue
        if key == "disable_padded_drafter_batch" and value and mode == Mode.P_EAGLE:
            assert st_[f"speculative.{key}"] == "fail"
            continue
        if key in allowed:
            assert result.config[key] == value
        else:
            assert key not in result.config
            assert st_[f"speculative.{key}"] == "fail"


@pytest.mark.parametrize(
    ("version", "accepted"),
    # 0.15.1 is below the wheels read (0.16.0-0.32.0): it is checked as 0.16.0 (and plan
    # warns "not checked"), so the key is accepted there too.
    [("0.15.1", True), ("0.16.0", True), ("0.17.0", False), ("0.18.0", False), ("0.22.0", False)],
)
def test_disable_by_batch_size_only_on_0_16_0(version, accepted) -> None:
    result = build(SpeculativeSpec(mode=Mode.EAGLE3, disable_by_batch_size=8), version)
    if accepted:
        assert result.config["disable_by_batch_size"] == 8
        assert "speculative.disable_by_batch_size" not in statuses(result)
    else:
        assert "disable_by_batch_size" not in result.config
        assert statuses(result)["speculative.disable_by_batch_size"] == "fail"


@pytest.mark.parametrize("version", ["0.13.0", "0.15.1"])
def test_parallel_drafting_is_refused_before_0_16(version) -> None:
    result = build(SpeculativeSpec(mode=Mode.P_EAGLE), version)
    assert statuses(result)["speculative.mode"] == "fail"
    # EAGLE-3 (sequential drafting) is fine on the same image.
    assert "fail" not in statuses(build(SpeculativeSpec(mode=Mode.EAGLE3), version)).values()


def test_parallel_drafting_forbids_disabling_the_padded_batch() -> None:
    result = build(SpeculativeSpec(mode=Mode.P_EAGLE, disable_padded_drafter_batch=True))
    assert statuses(result)["speculative.disable_padded_drafter_batch"] == "fail"


def test_k_above_recommended_warns_and_above_trained_fails() -> None:
    k = "speculative.num_speculative_tokens"
    assert statuses(build(SpeculativeSpec(num_speculative_tokens=7)))[k] == "pass"
    assert statuses(build(SpeculativeSpec(num_speculative_tokens=8)))[k] == "warn"
    assert statuses(build(SpeculativeSpec(num_speculative_tokens=10)))[k] == "warn"
    assert statuses(build(SpeculativeSpec(num_speculative_tokens=11)))[k] == "fail"


def test_k_warning_reaches_the_plan_and_does_not_fail_it() -> None:
    p = plan(spec_from_data({"model": "gpt-oss-20b", "speculative": {"num_speculative_tokens": 9}}))
    checks = {c.name: c for c in p.checks}
    assert checks["speculative.num_speculative_tokens"].status == "warn"
    assert "recommended K=7" in checks["speculative.num_speculative_tokens"].message
    assert p.ok
    assert (
        json.loads(p.create_model["PrimaryContainer"]["Environment"][SPEC_ENV])[
            "num_speculative_tokens"
        ]
        == 9
    )


# -- the env value ---------------------------------------------------------------------


def test_env_value_is_compact_deterministic_json() -> None:
    a = {"parallel_drafting": True, "num_speculative_tokens": 3, "method": "eagle3", "model": "/m"}
    b = dict(reversed(list(a.items())))
    assert to_env_value(a) == to_env_value(b)
    text = to_env_value(a)
    assert " " not in text
    assert text == (
        '{"model":"/m","method":"eagle3","num_speculative_tokens":3,"parallel_drafting":true}'
    )
    assert json.loads(text) == a


@settings(max_examples=100, deadline=None)
@given(fields=optional_fields, mode=st.sampled_from([Mode.P_EAGLE, Mode.EAGLE3]))
def test_same_input_gives_the_same_bytes(fields, mode) -> None:
    first = build(SpeculativeSpec(mode=mode, **fields), "0.16.0")
    second = build(SpeculativeSpec(mode=mode, **dict(reversed(list(fields.items())))), "0.16.0")
    assert to_env_value(first.config) == to_env_value(second.config)
    assert ": " not in to_env_value(first.config) and ", " not in to_env_value(first.config)


def test_custom_channel_is_mounted_and_named_in_the_plan() -> None:
    p = plan(
        spec_from_data(
            {"model": "gpt-oss-20b", "region": "us-east-1", "drafter": {"channel": "peagle-head"}}
        )
    )
    (source,) = p.create_model["PrimaryContainer"]["AdditionalModelDataSources"]
    assert source["ChannelName"] == "peagle-head"
    config = json.loads(p.create_model["PrimaryContainer"]["Environment"][SPEC_ENV])
    assert config["model"] == "/opt/ml/additional-model-data-sources/peagle-head"
    assert p.ok


# -- the image and host ----------------------------------------------------------------


def test_cuda13_image_gets_the_driver_580_ami() -> None:
    p = plan(spec_from_data({"model": "gpt-oss-20b", "container": {"vllm_version": "0.22.0"}}))
    assert "vllm:0.22.0-gpu-py312-cu130-" in p.image
    (variant,) = p.create_endpoint_config["ProductionVariants"]
    assert variant["InferenceAmiVersion"] == CUDA13_AMI == "al2023-ami-sagemaker-inference-gpu-4-1"
    assert p.ok


def test_cuda12_image_leaves_the_ami_unset() -> None:
    p = plan(spec_from_data({"model": "gpt-oss-20b"}))
    (variant,) = p.create_endpoint_config["ProductionVariants"]
    assert "cu129" in p.image and "InferenceAmiVersion" not in variant


# -- determinism and names -------------------------------------------------------------


def test_two_plans_of_one_spec_are_identical() -> None:
    data = {"model": "gpt-oss-20b", "speculative": {"mode": "eagle3", "num_speculative_tokens": 5}}
    a, b = plan(spec_from_data(data)), plan(spec_from_data(dict(reversed(list(data.items())))))
    assert a.to_dict() == b.to_dict()
    assert json.dumps(a.to_dict()) == json.dumps(b.to_dict())  # same key order too


@pytest.mark.parametrize("mode", ["p-eagle", "eagle3", "baseline"])
def test_default_names_are_valid_for_a_very_long_model_id(mode) -> None:
    long_id = "x" + "-very.long_model" * 7 + "-" + "y" * 14  # 128 characters
    assert len(long_id) == 128
    js = load_fixture()
    p = plan(spec_from_data({"model": long_id, "speculative": {"mode": mode}}), jumpstart_spec=js)
    for name in p.names.values():
        assert AWS_NAME_RE.match(name), name
        assert len(name) <= 63
    assert p.names["endpoint"].endswith(mode)
    assert p.names["model"] != p.names["endpoint_config"]


model_ids = st.text(string.ascii_letters + string.digits + "._-", min_size=0, max_size=127).map(
    lambda s: "a" + s
)


@settings(max_examples=200, deadline=None)
@given(alias=model_ids, mode=st.sampled_from(["p-eagle", "eagle3", "baseline"]))
def test_default_names_always_valid(alias, mode) -> None:
    spec = spec_from_data({"model": alias, "speculative": {"mode": mode}})
    names = default_names(spec, alias, spec.sha256())
    for name in names.values():
        assert AWS_NAME_RE.match(name), name
        assert len(name) <= 63
    assert len(set(names.values())) == 3
