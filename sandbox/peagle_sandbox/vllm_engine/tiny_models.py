"""Tiny target model, tokenizer and EAGLE-3 / P-EAGLE drafter heads for the real vLLM engine.

Runs INSIDE the engine venv: imports torch, transformers, tokenizers and safetensors.

Everything is made offline, deterministically from a seed, in a few seconds:

* ``tokenizer`` / ``tiny-llama``: a byte-level BPE (vocab 512, ``<mask>`` special token,
  a chat template) and a 4-layer ``LlamaForCausalLM`` (hidden 256, 4 heads / 2 KV heads,
  bf16, about 5 MB) saved with ``save_pretrained``;
* ``p-eagle-random`` / ``p-eagle-aligned``: P-EAGLE heads (``LlamaForCausalLMEagle3``, one
  layer, draft vocab 256, ``ptd_token_id`` = the ``<mask>`` id, a ``mask_hidden`` tensor);
* ``eagle3-random`` / ``eagle3-aligned``: the same weights as a classic EAGLE-3 head would
  ship them, i.e. without ``mask_hidden`` and without a mask-token key. Decided so because
  that is what published EAGLE-3 heads look like, and so that serving an eagle3 dir with
  ``parallel_drafting: true`` is a real negative case (vLLM refuses it at start-up).

"Aligned" means acceptance is controllable (see ``alignment.py``): the target puts
``target_p`` of its probability on one favoured token regardless of context and the drafter
proposes that token with near certainty, so acceptance is 100% greedy and about
``target_p`` per position at temperature 1.

Head variants for conformance tests come from :func:`build_head` with overrides; named
ones are in ``heads.VARIANTS``. CLI: ``python -m peagle_sandbox.vllm_engine.tiny_models
--out DIR [--variants] [--seed N] [--target-p P]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import torch

from peagle_sandbox.vllm_engine.alignment import align_target, favoured_token
from peagle_sandbox.vllm_engine.heads import VARIANTS, build_head
from peagle_sandbox.vllm_engine.spec import TINY, TinySpec

__all__ = ["build_all", "build_target", "build_tokenizer", "main"]

# Deterministic corpus: a few sentences, recombined so byte-level BPE finds enough merges
# to fill a 512-token vocabulary.
_SUBJECTS = [
    "the drafter",
    "the target model",
    "a speculative step",
    "the endpoint",
    "parallel drafting",
    "the verifier",
    "every token",
    "the sandbox",
]
_VERBS = [
    "proposes",
    "accepts",
    "rejects",
    "verifies",
    "streams",
    "measures",
    "serves",
    "drafts",
    "samples",
    "decodes",
]
_OBJECTS = [
    "four tokens at once",
    "the mask token",
    "a longer answer",
    "hidden states",
    "the acceptance length",
    "one forward pass",
    "a chat completion",
    "the key value cache",
    "tokens per second",
    "the bonus token",
]
_EXTRA = [
    "SageMaker deploys a vLLM container behind an HTTPS endpoint in the cloud.",
    "Quick brown foxes jump over lazy dogs while zebras watch quietly.",
    "Benchmarks report throughput, latency, percentiles and goodput honestly.",
    "Checkpoints hold weights, biases, embeddings and normalization scales.",
    "Python, Rust, Kotlin and Haskell programmers write compilers together.",
    "Amazon Web Services bills instances hourly: g7e, g6e, p5 and p6 families.",
]
SPECIALS = ["<s>", "</s>", "<pad>", "<mask>"]
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant:{% endif %}"
)


def _corpus() -> list[str]:
    return [f"{s} {v} {o}." for s in _SUBJECTS for v in _VERBS for o in _OBJECTS] + _EXTRA


def build_tokenizer(out: Path, spec: TinySpec = TINY) -> Any:
    """Train the byte-level BPE and save it (with chat template) into `out`."""
    from tokenizers import ByteLevelBPETokenizer
    from transformers import PreTrainedTokenizerFast

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(
        _corpus(),
        vocab_size=spec.vocab_size,
        min_frequency=1,
        special_tokens=SPECIALS,
        show_progress=False,
    )
    tok = PreTrainedTokenizerFast(
        tokenizer_object=bpe._tokenizer,
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        mask_token="<mask>",
    )
    tok.chat_template = CHAT_TEMPLATE
    if len(tok) != spec.vocab_size:  # the favoured token and d2t assume a full vocab
        raise RuntimeError(f"tokenizer has {len(tok)} tokens, expected {spec.vocab_size}")
    tok.save_pretrained(out)
    return tok


def build_target(
    out: Path, tok: Any, *, aligned: bool, seed: int, target_p: float, spec: TinySpec = TINY
) -> dict[str, Any]:
    """Save the tiny LlamaForCausalLM (+ tokenizer files) into `out`; returns calibration."""
    from transformers import LlamaConfig, LlamaForCausalLM
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # keep the installer's log to one line per step
    torch.manual_seed(seed)
    cfg = LlamaConfig(
        vocab_size=spec.vocab_size,
        hidden_size=spec.hidden_size,
        intermediate_size=spec.intermediate_size,
        num_hidden_layers=spec.num_layers,
        num_attention_heads=spec.num_heads,
        num_key_value_heads=spec.num_kv_heads,
        head_dim=spec.head_dim,
        max_position_embeddings=spec.max_position_embeddings,
        rms_norm_eps=spec.rms_norm_eps,
        tie_word_embeddings=False,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        torch_dtype="bfloat16",
    )
    model = LlamaForCausalLM(cfg).eval()
    info: dict[str, Any] = {}
    if aligned:
        info = align_target(model, tok, target_p=target_p, spec=spec)
    model.to(torch.bfloat16).save_pretrained(out, safe_serialization=True)
    tok.save_pretrained(out)
    return info


def build_all(
    out: Path,
    *,
    seed: int = 0,
    target_p: float = 0.6,
    variants: bool = False,
    spec: TinySpec = TINY,
    progress: Any = print,
) -> dict[str, Any]:
    """Build tokenizer, target(s) and the four heads (plus variants) under `out`.

    Two targets are written: ``tiny-llama`` (aligned with the ``*-aligned`` heads) and
    ``tiny-llama-random`` (plain random init). Returns the manifest also written to
    ``out/manifest.json``.
    """
    t0 = time.monotonic()
    out.mkdir(parents=True, exist_ok=True)
    tok = build_tokenizer(out / "tokenizer", spec)
    mask_id = tok.convert_tokens_to_ids("<mask>")
    calib = build_target(
        out / "tiny-llama", tok, aligned=True, seed=seed, target_p=target_p, spec=spec
    )
    build_target(out / "tiny-llama-random", tok, aligned=False, seed=seed, target_p=0, spec=spec)
    heads = {
        "p-eagle-random": dict(aligned=False),
        "eagle3-random": dict(aligned=False, eagle3=True),
        "p-eagle-aligned": dict(aligned=True),
        "eagle3-aligned": dict(aligned=True, eagle3=True),
    }
    if variants:
        heads.update({f"variants/{k}": v for k, v in VARIANTS.items()})
    for name, kw in heads.items():
        build_head(out / name, mask_token_id=mask_id, seed=seed + 1, spec=spec, **kw)
    manifest = {
        "seed": seed,
        "spec": spec.as_dict(),
        "mask_token_id": mask_id,
        "favoured_token_id": favoured_token(spec),
        "favoured_token": tok.convert_ids_to_tokens(favoured_token(spec)),
        "target_p_requested": target_p,
        "calibration": calib,
        "heads": sorted(heads),
        "seconds": round(time.monotonic() - t0, 2),
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    progress(f"tiny models: {len(heads)} heads + 2 targets in {manifest['seconds']} s -> {out}")
    return manifest


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m peagle_sandbox.vllm_engine.tiny_models",
        description=__doc__.split("\n\n")[0],
    )
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--target-p",
        type=float,
        default=0.6,
        help="probability the aligned target puts on the favoured token",
    )
    p.add_argument(
        "--variants",
        action="store_true",
        help="also write the conformance head variants under OUT/variants/",
    )
    a = p.parse_args(argv)
    if not 0.0 < a.target_p < 1.0:
        print("tiny_models: --target-p must be in (0, 1)", file=sys.stderr)
        return 2
    build_all(a.out, seed=a.seed, target_p=a.target_p, variants=a.variants)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
