"""Controllable acceptance for the tiny target/drafter pair.

Runs INSIDE the engine venv (imports torch).

Both models carry a large constant on residual dimension ``D`` (``spec.favoured_dim``):
the target through its token embeddings, the drafter through ``fc`` (copying ``D`` of each
aux hidden state), ``mask_hidden`` and its own embeddings. After the final RMSNorm that
dimension dominates, so the ``lm_head`` row of the favoured token, which is the only row
reading ``D``, sets that token's logit almost independently of the context. The target's
entry is calibrated so the target gives the favoured token probability ``target_p``; the
drafter's is large, so it proposes that token with q ~ 1. Then acceptance per draft
position is ~ ``target_p`` at temperature 1 (min(1, p/q)) and 100% greedy.
"""

from __future__ import annotations

from typing import Any

import torch

from peagle_sandbox.vllm_engine.spec import TINY, TinySpec

__all__ = ["align_drafter", "align_target", "favoured_token"]

_PROMPTS = [
    "user: how many tokens does the drafter propose?\nassistant:",
    "user: explain parallel drafting in one sentence.\nassistant:",
    "the verifier accepts four tokens at once.",
]


def favoured_token(spec: TinySpec = TINY) -> int:
    return spec.favoured_token


@torch.no_grad()
def _mean_p(model: Any, batches: list[torch.Tensor], token: int) -> float:
    ps = []
    for ids in batches:
        logits = model(input_ids=ids).logits.float()
        ps.append(torch.softmax(logits, -1)[0, :, token].mean().item())
    return sum(ps) / len(ps)


@torch.no_grad()
def align_target(model: Any, tok: Any, *, target_p: float, spec: TinySpec = TINY) -> dict[str, Any]:
    """Bias `model` (a LlamaForCausalLM, modified in place and cast to bf16) so that it
    puts ~`target_p` on the favoured token. Returns the measured calibration."""
    d, t = spec.favoured_dim, spec.favoured_token
    model.model.embed_tokens.weight[:, d] = spec.residual_bias
    model.lm_head.weight[:, d] = 0.0
    model.to(torch.bfloat16)
    # Prompts followed by a run of the favoured token: generation contexts look like that.
    batches = [torch.tensor([tok(p)["input_ids"] + [t] * 8]) for p in _PROMPTS]
    lo, hi = 0.0, 4.0  # the normalised D component is ~sqrt(hidden): 4 is far past p=1
    for _ in range(24):  # bisection on the one weight; each step is a ~ms forward
        mid = (lo + hi) / 2
        model.lm_head.weight[t, d] = mid
        if _mean_p(model, batches, t) < target_p:
            lo = mid
        else:
            hi = mid
    model.lm_head.weight[t, d] = (lo + hi) / 2
    return {
        "lm_head_weight": float(model.lm_head.weight[t, d]),
        "target_p_measured_hf_bf16": round(_mean_p(model, batches, t), 4),
    }


@torch.no_grad()
def align_drafter(t: dict[str, torch.Tensor], spec: TinySpec = TINY) -> None:
    """Apply the same direction to drafter tensors `t` (float32, modified in place)."""
    d, c = spec.favoured_dim, spec.residual_bias
    th = t["fc.weight"].shape[1] // len(spec.aux_layer_ids)
    t["embed_tokens.weight"][:, d] = c
    for k in range(len(spec.aux_layer_ids)):
        col = k * th + d
        if col >= t["fc.weight"].shape[1]:
            break
        t["fc.weight"][:, col] = 0.0
        t["fc.weight"][d, col] = 1.0 / len(spec.aux_layer_ids)  # fc output D ~ C
        if "mask_hidden" in t and col < t["mask_hidden"].shape[-1]:
            t["mask_hidden"][..., col] = c  # masked slots look like "favoured" context
    lm = t["lm_head.weight"]
    lm[:, d] = 0.0
    row = _draft_row(t, spec)
    if row is not None:
        lm[row, d] = spec.drafter_logit / spec.hidden_size**0.5


def _draft_row(t: dict[str, torch.Tensor], spec: TinySpec) -> int | None:
    """Draft id whose target id (via d2t) is the favoured token."""
    n = t["lm_head.weight"].shape[0]
    d2t = t.get("d2t", torch.zeros(n, dtype=torch.long))
    hits = ((torch.arange(n) + d2t) == spec.favoured_token).nonzero()
    return int(hits[0]) if len(hits) else None
