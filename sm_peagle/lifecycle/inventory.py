"""What is deployed: status of one endpoint, the list of endpoints, and garbage."""

from __future__ import annotations

import json
from typing import Any

from ..aws import aws_now
from ..catalog.instances import get_instance
from ..catalog.regional_prices import price_in
from ..errors import Call, NotFound, text
from ..planning.plan_result import variant_instance_types
from .resources import MANAGED, is_collectable, is_managed  # noqa: F401  (kept importable here)
from .spec_tags import tag_dict


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


def _managed_scaling(variant: dict[str, Any]) -> dict[str, Any] | None:
    """The variant's ManagedInstanceScaling (inference-component endpoints), if enabled."""
    m = variant.get("ManagedInstanceScaling") or {}
    if m.get("Status") != "ENABLED":
        return None
    policy = m.get("ScaleInPolicy") or {}
    return {
        "min": m.get("MinInstanceCount"),
        "max": m.get("MaxInstanceCount"),
        "scale_in": policy.get("Strategy"),  # None: SageMaker's default scale-in
    }


def _left_behind(sm: Any, name: str) -> None:
    """NotFound naming what the gone endpoint's deployment left, if anything. The tags
    cannot tell an interrupted operation from an endpoint deleted alone (by its expiry
    schedule, which deletes only the endpoint, or outside peagle): the message says both."""
    from .unfinished import unfinished

    left = [r for u in unfinished(sm, name, None) for r in u["resources"]]
    if left:
        raise NotFound(
            f"endpoint {name} does not exist, but its deployment left {', '.join(left)} "
            "(an interrupted operation, or the endpoint was deleted alone: by its "
            "expiry schedule or outside peagle)",
            remedy=text("`{delete}` removes exactly these", delete=Call("delete", name)),
        ) from None


def endpoint_status(sm: Any, name: str, *, aas: Any = None) -> dict[str, Any]:
    """Everything `peagle status` shows, from describe calls only (age: on AWS's clock)."""
    from botocore.exceptions import ClientError

    from .unfinished import unfinished

    try:
        ep = sm.describe_endpoint(EndpointName=name)
    except ClientError as e:
        if not _not_found(e):
            raise
        _elsewhere(sm, name)
        _left_behind(sm, name)
        raise NotFound(
            f"endpoint {name} does not exist", remedy=text("see `{ls}`", ls=Call("ls"))
        ) from None
    out: dict[str, Any] = {
        "endpoint": name,
        "status": ep["EndpointStatus"],
        "failure_reason": ep.get("FailureReason"),
        "endpoint_config": ep["EndpointConfigName"],
        "created": ep["CreationTime"].isoformat(),
        "age_seconds": int((aws_now(sm) - ep["CreationTime"]).total_seconds()),
        "unfinished": unfinished(sm, name, ep),
    }
    try:
        cfg = sm.describe_endpoint_config(EndpointConfigName=ep["EndpointConfigName"])
    except ClientError as e:
        if not _not_found(e):
            raise
        return _broken(out, f"its endpoint config {ep['EndpointConfigName']} is missing")
    variant = cfg["ProductionVariants"][0]
    live = {v["VariantName"]: v for v in ep.get("ProductionVariants", []) or []}
    lv = live.get(variant["VariantName"], {})
    types = variant_instance_types(variant)
    inst = get_instance(types[0])
    count = lv.get("CurrentInstanceCount", variant.get("InitialInstanceCount"))
    price = price_in(inst, sm.meta.region_name, count or 0) if inst else None
    out.update(
        {
            "variant": variant["VariantName"],
            "instance_type": types[0],
            "instance_pools": types if len(types) > 1 else None,
            "instance_count": count,
            "desired_instance_count": lv.get(
                "DesiredInstanceCount", variant.get("InitialInstanceCount")
            ),
            # The catalog's price only in the region it was published for (price_in), and
            # the line that says so: its region and source, or why it is unknown there.
            "usd_per_hour": price.usd_per_hour if price else None,
            "price": price.label if price else "unknown",
            "model": variant.get("ModelName"),
            "managed_instance_scaling": _managed_scaling(variant),
        }
    )
    if not variant.get("ModelName"):  # inference components: each names its own model
        from .component_status import components_status

        return {**out, **components_status(sm, name, aas, speculative_of)}
    try:
        model = sm.describe_model(ModelName=variant["ModelName"])
    except ClientError as e:
        if not _not_found(e):
            raise
        return _broken(out, f"its model {variant['ModelName']} is missing")
    container = model.get("PrimaryContainer", {})
    mode, k, spec_cfg = speculative_of(container.get("Environment", {}))
    out.update(
        {"image": container.get("Image"), "mode": mode, "k": k, "speculative_config": spec_cfg}
    )
    out.update(data_sources(container))
    if aas is not None:
        out["autoscaling"] = autoscaling_of(aas, name, variant["VariantName"])
    return out


