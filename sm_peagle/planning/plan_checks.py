"""The rules plan applies before anything is created. Each returns Checks whose name is
the spec field to change, so a failure message always says where to look."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..catalog.instances import INSTANCES, InstanceType, get_instance
from ..catalog.models import ModelEntry
from ..errors import SpecError
from .checks import Check, failed, passed, warned
from .vllm_versions import CUDA13_AMI, VllmVersion, needs_cuda13_ami

GB = 1_000_000_000
# CUDA context, activations and CUDA graphs per GPU: vLLM's profiling typically lands
# between 1 and 3 GB; take the middle so the check neither cries wolf nor waves through.
OVERHEAD_PER_GPU = 2 * GB
# Assumed for a head whose size no source gives (a 4-layer head with a large vocab).
UNKNOWN_DRAFTER_BYTES = 4 * GB
DEFAULT_GPU_MEMORY_UTILIZATION = 0.9

ENV_MAX_ENTRIES = 100
ENV_MAX_BYTES = 1024
ENV_MAX_TOTAL = 32 * 1024
TAGS_MAX = 50


def check_instance(name: str, known_types: frozenset[str]) -> tuple[InstanceType | None, Check]:
    field = "endpoint.instance_type"
    inst = get_instance(name)
    if inst is None:
        gpu_types = ", ".join(sorted(INSTANCES))
        if name in known_types:
            return None, failed(
                field,
                f"{name} has no GPU peagle can serve vLLM on",
                f"use a GPU type (peagle instances): {gpu_types}",
            )
        return None, failed(
            field,
            f"{name} is not a SageMaker hosting instance type",
            "see `peagle instances` for the GPU types peagle supports",
        )
    if inst.arm_host:
        return inst, failed(
            field,
            f"{name} has an Arm (Grace) host; the x86 vLLM image cannot run there",
            "use ml.p6-b200.48xlarge or ml.p6-b300.48xlarge",
        )
    return inst, passed(field, f"{name}: {inst.gpus}x {inst.gpu} {inst.gpu_memory_gb:g} GB")


def check_tensor_parallel(inst: InstanceType, tp: int, overridden: bool) -> Check:
    field = "container.engine_args.tensor_parallel_size"
    if tp < 1 or tp > inst.gpus or inst.gpus % tp:
        return failed(
            field,
            f"tensor-parallel size {tp} must divide the {inst.gpus} GPUs of {inst.name}",
            f"use one of {[d for d in range(1, inst.gpus + 1) if inst.gpus % d == 0]}",
        )
    if overridden and tp != inst.gpus:
        return warned(field, f"TP={tp} uses {tp} of {inst.gpus} GPUs on {inst.name}")
    return passed(field, f"SM_VLLM_TENSOR_PARALLEL_SIZE={tp}")


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
    # The smallest catalog type where the same weights + one KV sequence fit on all GPUs.
    need = model.weight_bytes + head + kv_one
    fitting = [
        i
        for i in INSTANCES.values()
        if not i.arm_host
        and i.total_gpu_memory_gb * GB * gpu_memory_utilization - i.gpus * OVERHEAD_PER_GPU > need
    ]
    smallest = min(fitting, key=lambda i: i.total_gpu_memory_gb, default=None)
    fix = f"use a larger instance, e.g. {smallest.name}" if smallest else "no catalog type fits"
    if room < kv_one:
        return failed(
            field,
            f"{model.alias} does not fit {inst.name}: {summary}, leaving "
            f"{max(room, 0) / GB:.1f} GB for a {max_model_len}-token KV cache that needs "
            f"{kv_one / GB:.1f} GB",
            fix,
        )
    seqs = b.sequences
    estimated = " (KV size estimated: model shape unknown)" if b.kv_estimated else ""
    if seqs < 4:
        return warned(
            "fit",
            f"tight fit: {summary}; KV room for ~{seqs} sequences of {max_model_len} tokens"
            f"{estimated}",
            fix,
        )
    return passed(
        "fit",
        f"{summary}; KV room {room / GB:.0f} GB (~{seqs} x {max_model_len} tokens){estimated}",
    )


def check_host_ami(
    cuda: str | None, requested: str | None, ami_enum: frozenset[str]
) -> tuple[str | None, Check]:
    """The InferenceAmiVersion to send, and why."""
    field = "endpoint.inference_ami_version"
    if requested is not None and ami_enum and requested not in ami_enum:
        return None, failed(
            field,
            f"{requested!r} is not an InferenceAmiVersion",
            f"use one of {', '.join(sorted(ami_enum))}",
        )
    if needs_cuda13_ami(cuda):
        if requested is None:
            return CUDA13_AMI, passed(
                field, f"{cuda} image: host AMI set to {CUDA13_AMI} (driver 580)"
            )
        if requested != CUDA13_AMI:
            return requested, failed(
                field,
                f"{cuda} images need driver 580; host AMI {requested} is too old",
                f"use {CUDA13_AMI} (or leave it unset)",
            )
        return requested, passed(field, f"{requested} supports {cuda}")
    return requested, passed(
        field, f"{cuda or 'image'}: default host AMI is fine" if requested is None else requested
    )


def check_environment(env: dict[str, str]) -> list[Check]:
    out: list[Check] = []
    for key, value in env.items():
        for what, text in (("name", key), ("value", value)):
            n = len(text.encode())
            if n > ENV_MAX_BYTES:
                out.append(
                    failed(
                        f"container.env.{key}",
                        f"environment {what} of {key} is {n} bytes; SageMaker allows at most "
                        f"{ENV_MAX_BYTES}",
                        "shorten it",
                    )
                )
    if len(env) > ENV_MAX_ENTRIES:
        out.append(
            failed(
                "container.env",
                f"{len(env)} environment variables; max is {ENV_MAX_ENTRIES}",
                "remove some",
            )
        )
    total = sum(len(k.encode()) + len(v.encode()) for k, v in env.items())
    if total > ENV_MAX_TOTAL:
        out.append(
            failed(
                "container.env",
                f"environment is {total} bytes; max is {ENV_MAX_TOTAL}",
                "shorten it",
            )
        )
    return out or [passed("container.env", f"{len(env)} variables, {total} bytes")]


def check_tags(tags: dict[str, str]) -> list[Check]:
    out: list[Check] = []
    for key, value in tags.items():
        if len(key) > 128 or not key:
            out.append(failed(f"tags.{key}", f"tag key is {len(key)} characters; max is 128"))
        if len(value) > 256:
            out.append(failed(f"tags.{key}", f"tag value is {len(value)} characters; max is 256"))
        if key.lower().startswith("aws:"):
            out.append(failed(f"tags.{key}", "tag keys starting with 'aws:' are reserved"))
    if len(tags) > TAGS_MAX:
        out.append(
            failed(
                "tags", f"{len(tags)} tags including peagle's own; max is {TAGS_MAX}", "remove some"
            )
        )
    return out or [passed("tags", f"{len(tags)} tags")]


def judge_drafter(
    source: str,
    read: Callable[[str], Any],
    *,
    model: ModelEntry | None,
    vllm_version: VllmVersion,
    mode: str,
    k: int | None,
    trained_k: int | None,
) -> list[Check]:
    """`peagle drafter check` on a head that `read(source)` inspects: a local dir at plan
    time (`check_local_drafter`), an s3:// prefix in deploy preflight (which passes the S3
    reader). A head vLLM would reject (no mask_hidden, wrong fc shape, an unread mask-token
    key) then fails in seconds instead of after the endpoint's download."""
    from ..drafter.check import check_drafter  # only plans with a head pay

    try:
        inspection = read(source)
    except SpecError as exc:  # unreadable source: one check, not a crash
        text = exc.message
        if "AccessDenied" in text or "Forbidden" in text or "403" in text:
            return [
                warned(
                    "drafter.source",
                    f"cannot read {source} with your credentials; "
                    "head not checked (SageMaker reads it with the execution role)",
                )
            ]
        return [failed("drafter.source", text, exc.remedy)]
    return check_drafter(
        inspection,
        target_hidden_size=model.hidden_size if model else None,
        target_vocab_size=model.vocab_size if model else None,
        vllm_version=vllm_version,
        mode=mode,
        k=k,
        trained_k=trained_k,
    )


def check_local_drafter(source: str, **facts: Any) -> list[Check]:
    """The drafter checks on a local head directory (config.json and safetensors headers
    only). `facts`: model, vllm_version, mode, k, trained_k, as `judge_drafter` takes."""
    from ..drafter.readers import inspect_local

    return judge_drafter(source, inspect_local, **facts)
