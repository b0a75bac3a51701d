"""What `drafter train` judges before anything is created, from what was read: the target's
config.json (`TargetInfo`), the training data's prompts, the auxiliary layer ids, and
whether the target and the head being trained fit the instance's GPUs. Pure: the reads
are the caller's (a local file, or one S3 GetObject in `lifecycle/training.py`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..catalog.instances import instance_family
from ..checks import Check, failed, passed, warned
from ..errors import Param, SpecError, text
from .source import prompt_rows
from .spec import DEFAULT_VAL_FRACTION, MIN_VOLUME_GB

__all__ = [
    "SUPPORTED_ARCHITECTURES",
    "DataStats",
    "DiskPlan",
    "TargetInfo",
    "check_architecture",
    "check_draft_vocab",
    "check_fit",
    "count_prompts",
    "head_parameters",
    "plan_disk",
    "read_rows",
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
# The two row shapes, as the fix of a malformed row names them (prompt_rows.parse_row).
_ROW_SHAPES = '{"prompt": "..."} or {"messages": [{"role": "user", "content": "..."}]}'
# How much of S3 data preflight reads (lifecycle/training.py's DATA_PEEK_BYTES).
S3_PEEK_BYTES = 1 << 20
# The job's disk. Hidden states are stored in bf16 (2 bytes a value; speculators' offline
# format). Tokens are estimated as characters / 4 (the usual rule for English BPE
# vocabularies): peagle never loads the target's tokenizer. The margin holds the pip
# cache (speculators and its dependencies: a few GB), the prepared dataset (token ids and
# masks: small beside the hidden states) and the head.
BF16_BYTES = 2
CHARS_PER_TOKEN = 4
DISK_MARGIN_BYTES = 20e9
# VolumeSizeInGB: at least MIN_VOLUME_GB (spec.py); at most EBS's largest volume (16 TiB,
# 16384 GiB: gp2/gp3's limit, the EBS user guide).
MAX_VOLUME_GB = 16384
# The training families of the allowed instance types (training/spec.py) that have NVMe
# instance storage: for them SageMaker "doesn't provision Amazon EBS ... Available storage
# is fixed to the NVMe-type instance's storage capacity" (the ResourceConfig API reference,
# VolumeSizeInGB, which names ml.p4d and ml.g5). Every size of these families has an
# instance store (the EC2 Instance Types guide, accelerated computing, instance store
# specifications).
NVME_TRAINING_FAMILIES = frozenset(
    {"g5", "g6", "g6e", "g7e", "p4d", "p4de", "p5", "p5e", "p5en", "p6-b200", "p6-b300"}
)


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


@dataclass(frozen=True)
class DataStats:
    """What preflight read of the training data: its rows (by `prompt_rows`, the job's own
    rule), their prompt text's characters, the bytes read, and whether that was all of it.
    `total_bytes`: the whole object's size, when only its start was read (S3 data)."""

    source: str
    rows: int
    chars: int
    bytes_read: int
    whole: bool
    total_bytes: int | None = None

    @property
    def estimated_rows(self) -> int | None:
        """All the rows: those read, or, from the start of a larger object, extrapolated
        by bytes (None when the object's size is unknown)."""
        if self.whole:
            return self.rows
        if not self.total_bytes or not self.bytes_read:
            return None
        return max(self.rows, round(self.rows * self.total_bytes / self.bytes_read))

    @property
    def mean_prompt_tokens(self) -> float:
        """A prompt's tokens, estimated as characters / CHARS_PER_TOKEN: peagle never loads
        the target's tokenizer (no transformers in the product)."""
        return self.chars / max(self.rows, 1) / CHARS_PER_TOKEN

    def note(self) -> str:
        """What was read, for the run's notes (and that later rows were not checked)."""
        if self.whole:
            return f"{self.rows} prompts in {self.source}"
        return (
            f"{self.rows}+ prompts in the first MiB of {self.source}: only that MiB was "
            "checked; a malformed row after it fails the job once it has started"
        )


def read_rows(
    lines: list[str],
    source: str,
    *,
    complete: bool = True,
    val_fraction: float = DEFAULT_VAL_FRACTION,
    total_bytes: int | None = None,
) -> DataStats:
    """The jsonl `lines` judged by the job's own rule (`prompt_rows`): the first malformed
    row, no prompt at all, or too few rows for the job's train/validation split is a
    SpecError naming the data and the line. `complete=False`: the lines are the start of a
    larger object (the last may be cut), so a last line that is not JSON is not judged, and
    the split is judged only when the lines were surely the whole object."""
    rows = chars = size = 0
    cut = False
    last = len(lines) - 1
    for i, line in enumerate(lines):
        try:
            row = prompt_rows.parse_row(line)
        except prompt_rows.RowError as exc:
            if not complete and i == last and str(exc) == prompt_rows.NOT_JSON:
                cut = True
                break
            raise _bad_data(
                source,
                f"line {i + 1} {exc}",
                f"fix or remove line {i + 1}: one JSON object a line, {_ROW_SHAPES}",
                _ROW_SHAPES,
            ) from None
        size += len(line.encode("utf-8")) + 1
        if row is None:
            continue
        rows += 1
        if "prompt" in row:
            chars += len(row["prompt"])
        else:
            chars += sum(len(m["content"]) for m in row["messages"])
    if rows == 0:
        raise _bad_data(
            source, "holds no prompts", f"give a jsonl whose rows are {_ROW_SHAPES}",
            "at least one prompt",
        )  # fmt: skip
    whole = complete or (not cut and _surely_whole(lines))
    if whole and prompt_rows.split_counts(rows, val_fraction) is None:
        need = prompt_rows.min_rows(val_fraction)
        raise _bad_data(
            source,
            f"holds {rows} prompt(s); the job keeps {val_fraction:g} of them for validation "
            "and needs at least one row on each side",
            f"give at least {need} prompts" if need else "give more prompts",
            f"int(rows * (1 - {val_fraction:g})) >= 1 and a validation row",
        )
    return DataStats(source, rows, chars, size, whole, None if whole else total_bytes)


