"""Judge an inspected drafter against the target model, the vLLM version and K.

Each rule mirrors a start-up or load failure of vLLM that would otherwise surface only
after SageMaker spent 10-20 minutes pulling the image and weights. One Check per rule;
when an input the rule needs is unknown it warns (naming what was not verified) rather
than passing silently.
"""

from __future__ import annotations

from typing import Any

from sm_peagle.drafter.inspection import DrafterInspection, lookup
from sm_peagle.errors import SpecError
from sm_peagle.planning.checks import Check, failed, passed, warned
from sm_peagle.planning.vllm_versions import (
    MAX_K,
    NEWEST_CHECKED,
    PARALLEL_DRAFTING_MIN,
    VllmVersion,
    eagle3_architectures,
    mask_token_keys,
)

__all__ = ["MODES", "check_drafter"]

MODES = ("p-eagle", "eagle3")
_WEIGHT_PROBLEMS = ("missing_weights", "bad_index", "missing_shard", "corrupt_header")


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
    ins = inspection
    return [
        _config(ins),
        _weights(ins),
        _architecture(ins, vllm_version),
        _mask_token(ins, vllm_version, mode),
        _mask_hidden(ins, target_hidden_size, mode),
        _fc_shape(ins, target_hidden_size),
        _vocab(ins, target_vocab_size),
        _k(k, trained_k),
        _layout(ins),
    ]


def _versions() -> list[VllmVersion]:
    last = NEWEST_CHECKED.parts[1]
    return [VllmVersion(f"0.{m}.0") for m in range(PARALLEL_DRAFTING_MIN.parts[1], last + 1)]


def _first_version(pred: Any) -> VllmVersion | None:
    """Oldest checked vLLM version for which pred(version) holds (for 'needs vLLM >= X')."""
    return next((v for v in _versions() if pred(v)), None)


def _no_config(name: str) -> Check:
    return warned(name, "not checked: config.json is missing or unreadable (see drafter.config)")


def _weights_broken(ins: DrafterInspection) -> bool:
    return ins.problem(*_WEIGHT_PROBLEMS) is not None


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


def _architecture(ins: DrafterInspection, version: VllmVersion) -> Check:
    name = "drafter.architecture"
    if ins.config is None:
        return _no_config(name)
    known = eagle3_architectures(version)
    choices = ", ".join(sorted(known))
    arch = ins.architecture
    if arch is None:
        return failed(
            name,
            "config.json has no architectures list",
            fix=f'set "architectures": ["LlamaForCausalLMEagle3"] (one of {choices})',
        )
    if arch in known:
        return passed(name, f"{arch} is an EAGLE-3 head in vLLM {version}")
    later = _first_version(lambda v: arch in eagle3_architectures(v))
    if later is not None and later > version:
        return failed(
            name,
            f"config.json architectures[0] {arch} needs vLLM >= {later} "
            f"(target image has {version})",
            fix=f"use a vLLM >= {later} image, or set architectures to one of {choices}",
        )
    return failed(
        name,
        f"config.json architectures[0] is {arch}, not an EAGLE-3 head vLLM {version} registers",
        fix=f"set architectures to the head's EAGLE-3 class, one of: {choices}",
    )


def _mask_token(ins: DrafterInspection, version: VllmVersion, mode: str) -> Check:
    name = "drafter.mask_token"
    if mode == "eagle3":
        return passed(name, "eagle3 mode does not use a mask token")
    if ins.config is None:
        return _no_config(name)
    accepted = mask_token_keys(version)
    for key in accepted:
        val = lookup(ins.config, key)
        if val is None:
            continue
        if not isinstance(val, int) or isinstance(val, bool) or val < 0:
            return failed(
                name,
                f"config.json {key} is {val!r}, not a token id",
                fix=f"set {key} to the integer mask-token id the head was trained with",
            )
        return passed(name, f"config.json {key} = {val} (read by vLLM {version})")
    keys = ", ".join(accepted)
    for key, val in ins.mask_tokens.items():
        # A key a newer vLLM reads: vLLM {version} would start and then fail to draft.
        later = _first_version(lambda v, key=key: key in mask_token_keys(v))
        return failed(
            name,
            f"config.json has only {key}, which vLLM {version} does not read "
            f"(it reads {keys}; {key} needs vLLM >= {later})",
            fix=f'add "ptd_token_id": {val!r} to config.json, or use vLLM >= {later}',
        )
    return failed(
        name,
        f"config.json has no mask-token id; P-EAGLE needs one of {keys} (vLLM {version})",
        fix='add "ptd_token_id": <mask-token id the head was trained with> to '
        "config.json (e.g. 201020 for the GPT-OSS-20B head)",
    )


def _config_target(ins: DrafterInspection) -> int | None:
    return ins.target_hidden_size or ins.hidden_size


