"""Seed the sandbox-only `tiny-llama` model and its heads into the sandbox's S3
(`catalog/sandbox_models.py` names the locations).

With an engine home (`peagle sandbox install-engine`; `$PEAGLE_ENGINE_HOME` or
`~/.cache/peagle/engine`) the real generated files are uploaded, so the real engine
serves them. Without one, small labelled placeholders with the same config and tensor
shapes are uploaded instead, so `tiny-llama` still plans, passes preflight's drafter check
and deploys on the SIMULATED engine (which never reads weights).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from peagle_sandbox.models import SANDBOX_BUCKET, TINY_HEADS
from peagle_sandbox.seed import tiny_safetensors

__all__ = ["seed_tiny_models"]

# The targets the engine home generates (vllm_engine/tiny_models.py), each seeded at its name.
TINY_TARGETS = ("tiny-llama", "tiny-llama-random")
_NOTE = "peagle sandbox placeholder: SIMULATED engine only, no real weights"
_HIDDEN, _VOCAB, _DRAFT_VOCAB, _MASK_ID = 256, 512, 256, 3


def _models_dir(home: Path | None) -> Path | None:
    from peagle_sandbox.vllm_engine.install import default_home

    models = Path(home or default_home()).expanduser() / "models"
    return models if (models / "manifest.json").is_file() else None


def _real_files(models: Path) -> dict[str, Path]:
    """S3 key -> local file, for the target and every head."""
    out: dict[str, Path] = {}
    targets = [(t, f"{t}/") for t in TINY_TARGETS]
    for name, prefix in targets + [(h, f"heads/{h}/") for h in TINY_HEADS]:
        base = models / name
        for path in sorted(base.rglob("*")):
            if path.is_file():
                out[prefix + path.relative_to(base).as_posix()] = path
    return out


def _placeholder_head(parallel: bool) -> dict[str, bytes]:
    """The config and tensor names, shapes and dtypes of the generated heads (`peagle
    sandbox install-engine`'s `models/<head>/`), zero-filled: every tensor vLLM's EAGLE-3
    head loads (its decoder layer as `midlayer.*`, its own embedding), so a tiny-llama
    deploy on the SIMULATED engine warns about nothing a real head would not."""
    h, inter, heads, kv_heads, head_dim = _HIDDEN, 2 * _HIDDEN, 4, 2, 64
    config: dict[str, Any] = {
        "architectures": ["LlamaForCausalLMEagle3"],
        "model_type": "llama",
        "hidden_size": h,
        "intermediate_size": inter,
        "num_hidden_layers": 1,
        "num_attention_heads": heads,
        "num_key_value_heads": kv_heads,
        "head_dim": head_dim,
        "hidden_act": "silu",
        "max_position_embeddings": 2048,
        "rms_norm_eps": 1e-05,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
        "vocab_size": _VOCAB,
        "draft_vocab_size": _DRAFT_VOCAB,
        "target_hidden_size": h,
        "eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 2, 3]},
        "note": _NOTE,
    }
    attn_in = 2 * h  # layer 0 reads [embedding, fc(aux hidden states)]
    tensors: dict[str, tuple[str, tuple[int, ...]]] = {
        "d2t": ("I64", (_DRAFT_VOCAB,)),
        "t2d": ("BOOL", (_VOCAB,)),
        "embed_tokens.weight": ("BF16", (_VOCAB, h)),
        "fc.weight": ("BF16", (h, 3 * h)),
        "lm_head.weight": ("BF16", (_DRAFT_VOCAB, h)),
        "norm.weight": ("BF16", (h,)),
        "midlayer.hidden_norm.weight": ("BF16", (h,)),
        "midlayer.input_layernorm.weight": ("BF16", (h,)),
        "midlayer.post_attention_layernorm.weight": ("BF16", (h,)),
        "midlayer.self_attn.q_proj.weight": ("BF16", (heads * head_dim, attn_in)),
        "midlayer.self_attn.k_proj.weight": ("BF16", (kv_heads * head_dim, attn_in)),
        "midlayer.self_attn.v_proj.weight": ("BF16", (kv_heads * head_dim, attn_in)),
        "midlayer.self_attn.o_proj.weight": ("BF16", (h, heads * head_dim)),
        "midlayer.mlp.gate_proj.weight": ("BF16", (inter, h)),
        "midlayer.mlp.up_proj.weight": ("BF16", (inter, h)),
        "midlayer.mlp.down_proj.weight": ("BF16", (h, inter)),
    }
    if parallel:
        config["ptd_token_id"] = _MASK_ID
        tensors["mask_hidden"] = ("BF16", (1, 1, 3 * h))
    return {
        "config.json": json.dumps(config, indent=1).encode(),
        "model.safetensors": tiny_safetensors(tensors),
    }


def _placeholders() -> dict[str, bytes]:
    target = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": _HIDDEN,
        "num_hidden_layers": 4,
        "vocab_size": _VOCAB,
        "max_position_embeddings": 2048,
        "note": _NOTE,
    }
    out: dict[str, bytes] = {}
    for name in TINY_TARGETS:
        out[f"{name}/config.json"] = json.dumps(target, indent=1).encode()
        out[f"{name}/model.safetensors"] = tiny_safetensors({"lm_head.weight": ("F16", (8, 8))})
    for head in TINY_HEADS:
        for name, body in _placeholder_head(head.startswith("p-eagle")).items():
            out[f"heads/{head}/{name}"] = body
    return out


def seed_tiny_models(url: str, home: Path | None = None) -> str:
    """Upload the tiny targets and their heads; "real" or "placeholder" (what was seeded)."""
    import boto3

    s3 = boto3.session.Session(
        aws_access_key_id="peagle-sandbox", aws_secret_access_key="peagle-sandbox"
    ).client("s3", region_name="us-east-1", endpoint_url=url)
    s3.create_bucket(Bucket=SANDBOX_BUCKET)
    models = _models_dir(home)
    if models is not None:
        for key, path in _real_files(models).items():
            s3.upload_file(str(path), SANDBOX_BUCKET, key)
        return f"real ({models})"
    for key, body in _placeholders().items():
        s3.put_object(Bucket=SANDBOX_BUCKET, Key=key, Body=body)
    return "placeholder"