def _bad_data(source: str, problem: str, remedy: Any, rule: str) -> SpecError:
    """The SpecError of data the job would refuse (or could not hold): `problem` follows
    the data's name."""
    return SpecError(
        text("{p}: {s} {problem}", p=Param("data"), s=source, problem=problem),
        remedy=remedy,
        field="data",
        value=source,
        rule=rule,
    )


def _surely_whole(lines: list[str]) -> bool:
    """Were these lines the whole S3 object? Its first S3_PEEK_BYTES were asked for; a
    character is at most 4 UTF-8 bytes and a line ending at most 2 ("\\r\\n"), so lines
    that came from fewer bytes than asked for were everything."""
    return 4 * sum(len(line) for line in lines) + 2 * len(lines) < S3_PEEK_BYTES


def count_prompts(lines: list[str], source: str, *, complete: bool = True) -> int:
    """The prompts in jsonl `lines` (`read_rows`, at the default validation fraction)."""
    return read_rows(lines, source, complete=complete).rows


def target_disk_bytes(info: TargetInfo) -> int:
    """What the target's copy takes on the job's disk (0 when its size is unknown)."""
    return info.weight_bytes or 0


@dataclass(frozen=True)
class DiskPlan:
    """The job's disk: the estimate, the `VolumeSizeInGB` to ask for, and what to tell."""

    estimate_bytes: int | None
    volume_gb: int
    note: str


def plan_disk(
    stats: DataStats | None,
    info: TargetInfo | None,
    *,
    max_new_tokens: int,
    instance_type: str,
    aux_layers: int = 3,
) -> DiskPlan:
    """The disk a job needs: the hidden states (every prompt's tokens plus its
    continuation, `aux_layers` + the last layer, `hidden_size` values of BF16_BYTES
    each), the target's copy, and DISK_MARGIN_BYTES for the pip cache, the prepared
    dataset and the head. `VolumeSizeInGB` is that, at least MIN_VOLUME_GB; over
    MAX_VOLUME_GB (EBS's limit) is a SpecError. On a family with local NVMe storage
    SageMaker ignores the volume and the instance store is the limit: said in the note."""
    rows = stats.estimated_rows if stats is not None else None
    hidden = info.hidden_size if info is not None else None
    if stats is None or rows is None or not hidden:
        why = (
            "the target's hidden size is read when the job runs"
            if not hidden
            else "the data's size is not known before the job"
        )
        return DiskPlan(None, MIN_VOLUME_GB, f"disk not estimated ({why}): {MIN_VOLUME_GB} GB")
    tokens = stats.mean_prompt_tokens + max_new_tokens
    states = rows * tokens * (aux_layers + 1) * hidden * BF16_BYTES
    target = target_disk_bytes(info) if info is not None else 0
    target_size = f"{target / 1e9:,.1f} GB" if target else "size unknown, counted as 0"
    total = int(states + target + DISK_MARGIN_BYTES)
    gb = max(MIN_VOLUME_GB, math.ceil(total / 1e9))
    how = (
        f"{rows:,} prompts x ({stats.mean_prompt_tokens:.0f} prompt tokens, estimated as "
        f"characters / {CHARS_PER_TOKEN}, + {max_new_tokens} new) x {aux_layers + 1} layers "
        f"({aux_layers} auxiliary + the last) x {hidden} x {BF16_BYTES} bytes = "
        f"{states / 1e9:,.1f} GB of hidden states, + the target ({target_size}) + "
        f"{DISK_MARGIN_BYTES / 1e9:.0f} GB for the pip cache, the prepared dataset and the head"
    )
    if gb > MAX_VOLUME_GB:
        raise _bad_data(
            stats.source,
            f"needs about {gb:,} GB of disk for the job ({how}), over the {MAX_VOLUME_GB:,} "
            "GB a training volume can have",
            text("train on fewer prompts, or a smaller {t}", t=Param("max_new_tokens")),
            f"the job's disk <= {MAX_VOLUME_GB} GB",
        )
    note = f"disk: about {math.ceil(total / 1e9):,} GB ({how}); VolumeSizeInGB {gb}"
    if instance_family(instance_type) in NVME_TRAINING_FAMILIES:
        note += (
            f". {instance_type} has local NVMe instance storage, which SageMaker uses "
            "instead of the volume: its size (not in peagle's catalog; see the EC2 instance "
            "store specifications) is the limit"
        )
    return DiskPlan(total, gb, note)


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
