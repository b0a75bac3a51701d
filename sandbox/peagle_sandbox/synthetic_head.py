"""A tiny but structurally real P-EAGLE head, written without numpy or safetensors.

The sandbox and the lifecycle tests place it where JumpStart's head would be, so that
preflight's remote drafter checks (config.json + safetensors header) see what vLLM would
see. The weights are zeros: nothing here drafts anything useful, but real vLLM loads the
head and serves with it (tests/conformance/test_head_classes.py starts it on the CPU
engine): every tensor vLLM's Llama EAGLE-3 head class defines, under the names its
loader maps (`llama_eagle3.py`: no `model.` prefix, which the loader never strips), and
a config.json with every size that class reads.
"""

from __future__ import annotations

import json
import struct

_BYTES = {"F16": 2, "BF16": 2, "F32": 4, "I64": 8, "BOOL": 1}


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
    aux_layer_ids: list[int] | None = None,
) -> dict[str, bytes]:
    """Files of a head shaped for a target and a vLLM version: {relative path: bytes}.

    The head is small (hidden 32, not the target's), so `mask_hidden` follows the
    version's sizing rule (`model_executor/models/llama_eagle3.py`): 3 x the head's own
    hidden size up to 0.21.x, target_hidden_size x 3 from 0.22.0. Published heads have
    hidden == target hidden, where both rules agree. `aux_layer_ids` (the target layers
    whose hidden states the head reads, 3 of them) go in config.json when given;
    without them vLLM uses the target's default layers (2, L/2, L-3), which suit a deep
    target (gpt-oss-20b: 2, 12, 21) but not a 4-layer one. The mask token must be inside
    `target_vocab` (the head's vocab_size): vLLM embeds it at every drafting step."""
    from sm_peagle.contract import VllmVersion, mask_hidden_rule

    if not 0 <= mask_token_id < target_vocab:
        raise ValueError(f"mask_token_id {mask_token_id} is outside the vocab {target_vocab}")
    old = mask_hidden_rule(VllmVersion(vllm_version)) == "3*hidden_size"
    mask = 3 * (hidden if old else target_hidden)
    # One attention head of `hidden` dimensions: vLLM's CPU attention (the conformance
    # engine) takes head sizes of 32 and up, and 32 is the smallest hidden peagle writes.
    heads, kv_heads, inter = 1, 1, 2 * hidden
    head_dim = hidden // heads
    config: dict[str, object] = {
        "architectures": [architecture],
        "model_type": "llama",
        "hidden_size": hidden,
        "intermediate_size": inter,
        "num_attention_heads": heads,
        "num_key_value_heads": kv_heads,
        "head_dim": head_dim,
        "num_hidden_layers": 1,
        "rms_norm_eps": 1e-5,
        "hidden_act": "silu",
        "tie_word_embeddings": False,
        "torch_dtype": "float16",
        "vocab_size": target_vocab,
        "draft_vocab_size": draft_vocab,
        "target_hidden_size": target_hidden,
        "ptd_token_id": mask_token_id,
    }
    if aux_layer_ids is not None:
        config["eagle_aux_hidden_state_layer_ids"] = list(aux_layer_ids)
    q, kv = heads * head_dim, kv_heads * head_dim
    tensors: dict[str, tuple[str, list[int]]] = {
        "embed_tokens.weight": ("F16", [target_vocab, hidden]),
        # layer 0 reads the token embeddings and the hidden states: 2 x hidden inputs
        "midlayer.self_attn.q_proj.weight": ("F16", [q, 2 * hidden]),
        "midlayer.self_attn.k_proj.weight": ("F16", [kv, 2 * hidden]),
        "midlayer.self_attn.v_proj.weight": ("F16", [kv, 2 * hidden]),
        "midlayer.self_attn.o_proj.weight": ("F16", [hidden, q]),
        "midlayer.mlp.gate_proj.weight": ("F16", [inter, hidden]),
        "midlayer.mlp.up_proj.weight": ("F16", [inter, hidden]),
        "midlayer.mlp.down_proj.weight": ("F16", [hidden, inter]),
        "midlayer.input_layernorm.weight": ("F16", [hidden]),
        "midlayer.post_attention_layernorm.weight": ("F16", [hidden]),
        "midlayer.hidden_norm.weight": ("F16", [hidden]),
        "norm.weight": ("F16", [hidden]),
        "fc.weight": ("F16", [hidden, 3 * target_hidden]),
        "mask_hidden": ("F16", [1, 1, mask]),
        "lm_head.weight": ("F16", [draft_vocab, hidden]),
    }
    if draft_vocab < target_vocab:
        tensors["d2t"] = ("I64", [draft_vocab])  # zeros: every draft id maps to id 0
    weights = safetensors_bytes(tensors)
    return {"config.json": json.dumps(config, indent=1).encode(), "model.safetensors": weights}
