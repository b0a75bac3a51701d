"""What is deployed: status of one endpoint, the list of endpoints, and garbage."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from ..catalog.instances import get_instance
from ..errors import NotFound
from ..planning.plan_result import variant_instance_types
from .spec_tags import tag_dict

MANAGED = "peagle:managed"


def _not_found(e: Exception) -> bool:
    return "Could not find" in str(e)


def speculative_of(env: dict[str, str]) -> tuple[str, int | None, dict | None]:
    """(mode, K, config) read back from a deployed model's environment."""
    raw = env.get("SM_VLLM_SPECULATIVE_CONFIG")
    if not raw:
        return "baseline", None, None
    cfg = json.loads(raw)
    mode = "p-eagle" if cfg.get("parallel_drafting") else cfg.get("method", "?")
    return mode, cfg.get("num_speculative_tokens"), cfg


def endpoint_status(sm: Any, name: str, *, aas: Any = None) -> dict[str, Any]:
    """Everything `peagle status` shows, from describe calls only."""
    from botocore.exceptions import ClientError

    try:
        ep = sm.describe_endpoint(EndpointName=name)
    except ClientError as e:
        if _not_found(e):
            raise NotFound(f"endpoint {name} does not exist", remedy="see `peagle ls`") from None
        raise
    out: dict[str, Any] = {
        "endpoint": name,
        "status": ep["EndpointStatus"],
        "failure_reason": ep.get("FailureReason"),
        "endpoint_config": ep["EndpointConfigName"],
        "created": ep["CreationTime"].isoformat(),
        "age_seconds": int((datetime.now(UTC) - ep["CreationTime"]).total_seconds()),
    }
    cfg = sm.describe_endpoint_config(EndpointConfigName=ep["EndpointConfigName"])
    variant = cfg["ProductionVariants"][0]
    live = {v["VariantName"]: v for v in ep.get("ProductionVariants", []) or []}
    lv = live.get(variant["VariantName"], {})
    types = variant_instance_types(variant)
    inst = get_instance(types[0])
    count = lv.get("CurrentInstanceCount", variant.get("InitialInstanceCount"))
    out.update(
        {
            "variant": variant["VariantName"],
            "instance_type": types[0],
            "instance_pools": types if len(types) > 1 else None,
            "instance_count": count,
            "desired_instance_count": lv.get(
                "DesiredInstanceCount", variant.get("InitialInstanceCount")
            ),
            "usd_per_hour": (inst.usd_per_hour * (count or 0))
            if inst and inst.usd_per_hour
            else None,
            "model": variant.get("ModelName"),
        }
    )
    if not variant.get("ModelName"):  # inference components: each names its own model
        from .component_status import components_status

        return {**out, **components_status(sm, name, aas, speculative_of)}
    model = sm.describe_model(ModelName=variant["ModelName"])
    container = model.get("PrimaryContainer", {})
    mode, k, spec_cfg = speculative_of(container.get("Environment", {}))
    out.update(
        {"image": container.get("Image"), "mode": mode, "k": k, "speculative_config": spec_cfg}
    )
    if aas is not None:
        out["autoscaling"] = autoscaling_of(aas, name, variant["VariantName"])
    return out


def autoscaling_of(aas: Any, endpoint: str, variant: str) -> dict[str, Any] | None:
    from botocore.exceptions import BotoCoreError, ClientError

    rid = f"endpoint/{endpoint}/variant/{variant}"
    try:
        targets = aas.describe_scalable_targets(ServiceNamespace="sagemaker", ResourceIds=[rid])[
            "ScalableTargets"
        ]
    except (ClientError, BotoCoreError):
        return None
    if not targets:
        return None
    t = targets[0]
    pols = aas.describe_scaling_policies(ServiceNamespace="sagemaker", ResourceId=rid)
    return {
        "min": t["MinCapacity"],
        "max": t["MaxCapacity"],
        "policies": [p["PolicyName"] for p in pols.get("ScalingPolicies", [])],
    }


def _paginate(sm: Any, op: str, key: str, **kw: Any) -> list[dict[str, Any]]:
    return [item for page in sm.get_paginator(op).paginate(**kw) for item in page.get(key, [])]


def list_endpoints(sm: Any, *, include_unmanaged: bool = False) -> list[dict[str, Any]]:
    rows = []
    for ep in _paginate(sm, "list_endpoints", "Endpoints"):
        tags = tag_dict(sm.list_tags(ResourceArn=ep["EndpointArn"]).get("Tags", []))
        managed = tags.get(MANAGED) == "true"
        if managed or include_unmanaged:
            rows.append(
                {
                    "endpoint": ep["EndpointName"],
                    "status": ep["EndpointStatus"],
                    "created": ep["CreationTime"].isoformat(),
                    "managed": managed,
                    "spec_sha256": tags.get("peagle:spec-sha256"),
                }
            )
    return rows


def find_orphans(sm: Any, *, min_age_seconds: float = 0) -> dict[str, list[str]]:
    """peagle-managed endpoint configs and models that no live endpoint uses."""
    used_configs: set[str] = set()
    for ep in _paginate(sm, "list_endpoints", "Endpoints"):
        try:
            d = sm.describe_endpoint(EndpointName=ep["EndpointName"])
        except Exception as e:
            if _not_found(e):
                continue
            raise
        used_configs.add(d["EndpointConfigName"])
        pending = (d.get("PendingDeploymentSummary") or {}).get("EndpointConfigName")
        if pending:
            used_configs.add(pending)
    used_models: set[str] = set()
    for cfg in used_configs:
        try:
            c = sm.describe_endpoint_config(EndpointConfigName=cfg)
        except Exception as e:
            if _not_found(e):
                continue
            raise
        for v in c.get("ProductionVariants", []):
            used_models.add(v.get("ModelName"))
            used_models.update(p.get("ModelNameOverride") for p in v.get("InstancePools", []) or [])
    from .components import component_model_users

    used_models.update(component_model_users(sm))  # models named by inference components
    cutoff = datetime.now(UTC) - timedelta(seconds=min_age_seconds)

    def managed_and_old(arn: str, created: datetime) -> bool:
        # Young resources may belong to a deploy still in progress on another machine.
        if created > cutoff:
            return False
        return tag_dict(sm.list_tags(ResourceArn=arn).get("Tags", [])).get(MANAGED) == "true"

    configs = [
        c["EndpointConfigName"]
        for c in _paginate(sm, "list_endpoint_configs", "EndpointConfigs")
        if c["EndpointConfigName"] not in used_configs
        and managed_and_old(c["EndpointConfigArn"], c["CreationTime"])
    ]
    models = [
        m["ModelName"]
        for m in _paginate(sm, "list_models", "Models")
        if m["ModelName"] not in used_models and managed_and_old(m["ModelArn"], m["CreationTime"])
    ]
    return {"endpoint_configs": sorted(configs), "models": sorted(models)}
