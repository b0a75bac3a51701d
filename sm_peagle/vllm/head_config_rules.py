"""The drafter rules on config.json values vLLM acts on: the keys its config reader needs,
the token ids it embeds, and the aux-hidden-state layers it asks the target for.

- config keys: a plain head's config.json is read by transformers' AutoConfig
  (`transformers_utils/config.py`), which refuses one without `model_type`; every other
  key the Llama head class reads has a default (`loader_facts.LLAMA_DEFAULTS`), and a
  default that contradicts the weights is `drafter.tensor_shapes`'s finding;
- token ids: the mask token of parallel drafting is embedded at every drafting step by
  the head's embed_tokens (`config.vocab_size` rows, padded to a multiple of 64 by
  `vocab_parallel_embedding.py`), or by the target's when the head has none. vLLM reads
  no other token id from the head's config (pad and eos are the target's tokenizer's);
- aux layers: the target keeps one hidden state per id in the set the head names
  (`interfaces.py` / `models/llama.py`), ids 0..L (0..L-1 before 0.18.0), and the head's
  fc reads `aux x target hidden` values: a mismatch fails the first request
  (`shape '[-1, N]' is invalid`).
"""

from __future__ import annotations

from typing import Any

from ..checks import Check, failed, passed, warned
from ..errors import text
from .head_inspection import NO_CONFIG, DrafterInspection, lookup
from .head_loading import FIRST_REQUEST, REFUSES, SILENT
from .head_model import head_config
from .head_shapes import aux_count
from .loader_facts import aux_id_keys, aux_max_id, aux_range_cite, cite
from .versions import VllmVersion, mask_token_keys

__all__ = ["check_aux_layers", "check_config_keys", "check_token_ids"]

# The sizes the head class is built from (a default among them is worth showing).
_SIZES = (
    "vocab_size",
    "hidden_size",
    "intermediate_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
)


def check_config_keys(ins: DrafterInspection, version: VllmVersion) -> Check:
    name = "drafter.config_keys"
    hc = head_config(ins)
    if hc is None:
        return warned(name, NO_CONFIG)
    if "speculators_model_type" in (ins.config or {}):
        return passed(name, "speculators format: vLLM builds the head's config itself")
    if hc.model_type is None:
        return failed(
            name,
            "config.json has no model_type: vLLM reads a head's config with transformers' "
            f"AutoConfig ({cite('config_via_autoconfig', version)}), which refuses it "
            "('Unrecognized model … Should have a `model_type` key'); " + REFUSES.format(v=version),
            fix='add "model_type": "llama" (the config class of a Llama EAGLE-3 head)',
        )
    if hc.model_type != "llama":
        return passed(name, f"model_type {hc.model_type}: read by its transformers config class")
    shown = ", ".join(f"{k} {hc.defaulted[k]}" for k in _SIZES if hc.defaulted.get(k) is not None)
    return passed(
        name,
        "model_type llama" + (f"; LlamaConfig defaults: {shown}" if shown else ""),
    )


def _mask_token(ins: DrafterInspection, version: VllmVersion) -> tuple[str, Any] | None:
    """(key, value) of the mask token vLLM reads, in its read order."""
    config = dict(ins.config or {})
    if "speculators_model_type" in config and "mask_token_id" in config:
        config.setdefault("pard_token", config["mask_token_id"])  # algos.py maps it
    for key in mask_token_keys(version):
        val = lookup(config, key)
        if val is not None:
            return key, val
    return None