def _elsewhere(sm: Any, name: str) -> None:
    """Deployment `name` live under another name (a CloudFormation stack that named its
    resources itself): say which, before its model or config could pass for leftovers."""
    from botocore.exceptions import ClientError

    from .resources import endpoints_of_deployment

    try:
        live = endpoints_of_deployment(sm, name)
    except ClientError:  # no ListEndpoints/ListTags permission: the answer stays NotFound
        return
    if live:
        raise NotFound(
            f"endpoint {name} does not exist; deployment {name} is endpoint "
            f"{', '.join(live)} (named by whatever created it, e.g. a CloudFormation stack)",
            remedy=text("`{status}`", status=Call("status", live[0])),
        )


def data_sources(container: dict[str, Any]) -> dict[str, Any]:
    """Where the model's files come from, as DescribeModel reports them: `model_data`, the
    S3 URI of the weights (ModelDataSource, else ModelDataUrl; None when the image holds
    them), and `additional_data`, channel -> S3 URI (the drafter's channel is `eagle`)."""
    primary = (container.get("ModelDataSource") or {}).get("S3DataSource") or {}
    extra = {
        src.get("ChannelName"): (src.get("S3DataSource") or {}).get("S3Uri")
        for src in container.get("AdditionalModelDataSources") or []
    }
    return {
        "model_data": primary.get("S3Uri") or container.get("ModelDataUrl"),
        "additional_data": extra,
    }


def _broken(out: dict[str, Any], problem: str) -> dict[str, Any]:
    """An endpoint whose config or model is gone (deleted by hand, or by an interrupted
    delete): what is known, the problem, and the command that removes it."""
    name = out["endpoint"]
    return {
        **out,
        "problem": problem,
        "fix": text(
            "{delete} (or `{gc}`, which removes every such)",
            delete=Call("delete", name),
            gc=Call("gc"),
        ),
    }


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


def _components_by_endpoint(sm: Any) -> dict[str, list[str]]:
    """{endpoint: its inference components}; empty when they cannot be listed."""
    from .components import listed_components

    out: dict[str, list[str]] = {}
    try:  # stock moto lacks the call: listed_components answers [] (it has none)
        for c in listed_components(sm):
            out.setdefault(c["EndpointName"], []).append(c["InferenceComponentName"])
    except Exception:  # no permission, a fake without the call: the endpoints still list
        return {}
    return out


def list_endpoints(sm: Any, *, include_unmanaged: bool = False) -> list[dict[str, Any]]:
    rows = []
    endpoints = _paginate(sm, "list_endpoints", "Endpoints")
    components = _components_by_endpoint(sm) if endpoints else {}
    for ep in endpoints:
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
                    "components": sorted(components.get(ep["EndpointName"], [])),
                    # the expiry `ls` shows (lifecycle/expiry_read.py): read here, one ListTags
                    "expires_at": tags.get("peagle:expires"),
                }
            )
    return rows


def resource_users(
    sm: Any,
    *,
    skip: str | None = None,
    skip_components: frozenset[str] = frozenset(),
    skip_endpoints: frozenset[str] = frozenset(),
) -> dict[str, set[str]]:
    """{config or model name: the endpoints using it}, over every live endpoint except
    `skip`: its current and pending configs, each variant's model and pool models, and the
    model each inference component names (Specification.ModelName), except the components
    on `skip` and those in `skip_components`. The one answer to "does something else still
    use it?" for update, delete, adopt and gc. `skip_endpoints`: more endpoints that do not
    count (those gc deletes first)."""
    from .components import component_model_users

    skipped = skip_endpoints | ({skip} if skip else set())
    users: dict[str, set[str]] = {}
    # Every component in the account, whatever the endpoints' configs say: one whose
    # endpoint is gone (a crash mid-delete, another tool) still names its model. On a
    # server without ListInferenceComponents (stock moto) that is none.
    for name, endpoints in component_model_users(sm, skip_components, skipped).items():
        users.setdefault(name, set()).update(endpoints)
    for ep in _paginate(sm, "list_endpoints", "Endpoints"):
        if ep["EndpointName"] in skipped:
            continue
        try:
            d = sm.describe_endpoint(EndpointName=ep["EndpointName"])
        except Exception as e:
            if _not_found(e):
                continue
            raise
        configs = {d["EndpointConfigName"]}
        pending = (d.get("PendingDeploymentSummary") or {}).get("EndpointConfigName")
        if pending:
            configs.add(pending)
        for cfg in configs:
            users.setdefault(cfg, set()).add(ep["EndpointName"])
            try:
                c = sm.describe_endpoint_config(EndpointConfigName=cfg)
            except Exception as e:
                if _not_found(e):
                    continue
                raise
            for v in c.get("ProductionVariants", []):
                pools = [p.get("ModelNameOverride") for p in v.get("InstancePools", []) or []]
                for model in filter(None, [v.get("ModelName"), *pools]):
                    users.setdefault(model, set()).add(ep["EndpointName"])
    return users