def _mask_hidden(ins: DrafterInspection, target_hidden: int | None, mode: str) -> Check:
    name = "drafter.mask_hidden"
    if mode == "eagle3":
        return passed(name, "eagle3 mode does not use mask_hidden")
    if not ins.mask_hidden:
        if _weights_broken(ins):
            return warned(name, "not checked: weights unreadable (see drafter.weights)")
        return failed(
            name,
            f"mask_hidden not found in weights ({_files(ins)})",
            fix="use a head trained for parallel drafting (it saves mask_hidden), or "
            "deploy with mode eagle3",
        )
    shape = ins.mask_hidden_shape or []
    size = 1
    for d in shape:
        size *= d
    ref = target_hidden or _config_target(ins)
    if ref is None:
        return warned(
            name,
            f"mask_hidden {shape} found; target hidden size unknown, not verified",
            fix="pass the target model's hidden_size",
        )
    if size != 3 * ref:
        whose = "target" if target_hidden else "config.json"
        return failed(
            name,
            f"mask_hidden is {shape} ({size} values) but {whose} hidden size "
            f"{ref} needs 3 x {ref} = {3 * ref}",
            fix="use a P-EAGLE head trained for this target model",
        )
    if target_hidden is None:
        return warned(
            name,
            f"mask_hidden {shape} fits a target of hidden size {ref} (target hidden size unknown)",
            fix="pass the target model's hidden_size to verify",
        )
    return passed(name, f"mask_hidden {shape} = 3 x target hidden {ref}")


def _fc_shape(ins: DrafterInspection, target_hidden: int | None) -> Check:
    name = "drafter.fc_shape"
    if ins.config is None:
        return _no_config(name)
    if ins.fc_shape is None:
        if _weights_broken(ins):
            return warned(name, "not checked: weights unreadable (see drafter.weights)")
        return failed(
            name,
            f"fc.weight not found in weights ({_files(ins)})",
            fix="use an EAGLE-3 head; its fc.weight projects 3 target hidden states",
        )
    shape, fc = ins.fc_shape, ins.fc_name
    if len(shape) != 2:
        return failed(
            name,
            f"{fc} has shape {shape}, expected 2 dimensions",
            fix="use the head's original weights",
        )
    if ins.hidden_size is not None and shape[0] != ins.hidden_size:
        return failed(
            name,
            f"{fc} is {shape} but config.json hidden_size is {ins.hidden_size}",
            fix="use the config.json that was saved with these weights",
        )
    cfg_target = _config_target(ins)
    if cfg_target is not None and shape[1] != 3 * cfg_target:
        key = "target_hidden_size" if ins.target_hidden_size else "hidden_size"
        fix = (
            f'set "target_hidden_size": {shape[1] // 3} in config.json'
            if shape[1] % 3 == 0
            else "use the head's original weights"
        )
        return failed(
            name,
            f"{fc} is {shape} but config.json {key} {cfg_target} makes vLLM "
            f"build [{shape[0]}, {3 * cfg_target}]",
            fix=fix,
        )
    if target_hidden is None:
        return warned(
            name,
            f"{fc} {shape} fits a target of hidden size {shape[1] // 3} "
            "(target hidden size unknown)",
            fix="pass the target model's hidden_size to verify",
        )
    if shape[1] != 3 * target_hidden:
        return failed(
            name,
            f"{fc} is {shape} but the target's hidden size {target_hidden} "
            f"needs [{shape[0]}, {3 * target_hidden}]",
            fix="use a head trained for this target model",
        )
    return passed(name, f"{fc} {shape} = [hidden, 3 x target hidden {target_hidden}]")


def _vocab(ins: DrafterInspection, target_vocab: int | None) -> Check:
    name = "drafter.vocab"
    if ins.config is None:
        return _no_config(name)
    draft = ins.draft_vocab_size
    if draft is None:
        return warned(
            name,
            "config.json has neither draft_vocab_size nor vocab_size",
            fix="copy the head's config.json as published with its weights",
        )
    ref = target_vocab if target_vocab is not None else ins.vocab_size
    if target_vocab is not None and draft > target_vocab:
        return failed(
            name,
            f"config.json draft_vocab_size {draft} is larger than the target vocab {target_vocab}",
            fix="use a head trained for this target model",
        )
    if ins.d2t and ins.d2t_shape and ins.d2t_shape[0] != draft:
        return failed(
            name,
            f"d2t tensor is {ins.d2t_shape} but draft_vocab_size is {draft}",
            fix="set draft_vocab_size in config.json to the length of d2t",
        )
    if ref is not None and draft < ref and not ins.d2t:
        if _weights_broken(ins):
            return warned(name, "not checked: weights unreadable (see drafter.weights)")
        return failed(
            name,
            f"draft_vocab_size {draft} < target vocab {ref} but no d2t tensor in {_files(ins)}",
            fix="save the head's d2t (draft->target id map) in its safetensors, or "
            "set draft_vocab_size to the target vocab if the head uses all of it",
        )
    mapped = "with d2t" if ins.d2t else "no d2t needed"
    if target_vocab is None:
        return warned(
            name,
            f"draft vocab {draft} ({mapped}); target vocab unknown, checked "
            f"against config.json vocab_size {ins.vocab_size}",
            fix="pass the target model's vocab_size to verify",
        )
    return passed(name, f"draft vocab {draft} of target vocab {target_vocab} ({mapped})")


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
