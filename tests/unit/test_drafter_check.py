"""drafter inspect + check on real (tiny) safetensors heads written to tmp_path."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest

from sm_peagle.checks import Check
from sm_peagle.drafter import (
    DrafterInspection,
    HeaderError,
    check_drafter,
    inspect_drafter,
    read_local_header,
)
from sm_peagle.drafter.safetensors_header import parse_header
from sm_peagle.errors import SpecError
from sm_peagle.vllm.versions import VllmVersion
from tests.drafter_fixtures import (
    TARGET_HIDDEN,
    TARGET_VOCAB,
    corrupt_header,
    edit_config,
    make_head,
    resave,
)

V18, V22, V28 = VllmVersion("0.18.0"), VllmVersion("0.22.0"), VllmVersion("0.28.0")
NAMES = [
    "drafter.config",
    "drafter.weights",
    "drafter.architecture",
    "drafter.mask_token",
    "drafter.mask_hidden",
    "drafter.fc_shape",
    "drafter.vocab",
    "drafter.k",
    "drafter.layout",
]


def run(d: Path, **kw) -> dict[str, Check]:
    args = dict(
        target_hidden_size=TARGET_HIDDEN,
        target_vocab_size=TARGET_VOCAB,
        vllm_version=V18,
        mode="p-eagle",
        k=3,
        trained_k=5,
    )
    args.update(kw)
    checks = check_drafter(inspect_drafter(str(d)), **args)
    assert [c.name for c in checks] == NAMES
    return {c.name: c for c in checks}


def assert_only_fail(checks: dict[str, Check], name: str, substring: str) -> Check:
    bad = {n for n, c in checks.items() if c.status == "fail"}
    assert bad == {name}, {n: checks[n].message for n in bad}
    c = checks[name]
    assert substring in c.message, c.message
    assert c.fix, "every failure says what to change"
    return c


def all_pass(checks: dict[str, Check]) -> None:
    assert {n: c.status for n, c in checks.items()} == dict.fromkeys(NAMES, "pass"), {
        n: c.message for n, c in checks.items() if c.status != "pass"
    }


@pytest.mark.parametrize("variant", ["peagle-llama", "peagle-sharded", "peagle-gpt-oss"])
def test_valid_peagle_head_passes(tmp_path: Path, variant: str) -> None:
    d = make_head(tmp_path / "head", variant)
    all_pass(run(d, vllm_version=V22))
    if variant != "peagle-gpt-oss":
        all_pass(run(d))


def test_head_hidden_differs_from_target_fails_before_022(tmp_path: Path) -> None:
    # llama_eagle3.py up to 0.21.x sizes mask_hidden as 3 x the head's own hidden_size
    # (48 -> 144); the fixture's mask_hidden is 3 x target hidden 64 = 192, which only
    # 0.22.0+ (target_hidden_size x aux) accepts. Real GPT-OSS heads have hidden = target.
    d = make_head(tmp_path / "head", "peagle-gpt-oss")
    c = assert_only_fail(
        run(d), "drafter.mask_hidden", "vLLM 0.18.0 builds 3 x config.json hidden_size 48 = 144"
    )
    assert "0.22.0" in c.fix
    all_pass(run(d, vllm_version=V28))


def test_inspection_reports_facts(tmp_path: Path) -> None:
    ins = inspect_drafter(str(make_head(tmp_path / "h", "peagle-sharded")))
    d = ins.to_dict()
    json.dumps(d)  # JSON-ready
    assert d["architecture"] == "LlamaForCausalLMEagle3"
    assert d["mask_token"] == {"key": "ptd_token_id", "value": TARGET_VOCAB - 1}
    assert d["mask_hidden"] is True and d["mask_hidden_shape"] == [1, 1, 3 * TARGET_HIDDEN]
    assert d["fc_shape"] == [TARGET_HIDDEN, 3 * TARGET_HIDDEN]
    assert d["d2t"] is True and d["draft_vocab_size"] == 128
    assert d["dtypes"] == ["BOOL", "F16", "F32", "I64"]
    assert d["weight_files"] == [
        "model-00001-of-00002.safetensors",
        "model-00002-of-00002.safetensors",
    ]
    assert d["tensor_count"] == 16 and d["problems"] == [] and d["folder_keys"] == []
    assert d["parameter_count"] > 0 and d["total_tensor_bytes"] > d["parameter_count"]
    assert {f["name"] for f in d["files"]} == {
        "config.json",
        "model.safetensors.index.json",
        *d["weight_files"],
    }


def test_gpt_oss_style_prefixed_tensors(tmp_path: Path) -> None:
    ins = inspect_drafter(str(make_head(tmp_path / "h", "peagle-gpt-oss")))
    assert ins.fc_name == "model.fc.weight" and ins.fc_shape == [48, 192]
    assert ins.target_hidden_size == TARGET_HIDDEN and not ins.d2t


def test_eagle3_head_passes_for_eagle3_fails_for_peagle(tmp_path: Path) -> None:
    d = make_head(tmp_path / "h", "eagle3-llama")
    all_pass(run(d, mode="eagle3"))
    checks = run(d, mode="p-eagle")
    bad = {n for n, c in checks.items() if c.status == "fail"}
    assert bad == {"drafter.mask_token", "drafter.mask_hidden"}
    assert (
        "mask_hidden not found in weights (model.safetensors)"
        in checks["drafter.mask_hidden"].message
    )
    assert "no mask-token id" in checks["drafter.mask_token"].message


def test_missing_config(tmp_path: Path) -> None:
    d = make_head(tmp_path / "h")
    (d / "config.json").unlink()
    checks = run(d)
    c = assert_only_fail(checks, "drafter.config", "config.json not found")
    assert "config.json" in c.fix
    # Rules that need config.json say they were not checked instead of passing.
    for n in ("drafter.architecture", "drafter.mask_token", "drafter.fc_shape", "drafter.vocab"):
        assert checks[n].status == "warn" and "not checked" in checks[n].message


def test_bad_json_config(tmp_path: Path) -> None:
    d = make_head(tmp_path / "h")
    (d / "config.json").write_text("{nope")
    assert_only_fail(run(d), "drafter.config", "config.json is not valid JSON")


def test_missing_mask_key(tmp_path: Path) -> None:
    d = make_head(tmp_path / "h")
    edit_config(d, drop=("ptd_token_id",))
    c = assert_only_fail(run(d), "drafter.mask_token", "no mask-token id")
    assert "ptd_token_id" in c.fix
    all_pass(run(d, mode="eagle3"))


def test_mask_token_id_only_depends_on_version(tmp_path: Path) -> None:
    d = make_head(tmp_path / "h")
    edit_config(d, drop=("ptd_token_id",), mask_token_id=511)
    c = assert_only_fail(
        run(d, vllm_version=V18),
        "drafter.mask_token",
        "has only mask_token_id, which vLLM 0.18.0 does not read",
    )
    assert "0.28.0" in c.message and '"ptd_token_id": 511' in c.fix
    checks = run(d, vllm_version=V28)
    all_pass(checks)
    assert "mask_token_id = 511" in checks["drafter.mask_token"].message


def test_nested_dflash_key_from_020(tmp_path: Path) -> None:
    d = make_head(tmp_path / "h")
    edit_config(d, drop=("ptd_token_id",), dflash_config={"mask_token_id": 7})
    assert_only_fail(run(d, vllm_version=V18), "drafter.mask_token", "dflash_config")
    all_pass(run(d, vllm_version=VllmVersion("0.20.0")))


def test_non_integer_mask_token(tmp_path: Path) -> None:
    d = make_head(tmp_path / "h")
    edit_config(d, ptd_token_id="511")
    assert_only_fail(run(d), "drafter.mask_token", "ptd_token_id is '511', not a token id")


def test_wrong_fc_shape(tmp_path: Path) -> None:
    d = make_head(tmp_path / "h")
    # A head trained for a target with hidden size 80: fc and mask_hidden take 3 x 80.
    edit_config(d, target_hidden_size=80)
    resave(
        d,
        replace={
            "fc.weight": np.zeros((64, 240), np.float16),
            "mask_hidden": np.zeros((1, 1, 240), np.float16),
        },
    )
    checks = run(d)
    bad = {n for n, c in checks.items() if c.status == "fail"}
    assert bad == {"drafter.fc_shape", "drafter.mask_hidden"}
    assert (
        "fc.weight is [64, 240] but 3 hidden states of the target (hidden size 64) need [64, 192]"
        in checks["drafter.fc_shape"].message
    )


def test_fc_inconsistent_with_config(tmp_path: Path) -> None:
    d = make_head(tmp_path / "h", "peagle-gpt-oss")
    edit_config(d, drop=("target_hidden_size",))  # vLLM would build fc as [48, 144]
    checks = run(d, vllm_version=V22)
    # mask_hidden too: from 0.22.0 it is target_hidden_size (default hidden_size 48) x 3.
    assert {n for n, c in checks.items() if c.status == "fail"} == {
        "drafter.fc_shape",
        "drafter.mask_hidden",
    }
    c = checks["drafter.fc_shape"]
    assert "model.fc.weight is [48, 192]" in c.message
    assert '"target_hidden_size": 64' in c.fix


def test_plain_llama_architecture_is_rewritten_and_passes(tmp_path: Path) -> None:
    # transformers_utils/configs/eagle.py: LlamaForCausalLM -> Eagle3LlamaForCausalLM.
    d = make_head(tmp_path / "h")
    edit_config(d, architectures=["LlamaForCausalLM"])
    checks = run(d)
    all_pass(checks)
    assert "Eagle3LlamaForCausalLM" in checks["drafter.architecture"].message


def test_wrong_architecture(tmp_path: Path) -> None:
    d = make_head(tmp_path / "h")
    edit_config(d, architectures=["MistralForCausalLM"])
    c = assert_only_fail(
        run(d), "drafter.architecture", "MistralForCausalLM becomes Eagle3MistralForCausalLM"
    )
    assert "LlamaForCausalLMEagle3" in c.fix


@pytest.mark.parametrize("version", [V18, V28])
def test_plain_peagle_draft_model_config_fails(tmp_path: Path, version: VllmVersion) -> None:
    # PEagleDraftModel is registered from 0.22.0, but a plain config is rewritten to
    # Eagle3PEagleDraftModel, which no version registers: only the speculators format
    # loads it.
    d = make_head(tmp_path / "h")
    edit_config(d, architectures=["PEagleDraftModel"])
    c = assert_only_fail(
        run(d, vllm_version=version), "drafter.architecture", "becomes Eagle3PEagleDraftModel"
    )
    assert "speculators format" in c.fix and "LlamaForCausalLMEagle3" in c.fix


def test_draft_vocab_without_d2t_warns(tmp_path: Path) -> None:
    # vLLM starts (the map stays zeros): a warning about collapsing acceptance.
    d = make_head(tmp_path / "h")
    resave(d, drop=("d2t", "t2d"))
    checks = run(d)
    assert not [c for c in checks.values() if c.status == "fail"]
    c = checks["drafter.vocab"]
    assert c.status == "warn" and "no d2t tensor" in c.message
    assert "acceptance silently collapses" in c.message and "d2t" in c.fix


@pytest.mark.parametrize(
    "how,substring",
    [
        ("too-long", "larger than the file"),
        ("not-json", "not JSON"),
        ("truncated", "truncated"),
    ],
)
def test_corrupt_header(tmp_path: Path, how: str, substring: str) -> None:
    d = make_head(tmp_path / "h")
    corrupt_header(d / "model.safetensors", how)
    checks = run(d)
    c = assert_only_fail(checks, "drafter.weights", "model.safetensors: corrupt safetensors")
    assert substring in c.message and "model.safetensors" in c.fix
    assert checks["drafter.mask_hidden"].status == "warn"


def test_missing_shard(tmp_path: Path) -> None:
    d = make_head(tmp_path / "h", "peagle-sharded")
    (d / "model-00002-of-00002.safetensors").unlink()
    assert_only_fail(run(d), "drafter.weights", "lists shard model-00002-of-00002.safetensors")


def test_k_above_trained_k(tmp_path: Path) -> None:
    d = make_head(tmp_path / "h")
    c = assert_only_fail(run(d, k=7, trained_k=5), "drafter.k", "K=7 is above the head's trained")
    assert "<= 5" in c.fix
    assert_only_fail(run(d, k=0), "drafter.k", "outside 1..128")


def test_unknown_target_facts_warn(tmp_path: Path) -> None:
    d = make_head(tmp_path / "h")
    checks = run(d, target_hidden_size=None, target_vocab_size=None, k=3, trained_k=None)
    warns = {n for n, c in checks.items() if c.status == "warn"}
    # mask_hidden is sized from config.json alone (llama_eagle3.py): no target needed.
    assert warns == {"drafter.fc_shape", "drafter.vocab", "drafter.k"}
    assert "unknown" in checks["drafter.fc_shape"].message
    assert checks["drafter.k"].status == "warn"
    assert run(d, k=None)["drafter.k"].status == "warn"


def test_ambiguous_local_names_fail_layout(tmp_path: Path) -> None:
    d = make_head(tmp_path / "h")
    (d / "README.md").write_text("a")
    (d / "readme.md").write_text("b")
    (d / ".DS_Store").write_bytes(b"\0")  # hidden: skipped by push, not a layout problem
    assert_only_fail(run(d), "drafter.layout", "readme.md (same as README.md ignoring case)")


def test_inspect_source_errors(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="does not exist"):
        inspect_drafter(str(tmp_path / "nope"))
    (tmp_path / "f").write_text("x")
    with pytest.raises(SpecError, match="not a directory"):
        inspect_drafter(str(tmp_path / "f"))
    with pytest.raises(SpecError, match="malformed S3 URI"):
        inspect_drafter("s3://Bad_Bucket/x")


def test_bad_mode() -> None:
    with pytest.raises(SpecError, match="unknown drafter mode"):
        check_drafter(DrafterInspection("x"), vllm_version=V18, mode="medusa")


# --- the header parser on its own ------------------------------------------------------


def test_header_reads_only_header(tmp_path: Path) -> None:
    d = make_head(tmp_path / "h", big=True)
    h = read_local_header(d / "model.safetensors")
    assert h.metadata == {"format": "pt"}
    assert h.tensors["midlayer.mlp.gate_proj.weight"].shape == (8192, 64)
    assert (d / "model.safetensors").stat().st_size == 8 + h.header_len + h.data_bytes


@pytest.mark.parametrize(
    "header,match",
    [
        (b'{"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}}', "span 4 bytes"),
        (b'{"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}', "expected 0"),
        (b'{"a": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}}', "invalid shape"),
        (b"[1, 2]", "not an object"),
    ],
)
def test_header_validation(header: bytes, match: str) -> None:
    with pytest.raises(HeaderError, match=match):
        parse_header(len(header), header, name="x.safetensors")


def test_header_length_too_large(tmp_path: Path) -> None:
    p = tmp_path / "x.safetensors"
    p.write_bytes(struct.pack("<Q", 2**40) + b"{}")
    with pytest.raises(
        HeaderError, match="x.safetensors: corrupt safetensors header: header length"
    ):
        read_local_header(p)
