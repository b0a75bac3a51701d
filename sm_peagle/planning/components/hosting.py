"""Step 7 of `plan()`: inference-component hosting (`endpoint.hosting: inference-components`).

The endpoint's instances host one or more components, each a configuration of the model
(p-eagle K=7, baseline, ...) with its own model, accelerators and copies (facts §10):

- one CreateModel per component, planned by running `plan()` again for the component's
  mode and K (so every check - speculative config, drafter, fit, TP - applies per
  component). A component that names a model gets its `AdditionalModelDataSources`,
  so a P-EAGLE drafter works there;
- CreateEndpointConfig without `ModelName` on the variant, with `ExecutionRoleArn` on the
  config, `ManagedInstanceScaling` (min 0 allowed) and `RoutingConfig`; the start-up
  timeouts move to each component's `StartupParameters`;
- CreateEndpoint, then one CreateInferenceComponent per component;
- for scale to zero (AWS docs, "endpoint-auto-scaling-zero-instances"): per component a
  scalable target on `sagemaker:inference-component:DesiredCopyCount` with min 0, a
  target-tracking policy, a step-scaling policy (+1 copy) and a CloudWatch alarm on
  `NoCapacityInvocationFailures` whose action is that step policy. The policy's ARN is
  known only once it exists, so the plan holds `step_policy_arn_placeholder(name)` and
  the lifecycle substitutes it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...checks import Check, failed, passed
from ...errors import Param, text
from ..plan_result import PLACEHOLDER_ROLE
from ..steps.aws_shapes import validate_request
from .checks import (
    check_accelerators,
    check_capacity,
    check_hosting_conflicts,
    check_inline_env,
)
from .specs import ComponentSpec, InferenceComponentsSpec

__all__ = [
    "COPY_DIMENSION",
    "DEFAULT_MIN_MEMORY_MB",
    "add_inference_components",
    "component_full_name",
    "component_names",
    "component_short_name",
    "scale_to_zero_requests",
    "step_policy_arn_placeholder",
]

COPY_DIMENSION = "sagemaker:inference-component:DesiredCopyCount"
CONCURRENCY_PER_COPY = "SageMakerInferenceComponentConcurrentRequestsPerCopyHighResolution"
INVOCATIONS_PER_COPY = "SageMakerInferenceComponentInvocationsPerCopy"
NO_CAPACITY_METRIC = "NoCapacityInvocationFailures"
DEFAULT_TARGET_CONCURRENCY = 8.0
# Host memory reserved per copy for the vLLM server process (the weights live in GPU
# memory): a conservative start; set min_memory_mb per component to change it.
DEFAULT_MIN_MEMORY_MB = 8192
DEFAULT_ROUTING = "LEAST_OUTSTANDING_REQUESTS"
# The Strategy enum's documentation in botocore's sagemaker model.
SCALE_IN_MEANING = {
    "IDLE_RELEASE": "releases instances that have no hosted inference component copies",
    "CONSOLIDATION": "consolidates copies onto fewer instances to release more",
}
_STARTUP = ("ModelDataDownloadTimeoutInSeconds", "ContainerStartupHealthCheckTimeoutInSeconds")


def step_policy_arn_placeholder(policy_name: str) -> str:
    """What the plan puts in the alarm's AlarmActions until PutScalingPolicy returns the ARN."""
    return f"<PolicyARN of {policy_name}>"


def _fit(prefix: str, suffix: str) -> str:
    return prefix[: 63 - len(suffix)].rstrip("-") + suffix


def component_names(names: dict[str, str], component: str) -> dict[str, str]:
    """The inference component's and its model's names (<= 63 characters each)."""
    model_prefix = names["model"].removesuffix("-mdl")
    return {
        "inference_component": component_full_name(names["endpoint"], component),
        "model": _fit(model_prefix, f"-{component}-mdl"),
    }


def component_full_name(endpoint: str, component: str) -> str:
    """The InferenceComponentName peagle gives component `component` of `endpoint`: the
    one rule every lookup by short name (`--component p-eagle`) must follow too."""
    return _fit(endpoint, f"-{component}")


def component_short_name(endpoint: str, component: str) -> str:
    """The name a component was deployed with (`p-eagle` for `EP-p-eagle`), as users type
    it; a name not built by `component_names` is returned as it is."""
    return component.removeprefix(f"{endpoint}-")


