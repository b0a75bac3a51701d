"""Judge an inspected drafter against the target model, the vLLM version and K.

Each rule mirrors a start-up or load failure of vLLM that would otherwise surface only
after SageMaker spent 10-20 minutes pulling the image and weights. One Check per rule;
when an input the rule needs is unknown it warns (naming what was not verified) rather
than passing silently.
"""

from __future__ import annotations

from sm_peagle.checks import Check, failed, passed, warned
from sm_peagle.drafter.inspection import DrafterInspection
from sm_peagle.errors import SpecError
from sm_peagle.vllm.head_rules import (
    check_architecture,
    check_mask_token,
    effective_architecture,
)
from sm_peagle.vllm.head_shapes import check_fc_shape, check_mask_hidden, check_vocab
from sm_peagle.vllm.versions import MAX_K, VllmVersion

__all__ = ["MODES", "check_drafter"]

MODES = ("p-eagle", "eagle3")
_WEIGHT_PROBLEMS = ("missing_weights", "bad_index", "missing_shard", "corrupt_header")
# The rules that depend on the vLLM version live in version_rules.py (architecture,
# mask token) and shape_rules.py (mask_hidden, fc, vocab); the version gates shared
# with `plan` (parallel drafting, model minimums) are planning/version_gates.py.


def check_drafter(
    inspection: DrafterInspection,
    *,
    target_hidden_size: int | None = None,
    target_vocab_size: int | None = None,
    vllm_version: VllmVersion,
    mode: str = "p-eagle",
    k: int | None = None,
    trained_k: int | None = None,
) -> list[Check]:
    """Run every drafter rule; returns checks in a fixed order (config first, layout last)."""
    if mode not in MODES:
        raise SpecError(f"unknown drafter mode {mode!r}", remedy="use p-eagle or eagle3")
    ins, v = inspection, vllm_version
    arch = effective_architecture(ins, v)  # the class vLLM loads: sizes depend on it
    return [
        _config(ins),
        _weights(ins),
        check_architecture(ins, v),
        check_mask_token(ins, v, mode),
        check_mask_hidden(ins, mode, v, arch),
        check_fc_shape(ins, target_hidden_size, v, arch),
        check_vocab(ins, target_vocab_size),
        _k(k, trained_k),
        _layout(ins),
    ]


def _files(ins: DrafterInspection) -> str:
    return ", ".join(ins.weight_files) or "weights"


def _config(ins: DrafterInspection) -> Check:
    name = "drafter.config"
    if ins.problem("missing_config") is not None:
        return failed(
            name,
            f"config.json not found in {ins.source}",
            fix="add the head's config.json next to its safetensors weights",
        )
    if (p := ins.problem("bad_config")) is not None:
        return failed(name, p.message, fix="repair config.json (it must be one JSON object)")
    missing = [key for key in ("hidden_size", "vocab_size") if getattr(ins, key) is None]
    if missing:
        return warned(
            name,
            f"config.json has no integer {', '.join(missing)}",
            fix="copy the head's config.json as published with its weights",
        )
    return passed(
        name,
        f"config.json: {ins.architecture}, hidden {ins.hidden_size}, "
        f"{ins.num_hidden_layers} layer(s), vocab {ins.vocab_size}",
    )


def _weights(ins: DrafterInspection) -> Check:
    name = "drafter.weights"
    probs = [p for p in ins.problems if p.kind in _WEIGHT_PROBLEMS]
    if probs:
        first = probs[0]
        fixes = {
            "corrupt_header": f"re-save {first.file} with safetensors save_file and upload it "
            "again (the file is truncated or not safetensors)",
            "missing_shard": f"upload {first.file} or fix weight_map in "
            "model.safetensors.index.json",
            "bad_index": "repair model.safetensors.index.json (it needs a weight_map object)",
            "missing_weights": "save the head's weights as model.safetensors",
        }
        return failed(name, "; ".join(p.message for p in probs), fix=fixes[first.kind])
    mib = ins.total_tensor_bytes / 2**20
    return passed(
        name,
        f"{ins.tensor_count} tensors, {ins.parameter_count:,} parameters, "
        f"{mib:.1f} MiB in {_files(ins)} ({', '.join(ins.dtypes)})",
    )


def _k(k: int | None, trained_k: int | None) -> Check:
    name = "drafter.k"
    if k is None:
        return warned(name, "K (num_speculative_tokens) not given; not checked")
    if not 1 <= k <= MAX_K:
        return failed(
            name,
            f"K={k} is outside 1..{MAX_K}",
            fix=f"set num_speculative_tokens between 1 and {MAX_K}",
        )
    if trained_k is None:
        return warned(
            name,
            f"K={k}; the head's trained K is unknown, not verified",
            fix="pass the K the head was trained with",
        )
    if k > trained_k:
        return failed(
            name,
            f"K={k} is above the head's trained K={trained_k}",
            fix=f"set num_speculative_tokens <= {trained_k}",
        )
    return passed(name, f"K={k} <= trained K={trained_k}")


def _layout(ins: DrafterInspection) -> Check:
    name = "drafter.layout"
    if ins.folder_keys:
        keys = ", ".join(ins.folder_keys)
        return failed(
            name,
            f"zero-byte folder object(s) under {ins.source}: {keys}",
            fix="delete them (aws s3 rm s3://BUCKET/KEY); peagle drafter push never creates them",
        )
    if ins.bad_names:
        return failed(
            name,
            f"ambiguous file name(s) for the SageMaker mount: {', '.join(ins.bad_names)}",
            fix="rename to [A-Za-z0-9._-] names, unique ignoring case",
        )
    where = "S3 prefix" if ins.source.startswith("s3://") else "directory"
    return passed(
        name,
        f"{len(ins.files)} file(s) in {where}, each mounts as "
        "/opt/ml/additional-model-data-sources/<channel>/<name>",
    )
