"""The drafter's tensor-shape rules: mask_hidden, fc.weight and the vocabulary.

Sizes follow vLLM's `model_executor/models/llama_eagle3.py` (and `qwen3_eagle3.py`), as
recorded per version in `data/vllm_source_facts.json`:
- up to 0.21.x `mask_hidden` holds `3 * config.hidden_size` (the head's own hidden size);
- from 0.22.0 it holds `target_hidden_size * aux`, where `target_hidden_size` is the
  config's (default: its `hidden_size`) and aux is read from the config keys the head
  class reads (`num_aux_hidden_states`, the length of `eagle_aux_hidden_state_layer_ids`,
  ...), default 3;
- `fc.weight` is `[hidden_size, aux * target_hidden_size]` (aux 3 before 0.22.0), and at
  run time it multiplies aux hidden states of the *target*, so `aux * target hidden`.
"""

from __future__ import annotations

from typing import Any

from ..checks import Check, failed, passed, warned
from .head_inspection import WEIGHT_PROBLEMS, DrafterInspection, lookup
from .versions import VllmVersion, aux_rule, mask_hidden_rule

__all__ = ["aux_count", "check_fc_shape", "check_mask_hidden", "check_vocab"]

_OLD_AUX = 3  # before 0.22.0 llama_eagle3.py hard-codes 3 aux hidden states


def _broken(ins: DrafterInspection) -> bool:
    return ins.problem(*WEIGHT_PROBLEMS) is not None


def _files(ins: DrafterInspection) -> str:
    return ", ".join(ins.weight_files) or "weights"


def aux_count(
    config: dict[str, Any] | None, version: VllmVersion, resolved_arch: str | None
) -> tuple[int, str]:
    """(number of target hidden states the head concatenates, where it came from)."""
    if mask_hidden_rule(version) == "3*hidden_size":
        return _OLD_AUX, f"fixed at {_OLD_AUX} before vLLM 0.22.0"
    keys, default = aux_rule(version, resolved_arch)
    for key in keys:
        val = lookup(config or {}, key)
        if key.endswith("layer_ids"):
            if val:
                return len(val), f"len({key})"
        elif val is not None:
            return int(val), key
    return default, f"default {default}"


def _cfg_target(ins: DrafterInspection) -> int | None:
    return ins.target_hidden_size or ins.hidden_size


def _expected_mask_hidden(
    ins: DrafterInspection, version: VllmVersion, arch: str | None
) -> tuple[int | None, str]:
    if mask_hidden_rule(version) == "3*hidden_size":
        h = ins.hidden_size
        return (3 * h if h else None), f"3 x config.json hidden_size {h}"
    aux, how = aux_count(ins.config, version, arch)
    t = _cfg_target(ins)
    key = "target_hidden_size" if ins.target_hidden_size else "hidden_size"
    return (aux * t if t else None), f"config.json {key} {t} x aux {aux} ({how})"


def check_mask_hidden(
    ins: DrafterInspection, mode: str, version: VllmVersion, arch: str | None
) -> Check:
    name = "drafter.mask_hidden"
    if mode == "eagle3":
        return passed(name, "eagle3 mode does not use mask_hidden")
    if not ins.mask_hidden:
        if _broken(ins):
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
    expected, how = _expected_mask_hidden(ins, version, arch)
    if expected is None:
        return warned(name, f"mask_hidden {shape} found; config.json has no hidden_size")
    if size != expected:
        return failed(
            name,
            f"mask_hidden is {shape} ({size} values) but vLLM {version} builds "
            f"{how} = {expected} (model_executor/models/llama_eagle3.py)",
            fix="use a P-EAGLE head trained for this target and vLLM version"
            + ("; vLLM >= 0.22.0 sizes it from target_hidden_size" if "3 x" in how else ""),
        )
    return passed(name, f"mask_hidden {shape} = {how} (vLLM {version})")


def check_fc_shape(
    ins: DrafterInspection, target_hidden: int | None, version: VllmVersion, arch: str | None
) -> Check:
    name = "drafter.fc_shape"
    if ins.config is None:
        return warned(
            name, "not checked: config.json is missing or unreadable (see drafter.config)"
        )
    if ins.fc_shape is None:
        if _broken(ins):
            return warned(name, "not checked: weights unreadable (see drafter.weights)")
        return failed(
            name,
            f"fc.weight not found in weights ({_files(ins)})",
            fix="use an EAGLE-3 head; its fc.weight projects the target's hidden states",
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
    aux, how = aux_count(ins.config, version, arch)
    cfg_target = _cfg_target(ins)
    if cfg_target is not None and shape[1] != aux * cfg_target:
        key = "target_hidden_size" if ins.target_hidden_size else "hidden_size"
        fix = (
            f'set "target_hidden_size": {shape[1] // aux} in config.json'
            if shape[1] % aux == 0
            else "use the head's original weights"
        )
        return failed(
            name,
            f"{fc} is {shape} but config.json {key} {cfg_target} x aux {aux} ({how}) makes "
            f"vLLM {version} build [{shape[0]}, {aux * cfg_target}]",
            fix=fix,
        )
    if target_hidden is None:
        return warned(
            name,
            f"{fc} {shape} fits a target of hidden size {shape[1] // aux} "
            "(target hidden size unknown)",
            fix="pass the target model's hidden_size to verify",
        )
    if shape[1] != aux * target_hidden:
        return failed(
            name,
            f"{fc} is {shape} but {aux} hidden states of the target (hidden size "
            f"{target_hidden}) need [{shape[0]}, {aux * target_hidden}]",
            fix="use a head trained for this target model",
        )
    return passed(name, f"{fc} {shape} = [hidden, {aux} x target hidden {target_hidden}]")


def check_vocab(ins: DrafterInspection, target_vocab: int | None) -> Check:
    name = "drafter.vocab"
    if ins.config is None:
        return warned(
            name, "not checked: config.json is missing or unreadable (see drafter.config)"
        )
    draft = ins.draft_vocab_size
    if draft is None:
        return warned(
            name,
            "config.json has neither draft_vocab_size nor vocab_size",
            fix="copy the head's config.json as published with its weights",
        )
    if target_vocab is not None and ins.vocab_size is not None and ins.vocab_size != target_vocab:
        return failed(
            name,
            f"config.json vocab_size {ins.vocab_size} differs from the target's vocab "
            f"{target_vocab}: the head was trained for another tokenizer",
            fix="use a head trained for this target model",
        )
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
    ref = target_vocab if target_vocab is not None else ins.vocab_size
    if ref is not None and draft < ref and not ins.d2t:
        if _broken(ins):
            return warned(name, "not checked: weights unreadable (see drafter.weights)")
        # vLLM starts: the draft->target map stays zeros, every draft token maps to id 0
        # and acceptance silently collapses (facts 2). A warning, not a start-up failure.
        return warned(
            name,
            f"draft_vocab_size {draft} < target vocab {ref} but no d2t tensor in "
            f"{_files(ins)}: vLLM starts, but maps every draft token to id 0, so almost "
            "no draft is accepted (acceptance silently collapses)",
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
