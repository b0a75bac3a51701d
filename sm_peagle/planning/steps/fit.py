"""Does the model fit the instance? Weights + drafter + per-GPU overhead + the KV cache
of one max-length sequence, against the usable GPU memory. An estimate, and labelled so:
the plan's `fit` check and `peagle recommend` both use it."""

from __future__ import annotations

from dataclasses import dataclass

from ...catalog.instances import INSTANCES, InstanceType
from ...catalog.models import ModelEntry
from ...checks import Check, failed, passed, warned

GB = 1_000_000_000
# CUDA context, activations and CUDA graphs per GPU: vLLM's profiling typically lands
# between 1 and 3 GB; take the middle so the check neither cries wolf nor waves through.
OVERHEAD_PER_GPU = 2 * GB
# Assumed for a head whose size no source gives (a 4-layer head with a large vocab).
UNKNOWN_DRAFTER_BYTES = 4 * GB
DEFAULT_GPU_MEMORY_UTILIZATION = 0.9
# Fewer max-length sequences of KV room than this is a tight fit: a few concurrent long
# requests already queue.
TIGHT_SEQUENCES = 4


@dataclass(frozen=True)
class FitBudget:
    """GPU memory of one placement, in bytes: what is usable, what is fixed (weights,
    drafter, per-GPU overhead), and the KV cache one max-length sequence needs."""

    usable: float
    fixed: int
    head: int
    kv_one: int
    kv_estimated: bool

    @property
    def room(self) -> float:
        return self.usable - self.fixed

    @property
    def sequences(self) -> int:
        return int(self.room // self.kv_one) if self.kv_one and self.room > 0 else 0


def fit_budget(
    model: ModelEntry,
    inst: InstanceType,
    tp: int,
    *,
    drafter_bytes: int | None,
    speculative: bool,
    max_model_len: int,
    gpu_memory_utilization: float,
) -> FitBudget:
    head = (drafter_bytes or UNKNOWN_DRAFTER_BYTES) if speculative else 0
    kv_token = model.kv_bytes_per_token()
    return FitBudget(
        usable=tp * inst.gpu_memory_gb * GB * gpu_memory_utilization,
        fixed=(model.weight_bytes or 0) + head + tp * OVERHEAD_PER_GPU,
        head=head,
        kv_one=kv_token * max_model_len if kv_token else int(0.1 * (model.weight_bytes or 0)),
        kv_estimated=kv_token is None,
    )


def _larger_fix(need: int, inst: InstanceType, gpu_memory_utilization: float) -> str:
    """The smallest catalog type larger than `inst` whose usable memory on all GPUs holds
    `need` bytes (weights + drafter + KV), as the check's fix."""
    fitting = [
        i
        for i in INSTANCES.values()
        if not i.arm_host
        and i.total_gpu_memory_gb > inst.total_gpu_memory_gb
        and i.total_gpu_memory_gb * GB * gpu_memory_utilization - i.gpus * OVERHEAD_PER_GPU > need
    ]
    smallest = min(fitting, key=lambda i: i.total_gpu_memory_gb, default=None)
    return f"use a larger instance, e.g. {smallest.name}" if smallest else "no catalog type fits"


def check_fit(
    model: ModelEntry | None,
    inst: InstanceType,
    tp: int,
    *,
    drafter_bytes: int | None,
    speculative: bool,
    max_model_len: int,
    gpu_memory_utilization: float,
) -> Check:
    """Weights + drafter + per-GPU overhead + KV cache for one max-length sequence."""
    field = "endpoint.instance_type"
    if model is None or model.weight_bytes is None:
        return warned("fit", "model size unknown to peagle; the fit is not checked")
    b = fit_budget(
        model,
        inst,
        tp,
        drafter_bytes=drafter_bytes,
        speculative=speculative,
        max_model_len=max_model_len,
        gpu_memory_utilization=gpu_memory_utilization,
    )
    usable, head, kv_one, room = b.usable, b.head, b.kv_one, b.room
    summary = (
        f"weights {model.weight_bytes / GB:.1f} GB + drafter {head / GB:.1f} GB + overhead "
        f"{tp * OVERHEAD_PER_GPU / GB:.0f} GB vs {usable / GB:.0f} GB usable on {tp}x "
        f"{inst.gpu_memory_gb:g} GB"
    )
    if room < kv_one:
        return failed(
            field,
            f"{model.alias} does not fit {inst.name}: {summary}, leaving "
            f"{max(room, 0) / GB:.1f} GB for a {max_model_len}-token KV cache that needs "
            f"{kv_one / GB:.1f} GB",
            _larger_fix(model.weight_bytes + head + kv_one, inst, gpu_memory_utilization),
        )
    seqs = b.sequences
    estimated = " (KV size estimated: model shape unknown)" if b.kv_estimated else ""
    if seqs < TIGHT_SEQUENCES:
        # A tight fit is fixed by a type that is larger than this one and holds
        # TIGHT_SEQUENCES sequences: suggesting the type it already runs on would be no fix.
        need = model.weight_bytes + head + TIGHT_SEQUENCES * kv_one
        return warned(
            "fit",
            f"tight fit: {summary}; KV room for ~{seqs} sequences of {max_model_len} tokens"
            f"{estimated}",
            _larger_fix(need, inst, gpu_memory_utilization),
        )
    return passed(
        "fit",
        f"{summary}; KV room {room / GB:.0f} GB (~{seqs} x {max_model_len} tokens){estimated}",
    )
