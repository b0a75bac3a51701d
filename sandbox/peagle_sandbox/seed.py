"""What a fresh sandbox account holds, so `peagle deploy` passes preflight unchanged: an
execution role SageMaker can assume, and the JumpStart prefixes of the catalog models with
small placeholder files (never zero-byte "folder" keys, which preflight rejects)."""

from __future__ import annotations

import json
import math
import struct
from typing import Any

__all__ = ["ROLE_NAME", "seed_account"]

ROLE_NAME = "peagle-sandbox-role"
_TRUST = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Effect": "Allow",
            "Principal": {"Service": "sagemaker.amazonaws.com"},
            "Action": "sts:AssumeRole",
        }
    ],
}
_PLACEHOLDER = "peagle sandbox placeholder: SIMULATED, no real weights"
# gpt-oss-20b's shape, as preflight's drafter check compares the head against it.
_TARGET_HIDDEN, _TARGET_VOCAB, _DRAFT_HIDDEN, _DRAFT_VOCAB = 2880, 201088, 32, 64
# The decoder layer's sizes, all written into config.json: a size left out would take
# transformers' LlamaConfig default (intermediate_size 11008), which the weights must match.
_HEADS, _KV_HEADS, _HEAD_DIM, _INTERMEDIATE = 4, 4, _DRAFT_HIDDEN // 4, 64
_BYTES = {"BF16": 2, "F16": 2, "F32": 4, "I64": 8, "BOOL": 1}


def tiny_safetensors(tensors: dict[str, tuple[str, tuple[int, ...]]]) -> bytes:
    """A valid safetensors file of zeros (header + data), without numpy or safetensors.

    Preflight reads the head's real headers, so the placeholder must be a real file; a tiny
    drafter hidden size keeps the gpt-oss-20b head at ~13 MB (its embedding, see below)."""
    header: dict[str, Any] = {"__metadata__": {"format": "pt", "note": _PLACEHOLDER}}
    offset = 0
    for name, (dtype, shape) in tensors.items():
        size = _BYTES[dtype] * math.prod(shape)
        span = [offset, offset + size]
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": span}
        offset += size
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)  # the format aligns the data to 8 bytes
    return struct.pack("<Q", len(raw)) + raw + bytes(offset)


def _eagle_head() -> bytes:
    """Every tensor vLLM 0.18.0's Llama EAGLE-3 head (`Eagle3LlamaForCausalLM`) builds for
    the config below, at the shape it builds: a head missing one loads silently wrong, and
    preflight's drafter checks say so on every sandbox deploy (drafter.unloaded,
    drafter.borrowed). Names are as vLLM's EAGLE-3 loader maps them: unprefixed (it
    prepends 'model.' to every name but lm_head/d2t/t2d/mask_hidden: a 'model.fc.weight'
    would not load), and `midlayer.` for decoder layer 0, as published EAGLE-3 heads save it."""
    h, q, kv = _DRAFT_HIDDEN, _HEADS * _HEAD_DIM, _KV_HEADS * _HEAD_DIM
    layer = {
        # Layer 0 reads the token's embedding and the fc-projected hidden state side by
        # side, so q/k/v take 2 x hidden inputs.
        "self_attn.q_proj.weight": ("F16", (q, 2 * h)),
        "self_attn.k_proj.weight": ("F16", (kv, 2 * h)),
        "self_attn.v_proj.weight": ("F16", (kv, 2 * h)),
        "self_attn.o_proj.weight": ("F16", (h, q)),
        "mlp.gate_proj.weight": ("F16", (_INTERMEDIATE, h)),
        "mlp.up_proj.weight": ("F16", (_INTERMEDIATE, h)),
        "mlp.down_proj.weight": ("F16", (h, _INTERMEDIATE)),
        "input_layernorm.weight": ("F32", (h,)),
        "hidden_norm.weight": ("F32", (h,)),
        "post_attention_layernorm.weight": ("F32", (h,)),
    }
    return tiny_safetensors(
        {
            # The head's own embedding: vLLM builds it [vocab_size, hidden] with vocab_size
            # the target's (drafter.vocab fails any other), so no smaller table loads. At
            # hidden 32 it is 201088 x 32 F16, 12.3 MiB of the file's ~12.9 MiB.
            "embed_tokens.weight": ("F16", (_TARGET_VOCAB, h)),
            **{f"midlayer.{name}": spec for name, spec in layer.items()},
            "fc.weight": ("F16", (h, 3 * _TARGET_HIDDEN)),
            "d2t": ("I64", (_DRAFT_VOCAB,)),
            "lm_head.weight": ("F16", (_DRAFT_VOCAB, h)),
            "norm.weight": ("F32", (h,)),
            # JumpStart's image runs vLLM 0.18.0, whose llama_eagle3.py sizes mask_hidden
            # as 3 x the head's own hidden_size (the real head: hidden 2880 = target's,
            # where this equals 3 x target hidden; the placeholder's hidden is tiny).
            "mask_hidden": ("F16", (1, 1, 3 * h)),
        }
    )


