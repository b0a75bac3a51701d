"""What `peagle status` shows for an endpoint that hosts inference components: each
component's status, copies (desired/current), mode and K, accelerators, its autoscaling,
and whether it is scaled to zero."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..planning.components.hosting import COPY_DIMENSION
from .components import list_components

__all__ = ["components_status"]


def _scaling(aas: Any, name: str) -> dict[str, Any] | None:
    from botocore.exceptions import BotoCoreError, ClientError

    rid = f"inference-component/{name}"
    try:
        targets = aas.describe_scalable_targets(
            ServiceNamespace="sagemaker", ResourceIds=[rid], ScalableDimension=COPY_DIMENSION
        )["ScalableTargets"]
        if not targets:
            return None
        pols = aas.describe_scaling_policies(ServiceNamespace="sagemaker", ResourceId=rid)
    except (ClientError, BotoCoreError):
        return None
    return {
        "min": targets[0]["MinCapacity"],
        "max": targets[0]["MaxCapacity"],
        "policies": [p["PolicyName"] for p in pols.get("ScalingPolicies", [])],
    }


def components_status(
    sm: Any, endpoint: str, aas: Any, speculative_of: Callable[[dict], tuple]
) -> dict[str, Any]:
    """The `status` fields of a component endpoint (merged over the endpoint's own);
    `speculative_of` reads (mode, K, config) from a model's environment."""
    rows = []
    for name in list_components(sm, endpoint):
        d = sm.describe_inference_component(InferenceComponentName=name)
        spec = d.get("Specification", {})
        rc = d.get("RuntimeConfig", {})
        container = spec.get("Container") or {}
        if spec.get("ModelName"):
            container = sm.describe_model(ModelName=spec["ModelName"]).get("PrimaryContainer", {})
        env = container.get("Environment") or {}
        mode, k, spec_cfg = speculative_of(env)
        desired, current = rc.get("DesiredCopyCount"), rc.get("CurrentCopyCount")
        rows.append(
            {
                "name": name,
                "status": d.get("InferenceComponentStatus"),
                "failure_reason": d.get("FailureReason"),
                "model": spec.get("ModelName"),
                "mode": mode,
                "k": k,
                # An inline container's describe answer (botocore's
                # InferenceComponentContainerSpecificationSummary) holds the image under
                # DeployedImage.SpecifiedImage; a model's PrimaryContainer under Image.
                "image": container.get("Image")
                or (container.get("DeployedImage") or {}).get("SpecifiedImage"),
                "speculative_config": spec_cfg,
                "accelerators_per_copy": (spec.get("ComputeResourceRequirements") or {}).get(
                    "NumberOfAcceleratorDevicesRequired"
                ),
                "desired_copies": desired,
                "current_copies": current,
                "scaled_to_zero": desired == 0 and current == 0,
                "autoscaling": _scaling(aas, name) if aas is not None else None,
            }
        )
    return {
        "hosting": "inference-components",
        "model": None,
        "mode": "components",
        "components": rows,
    }
