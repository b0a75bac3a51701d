"""drafter/check.py's own rules (config, weights, K, layout) message by message, on
inspections built by hand: what a user reads is the contract. K's range is vLLM's
rejection-sampler limit 1..128; a head drafts at most the K it was trained for."""

from __future__ import annotations

import pytest

from sm_peagle.drafter.check import check_drafter
from sm_peagle.drafter.inspection import DrafterInspection, FileEntry, Problem
from sm_peagle.errors import SpecError
from sm_peagle.vllm.versions import VllmVersion
from tests.unit.test_drafter_check import NAMES

V = VllmVersion("0.18.0")


def good(**changes) -> DrafterInspection:
    ins = DrafterInspection(
        source="s3://acme-heads/head/",
        files=[FileEntry("config.json", 10), FileEntry("model.safetensors", 100)],
        config={"hidden_size": 64, "vocab_size": 512},
        architecture="LlamaForCausalLMEagle3",
        hidden_size=64,
        num_hidden_layers=1,
        vocab_size=512,
        weight_files=["model.safetensors"],
        tensor_count=3,
        total_tensor_bytes=3 * 2**20,
        dtypes=["F16", "F32"],
        parameter_count=1_234_567,
    )
    for k, v in changes.items():
        setattr(ins, k, v)
    return ins


def check(ins: DrafterInspection, name: str, **kw):
    args = {"vllm_version": V, "mode": "eagle3", "k": 3, "trained_k": 5, **kw}
    (c,) = [c for c in check_drafter(ins, **args) if c.name == f"drafter.{name}"]
    return c.status, c.message, c.fix


def test_config_read_in_full() -> None:
    assert check(good(), "config") == (
        "pass",
        "config.json: LlamaForCausalLMEagle3, hidden 64, 1 layer(s), vocab 512",
        None,
    )


def test_config_missing_unreadable_or_incomplete() -> None:
    missing = good(problems=[Problem("missing_config", "config.json", "not there")])
    assert check(missing, "config") == (
        "fail",
        "config.json not found in s3://acme-heads/head/",
        "add the head's config.json next to its safetensors weights",
    )
    bad = good(problems=[Problem("bad_config", "config.json", "config.json: not JSON")])
    assert check(bad, "config") == (
        "fail",
        "config.json: not JSON",
        "repair config.json (it must be one JSON object)",
    )
    assert check(good(hidden_size=None, vocab_size=None), "config") == (
        "warn",
        "config.json has no integer hidden_size, vocab_size",
        "copy the head's config.json as published with its weights",
    )
    assert check(good(vocab_size=None), "config")[1] == "config.json has no integer vocab_size"


def test_weights_summary_in_full() -> None:
    assert check(good(), "weights") == (
        "pass",
        "3 tensors, 1,234,567 parameters, 3.0 MiB in model.safetensors (F16, F32)",
        None,
    )
    two = good(weight_files=["a.safetensors", "b.safetensors"])
    assert "in a.safetensors, b.safetensors (" in check(two, "weights")[1]
    assert " MiB in weights (" in check(good(weight_files=[]), "weights")[1]


@pytest.mark.parametrize(
    ("kind", "fix"),
    [
        (
            "corrupt_header",
            "re-save w.safetensors with safetensors save_file and upload it again "
            "(the file is truncated or not safetensors)",
        ),
        ("missing_shard", "upload w.safetensors or fix weight_map in model.safetensors.index.json"),
        ("bad_index", "repair model.safetensors.index.json (it needs a weight_map object)"),
        ("missing_weights", "save the head's weights as model.safetensors"),
    ],
)
def test_weight_problems_each_have_their_fix(kind: str, fix: str) -> None:
    ins = good(
        problems=[Problem(kind, "w.safetensors", "first"), Problem("bad_index", "i", "second")]
    )
    # All weight problems are listed; the fix is the first one's.
    assert check(ins, "weights") == ("fail", "first; second", fix)


@pytest.mark.parametrize(
    ("k", "trained", "expected"),
    [
        (None, 5, ("warn", "K (num_speculative_tokens) not given; not checked", None)),
        (0, 5, ("fail", "K=0 is outside 1..128", "set num_speculative_tokens between 1 and 128")),
        (1, 5, ("pass", "K=1 <= trained K=5", None)),
        (5, 5, ("pass", "K=5 <= trained K=5", None)),  # the trained K itself is fine
        (6, 5, ("fail", "K=6 is above the head's trained K=5", "set num_speculative_tokens <= 5")),
        (128, 200, ("pass", "K=128 <= trained K=200", None)),
        (
            129,
            200,
            ("fail", "K=129 is outside 1..128", "set num_speculative_tokens between 1 and 128"),
        ),
        (
            4,
            None,
            (
                "warn",
                "K=4; the head's trained K is unknown, not verified",
                "pass the K the head was trained with",
            ),
        ),
    ],
)
def test_k_rule(k, trained, expected) -> None:
    assert check(good(), "k", k=k, trained_k=trained) == expected


def test_layout_in_s3_and_in_a_directory() -> None:
    assert check(good(), "layout") == (
        "pass",
        "2 file(s) in S3 prefix, each mounts as "
        "/opt/ml/additional-model-data-sources/<channel>/<name>",
        None,
    )
    assert check(good(source="/tmp/head"), "layout")[1].startswith("2 file(s) in directory,")


def test_layout_problems() -> None:
    folders = good(folder_keys=["head/", "head/sub/"])
    assert check(folders, "layout") == (
        "fail",
        "zero-byte folder object(s) under s3://acme-heads/head/: head/, head/sub/",
        "delete them (aws s3 rm s3://BUCKET/KEY); peagle drafter push never creates them",
    )
    names = good(bad_names=["a b.json", "A.json"])
    assert check(names, "layout") == (
        "fail",
        "ambiguous file name(s) for the SageMaker mount: a b.json, A.json",
        "rename to [A-Za-z0-9._-] names, unique ignoring case",
    )


def test_unknown_mode_is_a_spec_error() -> None:
    with pytest.raises(SpecError, match="unknown drafter mode 'medusa'"):
        check_drafter(good(), vllm_version=V, mode="medusa")
    names = [c.name for c in check_drafter(good(), vllm_version=V, mode="eagle3")]
    assert names == NAMES  # the fixed order, written out in test_drafter_check.py
