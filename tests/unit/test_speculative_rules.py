"""Speculative-config rules with their upstream source: vLLM's SpeculativeConfig accepts a
draft_tensor_parallel_size of 1 or the target's tensor_parallel_size and nothing else
(`vllm/config/speculative.py`); the rejection sampler asserts K <= 128
(`vllm/v1/sample/rejection_sampler.py`, MAX_SPEC_LEN = 128)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from sm_peagle.planning.specs import Mode, SpeculativeSpec
from sm_peagle.planning.speculative import build_speculative_config, drafter_mount_path
from sm_peagle.planning.vllm_versions import VllmVersion

FIELD = "speculative.draft_tensor_parallel_size"


def build(spec: SpeculativeSpec, **kw):
    args = dict(
        vllm_version=VllmVersion("0.18.0"),
        channel="eagle",
        default_k=3,
        trained_k=10,
        recommended_k=7,
        target_tp=4,
    )
    args.update(kw)
    return build_speculative_config(spec, **args)


def by_name(result, name: str):
    return [c for c in result.checks if c.name == name]


@pytest.mark.parametrize("draft_tp", [1, 4])
def test_draft_tp_of_one_or_the_targets_tp_is_accepted(draft_tp: int) -> None:
    result = build(SpeculativeSpec(draft_tensor_parallel_size=draft_tp), target_tp=4)
    assert by_name(result, FIELD) == []
    assert result.config["draft_tensor_parallel_size"] == draft_tp


@pytest.mark.parametrize("draft_tp", [2, 3, 8])
def test_any_other_draft_tp_is_refused(draft_tp: int) -> None:
    result = build(SpeculativeSpec(draft_tensor_parallel_size=draft_tp), target_tp=4)
    (c,) = by_name(result, FIELD)
    assert c.status == "fail"
    assert c.message == f"must be 1 or the target's tensor-parallel size 4 (got {draft_tp})"
    assert c.fix == "set it to 1 or 4"


def test_with_a_single_gpu_target_only_one_is_accepted() -> None:
    (c,) = by_name(build(SpeculativeSpec(draft_tensor_parallel_size=2), target_tp=1), FIELD)
    assert c.status == "fail" and c.fix == "set it to 1"
    assert by_name(build(SpeculativeSpec(draft_tensor_parallel_size=1), target_tp=1), FIELD) == []


def test_unknown_target_tp_is_not_guessed() -> None:
    result = build(SpeculativeSpec(draft_tensor_parallel_size=3), target_tp=None)
    assert by_name(result, FIELD) == []


@pytest.mark.parametrize("k", [1, 128])
def test_k_up_to_vllms_rejection_sampler_limit_is_accepted(k: int) -> None:
    assert SpeculativeSpec(num_speculative_tokens=k).num_speculative_tokens == k


@pytest.mark.parametrize(
    ("k", "message"),
    [
        (129, "K must be at most 128, vLLM's rejection-sampler limit (got 129)"),
        (1000, "K must be at most 128, vLLM's rejection-sampler limit (got 1000)"),
        (0, "K must be at least 1 (got 0)"),
        (-1, "K must be at least 1 (got -1)"),
    ],
)
def test_k_outside_1_to_128_is_refused_by_the_spec_itself(k: int, message: str) -> None:
    # No drafter is involved here, so no trained-K rule can stand in for this one.
    with pytest.raises(ValidationError, match=message.replace("(", r"\(").replace(")", r"\)")):
        SpeculativeSpec(num_speculative_tokens=k)


def test_k_comes_from_the_spec_else_the_default_and_is_checked_against_the_head() -> None:
    assert build(SpeculativeSpec()).k == 3
    result = build(SpeculativeSpec(num_speculative_tokens=11))
    (c,) = by_name(result, "speculative.num_speculative_tokens")
    assert (c.status, c.message, c.fix) == (
        "fail",
        "K=11 exceeds the drafter's trained K=10",
        "use -k 7 (at most 10)",
    )
    (c,) = by_name(
        build(SpeculativeSpec(num_speculative_tokens=8)), "speculative.num_speculative_tokens"
    )
    assert c.status == "warn" and "recommended K=7" in c.message
    (c,) = by_name(
        build(SpeculativeSpec(num_speculative_tokens=7)), "speculative.num_speculative_tokens"
    )
    assert (c.status, c.message) == ("pass", "K=7")
    (c,) = by_name(
        build(SpeculativeSpec(num_speculative_tokens=11), recommended_k=None),
        "speculative.num_speculative_tokens",
    )
    assert c.fix == "use -k 10 (at most 10)"


def test_the_config_points_at_the_mounted_channel() -> None:
    result = build(SpeculativeSpec(mode=Mode.EAGLE3), channel="head")
    assert result.config == {
        "model": "/opt/ml/additional-model-data-sources/head",
        "method": "eagle3",
        "num_speculative_tokens": 3,
    }
    assert drafter_mount_path("x") == "/opt/ml/additional-model-data-sources/x"
