"""Shapes of the tiny models (pure data: importable without torch)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

__all__ = ["TINY", "TinySpec"]


@dataclass(frozen=True)
class TinySpec:
    """Sizes and alignment knobs shared by the target, the heads and the smoke benchmark."""

    vocab_size: int = 512
    hidden_size: int = 256
    intermediate_size: int = 512  # keeps the bf16 target at about 5 MB
    num_layers: int = 4
    num_heads: int = 4
    num_kv_heads: int = 2
    head_dim: int = 64
    max_position_embeddings: int = 2048
    rms_norm_eps: float = 1e-5
    draft_vocab_size: int = 256
    aux_layer_ids: tuple[int, ...] = (1, 2, 3)
    # Alignment: one residual dimension carries a large constant through both models, and
    # the favoured token's lm_head row reads that dimension. The token id is >= 256 so a
    # draft vocabulary of 256 needs a real d2t to reach it (a missing d2t then shows).
    favoured_dim: int = 7
    favoured_token: int = 400
    residual_bias: float = 8.0
    drafter_logit: float = 30.0  # drafter's margin for the favoured token: q ~ 1

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


TINY = TinySpec()
