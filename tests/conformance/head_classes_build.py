"""Build the head classes of issue 25 from the tiny P-EAGLE heads. Runs INSIDE the engine
venv (torch, safetensors; `peagle_sandbox.vllm_engine.heads` does the building):

    <engine python> -m tests.conformance.head_classes_build < {"out": DIR, "mask_token_id": N}

prints {"heads": {name: dir}} on its last line. Each head varies one property of a head
vLLM loads, the way a training pipeline or a hand edit produces it:

- refused at start: tensor names with a `model.` prefix, an extra q_norm tensor, no
  num_key_value_heads, no model_type, a safetensors dtype FP33, torch_dtype "float33";
- pickled weights only (pytorch_model.bin), which vLLM loads;
- first request fails: the mask token id = the vocab size; an aux layer id past the
  target's 4 layers;
- loaded silently wrong, from `relay`: a head whose drafting signal runs embeddings ->
  attention (kv head 1) -> hidden dimension 9 -> lm_head, so that every property below
  decides its drafts: two layers declared with one in the weights, a tied head without
  lm_head.weight (vLLM takes the target's, which reads dimension 7), head_dim 32 (vLLM
  keeps the first 64 v_proj rows, kv head 0), no embed_tokens (vLLM takes the target's,
  whose signal is in dimension 7, not 8). `relay` itself must draft what the aligned
  target accepts, or the collapses prove nothing.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import save_file

from peagle_sandbox.vllm_engine.alignment import align_drafter
from peagle_sandbox.vllm_engine.heads import build_head, head_config, head_tensors
from peagle_sandbox.vllm_engine.spec import TINY

EMBED_DIM, OUT_DIM = 8, 9  # the relay's dimensions; the tiny target's favoured one is 7
RELAY_ROW = 64  # v_proj row 64: kv head 1 (rows 64..127), its first dimension


def relay_tensors(seed: int) -> dict[str, torch.Tensor]:
    """The aligned head (full draft vocab, no d2t) rerouted through attention."""
    spec = TINY
    t = head_tensors(seed=seed, spec=spec, draft_vocab_size=spec.vocab_size)
    align_drafter(t, spec)
    d, c, h = spec.favoured_dim, spec.residual_bias, spec.hidden_size
    t["fc.weight"][d, :] = 0.0  # the target's signal no longer reaches the residual
    emb = t["embed_tokens.weight"]
    emb[:, d] = 0.0
    emb[:, EMBED_DIM] = c  # every token (the mask too) carries the head's own signal
    v = t["midlayer.self_attn.v_proj.weight"]
    v[RELAY_ROW, :] = 0.0
    v[RELAY_ROW, EMBED_DIM] = 1.0  # reads the normalised embedding half (~16)
    o = t["midlayer.self_attn.o_proj.weight"]
    o[OUT_DIM, :] = 0.0
    q_dim = spec.head_dim
    for head in (2, 3):  # the query heads that share kv head 1
        o[OUT_DIM, head * q_dim] = c / 32.0  # 2 heads x 16 x c / 32 = c
    lm = t["lm_head.weight"]
    lm[:, d] = 0.0
    lm[:, OUT_DIM] = 0.0
    lm[spec.favoured_token, OUT_DIM] = spec.drafter_logit / h**0.5
    return t


def write(out: Path, tensors: dict[str, torch.Tensor], config: dict[str, Any]) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    t = {
        k: (v.to(torch.bfloat16) if v.is_floating_point() else v).contiguous()
        for k, v in tensors.items()
    }
    save_file(t, str(out / "model.safetensors"), metadata={"format": "pt"})
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    return out


def relay_heads(root: Path, mask: int, seed: int) -> dict[str, Path]:
    base = relay_tensors(seed)
    cfg = head_config(mask_token_id=mask, draft_vocab_size=TINY.vocab_size)
    heads: dict[str, tuple[dict[str, torch.Tensor], dict[str, Any]]] = {
        "relay": (base, cfg),
        "layers-2-weights-1": (base, {**cfg, "num_hidden_layers": 2}),
        "tied-no-lm-head": (
            {k: v for k, v in base.items() if k != "lm_head.weight"},
            {**cfg, "tie_word_embeddings": True},
        ),
        "head-dim-32": (base, {**cfg, "head_dim": 32}),
        "no-embed-tokens": ({k: v for k, v in base.items() if k != "embed_tokens.weight"}, cfg),
    }
    return {name: write(root / name, t, c) for name, (t, c) in heads.items()}


def dtype_fp33(directory: Path) -> None:
    """Rename one tensor's dtype in the safetensors header to FP33 (same length as BF16,
    so every offset stays valid)."""
    path = directory / "model.safetensors"
    data = bytearray(path.read_bytes())
    n = int.from_bytes(data[:8], "little")
    header = data[8 : 8 + n].replace(b'"dtype":"BF16"', b'"dtype":"FP33"', 1)
    data[8 : 8 + n] = header
    path.write_bytes(bytes(data))


def pickled(directory: Path) -> None:
    """The same tensors as pytorch_model.bin (torch.save), no safetensors."""
    from safetensors.torch import load_file

    path = directory / "model.safetensors"
    torch.save(load_file(str(path)), str(directory / "pytorch_model.bin"))
    path.unlink()


def main() -> int:
    job = json.load(sys.stdin)
    root, mask, seed = Path(job["out"]), int(job["mask_token_id"]), int(job.get("seed", 1))
    simple: dict[str, dict[str, Any]] = {
        "names-model-prefix": {
            "rename_tensors": {k: f"model.{k}" for k in head_tensors(seed=seed)}
        },
        "names-extra-q-norm": {
            "add_tensors": {"midlayer.self_attn.q_norm.weight": torch.ones(TINY.head_dim)}
        },
        "config-no-kv-heads": {"config": {"num_key_value_heads": None}},
        "config-no-model-type": {"config": {"model_type": None}},
        "config-dtype-float33": {"config": {"torch_dtype": "float33"}},
        "dtype-fp33": {},
        "pickled-bin": {},
        "mask-token-at-vocab-size": {"config": {"ptd_token_id": TINY.vocab_size}},
        "aux-layer-past-target": {
            "config": {"eagle_config.eagle_aux_hidden_state_layer_ids": [1, 2, 5]}
        },
    }
    heads = {
        name: build_head(root / name, mask_token_id=mask, seed=seed, **kw)
        for name, kw in simple.items()
    }
    dtype_fp33(heads["dtype-fp33"])
    pickled(heads["pickled-bin"])
    heads.update(relay_heads(root, mask, seed))
    print(json.dumps({"heads": {k: str(v) for k, v in heads.items()}}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
