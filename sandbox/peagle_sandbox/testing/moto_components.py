"""Inference components for the moto harness: moto 5.2.5 implements none of them.

- Create / Describe / List / Delete / UpdateInferenceComponent[RuntimeConfig] on the
  backend and the response class, with states over time: a new component is `Creating`
  (current copies 0), then `InService` with its copies; a copy-count change is `Updating`,
  then settles; a delete is `Deleting` until the next describe (or `creating_seconds`),
  then gone. `schedule_component` scripts a component's statuses, e.g. a start-up failure.
- What AWS enforces and moto would let through: the endpoint must exist, be InService
  and host components (no ModelName on its variant); the model must exist; names are
  unique; `CopyCount` must be >= 1 at creation (a user-reported message, facts §10) and
  may be 0 afterwards (scale to zero); DeleteEndpoint is refused while a component on it
  is not Deleting (`refuse_endpoint_delete`: user reports; its error text is assumed).
- An endpoint config whose variants name no model must carry `ExecutionRoleArn` (echoed
  by DescribeEndpointConfig, which moto drops).
- The endpoint's instance count follows the copies: 0 when every component is at 0
  copies and `ManagedInstanceScaling.MinInstanceCount` is 0 (scale to zero).
- moto's Application Auto Scaling rejects `sagemaker:inference-component:DesiredCopyCount`:
  its dimension enum is widened.

The state lives on each moto backend (reset with it) and on the installed harness; the
response methods, config and autoscaling patches are in `moto_component_responses`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from moto.core import utils as moto_utils
from moto.sagemaker.exceptions import ValidationError
from moto.sagemaker.models import SageMakerModelBackend, arn_formatter, sagemaker_backends

from peagle_sandbox.testing import moto_rollouts
from peagle_sandbox.testing.moto_component_responses import (
    autoscaling_patches,
    config_patches,
    response_patches,
)
from peagle_sandbox.testing.moto_timelines import status_began

__all__ = [
    "NO_COPY_ERROR",
    "component_patches",
    "leftovers",
    "refuse_endpoint_delete",
    "schedule_component",
]

NO_COPY_ERROR = "Inference components copy count an integer larger than 0"


@dataclass
class FakeInferenceComponent:
    name: str
    arn: str
    endpoint_name: str
    endpoint_arn: str
    variant_name: str
    specification: dict[str, Any]
    desired: int
    tags: list[dict[str, str]]
    current: int = 0
    status: str = "Creating"
    failure_reason: str | None = None
    # (statuses, failure reason, seconds per status or None = one per describe, start)
    timeline: tuple[tuple[str, ...], str | None, float | None, float] | None = None
    describes: int = 0
    # moto's utcnow, read when made: the sandbox clock while the harness is installed.
    created: Any = field(default_factory=lambda: moto_utils.utcnow())
    modified: Any = field(default_factory=lambda: moto_utils.utcnow())
    # A rolling update with a DeploymentConfig in progress (moto_rollouts), and the last one.
    rollout: Any = None
    last_deployment_config: dict[str, Any] | None = None

    def describe(self) -> dict[str, Any]:
        out = {
            "InferenceComponentName": self.name,
            "InferenceComponentArn": self.arn,
            "EndpointName": self.endpoint_name,
            "EndpointArn": self.endpoint_arn,
            "VariantName": self.variant_name,
            "Specification": self.specification,
            "RuntimeConfig": {"DesiredCopyCount": self.desired, "CurrentCopyCount": self.current},
            "CreationTime": self.created,
            "LastModifiedTime": self.modified,
            "InferenceComponentStatus": self.status,
        }
        if self.failure_reason:
            out["FailureReason"] = self.failure_reason
        if self.last_deployment_config:
            out["LastDeploymentConfig"] = self.last_deployment_config
        return out


def inference_components_of(backend: SageMakerModelBackend) -> dict[str, FakeInferenceComponent]:
    # On the backend object, so moto's reset (mock_aws exit) clears it with everything else.
    return backend.__dict__.setdefault("_peagle_inference_components", {})


def _plans(harness: Any) -> dict[str, tuple[tuple[str, ...], str | None, float | None]]:
    return harness.__dict__.setdefault("_peagle_component_plans", {})


def schedule_component(
    harness: Any,
    name: str,
    statuses: Sequence[str],
    *,
    failure_reason: str | None = None,
    seconds: float | None = None,
) -> None:
    """Script the statuses of the next component created with `name` (one per describe,
    or one per `seconds`); a last status `Failed` sets FailureReason."""
    if isinstance(statuses, str) or not statuses:
        raise ValueError("statuses must be a non-empty sequence of status names")
    _plans(harness)[name] = (tuple(statuses), failure_reason, seconds)


def _not_found(backend: SageMakerModelBackend, name: str) -> ValidationError:
    arn = arn_formatter("inference-component", name, backend.account_id, backend.region_name)
    return ValidationError(message=f"Could not find inference component '{arn}'.")


def _start(harness: Any, ic: FakeInferenceComponent, statuses: Sequence[str], plan: Any) -> None:
    reason, seconds = (plan[1], plan[2]) if plan else (None, None)
    if plan is None and harness.creating_seconds is not None:
        seconds = harness.creating_seconds
    ic.timeline = (tuple(statuses), reason, seconds, harness.clock.now())
    ic.describes = 0
    ic.status = statuses[0]
    ic.modified = harness.clock.naive_utcnow()


def advance_component(
    harness: Any, backend: Any, ic: FakeInferenceComponent, consume: bool
) -> None:
    """Move `ic` along its timeline; on the last status, apply the outcome."""
    if ic.rollout is not None:
        moto_rollouts.walk_component(harness, ic, harness.clock.now())
        return
    if ic.timeline is None:
        return
    statuses, reason, seconds, started = ic.timeline
    last = len(statuses) - 1
    now = harness.clock.now()
    if seconds is not None:
        index = min(int((now - started) / seconds), last)
    elif consume:
        ic.describes += 1
        index = min(ic.describes - 1, last)
    else:
        return
    if ic.status != statuses[index]:
        ic.modified = status_began(started, seconds, index, now)
    ic.status = statuses[index]
    if index < last:
        return
    ic.timeline = None
    if ic.status == "Deleting":
        inference_components_of(backend).pop(ic.name, None)
        _sync_instances(backend, ic.endpoint_name)
    elif ic.status == "Failed" or reason:
        ic.status, ic.failure_reason = "Failed", reason or "Failure injected by sm_peagle"
        ic.current = 0
    else:
        ic.current = ic.desired
        _sync_instances(backend, ic.endpoint_name)


def _sync_instances(backend: Any, endpoint_name: str) -> None:
    """Managed instance scaling, coarsely: no copies and min 0 -> 0 instances."""
    endpoint = backend.endpoints.get(endpoint_name)
    config = backend.endpoint_configs.get(getattr(endpoint, "endpoint_config_name", ""))
    if endpoint is None or config is None:
        return
    copies = sum(
        ic.current
        for ic in inference_components_of(backend).values()
        if ic.endpoint_name == endpoint_name
    )
    for live, source in zip(endpoint.production_variants, config.production_variants, strict=False):
        scaling = source.get("ManagedInstanceScaling") or {}
        initial = source.get("InitialInstanceCount", 1)
        count = 0 if copies == 0 and scaling.get("MinInstanceCount") == 0 else max(initial, 1)
        live["CurrentInstanceCount"] = live["DesiredInstanceCount"] = count


def _check_endpoint(backend: Any, harness: Any, endpoint_name: str, variant: str) -> Any:
    endpoint = backend.endpoints.get(endpoint_name)
    if endpoint is None:
        arn = arn_formatter("endpoint", endpoint_name, backend.account_id, backend.region_name)
        raise ValidationError(message=f"Could not find endpoint '{arn}'.")
    status = harness.status_of(endpoint_name, backend.region_name)
    if status != "InService":
        raise ValidationError(
            message=f"Endpoint {endpoint_name} is {status}; inference components can only "
            "be created on an InService endpoint."
        )
    config = backend.endpoint_configs.get(endpoint.endpoint_config_name)
    variants = {v["VariantName"]: v for v in getattr(config, "production_variants", [])}
    if variant not in variants:
        raise ValidationError(message=f"Variant {variant} not found on endpoint {endpoint_name}.")
    if variants[variant].get("ModelName"):
        raise ValidationError(
            message=f"Endpoint {endpoint_name} serves a model on variant {variant}; it cannot "
            "host inference components."
        )
    return endpoint


def refuse_endpoint_delete(harness: Any, backend: Any, endpoint_name: str) -> None:
    """DeleteEndpoint is refused while a component on the endpoint is not Deleting (or
    gone). SageMaker users report it: aws/amazon-sagemaker-feedback#49 and #143 (the
    console refuses until the endpoint's "Models" are deleted; #49 deleted the inference
    component with the CLI first, then the endpoint), aws/amazon-sagemaker-examples#3432
    ("to delete the endpoint ... I need to delete the InferenceComponent"). The API
    reference (API_DeleteEndpoint) does not state it. ASSUMPTION: the code
    (ValidationException) and the message below; no source quotes the API's own words."""
    if endpoint_name not in backend.endpoints:
        return  # moto's own "Could not find endpoint"
    left = []
    for name in list(inference_components_of(backend)):
        ic = inference_components_of(backend).get(name)
        if ic is None or ic.endpoint_name != endpoint_name:
            continue
        advance_component(harness, backend, ic, consume=False)
        if name in inference_components_of(backend) and ic.status != "Deleting":
            left.append(name)
    if left:
        arn = arn_formatter("endpoint", endpoint_name, backend.account_id, backend.region_name)
        raise ValidationError(
            message=f"Cannot delete endpoint '{arn}' while it hosts inference components "
            f"({', '.join(sorted(left))}); delete them first."
        )


