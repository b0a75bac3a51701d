"""Small but real drafter heads (safetensors + config.json) shaped like the published ones.

Shapes are scaled down: target hidden 64 -> mask_hidden (1, 1, 192), fc.weight (64, 192).
Tensor names follow the published EAGLE-3 heads (fc, midlayer.*, norm, lm_head, d2t, t2d);
the GPT-OSS-style variant prefixes them with "model." like some P-EAGLE checkpoints.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import numpy as np
from safetensors.numpy import save_file

TARGET_HIDDEN = 64
TARGET_VOCAB = 512
VARIANTS = ("peagle-llama", "peagle-sharded", "peagle-gpt-oss", "eagle3-llama")


def _config(variant: str, hidden: int, vocab: int, draft_vocab: int, inter: int) -> dict:
    cfg: dict[str, Any] = {
        "architectures": ["LlamaForCausalLMEagle3"],
        "model_type": "llama",
        "hidden_size": hidden,
        "intermediate_size": inter,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "num_hidden_layers": 1,
        "vocab_size": vocab,
        "draft_vocab_size": draft_vocab,
        "rms_norm_eps": 1e-5,
        "max_position_embeddings": 2048,
        "tie_word_embeddings": False,
        "torch_dtype": "float16",
    }
    if variant == "eagle3-llama":
        cfg["architectures"] = ["Eagle3LlamaForCausalLM"]
    elif variant == "peagle-gpt-oss":
        # GPT-OSS-20B's head: ptd_token_id near the end of the vocab, its own hidden size.
        cfg["target_hidden_size"] = TARGET_HIDDEN
        cfg["ptd_token_id"] = vocab - 12
    else:
        cfg["ptd_token_id"] = vocab - 1
    return cfg


def _tensors(
    variant: str, hidden: int, vocab: int, draft_vocab: int, inter: int
) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    heads, kv, hd = 4, 2, hidden // 4

    def w(*shape: int) -> np.ndarray:
        return rng.standard_normal(shape).astype(np.float16)

    t = {
        "fc.weight": w(hidden, 3 * TARGET_HIDDEN),
        "midlayer.hidden_norm.weight": np.ones(hidden, np.float32),
        "midlayer.input_layernorm.weight": np.ones(hidden, np.float32),
        "midlayer.post_attention_layernorm.weight": np.ones(hidden, np.float32),
        "midlayer.self_attn.q_proj.weight": w(heads * hd, 2 * hidden),
        "midlayer.self_attn.k_proj.weight": w(kv * hd, 2 * hidden),
        "midlayer.self_attn.v_proj.weight": w(kv * hd, 2 * hidden),
        "midlayer.self_attn.o_proj.weight": w(hidden, heads * hd),
        "midlayer.mlp.gate_proj.weight": w(inter, hidden),
        "midlayer.mlp.up_proj.weight": w(inter, hidden),
        "midlayer.mlp.down_proj.weight": w(hidden, inter),
        "norm.weight": np.ones(hidden, np.float32),
        "lm_head.weight": w(draft_vocab, hidden),
    }
    if draft_vocab < vocab:
        t["d2t"] = np.arange(draft_vocab, dtype=np.int64)
        t["t2d"] = np.zeros(vocab, dtype=bool)
    if variant != "eagle3-llama":
        t["mask_hidden"] = w(1, 1, 3 * TARGET_HIDDEN)
    if variant == "peagle-gpt-oss":
        t = {f"model.{k}": v for k, v in t.items()}
    return t


def make_head(directory: str | Path, variant: str = "peagle-llama", *, big: bool = False) -> Path:
    """Write a drafter head to `directory`; big=True makes the MLP tensors >= 1 MiB each."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant}; one of {VARIANTS}")
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    hidden = 48 if variant == "peagle-gpt-oss" else TARGET_HIDDEN
    draft_vocab = TARGET_VOCAB if variant == "peagle-gpt-oss" else 128
    inter = 8192 if big else 128
    cfg = _config(variant, hidden, TARGET_VOCAB, draft_vocab, inter)
    tensors = _tensors(variant, hidden, TARGET_VOCAB, draft_vocab, inter)
    (d / "config.json").write_text(json.dumps(cfg, indent=2))
    meta = {"format": "pt"}
    if variant != "peagle-sharded":
        save_file(tensors, str(d / "model.safetensors"), metadata=meta)
        return d
    names = sorted(tensors)
    shards = {
        "model-00001-of-00002.safetensors": names[: len(names) // 2],
        "model-00002-of-00002.safetensors": names[len(names) // 2 :],
    }
    weight_map = {}
    for shard, keys in shards.items():
        save_file({k: tensors[k] for k in keys}, str(d / shard), metadata=meta)
        weight_map.update(dict.fromkeys(keys, shard))
    total = sum(v.nbytes for v in tensors.values())
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    (d / "model.safetensors.index.json").write_text(json.dumps(index, indent=2))
    return d


def edit_config(directory: str | Path, *, drop: tuple[str, ...] = (), **changes: Any) -> None:
    """Change config.json in place: drop keys, then set `changes`."""
    p = Path(directory) / "config.json"
    cfg = json.loads(p.read_text())
    for k in drop:
        cfg.pop(k, None)
    cfg.update(changes)
    p.write_text(json.dumps(cfg, indent=2))


def resave(
    directory: str | Path,
    *,
    drop: tuple[str, ...] = (),
    replace: dict[str, np.ndarray] | None = None,
) -> None:
    """Rewrite model.safetensors without `drop` tensors and with `replace` ones."""
    from safetensors.numpy import load_file

    p = Path(directory) / "model.safetensors"
    tensors = {k: v for k, v in load_file(str(p)).items() if k not in drop}
    tensors.update(replace or {})
    save_file(tensors, str(p), metadata={"format": "pt"})


def corrupt_header(path: str | Path, how: str) -> None:
    """how: 'too-long' (header length > file size), 'not-json', 'truncated' (data cut)."""
    p = Path(path)
    data = p.read_bytes()
    (n,) = struct.unpack("<Q", data[:8])
    if how == "too-long":
        p.write_bytes(struct.pack("<Q", len(data) * 4) + data[8:])
    elif how == "not-json":
        p.write_bytes(data[:8] + b"\x00garbage" + b" " * (n - 8) + data[8 + n :])
    elif how == "truncated":
        p.write_bytes(data[: len(data) - 100])
    else:
        raise ValueError(how)
