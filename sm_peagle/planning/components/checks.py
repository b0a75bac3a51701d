"""The rules of inference-component hosting that need the catalog or the resolved plan.

Each returns Checks named after the spec field to change. The request shapes are
checked against botocore's model in `planning.components`.
"""

from __future__ import annotations

from typing import Any

from ...catalog.instances import InstanceType
from ...checks import Check, failed, passed, warned
from ...errors import Param, text

__all__ = [
    "INLINE_ENV_MAX",
    "check_accelerators",
    "check_capacity",
    "check_inline_env",
    "check_hosting_conflicts",
]

# CreateInferenceComponent: Specification.Container.Environment takes at most 16 entries
# (facts §10; botocore's EnvironmentMap says 100, the service enforces 16 for components).
INLINE_ENV_MAX = 16


def check_accelerators(name: str, inst: InstanceType, accelerators: int, tp: int) -> Check:
    """A copy's accelerators fit one instance and equal its tensor-parallel size: vLLM
    shards the model over exactly the GPUs SageMaker gives the copy."""
    field = f"inference_components.components[{name}].accelerators_per_copy"
    if accelerators > inst.gpus:
        return failed(
            field,
            f"{accelerators} accelerators per copy; {inst.name} has {inst.gpus} GPU(s)",
            f"use at most {inst.gpus}, or a larger instance type",
        )
    if accelerators != tp:
        return failed(
            field,
            f"{accelerators} accelerators per copy but tensor-parallel size {tp}: vLLM "
            "would shard over GPUs the copy does not own (or leave some idle)",
            text(
                "set {a} or tensor_parallel_size {n}",
                a=Param("accelerators_per_copy", tp),
                n=accelerators,
            ),
            field="accelerators_per_copy",
        )
    return passed(field, f"{accelerators} GPU(s) per copy = TP {tp}")


def check_capacity(
    inst: InstanceType,
    per_copy: list[tuple[str, int, int, int]],
    initial_instances: int,
    max_instances: int,
) -> list[Check]:
    """copies x accelerators (and x memory) fit the instances. `per_copy` holds
    (component, copies, accelerators per copy, MinMemoryRequiredInMb per copy)."""
    field = "inference_components.copies"
    gpus = sum(copies * acc for _, copies, acc, _ in per_copy)
    mem_mb = sum(copies * mem for _, copies, _, mem in per_copy)
    detail = " + ".join(f"{c}: {n}x{a} GPU" for c, n, a, _ in per_copy)
    out: list[Check] = []
    # Copies are placed whole: a copy never spans two instances.
    needed = _instances_needed(inst, per_copy, max_instances)
    if needed is None:
        out.append(
            failed(
                field,
                f"{detail} = {gpus} GPUs do not fit {max_instances} x {inst.name} "
                f"({inst.gpus} GPU(s) each)",
                text("lower {copies} or {accelerators_per_copy}, or raise {max_instances}"),
            )
        )
        return out
    if mem_mb > inst.ram_gib * 1024 * max_instances:
        out.append(
            failed(
                field,
                f"the copies reserve {mem_mb} MB of host memory; {max_instances} x "
                f"{inst.name} have {inst.ram_gib * 1024 * max_instances} MB",
                "lower min_memory_mb or the copies",
            )
        )
        return out
    if needed > initial_instances:
        out.append(
            warned(
                field,
                f"{detail} need {needed} instance(s) but the endpoint starts with "
                f"{initial_instances}; managed instance scaling adds the rest",
                text("set {n} to start them at once", n=Param("instance_count", needed)),
                field="instance_count",
            )
        )
    else:
        out.append(passed(field, f"{detail} = {gpus} GPU(s) on {needed} x {inst.name}"))
    return out


def _instances_needed(
    inst: InstanceType, per_copy: list[tuple[str, int, int, int]], limit: int
) -> int | None:
    """Instances a first-fit-decreasing placement of the copies uses, None if > limit."""
    free: list[int] = []
    for acc in sorted((a for _, n, a, _ in per_copy for _ in range(n)), reverse=True):
        for i, left in enumerate(free):
            if left >= acc:
                free[i] -= acc
                break
        else:
            if acc > inst.gpus or len(free) == limit:
                return None
            free.append(inst.gpus - acc)
    return max(len(free), 1)


def check_inline_env(name: str, env: dict[str, str], mode: str) -> list[Check]:
    """An inline container (Specification.Container) takes at most 16 env entries and
    has no AdditionalModelDataSources, so it cannot mount a drafter."""
    field = f"inference_components.components[{name}].inline_container"
    out: list[Check] = []
    if len(env) > INLINE_ENV_MAX:
        out.append(
            failed(
                field,
                f"an inline container takes at most {INLINE_ENV_MAX} environment entries; "
                f"this one needs {len(env)}",
                "drop inline_container: the component then names a model (100 entries)",
            )
        )
    if mode != "baseline":
        out.append(
            failed(
                field,
                f"mode {mode} needs the drafter channel, and an inline container has no "
                "AdditionalModelDataSources",
                "drop inline_container (a component that names a model gets its channels)",
            )
        )
    return out or [passed(field, f"{len(env)} environment entries (max {INLINE_ENV_MAX})")]


def check_hosting_conflicts(spec: Any) -> list[Check]:
    """Options of single-model hosting that inference components replace."""
    out: list[Check] = []
    if spec.endpoint.fallback_instance_types:
        out.append(
            failed(
                "endpoint.fallback_instance_types",
                "capacity fallback pools are not supported with inference-components "
                "hosting in peagle",
                text("drop {fallback}, or use {h}", h=Param("hosting", "endpoint")),
                field="fallback",
            )
        )
    if spec.autoscaling is not None:
        out.append(
            failed(
                "autoscaling",
                "variant autoscaling (sagemaker:variant:DesiredInstanceCount) does not apply "
                "to inference components: instances follow the copies (managed instance "
                "scaling) and copies scale per component",
                text(
                    "use {min_instances}/{max_instances} and {scale_to_zero} instead of {autoscale}"
                ),
                field="autoscale",
            )
        )
    return out