def _components(spec: Any) -> tuple[InferenceComponentsSpec, list[ComponentSpec]]:
    ics = spec.inference_components or InferenceComponentsSpec()
    return ics, ics.components or [ComponentSpec(name=spec.speculative.mode.value)]


def component_subspec(spec: Any, comp: ComponentSpec, ics: InferenceComponentsSpec) -> Any:
    """The single-model spec of one component: its mode, K and tensor-parallel size."""
    from ..spec.loading import spec_from_data

    data = spec.model_dump(mode="json", exclude_unset=True)
    data.pop("inference_components", None)
    data.pop("autoscaling", None)
    endpoint = data.setdefault("endpoint", {})
    endpoint.pop("hosting", None)
    endpoint["fallback_instance_types"] = []
    mode = comp.resolved_mode(spec.speculative.mode.value)
    speculative = data.setdefault("speculative", {})
    speculative["mode"] = mode
    if mode == "baseline":
        speculative.pop("num_speculative_tokens", None)
    elif comp.k is not None:
        speculative["num_speculative_tokens"] = comp.k
    accelerators = comp.accelerators_per_copy or ics.accelerators_per_copy
    engine = data.setdefault("container", {}).setdefault("engine_args", {})
    if accelerators and "tensor_parallel_size" not in engine:
        engine["tensor_parallel_size"] = accelerators
    return spec_from_data(data)


def add_inference_components(p: Any, plan_fn: Callable[[Any], Any]) -> None:
    """Turn plan `p` into inference-component hosting (in place); no-op otherwise."""
    spec = p.spec
    if spec.endpoint.hosting != "inference-components":
        if spec.inference_components is not None:
            p.checks.append(
                failed(
                    "inference_components",
                    "inference_components is set but endpoint.hosting is 'endpoint'",
                    text(
                        "set endpoint.hosting: inference-components ({h})",
                        h=Param("hosting", "inference-components"),
                    ),
                )
            )
        return
    conflicts = check_hosting_conflicts(spec)
    if conflicts:
        p.checks += conflicts
        return
    ics, comps = _components(spec)
    tags = p.create_model["Tags"]
    timeouts = {
        k: v for k, v in p.create_endpoint_config["ProductionVariants"][0].items() if k in _STARTUP
    }
    per_copy: list[tuple[str, int, int, int]] = []
    for comp in comps:
        sub = plan_fn(component_subspec(spec, comp, ics))
        if sub.k_origin is not None:
            p.component_k_origins[comp.name] = sub.k_origin
        p.checks += [
            Check(f"component[{comp.name}].{c.name}", c.status, c.message, c.fix, c.field)
            for c in sub.checks
            if c.name not in ("role", "tags", "aws.request_shapes")
        ]
        env = sub.create_model["PrimaryContainer"]["Environment"]
        tp = int(env.get("SM_VLLM_TENSOR_PARALLEL_SIZE", sub.instance.gpus))
        accelerators = comp.accelerators_per_copy or ics.accelerators_per_copy or tp
        p.checks.append(check_accelerators(comp.name, p.instance, accelerators, tp))
        memory = comp.min_memory_mb or DEFAULT_MIN_MEMORY_MB
        copies = comp.copies or ics.copies
        per_copy.append((comp.name, copies, accelerators, memory))
        names = component_names(p.names, comp.name)
        request = _component_request(p, comp, names, sub, timeouts, tags)
        request["Specification"]["ComputeResourceRequirements"] = {
            "NumberOfAcceleratorDevicesRequired": accelerators,
            "MinMemoryRequiredInMb": memory,
        }
        request["RuntimeConfig"] = {"CopyCount": copies}
        p.inference_components.append(request)
        if comp.inline_container:
            p.checks += check_inline_env(comp.name, env, sub.spec.speculative.mode.value)
        else:
            p.component_models.append({**sub.create_model, "ModelName": names["model"]})
        p.autoscaling += _copy_scaling(ics, comp, names["inference_component"], copies)
    _rewrite_config(p, ics)
    variant = p.create_endpoint_config["ProductionVariants"][0]
    scaling = variant["ManagedInstanceScaling"]
    p.checks += check_capacity(
        p.instance, per_copy, variant["InitialInstanceCount"], scaling["MaxInstanceCount"]
    )
    if p.component_models:
        p.create_model = p.component_models[0]
        p.names["model"] = p.create_model["ModelName"]
    p.checks.append(_shapes_check(p))


