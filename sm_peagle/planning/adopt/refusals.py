"""What `peagle adopt` reads, and what it refuses: the shapes one deployment spec
cannot describe, each with the reason (one line, exit 2, nothing tagged).

peagle manages one production variant running one model in AWS's vLLM container,
speculating with an EAGLE-3 head (in parallel or not) or not at all. Anything else an
`update` would silently drop or break, so it is refused rather than half adopted.
Pure: Describe* answers in, a reason out.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ...errors import Call, text
from ...vllm.speculative import MOUNT_ROOT, SPEC_ENV

__all__ = ["Deployed", "primary_model", "refusal", "speculative_of_env"]

Reason = tuple[str, str | None]  # (why, fix)

# Endpoint-config features a spec has no field for: an update would drop them.
_CONFIG_FEATURES = {
    "AsyncInferenceConfig": "asynchronous inference (AsyncInferenceConfig)",
    "DataCaptureConfig": "data capture (DataCaptureConfig)",
    "ExplainerConfig": "an explainer (ExplainerConfig)",
    "ShadowProductionVariants": "shadow variants",
}
_VARIANT_FEATURES = {
    "ServerlessConfig": "it is serverless (ServerlessConfig); peagle deploys GPU instances",
    "InstancePools": "capacity fallbacks (InstancePools) are not adopted",
    "ManagedInstanceScaling": "managed instance scaling belongs to inference components, "
    "which adopt does not take",
    "AcceleratorType": "Elastic Inference accelerators (AcceleratorType) are not supported",
    "CoreDumpConfig": "a core dump configuration (CoreDumpConfig) has no spec field",
}


@dataclass
class Deployed:
    """What one endpoint runs, as the Describe* calls answered."""

    name: str
    region: str
    endpoint: dict[str, Any]
    config: dict[str, Any]
    models: dict[str, dict[str, Any]]  # DescribeModel answers by name
    tags: dict[str, str] = field(default_factory=dict)  # the endpoint's
    model_tags: dict[str, str] = field(default_factory=dict)  # the variant model's
    scaling_target: dict[str, Any] | None = None
    scaling_policies: list[dict[str, Any]] = field(default_factory=list)


def primary_model(d: Deployed) -> dict[str, Any]:
    """The DescribeModel answer of the (only) variant's model; {} if there is none."""
    variants = d.config.get("ProductionVariants") or []
    name = variants[0].get("ModelName") if variants else None
    return d.models.get(name or "", {})


def speculative_of_env(env: dict[str, str]) -> dict[str, Any] | None:
    """SM_VLLM_SPECULATIVE_CONFIG parsed (None when unset); ValueError when malformed."""
    raw = env.get(SPEC_ENV)
    if raw is None or not raw.strip():
        return None
    cfg = json.loads(raw)
    if not isinstance(cfg, dict):
        raise ValueError("not a JSON object")
    return cfg


def _is_vllm_image(image: str) -> bool:
    """AWS's vLLM DLC (and builds of it) live in a repository named for vLLM."""
    repo = image.rsplit("/", 1)[-1].split("@", 1)[0].split(":", 1)[0]
    return "vllm" in repo.lower()


def _status_refusal(d: Deployed) -> Reason | None:
    """Only a settled InService endpoint: while it is Updating, DescribeEndpoint's
    EndpointConfigName is the outgoing config (the incoming one is in
    PendingDeploymentSummary), so adopting would tag a config about to be retired."""
    status = d.endpoint.get("EndpointStatus")
    pending = (d.endpoint.get("PendingDeploymentSummary") or {}).get("EndpointConfigName")
    wait = text("wait until it is InService: `{status}`", status=Call("status", d.name))
    if status == "Failed":
        reason = d.endpoint.get("FailureReason") or "no FailureReason given"
        return (
            f"it is Failed ({reason}); SageMaker accepts only DeleteEndpoint on a failed "
            "endpoint, so there is nothing peagle could update or serve",
            # peagle's own delete, so the advice reaches what the refusing command reached
            # (a sandbox's endpoint, never a real one of the same name).
            text(
                "delete it (`{delete}`) and deploy again", delete=Call("delete", d.name, force=True)
            ),
        )
    if status != "InService":
        moving = f" to config {pending}" if pending else ""
        return f"it is {status}{moving}; peagle adopts only a settled InService endpoint", wait
    if pending:
        return f"a deployment to config {pending} is still pending", wait
    return None


def _config_refusal(d: Deployed) -> Reason | None:
    variants = d.config.get("ProductionVariants") or []
    if len(variants) != 1:
        return (
            f"its config {d.config.get('EndpointConfigName')} has {len(variants)} production "
            "variants; peagle manages one variant per endpoint",
            None,
        )
    for key, what in _CONFIG_FEATURES.items():
        if d.config.get(key):
            return f"it uses {what}, which a peagle spec cannot carry", None
    variant = variants[0]
    for key, why in _VARIANT_FEATURES.items():
        if variant.get(key):
            return why, None
    if not variant.get("ModelName"):
        return (
            "it hosts inference components (its variant names no model); adopt takes "
            "single-model endpoints",
            None,
        )
    return None


def _model_refusal(d: Deployed) -> Reason | None:
    model = primary_model(d)
    if not model:
        return "its variant's model could not be read", None
    containers = model.get("Containers") or []
    if containers or not model.get("PrimaryContainer"):
        return (
            f"its model {model.get('ModelName')} has {len(containers)} containers "
            "(an inference pipeline); peagle runs one vLLM container",
            None,
        )
    container = model["PrimaryContainer"]
    if container.get("ModelPackageName"):
        return "its model comes from a model package (ModelPackageName)", None
    if container.get("Mode", "SingleModel") != "SingleModel":
        return f"its container runs in {container['Mode']} mode", None
    if container.get("ImageConfig"):
        return "its image comes from a private registry (ImageConfig)", None
    image = container.get("Image") or ""
    if not _is_vllm_image(image):
        return (
            f"its image {image or '(none)'} is not a vLLM image; peagle deploys AWS's "
            "SageMaker vLLM container",
            None,
        )
    return None


def _speculative_refusal(d: Deployed) -> Reason | None:
    container = primary_model(d)["PrimaryContainer"]
    try:
        cfg = speculative_of_env(container.get("Environment") or {})
    except ValueError as e:
        return f"its {SPEC_ENV} is not a JSON object ({e})", None
    if cfg is None:
        return None
    method = cfg.get("method")
    if method != "eagle3":
        return (
            f"its speculative method is {method!r}; peagle deploys EAGLE-3 heads "
            "(p-eagle, eagle3) or no speculation",
            None,
        )
    path = str(cfg.get("model") or "").rstrip("/")
    channels = {
        f"{MOUNT_ROOT}/{src.get('ChannelName')}": src
        for src in container.get("AdditionalModelDataSources") or []
    }
    if path not in channels:
        return (
            f"its drafter {path or '(none)'} is not one of the model's additional data "
            f"sources (mounted under {MOUNT_ROOT}/)",
            None,
        )
    return None


def refusal(d: Deployed) -> Reason | None:
    """Why `d` cannot be adopted, with the fix if there is one; None if it can."""
    return _status_refusal(d) or _config_refusal(d) or _model_refusal(d) or _speculative_refusal(d)
