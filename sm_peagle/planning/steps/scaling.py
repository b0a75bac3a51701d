"""Step 6 of `plan()`: pools and scaling. Capacity fallback pools and autoscaling.

Fallback pools use the ProductionVariant `InstancePools` field (priority 1 = the primary
type), with a model per pool through `ModelNameOverride`, because each instance type
needs its own `SM_VLLM_TENSOR_PARALLEL_SIZE`, image variant and host AMI. Each pool is
planned by running `plan()` again for that instance type, so every check (fit, Arm host,
tensor parallelism, AMI) applies per pool with no second implementation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...checks import Check, failed, passed
from ...errors import text
from .aws_shapes import validate_request

SCALABLE_DIMENSION = "sagemaker:variant:DesiredInstanceCount"
CONCURRENCY_METRIC = "SageMakerVariantConcurrentRequestsPerModelHighResolution"
INVOCATIONS_METRIC = "SageMakerVariantInvocationsPerInstance"
# Concurrent streams per instance when no target is given: a conservative start for a
# speculative-decoding endpoint; measure with `peagle bench` and tune.
DEFAULT_TARGET_CONCURRENCY = 8.0


def add_fallback_pools(p: Any, plan_fn: Callable[[Any], Any]) -> None:
    """Plan each fallback type and turn the variant into InstancePools (in place)."""
    fallbacks = p.spec.endpoint.fallback_instance_types
    if not fallbacks:
        return
    variant = p.create_endpoint_config["ProductionVariants"][0]
    if variant["InstanceType"] in fallbacks:
        p.checks.append(
            failed(
                "endpoint.fallback_instance_types",
                f"{variant['InstanceType']} is the primary instance type; a fallback pool "
                "must be a different type",
                text("drop it from {fallback}, or pick another {instance_type}"),
                field="fallback",
            )
        )
        return
    pools = [{"InstanceType": variant.pop("InstanceType"), "Priority": 1}]
    base = p.spec.model_dump(mode="json", exclude_unset=True)
    from ..spec.loading import merge_overrides, spec_from_data

    for priority, instance_type in enumerate(fallbacks, start=2):
        data = merge_overrides(base, {"endpoint.instance_type": instance_type})
        data["endpoint"]["fallback_instance_types"] = []
        sub = plan_fn(spec_from_data(data))
        prefix = f"pool[{instance_type}]"
        p.checks += [
            Check(f"{prefix}.{c.name}", c.status, c.message, c.fix, c.field)
            for c in sub.checks
            if c.name not in ("model", "role", "tags", "autoscaling")
        ]
        sub_variant = sub.create_endpoint_config["ProductionVariants"][0]
        sub_ami = sub_variant.get("InferenceAmiVersion")
        if sub_ami != variant.get("InferenceAmiVersion"):
            p.checks.append(
                failed(
                    f"{prefix}.endpoint.inference_ami_version",
                    f"{instance_type} needs host AMI {sub_ami or 'default'} but the variant "
                    f"uses {variant.get('InferenceAmiVersion') or 'default'}; "
                    "all pools share one variant AMI",
                    "pick fallbacks whose image needs the same host AMI",
                )
            )
        model = dict(sub.create_model)
        model["ModelName"] = f"{p.names['model'][:55]}-p{priority}"
        model["Tags"] = p.create_model["Tags"]
        p.pool_models.append(model)
        pools.append(
            {
                "InstanceType": instance_type,
                "Priority": priority,
                "ModelNameOverride": model["ModelName"],
            }
        )
    variant["InstancePools"] = pools
    p.checks.append(
        passed(
            "endpoint.fallback_instance_types",
            " > ".join(pool["InstanceType"] for pool in pools)
            + " (quota is held for each listed type)",
        )
    )


def autoscaling_requests(p: Any) -> tuple[list[tuple[str, dict[str, Any]]], list[Check]]:
    """RegisterScalableTarget + PutScalingPolicy for the plan, and their checks."""
    a = p.spec.autoscaling
    if a is None:
        return [], []
    checks: list[Check] = []
    count = p.spec.endpoint.instance_count
    if not a.min_instances <= count <= a.max_instances:
        checks.append(
            failed(
                "autoscaling",
                f"instance_count {count} is outside min..max {a.min_instances}..{a.max_instances}",
                text("set {instance_count} within the range"),
                field="instance_count",
            )
        )
    name, variant = p.names["endpoint"], p.spec.endpoint.variant_name
    resource = f"endpoint/{name}/variant/{variant}"
    if a.target_invocations is not None:
        metric, target = INVOCATIONS_METRIC, a.target_invocations
    else:
        metric, target = CONCURRENCY_METRIC, a.target_concurrency or DEFAULT_TARGET_CONCURRENCY
    register = {
        "ServiceNamespace": "sagemaker",
        "ResourceId": resource,
        "ScalableDimension": SCALABLE_DIMENSION,
        "MinCapacity": a.min_instances,
        "MaxCapacity": a.max_instances,
    }
    policy = {
        "PolicyName": f"{name}-target-tracking",
        "ServiceNamespace": "sagemaker",
        "ResourceId": resource,
        "ScalableDimension": SCALABLE_DIMENSION,
        "PolicyType": "TargetTrackingScaling",
        "TargetTrackingScalingPolicyConfiguration": {
            "TargetValue": float(target),
            "PredefinedMetricSpecification": {"PredefinedMetricType": metric},
            "ScaleOutCooldown": a.scale_out_cooldown,
            "ScaleInCooldown": a.scale_in_cooldown,
        },
    }
    errors = validate_request(
        "application-autoscaling", "RegisterScalableTarget", register
    ) + validate_request("application-autoscaling", "PutScalingPolicy", policy)
    checks.append(
        failed("autoscaling", "; ".join(errors[:3]))
        if errors
        else passed(
            "autoscaling",
            f"{a.min_instances}..{a.max_instances} instances, {metric} target {target:g}",
        )
    )
    return [("RegisterScalableTarget", register), ("PutScalingPolicy", policy)], checks


def add_autoscaling(p: Any) -> None:
    """The plan's autoscaling requests and their checks (in place)."""
    p.autoscaling, checks = autoscaling_requests(p)
    p.checks += checks