def _component_request(
    p: Any,
    comp: ComponentSpec,
    names: dict[str, str],
    sub: Any,
    timeouts: dict[str, int],
    tags: list[dict[str, str]],
) -> dict[str, Any]:
    """CreateInferenceComponent: a model by name, or the container inline."""
    if comp.inline_container:
        container = sub.create_model["PrimaryContainer"]
        spec_part: dict[str, Any] = {
            "Container": {"Image": container["Image"], "Environment": container["Environment"]}
        }
        source = (container.get("ModelDataSource") or {}).get("S3DataSource", {})
        if source.get("S3Uri"):
            spec_part["Container"]["ArtifactUrl"] = source["S3Uri"]
    else:
        spec_part = {"ModelName": names["model"]}
    if timeouts:
        spec_part["StartupParameters"] = dict(timeouts)
    return {
        "InferenceComponentName": names["inference_component"],
        "EndpointName": p.names["endpoint"],
        "VariantName": p.spec.endpoint.variant_name,
        "Specification": spec_part,
        "Tags": tags,
    }


def _instance_range(p: Any, ics: InferenceComponentsSpec) -> tuple[int, int]:
    count = p.spec.endpoint.instance_count
    lo = ics.min_instances if ics.min_instances is not None else (0 if ics.scale_to_zero else 1)
    hi = ics.max_instances if ics.max_instances is not None else max(count, lo, 1)
    return lo, hi


def _rewrite_config(p: Any, ics: InferenceComponentsSpec) -> None:
    """The variant of a component endpoint: no model, managed instance scaling, routing;
    the execution role moves onto the config."""
    config = p.create_endpoint_config
    variant = config["ProductionVariants"][0]
    for key in ("ModelName", *_STARTUP):
        variant.pop(key, None)
    lo, hi = _instance_range(p, ics)
    count = variant["InitialInstanceCount"]
    if not lo <= count <= hi:
        p.checks.append(
            failed(
                "inference_components.max_instances",
                f"instance_count {count} is outside min..max instances {lo}..{hi}",
                text("set {instance_count} within {min_instances}..{max_instances}"),
            )
        )
    variant["ManagedInstanceScaling"] = {
        "Status": "ENABLED",
        "MinInstanceCount": lo,
        "MaxInstanceCount": hi,
    }
    if ics.scale_in is not None:
        variant["ManagedInstanceScaling"]["ScaleInPolicy"] = ics.scale_in.request()
    p.checks += _scale_in_check(ics, lo)
    variant["RoutingConfig"] = {
        "RoutingStrategy": p.spec.endpoint.routing_strategy or DEFAULT_ROUTING
    }
    config["ExecutionRoleArn"] = p.spec.role or PLACEHOLDER_ROLE
    p.checks.append(
        passed(
            "inference_components.min_instances",
            f"managed instance scaling {lo}..{hi} x {p.instance.name}"
            + (" (scales to zero when idle)" if lo == 0 else ""),
        )
    )


def _scale_in_check(ics: InferenceComponentsSpec, lo: int) -> list[Check]:
    """The ScaleInPolicy the endpoint gets; with none and a minimum of 0, a hint. No AWS
    source found recommends a strategy for scale to zero, so none is chosen for the user."""
    name = "inference_components.scale_in"
    if ics.scale_in is None:
        if lo != 0:
            return []
        hint = text(
            "no ScaleInPolicy (SageMaker's default scale-in); {s} releases instances that "
            "host no copies",
            s=Param("scale_in_strategy", "idle-release"),
        )
        return [passed(name, hint)]
    policy = ics.scale_in.request()
    message = f"ScaleInPolicy {policy['Strategy']}: {SCALE_IN_MEANING[policy['Strategy']]}"
    detail = ", ".join(f"{k} {v}" for k, v in policy.items() if k != "Strategy")
    return [passed(name, f"{message} ({detail})" if detail else message)]


