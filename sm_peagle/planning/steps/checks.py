"""The rules plan applies before anything is created. Each returns Checks whose name is
the spec field to change, so a failure message always says where to look.

`check_deployment` is step 4 of `plan()`: host AMI, fit and the warnings a plan carries,
with the speculative config's lossy settings and model-runner rules (`vllm/lossy.py`).
The fit estimate itself is `fit.py`."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ...catalog.instances import INSTANCES, InstanceType, get_instance
from ...checks import Check, failed, passed, warned
from ...errors import Call, text
from ...vllm.lossy import check_lossy, check_runner
from ...vllm.speculative import SPEC_ENV
from ...vllm.versions import CUDA13_AMI, needs_cuda13_ami
from ..spec.model import DeploymentSpec, Mode
from .aws_shapes import shape_enum
from .environment import env_number
from .fit import DEFAULT_GPU_MEMORY_UTILIZATION, check_fit

if TYPE_CHECKING:  # annotations only: sources imports this module
    from .sources import Sources

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
                text(
                    "use a GPU type ({instances}): {types}",
                    instances=Call("instances"),
                    types=gpu_types,
                ),
                field="instance_type",
            )
        return None, failed(
            field,
            f"{name} is not a SageMaker hosting instance type",
            text(
                "see `{instances}` for the GPU types peagle supports", instances=Call("instances")
            ),
            field="instance_type",
        )
    if inst.arm_host:
        return inst, failed(
            field,
            f"{name} has an Arm (Grace) host; the x86 vLLM image cannot run there",
            "use ml.p6-b200.48xlarge or ml.p6-b300.48xlarge",
        )
    return inst, passed(field, f"{name}: {inst.gpus}x {inst.gpu} {inst.gpu_memory_gb:g} GB")


def check_storage_kms(inst: InstanceType) -> Check:
    """A KmsKeyId on a local-storage instance: AWS's CreateEndpointConfig reference says the
    call fails ("If you specify a value for KmsKeyId when using any nitro-based instances
    with local storage, the call to CreateEndpointConfig fails"), so refuse before sending."""
    return failed(
        "network.kms_key_id",
        f"{inst.name} has local NVMe instance storage, and CreateEndpointConfig fails when "
        "KmsKeyId is given for such instances (its volumes are encrypted by the instance's "
        "hardware)",
        "remove network.kms_key_id from the spec",
    )


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


def check_deployment(
    spec: DeploymentSpec, src: Sources, env: dict[str, str], checks: list[Check]
) -> str | None:
    """Host AMI, fit, and the warnings about storage and the role; appends the checks
    and returns the InferenceAmiVersion to send (None = SageMaker's default)."""
    ami, c = check_host_ami(
        src.cuda,
        spec.endpoint.inference_ami_version,
        shape_enum("sagemaker", "ProductionVariantInferenceAmiVersion"),
    )
    checks.append(c)
    max_len = (
        env_number(spec, env, "SM_VLLM_MAX_MODEL_LEN", int)
        if "SM_VLLM_MAX_MODEL_LEN" in env
        else 8192
    )
    util = (
        env_number(spec, env, "SM_VLLM_GPU_MEMORY_UTILIZATION", float)
        if "SM_VLLM_GPU_MEMORY_UTILIZATION" in env
        else DEFAULT_GPU_MEMORY_UTILIZATION
    )
    checks.append(
        check_fit(
            src.model,
            src.instance,
            src.tp,
            drafter_bytes=src.catalog_head.bytes if src.catalog_head else None,
            speculative=spec.speculative.mode != Mode.BASELINE,
            max_model_len=max_len,
            gpu_memory_utilization=util,
        )
    )
    if spec.network.kms_key_id and src.instance.local_nvme:
        checks.append(check_storage_kms(src.instance))
    if spec.endpoint.volume_size_gb is not None and src.instance.local_nvme:
        checks.append(
            warned(
                "endpoint.volume_size_gb",
                f"{src.instance.name} has local NVMe storage; "
                "SageMaker may reject VolumeSizeInGB (an EBS volume size) for it",
            )
        )
    config = _speculative_config(env)
    checks += check_lossy(config, src.version)
    checks += check_runner(env, config, spec.speculative.mode.value, src.version)
    if spec.role is None:
        checks.append(
            warned(
                "role",
                "no execution role given; the plan uses a placeholder ARN "
                "and deploy will refuse it",
                text("pass {role} or set PEAGLE_ROLE_ARN"),
                field="role",
            )
        )
    return ami


def _speculative_config(env: dict[str, str]) -> dict[str, Any] | None:
    """The speculative config the container gets, as sent (the spec's, or one the
    spec's container.env sets itself): lossiness and runner rules judge what vLLM reads."""
    try:
        config = json.loads(env[SPEC_ENV]) if env.get(SPEC_ENV) else None
    except ValueError:
        return None  # the environment step reports a config that is not JSON
    return config if isinstance(config, dict) else None


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


def check_tags(tags: dict[str, str], reserved: int = 0) -> list[Check]:
    """Each tag within AWS's limits, and all of them, with the `reserved` ones peagle adds
    at deploy time (the spec's `peagle:spec:*` chunks, the operation's tags), within 50."""
    out: list[Check] = []
    for key, value in tags.items():
        if len(key) > 128 or not key:
            out.append(failed(f"tags.{key}", f"tag key is {len(key)} characters; max is 128"))
        if len(value) > 256:
            out.append(failed(f"tags.{key}", f"tag value is {len(value)} characters; max is 256"))
        if key.lower().startswith("aws:"):
            out.append(failed(f"tags.{key}", "tag keys starting with 'aws:' are reserved"))
    total = len(tags) + reserved
    if total > TAGS_MAX:
        extra = f" ({reserved} written at deploy time: the spec, the operation)"
        out.append(
            failed(
                "tags",
                f"{total} tags including peagle's own{extra if reserved else ''}; "
                f"max is {TAGS_MAX}",
                "remove some",
            )
        )
    return out or [passed("tags", f"{total} tags")]
