"""EAGLE-3 / P-EAGLE drafter head builder with overrides, for tiny models and variants.

Runs INSIDE the engine venv (imports torch and safetensors).

:func:`build_head` writes one drafter dir (``config.json`` + safetensors) and takes the
overrides a conformance test needs; :data:`VARIANTS` names 18 of them. In config
overrides and added tensors, the string ``"$MASK"`` stands for the ``<mask>`` token id.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import torch
from safetensors.torch import save_file

from peagle_sandbox.vllm_engine.alignment import align_drafter
from peagle_sandbox.vllm_engine.spec import TINY, TinySpec

__all__ = ["MASK", "VARIANTS", "build_head", "head_config", "head_tensors"]

MASK = "$MASK"
_DELETE = None  # a config override value of None deletes the key


def head_tensors(
    *, seed: int, spec: TinySpec = TINY, draft_vocab_size: int | None = None
) -> dict[str, torch.Tensor]:
    """Random (std 0.02) float32 drafter tensors with the names vLLM's Eagle3 Llama reads."""
    g = torch.Generator().manual_seed(seed)
    h, i, v = spec.hidden_size, spec.intermediate_size, spec.vocab_size
    dv = draft_vocab_size or spec.draft_vocab_size
    q, kv = spec.num_heads * spec.head_dim, spec.num_kv_heads * spec.head_dim
    aux = len(spec.aux_layer_ids) * h  # target_hidden_size == hidden here

    def rnd(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=g) * 0.02

    t = {
        "embed_tokens.weight": rnd(v, h),
        "midlayer.self_attn.q_proj.weight": rnd(q, 2 * h),  # input: [embeds, hidden]
        "midlayer.self_attn.k_proj.weight": rnd(kv, 2 * h),
        "midlayer.self_attn.v_proj.weight": rnd(kv, 2 * h),
        "midlayer.self_attn.o_proj.weight": rnd(h, q),
        "midlayer.mlp.gate_proj.weight": rnd(i, h),
        "midlayer.mlp.up_proj.weight": rnd(i, h),
        "midlayer.mlp.down_proj.weight": rnd(h, i),
        "midlayer.input_layernorm.weight": torch.ones(h),
        "midlayer.hidden_norm.weight": torch.ones(h),
        "midlayer.post_attention_layernorm.weight": torch.ones(h),
        "norm.weight": torch.ones(h),
        "fc.weight": rnd(h, aux),
        "lm_head.weight": rnd(dv, h),
        "mask_hidden": rnd(1, 1, aux),
    }
    if dv < v:
        # Drafted target ids: the lowest dv-1 ids plus the favoured token (so the aligned
        # pair needs a real d2t). d2t holds offsets: target_id = draft_id + d2t[draft_id].
        ids = sorted(set(range(dv - 1)) | {spec.favoured_token})[:dv]
        ids_t = torch.tensor(ids, dtype=torch.long)
        t["d2t"] = ids_t - torch.arange(dv, dtype=torch.long)
        t2d = torch.zeros(v, dtype=torch.bool)
        t2d[ids_t] = True
        t["t2d"] = t2d
    return t


def head_config(
    *, mask_token_id: int | None, spec: TinySpec = TINY, draft_vocab_size: int | None = None
) -> dict[str, Any]:
    """The P-EAGLE config.json (drop ``ptd_token_id`` for a classic EAGLE-3 head)."""
    cfg: dict[str, Any] = {
        "architectures": ["LlamaForCausalLMEagle3"],
        "model_type": "llama",
        "hidden_size": spec.hidden_size,
        "intermediate_size": spec.intermediate_size,
        "num_hidden_layers": 1,
        "num_attention_heads": spec.num_heads,
        "num_key_value_heads": spec.num_kv_heads,
        "head_dim": spec.head_dim,
        "hidden_act": "silu",
        "max_position_embeddings": spec.max_position_embeddings,
        "rms_norm_eps": spec.rms_norm_eps,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
        "vocab_size": spec.vocab_size,
        "draft_vocab_size": draft_vocab_size or spec.draft_vocab_size,
        "target_hidden_size": spec.hidden_size,
        "eagle_config": {"eagle_aux_hidden_state_layer_ids": list(spec.aux_layer_ids)},
    }
    if mask_token_id is not None:
        cfg["ptd_token_id"] = mask_token_id
    return cfg


def _speculators(cfg: dict[str, Any]) -> dict[str, Any]:
    """Same head in the speculators format (vLLM translates it; mask_token_id -> pard)."""
    layer = {
        k: v
        for k, v in cfg.items()
        if k
        not in (
            "architectures",
            "draft_vocab_size",
            "target_hidden_size",
            "eagle_config",
            "ptd_token_id",
        )
    }
    out = {
        "architectures": ["PEagleDraftModel"],
        "speculators_model_type": "peagle",
        "speculators_version": "0.3.0",
        "transformer_layer_config": layer,
        "draft_vocab_size": cfg["draft_vocab_size"],
        "target_hidden_size": cfg["target_hidden_size"],
        "eagle_aux_hidden_state_layer_ids": cfg["eagle_config"]["eagle_aux_hidden_state_layer_ids"],
        "speculators_config": {
            "algorithm": "peagle",
            "default_proposal_method": "greedy",
            "proposal_methods": [{"proposal_type": "greedy", "speculative_tokens": 3}],
            "verifier": {"name_or_path": "tiny-llama", "architectures": ["LlamaForCausalLM"]},
        },
    }
    if "ptd_token_id" in cfg:
        out["mask_token_id"] = cfg["ptd_token_id"]
    return out


