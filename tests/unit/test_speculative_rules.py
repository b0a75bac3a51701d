"""Speculative-config rules with their upstream source: vLLM's SpeculativeConfig accepts a
draft_tensor_parallel_size of 1 or the target's tensor_parallel_size and nothing else
(`vllm/config/speculative.py`); the rejection sampler asserts K <= 128
(`vllm/v1/sample/rejection_sampler.py`, MAX_SPEC_LEN = 128)."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from sm_peagle.planning.spec.model import Mode, SpeculativeSpec
from sm_peagle.vllm.speculative import build_speculative_config, drafter_mount_path
from sm_peagle.vllm.versions import VllmVersion

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
        "use k=7 (at most 10)",
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
    assert c.fix == "use k=10 (at most 10)"


def test_the_config_points_at_the_mounted_channel() -> None:
    result = build(SpeculativeSpec(mode=Mode.EAGLE3), channel="head")
    assert result.config == {
        "model": "/opt/ml/additional-model-data-sources/head",
        "method": "eagle3",
        "num_speculative_tokens": 3,
    }
    assert drafter_mount_path("x") == "/opt/ml/additional-model-data-sources/x"


def test_parallel_drafting_is_true_and_padded_batches_stay_on() -> None:
    result = build(SpeculativeSpec(mode=Mode.P_EAGLE))
    assert result.config["parallel_drafting"] is True
    (c,) = by_name(
        build(SpeculativeSpec(disable_padded_drafter_batch=True)),
        "speculative.disable_padded_drafter_batch",
    )
    assert (c.status, c.message, c.fix) == (
        "fail",
        "must stay false for parallel drafting",
        "remove disable_padded_drafter_batch",
    )


def test_a_key_the_version_does_not_know_is_refused_with_its_name() -> None:
    # disable_by_batch_size exists only in vLLM 0.16.0's SpeculativeConfig.
    result = build(SpeculativeSpec(disable_by_batch_size=4, max_model_len=4096))
    (c,) = by_name(result, "speculative.disable_by_batch_size")
    assert (c.status, c.message, c.fix) == (
        "fail",
        "vLLM 0.18.0 does not accept 'disable_by_batch_size' in the speculative config "
        "and would fail at start-up",
        "remove disable_by_batch_size, or use a vLLM version that accepts it",
    )
    assert "disable_by_batch_size" not in result.config
    assert result.config["max_model_len"] == 4096


def test_baseline_is_one_passing_check() -> None:
    result = build(SpeculativeSpec(mode=Mode.BASELINE))
    assert (result.config, result.k) == (None, None)
    assert [(c.name, c.status, c.message) for c in result.checks] == [
        ("speculative", "pass", "baseline: no speculation")
    ]


SCHEDULE = [[1, 8, 5], [9, 64, 3]]  # batch sizes 1-8 draft 5 tokens, 9-64 draft 3


def test_a_k_schedule_sets_k_to_its_largest_entry_and_travels_on_newer_vllm() -> None:
    # (P-EAGLE refuses a schedule on vLLM's CPU engine; EAGLE-3 takes it.)
    spec = SpeculativeSpec(mode=Mode.EAGLE3, num_speculative_tokens_per_batch_size=SCHEDULE)
    new = build(spec, vllm_version=VllmVersion("0.30.0"))
    assert new.k == 5 and new.config["num_speculative_tokens"] == 5
    assert new.config["num_speculative_tokens_per_batch_size"] == SCHEDULE
    assert not [c for c in new.checks if c.status == "fail"]
    one = build(
        SpeculativeSpec(mode=Mode.EAGLE3, num_speculative_tokens_per_batch_size=[[1, 64, 1]]),
        vllm_version=VllmVersion("0.30.0"),
    )
    assert one.k == 1
    old = build(spec, vllm_version=VllmVersion("0.18.0"))
    assert "num_speculative_tokens_per_batch_size" not in old.config
    (c,) = by_name(old, "speculative.num_speculative_tokens_per_batch_size")
    assert c.status == "fail" and c.message.startswith("vLLM 0.18.0 has no dynamic K")
    explicit = build(
        SpeculativeSpec(
            mode=Mode.EAGLE3,
            num_speculative_tokens=4,
            num_speculative_tokens_per_batch_size=SCHEDULE,
        ),
        vllm_version=VllmVersion("0.30.0"),
    )
    (c,) = by_name(explicit, "speculative.num_speculative_tokens_per_batch_size")
    assert explicit.k == 4 and c.status == "fail" and "in 1-8:5" in c.message
    assert c.fix == "raise k= to 5, or lower those K values"
    baseline_like = build(
        SpeculativeSpec(mode=Mode.EAGLE3, num_speculative_tokens_per_batch_size=SCHEDULE),
        vllm_version=VllmVersion("0.30.0"),
    )
    assert baseline_like.k == 5


# --- plan_speculative, through plan() ------------------------------------------------------
@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    from tests.plan_helpers import make_offline

    make_offline(monkeypatch, tmp_path)


def planned(**data):
    from sm_peagle.planning.build import plan
    from sm_peagle.planning.spec.loading import spec_from_data

    return plan(spec_from_data({"model": "gpt-oss-20b", "region": "us-east-1", **data}), **{})


def test_k_defaults_come_from_jumpstart_then_the_catalog(offline) -> None:
    from sm_peagle.planning.build import plan
    from sm_peagle.planning.spec.loading import spec_from_data
    from tests.plan_helpers import load_fixture

    assert planned().speculative_config["num_speculative_tokens"] == 3  # JumpStart's K
    js = load_fixture()
    # JumpStart's own config says K=3; a spec whose JumpStart config says 4 plans K=4.
    raw = json.dumps(js).replace(
        '\\"num_speculative_tokens\\": 3', '\\"num_speculative_tokens\\": 4'
    )
    assert raw != json.dumps(js)
    p = plan(
        spec_from_data({"model": "gpt-oss-20b", "region": "us-east-1"}),
        jumpstart_spec=json.loads(raw),
    )
    assert p.speculative_config["num_speculative_tokens"] == 4
    # gpt-oss-120b: no JumpStart spec offline; the catalog's head-card K is 5.
    p120 = planned(
        model="gpt-oss-120b",
        model_data="s3://acme-models/120b/",
        drafter={"source": "s3://acme-models/120b-head/"},
    )
    assert p120.speculative_config["num_speculative_tokens"] == 5


def test_the_heads_trained_k_and_the_target_tp_reach_the_rules(offline) -> None:
    checks = {c.name: c for c in planned(speculative={"num_speculative_tokens": 11}).checks}
    c = checks["speculative.num_speculative_tokens"]
    assert c.status == "fail" and c.message == "K=11 exceeds the drafter's trained K=10"
    own = {c.name: c for c in planned(
        speculative={"num_speculative_tokens": 6}, drafter={"trained_k": 5}
    ).checks}  # fmt: skip
    assert own["speculative.num_speculative_tokens"].message == (
        "K=6 exceeds the drafter's trained K=5"
    )
    two_gpus = {"instance_type": "ml.g7e.12xlarge"}
    ok = planned(endpoint=two_gpus, speculative={"draft_tensor_parallel_size": 2})
    assert "speculative.draft_tensor_parallel_size" not in {c.name for c in ok.checks}
    bad = planned(speculative={"draft_tensor_parallel_size": 2})
    assert "speculative.draft_tensor_parallel_size" in {
        c.name for c in bad.checks if c.status == "fail"
    }


def test_a_local_head_is_checked_in_the_plan_unless_baseline(offline, tmp_path) -> None:
    from tests.drafter_fixtures import make_head

    head = make_head(tmp_path / "head")
    names = {c.name for c in planned(drafter={"source": str(head)}).checks}
    assert {"drafter.config", "drafter.k", "drafter.mask_token"} <= names
    base = planned(drafter={"source": str(head)}, speculative={"mode": "baseline"})
    assert not {c.name for c in base.checks if c.name.startswith("drafter.")}