def component_patches(_harness: Callable[[], Any]) -> list[tuple[Any, str, Any]]:
    """(class or module, attribute, replacement) triples for the installed harness."""

    def create_inference_component(
        self: SageMakerModelBackend,
        name: str,
        endpoint_name: str,
        variant_name: str,
        specification: dict[str, Any],
        runtime_config: dict[str, Any],
        tags: list[dict[str, str]] | None = None,
    ) -> str:
        harness = _harness()
        if name in inference_components_of(self):
            raise ValidationError(
                message=f"Cannot create already existing inference component {name}."
            )
        endpoint = _check_endpoint(self, harness, endpoint_name, variant_name)
        model = (specification or {}).get("ModelName")
        if model and model not in self._models:
            arn = arn_formatter("model", model, self.account_id, self.region_name)
            raise ValidationError(message=f"Could not find model '{arn}'.")
        copies = (runtime_config or {}).get("CopyCount", 0)
        if copies < 1:
            raise ValidationError(message=NO_COPY_ERROR)
        ic = FakeInferenceComponent(
            name=name,
            arn=arn_formatter("inference-component", name, self.account_id, self.region_name),
            endpoint_name=endpoint_name,
            endpoint_arn=str(endpoint.arn),
            variant_name=variant_name,
            specification=specification,
            desired=copies,
            tags=list(tags or []),
        )
        inference_components_of(self)[name] = ic
        plan = _plans(harness).pop(name, None)
        _start(harness, ic, plan[0] if plan else ("Creating", "InService"), plan)
        return ic.arn

    def get(self: SageMakerModelBackend, name: str, consume: bool = True) -> FakeInferenceComponent:
        ic = inference_components_of(self).get(name)
        if ic is not None and ic.rollout is not None:
            _harness().evaluate_alarms()  # a rolling update reads the alarms' history
        if ic is not None:
            advance_component(_harness(), self, ic, consume)
        ic = inference_components_of(self).get(name)
        if ic is None:
            raise _not_found(self, name)
        return ic

    def describe_inference_component(self: SageMakerModelBackend, name: str) -> dict[str, Any]:
        return get(self, name).describe()

    def list_inference_components(self: SageMakerModelBackend, **filters: Any) -> list[dict]:
        out = []
        for name in list(inference_components_of(self)):
            try:
                ic = get(self, name, consume=False)
            except ValidationError:
                continue
            if filters.get("endpoint") not in (None, ic.endpoint_name):
                continue
            if filters.get("status") not in (None, ic.status):
                continue
            if filters.get("name_contains") and filters["name_contains"] not in ic.name:
                continue
            summary = ic.describe()
            summary.pop("Specification")
            summary.pop("RuntimeConfig")
            summary.pop("FailureReason", None)
            out.append(summary)
        return sorted(out, key=lambda s: s["CreationTime"])

    def delete_inference_component(self: SageMakerModelBackend, name: str) -> None:
        harness = _harness()
        ic = get(self, name, consume=False)
        if ic.status != "Deleting":
            _start(harness, ic, ("Deleting", "Deleting"), None)

    def update_runtime(self: SageMakerModelBackend, name: str, copies: int | None) -> str:
        harness = _harness()
        ic = get(self, name, consume=False)
        if ic.status in ("Creating", "Updating", "Deleting"):
            raise ValidationError(
                message=f"Cannot update inference component {name} in status {ic.status}."
            )
        if copies is not None:
            ic.desired = copies
        _start(harness, ic, ("Updating", "InService"), None)
        return ic.arn

    def update_inference_component(
        self: SageMakerModelBackend,
        name: str,
        specification: Any,
        runtime_config: Any,
        deployment_config: Any = None,
    ) -> str:
        if deployment_config:
            harness = _harness()
            ic = get(self, name, consume=False)
            if ic.status in ("Creating", "Updating", "Deleting"):
                raise ValidationError(
                    message=f"Cannot update inference component {name} in status {ic.status}."
                )
            copies = (runtime_config or {}).get("CopyCount")
            ic.rollout = moto_rollouts.start_component_rollout(
                harness, ic, specification, copies, deployment_config
            )
            ic.timeline, ic.status, ic.failure_reason = None, "Updating", None
            ic.modified = harness.clock.naive_utcnow()
            return ic.arn
        if specification:
            get(self, name, consume=False).specification = specification
        return update_runtime(self, name, (runtime_config or {}).get("CopyCount"))

    return response_patches() + [
        (SageMakerModelBackend, "create_inference_component", create_inference_component),
        (SageMakerModelBackend, "describe_inference_component", describe_inference_component),
        (SageMakerModelBackend, "list_inference_components", list_inference_components),
        (SageMakerModelBackend, "delete_inference_component", delete_inference_component),
        (SageMakerModelBackend, "update_inference_component", update_inference_component),
        (SageMakerModelBackend, "update_inference_component_runtime_config", update_runtime),
        *config_patches(inference_components_of, _not_found),
        *autoscaling_patches(),
    ]


def leftovers(account_id: str, region: str) -> dict[str, list[str]]:
    """Everything a deployment can leave in moto: SageMaker resources, components,
    scalable targets, scaling policies and CloudWatch alarms (for "nothing left" checks)."""
    from moto.applicationautoscaling.models import applicationautoscaling_backends
    from moto.cloudwatch.models import cloudwatch_backends

    sm = sagemaker_backends[account_id][region]
    aas = applicationautoscaling_backends[account_id][region]
    return {
        "models": sorted(sm._models),
        "endpoint_configs": sorted(sm.endpoint_configs),
        "endpoints": sorted(sm.endpoints),
        "inference_components": sorted(inference_components_of(sm)),
        "scalable_targets": sorted(r for d in aas.targets.values() for r in d),
        "scaling_policies": sorted(p.policy_name for p in aas.policies.values()),
        "alarms": sorted(cloudwatch_backends[account_id][region].alarms),
    }