def _sub(value: Any, mask_id: int) -> Any:
    if value == MASK:
        return mask_id
    if isinstance(value, dict):
        return {k: _sub(v, mask_id) for k, v in value.items()}
    return value


def _apply_config(cfg: dict[str, Any], overrides: Mapping[str, Any], mask_id: int) -> None:
    """Dotted keys reach into nested dicts ("eagle_config.x"); None deletes the key."""
    for key, value in overrides.items():
        *path, last = key.split(".")
        node = cfg
        for part in path:
            node = node.setdefault(part, {})
        if value is _DELETE:
            node.pop(last, None)
        else:
            node[last] = _sub(copy.deepcopy(value), mask_id)


def _write_weights(out: Path, t: dict[str, torch.Tensor], shards: int) -> None:
    if shards <= 1:
        save_file(t, str(out / "model.safetensors"), metadata={"format": "pt"})
        return
    names = sorted(t)
    per = math.ceil(len(names) / shards)
    weight_map: dict[str, str] = {}
    for n in range(shards):
        fname = f"model-{n + 1:05d}-of-{shards:05d}.safetensors"
        part = {k: t[k] for k in names[n * per : (n + 1) * per]}
        save_file(part, str(out / fname), metadata={"format": "pt"})
        weight_map.update(dict.fromkeys(part, fname))
    total = sum(x.numel() * x.element_size() for x in t.values())
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    (out / "model.safetensors.index.json").write_text(json.dumps(index, indent=2) + "\n")


def build_head(
    out: Path,
    *,
    mask_token_id: int,
    aligned: bool = True,
    eagle3: bool = False,
    seed: int = 1,
    spec: TinySpec = TINY,
    draft_vocab_size: int | None = None,
    config: Mapping[str, Any] | None = None,
    drop_tensors: Iterable[str] = (),
    reshape_tensors: Mapping[str, Sequence[int]] | None = None,
    rename_tensors: Mapping[str, str] | None = None,
    add_tensors: Mapping[str, torch.Tensor] | None = None,
    dtype: torch.dtype = torch.bfloat16,
    shards: int = 1,
    fmt: Literal["eagle3", "speculators"] = "eagle3",
    write_config: bool = True,
    write_weights: bool = True,
) -> Path:
    """Write a drafter dir at `out` and return it.

    Order: random tensors -> alignment (if `aligned`) -> `eagle3` drops ``mask_hidden`` and
    ``ptd_token_id`` -> `drop_tensors` -> `reshape_tensors` (re-initialised at the new
    shape) -> `rename_tensors` -> `add_tensors` -> cast float tensors to `dtype` ->
    `fmt` -> `config` overrides -> write (`shards` > 1 gives
    ``model-0000X-of-0000N.safetensors`` plus ``model.safetensors.index.json``).
    """
    out.mkdir(parents=True, exist_ok=True)
    t = head_tensors(seed=seed, spec=spec, draft_vocab_size=draft_vocab_size)
    if aligned:
        align_drafter(t, spec)
    cfg = head_config(
        mask_token_id=None if eagle3 else mask_token_id,
        spec=spec,
        draft_vocab_size=draft_vocab_size,
    )
    if eagle3:
        t.pop("mask_hidden")
    for name in drop_tensors:
        t.pop(name, None)
    g = torch.Generator().manual_seed(seed + 1000)
    for name, shape in (reshape_tensors or {}).items():
        t[name] = torch.randn(*shape, generator=g) * 0.02
    for old, new in (rename_tensors or {}).items():
        t[new] = t.pop(old)
    t.update(add_tensors or {})
    t = {k: (v.to(dtype) if v.is_floating_point() else v).contiguous() for k, v in t.items()}
    if fmt == "speculators":
        cfg = _speculators(cfg)
    _apply_config(cfg, config or {}, mask_token_id)
    if write_config:
        (out / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    if write_weights:
        _write_weights(out, t, shards)
    return out


# Named variants for conformance tests: name -> build_head keyword arguments. What vLLM
# does with each is for the conformance test to measure (versions differ).
VARIANTS: dict[str, dict[str, Any]] = {
    "no-mask-token-key": {"config": {"ptd_token_id": None}},
    "mask-token-pard": {"config": {"ptd_token_id": None, "pard_token": MASK}},
    "mask-token-top-level": {"config": {"ptd_token_id": None, "mask_token_id": MASK}},
    "mask-token-dflash": {"config": {"ptd_token_id": None, "dflash_config.mask_token_id": MASK}},
    "no-mask-hidden": {"drop_tensors": ["mask_hidden"]},
    "mask-hidden-wrong-size": {"reshape_tensors": {"mask_hidden": (1, 1, 512)}},
    "fc-wrong-width": {"reshape_tensors": {"fc.weight": (256, 512)}},
    "aux-layers-2-fc-768": {"config": {"eagle_config.eagle_aux_hidden_state_layer_ids": [1, 3]}},
    "arch-llama": {"config": {"architectures": ["LlamaForCausalLM"]}},
    "arch-peagle-plain": {"config": {"architectures": ["PEagleDraftModel"]}},
    "speculators-mask-token-id": {"fmt": "speculators"},
    "speculators-no-mask-token-id": {"fmt": "speculators", "config": {"mask_token_id": None}},
    "draft-vocab-128": {"draft_vocab_size": 128},
    "draft-vocab-128-no-d2t": {"draft_vocab_size": 128, "drop_tensors": ["d2t"]},
    "full-draft-vocab": {"draft_vocab_size": 512},
    "no-config-json": {"write_config": False},
    "sharded-3": {"shards": 3},
    "fp32-weights": {"dtype": torch.float32, "config": {"torch_dtype": "float32"}},
}