def _copy_scaling(
    ics: InferenceComponentsSpec, comp: ComponentSpec, name: str, copies: int
) -> list[tuple[str, dict[str, Any]]]:
    if ics.scale_to_zero:
        return scale_to_zero_requests(ics, name, max(comp.max_copies or copies, 1))
    if comp.max_copies and comp.max_copies > copies:
        return scale_to_zero_requests(ics, name, comp.max_copies, min_copies=copies)[:2]
    return []


def scale_to_zero_requests(
    ics: InferenceComponentsSpec, name: str, max_copies: int, *, min_copies: int = 0
) -> list[tuple[str, dict[str, Any]]]:
    """The documented recipe, for one component: scalable target (min 0), target
    tracking, step scaling (+1 copy) and the alarm that fires it on a failed invocation."""
    resource = f"inference-component/{name}"
    target = {"ServiceNamespace": "sagemaker", "ResourceId": resource}
    target["ScalableDimension"] = COPY_DIMENSION
    if ics.target_invocations_per_copy is not None:
        metric, value = INVOCATIONS_PER_COPY, ics.target_invocations_per_copy
    else:
        metric = CONCURRENCY_PER_COPY
        value = ics.target_concurrency_per_copy or DEFAULT_TARGET_CONCURRENCY
    step_name = f"{name}-scale-from-zero"
    return [
        (
            "RegisterScalableTarget",
            {**target, "MinCapacity": min_copies, "MaxCapacity": max_copies},
        ),
        (
            "PutScalingPolicy",
            {
                "PolicyName": f"{name}-target-tracking",
                **target,
                "PolicyType": "TargetTrackingScaling",
                "TargetTrackingScalingPolicyConfiguration": {
                    "TargetValue": float(value),
                    "PredefinedMetricSpecification": {"PredefinedMetricType": metric},
                    "ScaleOutCooldown": ics.scale_out_cooldown,
                    "ScaleInCooldown": ics.scale_in_cooldown,
                },
            },
        ),
        (
            "PutScalingPolicy",
            {
                "PolicyName": step_name,
                **target,
                "PolicyType": "StepScaling",
                "StepScalingPolicyConfiguration": {
                    "AdjustmentType": "ChangeInCapacity",
                    "MetricAggregationType": "Maximum",
                    "Cooldown": 60,
                    "StepAdjustments": [{"MetricIntervalLowerBound": 0.0, "ScalingAdjustment": 1}],
                },
            },
        ),
        (
            "PutMetricAlarm",
            {
                "AlarmName": f"{name}-no-capacity",
                "AlarmDescription": f"scale {name} out from zero copies on a failed invocation",
                "ActionsEnabled": True,
                "AlarmActions": [step_policy_arn_placeholder(step_name)],
                "MetricName": NO_CAPACITY_METRIC,
                "Namespace": "AWS/SageMaker",
                "Dimensions": [{"Name": "InferenceComponentName", "Value": name}],
                "Statistic": "Sum",
                "Period": 60,
                "EvaluationPeriods": 1,
                "DatapointsToAlarm": 1,
                "Threshold": 1.0,
                "ComparisonOperator": "GreaterThanOrEqualToThreshold",
                "TreatMissingData": "missing",
            },
        ),
    ]


SERVICE_OF = {
    "RegisterScalableTarget": "application-autoscaling",
    "PutScalingPolicy": "application-autoscaling",
    "PutMetricAlarm": "cloudwatch",
}


def _shapes_check(p: Any) -> Check:
    """Every component request against botocore's model (the rest is checked by
    `aws_shapes.check_request_shapes`)."""
    errors = [
        *[e for m in p.component_models for e in validate_request("sagemaker", "CreateModel", m)],
        *[
            e
            for ic in p.inference_components
            for e in validate_request("sagemaker", "CreateInferenceComponent", ic)
        ],
        *[e for op, req in p.autoscaling for e in validate_request(SERVICE_OF[op], op, req)],
    ]
    if errors:
        return failed("inference_components.request_shapes", "; ".join(errors[:3]))
    return passed(
        "inference_components.request_shapes",
        f"{len(p.inference_components)} component(s) and {len(p.autoscaling)} scaling "
        "request(s) pass botocore's service model",
    )
