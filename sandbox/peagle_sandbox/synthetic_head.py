"""A tiny but structurally real P-EAGLE head, written without numpy or safetensors.

The sandbox and the lifecycle tests place it where JumpStart's head would be, so that
preflight's remote drafter checks (config.json + safetensors header) see what vLLM would
see. The weights are zeros: nothing here can generate text.
"""

from __future__ import annotations

import json
import struct

_BYTES = {"F16": 2, "BF16": 2, "F32": 4, "I64": 8}


def safetensors_bytes(tensors: dict[str, tuple[str, list[int]]]) -> bytes:
    """A valid safetensors file of zero-filled tensors: {name: (dtype, shape)}."""
    header: dict[str, object] = {"__metadata__": {"format": "pt", "peagle": "synthetic"}}
    offset = 0
    for name, (dtype, shape) in tensors.items():
        size = _BYTES[dtype]
        for dim in shape:
            size *= dim
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)  # the format pads the header to 8-byte alignment
    return struct.pack("<Q", len(raw)) + raw + bytes(offset)


def synthetic_head(
    *,
    target_hidden: int,
    target_vocab: int,
    hidden: int = 32,
    draft_vocab: int = 64,
    mask_token_id: int = 201020,
    architecture: str = "LlamaForCausalLMEagle3",
    vllm_version: str = "0.18.0",
) -> dict[str, bytes]:
    """Files of a head shaped for a target and a vLLM version: {relative path: bytes}.

    The head is small (hidden 32, not the target's), so `mask_hidden` follows the
    version's sizing rule (`model_executor/models/llama_eagle3.py`): 3 x the head's own
    hidden size up to 0.21.x, target_hidden_size x 3 from 0.22.0. Published heads have
    hidden == target hidden, where both rules agree."""
    from sm_peagle.vllm.versions import VllmVersion, mask_hidden_rule

    old = mask_hidden_rule(VllmVersion(vllm_version)) == "3*hidden_size"
    mask = 3 * (hidden if old else target_hidden)
    config = {
        "architectures": [architecture],
        "model_type": "llama",
        "hidden_size": hidden,
        "num_attention_heads": 4,
        "num_hidden_layers": 1,
        "vocab_size": target_vocab,
        "draft_vocab_size": draft_vocab,
        "target_hidden_size": target_hidden,
        "ptd_token_id": mask_token_id,
    }
    weights = safetensors_bytes(
        {
            "model.fc.weight": ("F16", [hidden, 3 * target_hidden]),
            "model.mask_hidden": ("F16", [1, 1, mask]),
            "model.d2t": ("I64", [draft_vocab]),
            "model.lm_head.weight": ("F16", [draft_vocab, hidden]),
        }
    )
    return {"config.json": json.dumps(config, indent=1).encode(), "model.safetensors": weights}