# (prefix under the regional JumpStart bucket, {file: body})
_PREFIXES: list[tuple[str, dict[str, Any]]] = [
    (
        "openai-reasoning/openai-reasoning-gpt-oss-20b/artifacts/inference-prepack/v1.0.0/",
        {
            "config.json": {"architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss"},
            "generation_config.json": {"note": _PLACEHOLDER},
            "tokenizer_config.json": {"note": _PLACEHOLDER},
            "model.safetensors.index.json": {"metadata": {"note": _PLACEHOLDER}},
            "model-00000-of-00001.safetensors": _PLACEHOLDER,
        },
    ),
    (
        "lmi-eagle-heads/models/gpt-oss-20b-p-eagle/",
        {
            "config.json": {
                "architectures": ["LlamaForCausalLMEagle3"],
                "model_type": "llama",
                "hidden_size": _DRAFT_HIDDEN,
                "num_attention_heads": _HEADS,
                "num_key_value_heads": _KV_HEADS,
                "head_dim": _HEAD_DIM,
                "intermediate_size": _INTERMEDIATE,
                "num_hidden_layers": 1,
                "vocab_size": _TARGET_VOCAB,
                "draft_vocab_size": _DRAFT_VOCAB,
                "target_hidden_size": _TARGET_HIDDEN,
                "ptd_token_id": 201020,
                "note": _PLACEHOLDER,
            },
            "model.safetensors": _eagle_head,
        },
    ),
]


def _render(body: Any) -> bytes:
    if callable(body):
        return bytes(body())
    return (body if isinstance(body, str) else json.dumps(body, indent=1)).encode()


def seed_account(url: str, regions: list[str]) -> str:
    """Create the role and the JumpStart objects through the sandbox's own API; the role ARN."""
    import boto3

    session = boto3.session.Session(
        aws_access_key_id="peagle-sandbox", aws_secret_access_key="peagle-sandbox"
    )
    iam = session.client("iam", region_name="us-east-1", endpoint_url=url)
    try:
        arn = iam.get_role(RoleName=ROLE_NAME)["Role"]["Arn"]
    except iam.exceptions.NoSuchEntityException:
        arn = iam.create_role(
            RoleName=ROLE_NAME,
            AssumeRolePolicyDocument=json.dumps(_TRUST),
            Description="peagle sandbox execution role (SIMULATED)",
        )["Role"]["Arn"]
    for region in dict.fromkeys(regions):
        s3 = session.client("s3", region_name=region, endpoint_url=url)
        bucket = f"jumpstart-cache-prod-{region}"
        kwargs: dict[str, Any] = {"Bucket": bucket}
        if region != "us-east-1":
            kwargs["CreateBucketConfiguration"] = {"LocationConstraint": region}
        s3.create_bucket(**kwargs)
        for prefix, files in _PREFIXES:
            for name, body in files.items():
                s3.put_object(Bucket=bucket, Key=prefix + name, Body=_render(body))
    return str(arn)
