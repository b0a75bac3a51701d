"""SANDBOX-ONLY catalog entries: tiny models that exist only inside `peagle --sandbox`.

`tiny-llama` is the tiny target `peagle sandbox install-engine` generates locally
(`sandbox/vllm_engine/tiny_models.py`: LlamaForCausalLM, hidden 256, 4 layers, vocab
512, bf16, about 5 MB), with its "aligned" P-EAGLE head as the default drafter. The
sandbox seeds both into its own S3 (`sandbox/seed_tiny.py`), so
`peagle --sandbox deploy tiny-llama --mode p-eagle -k 3 --yes` needs no flags. It runs on
the real vLLM engine (`peagle sandbox start --engine vllm`) and on the SIMULATED one; it
is not a model anyone can deploy on AWS (the bucket exists only in the sandbox), and
`peagle deploy` refuses it outside the sandbox.

Plain data (no import of `models`), so `catalog.models` can build the entries without an
import cycle.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "SANDBOX_BUCKET",
    "SANDBOX_MODELS",
    "TINY_DRAFTER_URI",
    "TINY_HEADS",
    "TINY_MODEL_URI",
    "TINY_RANDOM_URI",
]

SANDBOX_BUCKET = "peagle-sandbox-models"
TINY_MODEL_URI = f"s3://{SANDBOX_BUCKET}/tiny-llama/"
# The same shape with plain random weights (no favoured token): varied output, which a
# head must learn (`peagle drafter train tiny-llama-random`); its seeded head is random.
TINY_RANDOM_URI = f"s3://{SANDBOX_BUCKET}/tiny-llama-random/"
# Every head the sandbox seeds, under s3://peagle-sandbox-models/heads/<name>/; pass one
# with --drafter to try another (eagle3-aligned for --mode eagle3, *-random for ~0 acceptance).
TINY_HEADS = ("p-eagle-aligned", "eagle3-aligned", "p-eagle-random", "eagle3-random")
TINY_DRAFTER_URI = f"s3://{SANDBOX_BUCKET}/heads/p-eagle-aligned/"
_LABEL = "SANDBOX ONLY: generated locally by `peagle sandbox install-engine`, not on AWS"

# ModelEntry keyword arguments (see catalog/models.py for the meaning of each field).
_TINY: dict[str, Any] = {
    "alias": "tiny-llama",
    "hf_id": "peagle-sandbox/tiny-llama",
    "jumpstart_id": None,
    "jumpstart_wiring_confirmed": False,
    "jumpstart_config": None,
    "jumpstart_snapshot": None,
    "total_params_b": 0.0026,
    "active_params_b": 0.0026,
    "hidden_size": 256,
    "num_layers": 4,
    "num_kv_heads": 2,
    "head_dim": 64,
    "vocab_size": 512,
    "weight_bytes": 5_300_000,
    "weight_note": f"bf16, {_LABEL}",
    "drafter": {
        "hf_id": "peagle-sandbox/p-eagle-aligned",
        # The aligned head always proposes the token the target favours, so it is
        # not tied to one K; 7 is the largest K the sandbox tests exercise.
        "trained_k": 7,
        "recommended_k": 3,
        "layers": 1,
        "bytes": 2_200_000,
        "bytes_estimated": False,
        "note": f"aligned P-EAGLE head (ptd_token_id=3, draft vocab 256); {_LABEL}",
    },
    "default_instance": "ml.g7e.2xlarge",  # any valid type: the sandbox ignores it
    "default_k": 3,
    "default_k_source": "sandbox tiny head",
    "sources": (_LABEL,),
    "architecture": "LlamaForCausalLM",
    "sandbox_only": True,
    "model_data": TINY_MODEL_URI,
    "drafter_source": TINY_DRAFTER_URI,
    # The engine the sandbox installs by default (0.31.0) is a published DLC version.
    "vllm_version": "0.31.0",
}

SANDBOX_MODELS: tuple[dict[str, Any], ...] = (
    _TINY,
    {
        **_TINY,
        "alias": "tiny-llama-random",
        "hf_id": "peagle-sandbox/tiny-llama-random",
        "weight_note": f"bf16, random weights, {_LABEL}",
        "drafter": {
            **_TINY["drafter"],
            "hf_id": "peagle-sandbox/p-eagle-random",
            "note": f"random P-EAGLE head (~0 acceptance: train one with `peagle drafter "
            f"train tiny-llama-random`); {_LABEL}",
        },
        "model_data": TINY_RANDOM_URI,
        "drafter_source": f"s3://{SANDBOX_BUCKET}/heads/p-eagle-random/",
    },
)