def _padded(n: int) -> int:
    return -(-n // 64) * 64


def check_token_ids(
    ins: DrafterInspection, version: VllmVersion, mode: str, target_vocab: int | None
) -> Check:
    name = "drafter.token_ids"
    if mode == "eagle3":
        return passed(name, "eagle3 mode embeds no mask token")
    hc = head_config(ins)
    if hc is None:
        return warned(name, NO_CONFIG)
    found = _mask_token(ins, version)
    if found is None or not isinstance(found[1], int) or isinstance(found[1], bool):
        return passed(name, "no mask-token id to range-check (see drafter.mask_token)")
    key, tid = found
    own = any(n.endswith("embed_tokens.weight") for n in ins.tensors)
    vocab = hc.get("vocab_size") if own else target_vocab
    whose = "the head's embed_tokens" if own else "the target's embeddings (the head has none)"
    if not isinstance(vocab, int):
        return warned(
            name,
            f"config.json {key} = {tid}; the vocabulary it indexes ({whose}) is unknown: "
            "not checked",
            fix=text("pass the target model ({model}) or its {target_vocab_size}"),
        )
    rows = _padded(vocab)
    pad = cite("vocab_padding", version)
    fix = (
        f"set {key} to the mask-token id the head was trained with (below {vocab}; the "
        "tokenizer's mask token)"
    )
    if tid >= rows or tid < 0:
        return failed(
            name,
            f"config.json {key} = {tid} is outside the vocabulary it indexes: {whose}, "
            f"vocab {vocab}, {rows} rows after padding ({pad}); "
            f"{FIRST_REQUEST.format(v=version)} (index out of range when a parallel-drafting "
            "step embeds the mask token)",
            fix=fix,
        )
    if tid >= vocab:
        return warned(
            name,
            f"config.json {key} = {tid} is past the vocabulary of {vocab} ({whose}) but "
            f"inside its padding to {rows} rows ({pad}), which vLLM fills with zeros: "
            f"{SILENT.format(v=version)} (the mask token embeds as zeros)",
            fix=fix,
        )
    return passed(name, f"config.json {key} = {tid} < {vocab} ({whose})")


def _layer_ids(ins: DrafterInspection, keys: tuple[str, ...]) -> tuple[str, list[Any]] | None:
    for key in keys:
        val = lookup(ins.config or {}, key)
        if val:
            return key, list(val) if isinstance(val, (list, tuple)) else [val]
    return None


def check_aux_layers(
    ins: DrafterInspection,
    version: VllmVersion,
    arch: str | None,
    target_layers: int | None,
    target_hidden: int | None,
) -> Check:
    name = "drafter.aux_layers"
    if ins.config is None:
        return warned(name, NO_CONFIG)
    keys = aux_id_keys(version)
    if keys is None:
        return warned(name, f"not checked: which aux-layer keys vLLM {version} reads was not read")
    read_at = cite("aux_ids_read", version)
    if target_layers is None:
        return warned(
            name,
            "not checked: the target's layer count is unknown",
            fix=text("pass the target model ({model}) or its {target_num_layers}"),
        )
    aux, how = aux_count(ins.config, version, arch)
    th = ins.target_hidden_size or ins.hidden_size or target_hidden
    found = _layer_ids(ins, keys)
    unread = _layer_ids(
        ins, ("eagle_aux_hidden_state_layer_ids", "eagle_config.eagle_aux_hidden_state_layer_ids")
    )
    top = aux_max_id(version, target_layers)
    if top is None:
        return warned(
            name, f"not checked: which layer ids vLLM {version}'s target keeps was not read"
        )
    if found is None:
        ids = [2, target_layers // 2, target_layers - 3]
        source = (
            f"none read, so vLLM uses the default layers {ids} ({cite('aux_ids_default', version)})"
        )
        if unread is not None and sorted(set(unread[1])) != sorted(set(ids)):
            return warned(
                name,
                f"config.json {unread[0]} {unread[1]} is not read by vLLM {version} (it reads "
                f"{', '.join(keys)}: {read_at}): it feeds the head the default layers {ids} "
                f"({cite('aux_ids_default', version)}); {SILENT.format(v=version)}: the head "
                "drafts from other layers than it was trained on",
                fix=f'also set the top-level "eagle_aux_hidden_state_layer_ids": {unread[1]}',
            )
    else:
        ids, source = found[1], f"config.json {found[0]} {found[1]}"
    kept = sorted({i for i in ids if isinstance(i, int) and 0 <= i <= top})
    if len(kept) != aux:
        lost = sorted({i for i in ids if i not in kept}, key=str)
        why = (
            f"ids {lost} are outside 0..{top} (a target of {target_layers} layers: "
            f"{aux_range_cite(version)})"
            if lost
            else "a repeated id is kept once"
        )
        values = f": {len(kept) * th} values where its fc reads {aux * th}" if th else ""
        return failed(
            name,
            f"{source}: {why}, so the target hands the head {len(kept)} hidden state(s) where "
            f"its fc reads {aux} ({how}){values}; " + FIRST_REQUEST.format(v=version),
            fix=f"use {aux} distinct layer ids within 0..{top}, the ones the head was trained with",
        )
    return passed(name, f"{source}: {aux} target layers within 0..{top} ({read_at})")
