"""Fidelity, items 2/8-11/13: the drafter checks follow vLLM's own code.

Mirrors, per row: `transformers_utils/configs/eagle.py` (architecture rewrite),
`model_executor/models/registry.py` (registered heads),
`transformers_utils/configs/speculators/algos.py` (speculators format),
`v1/spec_decode/llm_base_proposer.py` (mask-token keys and order),
`model_executor/models/llama_eagle3.py` / `qwen3_eagle3.py` (mask_hidden and fc sizes),
and the version gates shared with plan (`planning/version_gates.py`).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sm_peagle.catalog.models import find_model
from sm_peagle.drafter import check_drafter, inspect_drafter
from sm_peagle.planning.build import plan
from sm_peagle.planning.spec.loading import spec_from_data
from sm_peagle.planning.steps.version_gates import check_version_gates
from sm_peagle.vllm.versions import VllmVersion as V
from sm_peagle.vllm.versions import covered_versions, mask_token_keys
from tests.drafter_fixtures import TARGET_HIDDEN, TARGET_VOCAB, edit_config, make_head, resave


def run(d: Path, version: str, mode: str = "p-eagle", **kw):
    args = dict(target_hidden_size=TARGET_HIDDEN, target_vocab_size=TARGET_VOCAB, k=3, trained_k=5)
    args.update(kw)
    checks = check_drafter(inspect_drafter(str(d)), vllm_version=V(version), mode=mode, **args)
    return {c.name: c for c in checks}


def fails(checks) -> set[str]:
    return {n for n, c in checks.items() if c.status == "fail"}


# (architectures[0], vLLM version, passes?, substring of the message)
ARCHS = [
    ("LlamaForCausalLM", "0.18.0", True, "Eagle3LlamaForCausalLM"),
    ("LlamaForCausalLMEagle3", "0.16.0", True, "LlamaForCausalLMEagle3"),
    ("PEagleDraftModel", "0.18.0", False, "Eagle3PEagleDraftModel"),
    ("PEagleDraftModel", "0.28.0", False, "Eagle3PEagleDraftModel"),
    ("PeagleLlamaForCausalLM", "0.24.0", False, "Eagle3PeagleLlamaForCausalLM"),
    ("Qwen3ForCausalLM", "0.23.0", False, "needs vLLM >= 0.24.0"),
    ("Qwen3ForCausalLM", "0.24.0", True, "Eagle3Qwen3ForCausalLM"),
    ("Eagle3DeepseekV3ForCausalLM", "0.17.1", False, "needs vLLM >= 0.18.0"),
    ("Eagle3MiniMaxM2ForCausalLM", "0.20.0", True, "Eagle3MiniMaxM2ForCausalLM"),
]


@pytest.mark.parametrize(("arch", "version", "ok", "text"), ARCHS)
def test_architecture(tmp_path: Path, arch: str, version: str, ok: bool, text: str) -> None:
    d = make_head(tmp_path / "h")
    edit_config(d, architectures=[arch])
    c = run(d, version)["drafter.architecture"]
    assert (c.status == "pass") is ok and text in c.message, c.message


def test_llama_for_causal_lm_head_with_the_right_tensors_passes_on_0_18_0(tmp_path: Path) -> None:
    d = make_head(tmp_path / "h")
    edit_config(d, architectures=["LlamaForCausalLM"])
    assert not fails(run(d, "0.18.0"))


# Speculators format: vLLM sets the architecture, peagle from 0.22.0 maps mask_token_id.
@pytest.mark.parametrize(("version", "ok"), [("0.21.0", False), ("0.22.0", True), ("0.28.0", True)])
def test_speculators_peagle_config(tmp_path: Path, version: str, ok: bool) -> None:
    d = make_head(tmp_path / "h")
    edit_config(
        d,
        drop=("ptd_token_id", "architectures"),
        speculators_model_type="peagle",
        speculators_config={"algorithm": "peagle"},
        mask_token_id=511,
    )
    checks = run(d, version)
    assert (checks["drafter.architecture"].status == "pass") is ok
    assert (checks["drafter.mask_token"].status == "pass") is ok
    if ok:
        assert "PeagleLlamaForCausalLM" in checks["drafter.architecture"].message
        # 0.22-0.27 read it as pard_token (speculators mapping); 0.28+ read mask_token_id first.
        key = "mask_token_id" if V(version) >= V("0.28.0") else "pard_token"
        assert f"{key} = 511" in checks["drafter.mask_token"].message
    else:
        assert "needs vLLM >= 0.22.0" in checks["drafter.architecture"].message


def _speculators_layout(d: Path) -> None:
    """Move the drafter's own sizes under transformer_layer_config, as a speculators export
    does; vLLM builds the head config from that block and copies only target_hidden_size
    and draft_vocab_size from the top (`transformers_utils/configs/speculators/base.py`,
    `algos.py::update_peagle`)."""
    import json

    cfg = json.loads((d / "config.json").read_text())
    layer = {k: cfg[k] for k in ("hidden_size", "num_hidden_layers", "num_attention_heads",
                                 "vocab_size", "model_type") if k in cfg}  # fmt: skip
    edit_config(
        d,
        drop=("ptd_token_id", "architectures", *[k for k in layer if k != "model_type"]),
        speculators_model_type="peagle",
        speculators_config={"algorithm": "peagle"},
        transformer_layer_config=layer,
        target_hidden_size=TARGET_HIDDEN,
        mask_token_id=511,
    )


def test_speculators_sizes_come_from_transformer_layer_config(tmp_path: Path) -> None:
    d = make_head(tmp_path / "h")
    _speculators_layout(d)
    checks = run(d, "0.31.0")
    # Sizes found, so the shape rules ran and passed rather than warning "not verified".
    assert checks["drafter.config"].status == "pass", checks["drafter.config"].message
    assert checks["drafter.fc_shape"].status == "pass", checks["drafter.fc_shape"].message
    assert checks["drafter.mask_hidden"].status == "pass", checks["drafter.mask_hidden"].message


def test_speculators_head_with_a_wrong_fc_width_fails(tmp_path: Path) -> None:
    d = make_head(tmp_path / "h")
    _speculators_layout(d)
    # fc must be [hidden, 3 x target hidden] = [hidden, 192]; 2 x 64 = 128 is what a
    # head trained with two aux layers would carry.
    resave(d, replace={"fc.weight": np.zeros((TARGET_HIDDEN, 128), np.float16)})
    checks = run(d, "0.31.0")
    assert checks["drafter.fc_shape"].status == "fail", checks["drafter.fc_shape"].message


# Mask token: first key in vLLM's order wins; messages name only keys that version reads.
@pytest.mark.parametrize(
    ("config", "version", "status", "text"),
    [
        ({"pard_token": 1, "ptd_token_id": 2}, "0.18.0", "pass", "pard_token = 1"),
        (
            {"dflash_config": {"mask_token_id": 3}, "ptd_token_id": 2},
            "0.20.0",
            "pass",
            "dflash_config.mask_token_id = 3",
        ),
        (
            {"dspark_noise_token_id": 4, "pard_token": 1},
            "0.28.0",
            "pass",
            "dspark_noise_token_id = 4",
        ),
        ({"dspark_noise_token_id": 4}, "0.27.1", "fail", "needs vLLM >= 0.28.0"),
        ({"mask_token_id": 5}, "0.18.0", "fail", "it reads pard_token, ptd_token_id;"),
    ],
)
def test_mask_token_order(
    tmp_path: Path, config: dict, version: str, status: str, text: str
) -> None:
    d = make_head(tmp_path / "h")
    edit_config(d, drop=("ptd_token_id",), **config)
    c = run(d, version)["drafter.mask_token"]
    assert c.status == status and text in c.message, c.message
    if status == "fail":  # the message names only keys this version reads
        listed = c.message.split("it reads ")[-1].split(";")[0] if "it reads" in c.message else ""
        assert set(filter(None, listed.split(", "))) <= set(mask_token_keys(V(version)))


# mask_hidden: 3 x head hidden up to 0.21.x; target_hidden_size x aux from 0.22.0.
@pytest.mark.parametrize(
    ("changes", "mask_len", "version", "ok"),
    [
        ({}, 3 * 64, "0.21.0", True),
        ({"target_hidden_size": 80}, 3 * 64, "0.21.0", True),  # head hidden 64 x 3
        ({"target_hidden_size": 80}, 3 * 64, "0.22.0", False),  # needs 80 x 3
        ({"num_aux_hidden_states": 2}, 2 * 64, "0.22.0", True),
        (
            {"eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 2, 3, 4]}},
            4 * 64,
            "0.22.0",
            True,
        ),
        ({"num_aux_hidden_states": 2}, 2 * 64, "0.21.0", False),  # 0.21 ignores it: 3 x 64
    ],
)
def test_mask_hidden_size(
    tmp_path: Path, changes: dict, mask_len: int, version: str, ok: bool
) -> None:
    d = make_head(tmp_path / "h")
    edit_config(d, **changes)
    resave(d, replace={"mask_hidden": np.zeros((1, 1, mask_len), np.float16)})
    c = run(d, version)["drafter.mask_hidden"]
    assert (c.status == "pass") is ok, c.message


def test_small_draft_vocab_without_d2t_is_a_warning(tmp_path: Path) -> None:
    d = make_head(tmp_path / "h")
    resave(d, drop=("d2t", "t2d"))
    c = run(d, "0.18.0")["drafter.vocab"]
    assert c.status == "warn" and "acceptance silently collapses" in c.message


def test_head_vocab_must_equal_the_targets(tmp_path: Path) -> None:
    # Qwen3-Coder: target vocab 151936; a GPT-OSS-style head has vocab_size 201088.
    qwen = find_model("qwen3-coder-30b-a3b-instruct")
    assert qwen is not None and qwen.vocab_size == 151936
    d = make_head(tmp_path / "h")
    edit_config(d, vocab_size=201088, draft_vocab_size=128)
    c = run(d, "0.18.0", target_vocab_size=qwen.vocab_size)["drafter.vocab"]
    assert c.status == "fail" and "201088" in c.message and "151936" in c.message


# drafter check and plan agree on every version gate (one function).
GATE_CASES = [
    (None, "p-eagle"),
    (None, "eagle3"),
    ("gemma-4-31b-it", "p-eagle"),
    ("gemma-4-31b-it", "eagle3"),
    ("gpt-oss-20b", "p-eagle"),
]
MINE = "123456789012.dkr.ecr.us-east-1.amazonaws.com/my-vllm"
VERSIONS = ["0.13.0", "0.15.1", *(str(v) for v in covered_versions()), "0.34.0"]


@pytest.mark.parametrize(("model", "mode"), GATE_CASES)
def test_drafter_check_and_plan_agree_on_every_gate(model: str | None, mode: str) -> None:
    entry = find_model(model) if model else None
    for version in VERSIONS:
        gates = check_version_gates(V(version), mode, entry, field="container.vllm_version")
        drafter_fails = any(c.status == "fail" for c in gates)
        if model is None:
            continue
        p = plan(
            spec_from_data(
                {
                    "model": model,
                    "model_data": "s3://my-bucket/w/",
                    "drafter": {"source": "s3://my-bucket/h/"},
                    "speculative": {"mode": mode},
                    "container": {"image": f"{MINE}:{version}", "vllm_version": version},
                }
            )
        )
        plan_gate_fails = any(
            c.status == "fail" and c.name in ("container.vllm_version", "speculative.mode")
            for c in p.checks
        )
        assert plan_gate_fails == drafter_fails, (model, mode, version)


@pytest.mark.parametrize(
    ("version", "fails_"), [("0.15.0", True), ("0.15.1", True), ("0.16.0", False)]
)
def test_drafter_check_refuses_p_eagle_before_0_16_like_plan(
    tmp_path: Path, version: str, fails_: bool
) -> None:
    d = make_head(tmp_path / "h")
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "sm_peagle.cli",
            "drafter",
            "check",
            str(d),
            "--vllm-version",
            version,
            "--mode",
            "p-eagle",
            "--target-hidden-size",
            "64",
            "--target-vocab-size",
            "512",
            "-k",
            "3",
            "--trained-k",
            "5",
        ],
        capture_output=True,
        text=True,
    )
    assert (out.returncode == 2) is fails_, out.stdout + out.stderr
