"""What `drafter train` judges before anything is created, from what was read: the target's
config.json (`TargetInfo`), the training data's prompts, the auxiliary layer ids, and
whether the target and the head being trained fit the instance's GPUs. Pure: the reads
are the caller's (a local file, or one S3 GetObject in `lifecycle/training.py`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..checks import Check, failed, passed, warned
from ..errors import Param, SpecError, text

__all__ = [
    "SUPPORTED_ARCHITECTURES",
    "TargetInfo",
    "check_architecture",
    "check_draft_vocab",
    "check_fit",
    "count_prompts",
    "head_parameters",
    "target_layer_ids",
]

# The targets speculators 0.9.0 trains a P-EAGLE head for that vLLM then serves: its
# draft decoder is a Llama or Qwen3 layer (`speculators/train/cli.py` DRAFT_ARCH_CONFIGS,
# "not yet supported in vLLM" for any other), seeded from the target's config; peagle
# accepts the dense targets of those two families, the ones the CPU path was measured on
# (facts 14: the tiny Llama target). MoE and multimodal targets (gpt-oss, Qwen3-MoE,
# Gemma 4) are not claimed: their hidden-state layout was not checked.
SUPPORTED_ARCHITECTURES = ("LlamaForCausalLM", "Qwen3ForCausalLM")
# The fewest decoder layers that give three distinct auxiliary layers below the last.
MIN_TARGET_LAYERS = 4
# Bytes a trained parameter costs in GPU memory with AdamW in mixed precision: bf16
# weight (2) + fp32 master (4) + fp32 gradient (4) + two fp32 Adam moments (8).
TRAIN_BYTES_PER_PARAM = 18
# What activations, the CUDA context and the allocator's slack take, as a share of the
# GPU: P-EAGLE trains on sequences of up to a few thousand tokens per step.
ACTIVATION_SHARE = 0.2


@dataclass(frozen=True)
class TargetInfo:
    """The target as the trainer sees it (from its config.json, or the catalog)."""

    source: str  # what the user gave
    architecture: str | None
    num_layers: int | None
    hidden_size: int | None
    vocab_size: int | None
    intermediate_size: int | None = None
    weight_bytes: int | None = None
    model_data: str | None = None  # the S3 prefix the `target` channel reads
    local_dir: str | None = None  # a local directory, pushed before the job

    @classmethod
    def from_config(cls, source: str, config: dict[str, Any], **more: Any) -> TargetInfo:
        """From a Hugging Face config.json (a multimodal one's `text_config` is read)."""
        arch = (config.get("architectures") or [None])[0]
        inner = config.get("text_config") or config
        return cls(
            source=source,
            architecture=arch,
            num_layers=inner.get("num_hidden_layers"),
            hidden_size=inner.get("hidden_size"),
            vocab_size=inner.get("vocab_size"),
            intermediate_size=inner.get("intermediate_size"),
            **more,
        )


def check_architecture(info: TargetInfo) -> None:
    """SpecError unless the trainer can handle the target."""
    if info.architecture not in SUPPORTED_ARCHITECTURES:
        raise SpecError(
            text(
                "{p}: {t} is a {a}; drafter train handles {ok}",
                p=Param("target"),
                t=info.source,
                a=info.architecture or "model of unknown architecture",
                ok=" and ".join(SUPPORTED_ARCHITECTURES),
            ),  # fmt: skip
            remedy="train a head for a Llama or Qwen3 dense target, or use speculators "
            "directly for other architectures",
            field="target",
            value=info.source,
            rule="architecture in " + ", ".join(SUPPORTED_ARCHITECTURES),
        )
    if not info.num_layers or info.num_layers < MIN_TARGET_LAYERS:
        raise SpecError(
            text(
                "{p}: {t} has {n} decoder layers; a P-EAGLE head reads three of them "
                "(at least {m} needed)",
                p=Param("target"),
                t=info.source,
                n=info.num_layers,
                m=MIN_TARGET_LAYERS,
            ),  # fmt: skip
            remedy="train for a target with more layers",
            field="target",
            value=info.source,
        )


def check_draft_vocab(draft_vocab_size: int | None, info: TargetInfo) -> int | None:
    """The draft vocabulary: None means the target's; larger than the target's is refused."""
    if draft_vocab_size is None or info.vocab_size is None:
        return draft_vocab_size
    if draft_vocab_size > info.vocab_size:
        raise SpecError(
            text(
                "{p}: {d} is larger than the target's vocabulary ({v})",
                p=Param("draft_vocab_size"),
                d=draft_vocab_size,
                v=info.vocab_size,
            ),  # fmt: skip
            remedy=text(
                "give at most {p}, or leave it out (the target's)",
                p=Param("draft_vocab_size", info.vocab_size),
            ),  # fmt: skip
            field="draft_vocab_size",
            value=draft_vocab_size,
            rule=f"<= {info.vocab_size} (the target's vocab_size)",
        )
    return draft_vocab_size


def target_layer_ids(num_layers: int) -> list[int]:
    """The three auxiliary layers the head reads (vLLM's convention: id L is the input of
    decoder layer L). vLLM's and speculators' default is [2, n//2, n-3]; for fewer than
    seven layers that repeats or misorders a layer (speculators' default is invalid for a
    4-layer target, facts 14), so small targets use [1, n//2, n-1]."""
    if num_layers >= 7:
        return [2, num_layers // 2, num_layers - 3]
    return [1, num_layers // 2, num_layers - 1]


def count_prompts(lines: list[str], source: str, *, complete: bool = True) -> int:
    """The prompts in jsonl `lines`: rows `{"prompt": str}` or `{"messages": [{"role",
    "content"}, ...]}` with a user turn. A malformed row, or no prompt at all, is a
    SpecError naming the data. `complete=False`: the lines are the start of a larger
    object (the last may be cut), so a last line that does not parse is not judged."""
    count = 0
    last = len(lines) - 1
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            if not complete and i == last:
                break
            raise SpecError(
                text(
                    "{p}: {s} line {n} is not JSON ({e})",
                    p=Param("data"),
                    s=source,
                    n=i + 1,
                    e=exc.msg,
                ),  # fmt: skip
                remedy='one JSON object a line: {"prompt": "..."} or {"messages": [...]}',
                field="data",
                value=source,
            ) from None
        if _has_prompt(row):
            count += 1
    if count == 0:
        raise SpecError(
            text("{p}: {s} holds no prompts", p=Param("data"), s=source),
            remedy='give a jsonl whose rows are {"prompt": "..."} or {"messages": '
            '[{"role": "user", "content": "..."}]}',
            field="data",
            value=source,
            rule="at least one prompt",
        )
    return count


def _has_prompt(row: Any) -> bool:
    if not isinstance(row, dict):
        return False
    prompt = row.get("prompt")
    if isinstance(prompt, str) and prompt.strip():
        return True
    messages = row.get("messages")
    if isinstance(messages, list):
        return any(
            isinstance(m, dict)
            and m.get("role") == "user"
            and isinstance(m.get("content"), str)
            and m["content"].strip()
            for m in messages
        )
    return False


def head_parameters(info: TargetInfo, layers: int, draft_vocab_size: int | None) -> int | None:
    """The parameters of the head being trained: `layers` decoder layers of the target's
    width, the fc that folds three auxiliary states into one (3H x H), the embedding
    (P-EAGLE trains it) and the lm_head over the draft vocabulary."""
    h, v = info.hidden_size, info.vocab_size
    if not h or not v:
        return None
    inter = info.intermediate_size or 4 * h
    layer = 4 * h * h + 3 * h * inter  # attention (q, k, v, o at full width) + MLP
    vocab = draft_vocab_size or v
    return layers * layer + 3 * h * h + v * h + vocab * h


def check_fit(info: TargetInfo, instance: Any, layers: int, draft_vocab: int | None) -> Check:
    """Do the target (for the continuations and hidden states) and the head's training
    state fit the instance's GPU memory? The target's weights spread over all GPUs;
    the head trains whole on each (data parallel)."""
    if instance is None:
        return warned("fit", "the instance's GPU memory is not in peagle's catalog; not checked")
    params = head_parameters(info, layers, draft_vocab)
    if info.weight_bytes is None or params is None:
        return warned("fit", "the target's size is not known; GPU memory not checked")
    gpu = instance.gpu_memory_gb * 1e9
    usable = gpu * (1 - ACTIVATION_SHARE)
    head = params * TRAIN_BYTES_PER_PARAM
    target = info.weight_bytes
    if target > usable * instance.gpus or head > usable:
        return failed(
            "fit",
            f"the target ({target / 1e9:.1f} GB of weights) and the head's training state "
            f"({head / 1e9:.1f} GB) do not fit {instance.name} ({instance.gpus} x "
            f"{instance.gpu_memory_gb:g} GB, {ACTIVATION_SHARE:.0%} kept for activations)",
            text("choose a larger {p}", p=Param("instance_type")),
        )
    return passed(
        "fit",
        f"target {target / 1e9:.2f} GB + head training state {head / 1e9:.2f} GB fit "
        f"{instance.name} ({instance.gpus} x {instance.gpu_memory_gb:g} GB)",
    )
