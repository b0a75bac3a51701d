"""The HTTP side of the harness's inference components (`moto_components`): the response
methods moto's dispatcher finds by operation name, ExecutionRoleArn on component endpoint
configs, ARN lookups for tags, and the widened Application Auto Scaling dimension."""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from typing import Any

import moto.applicationautoscaling.models as aas_models
import moto.applicationautoscaling.responses as aas_responses
from moto.core.responses import ActionResult, EmptyResult
from moto.sagemaker.exceptions import ValidationError
from moto.sagemaker.models import SageMakerModelBackend
from moto.sagemaker.responses import SageMakerResponse

__all__ = ["COPY_DIMENSION", "autoscaling_patches", "config_patches", "response_patches"]

COPY_DIMENSION = "sagemaker:inference-component:DesiredCopyCount"
_OPS = (
    "create_inference_component",
    "describe_inference_component",
    "list_inference_components",
    "delete_inference_component",
    "update_inference_component",
    "update_inference_component_runtime_config",
)


def response_patches() -> list[tuple[Any, str, Any]]:
    def create(self: SageMakerResponse) -> ActionResult:
        arn = self.sagemaker_backend.create_inference_component(
            self._get_param("InferenceComponentName"),
            self._get_param("EndpointName"),
            self._get_param("VariantName"),
            self._get_param("Specification"),
            self._get_param("RuntimeConfig"),
            self._get_param("Tags"),
        )
        return ActionResult({"InferenceComponentArn": arn})

    def describe(self: SageMakerResponse) -> ActionResult:
        name = self._get_param("InferenceComponentName")
        return ActionResult(self.sagemaker_backend.describe_inference_component(name))

    def list_(self: SageMakerResponse) -> ActionResult:
        found = self.sagemaker_backend.list_inference_components(
            endpoint=self._get_param("EndpointNameEquals"),
            status=self._get_param("StatusEquals"),
            name_contains=self._get_param("NameContains"),
        )
        return ActionResult({"InferenceComponents": found})

    def delete(self: SageMakerResponse) -> ActionResult:
        self.sagemaker_backend.delete_inference_component(self._get_param("InferenceComponentName"))
        return EmptyResult()

    def update(self: SageMakerResponse) -> ActionResult:
        deployment = self._get_param("DeploymentConfig")
        arn = self.sagemaker_backend.update_inference_component(
            self._get_param("InferenceComponentName"),
            self._get_param("Specification"),
            self._get_param("RuntimeConfig"),
            *((deployment,) if deployment else ()),  # a rolling update (moto_rollouts)
        )
        return ActionResult({"InferenceComponentArn": arn})

    def update_runtime(self: SageMakerResponse) -> ActionResult:
        desired = self._get_param("DesiredRuntimeConfig") or {}
        arn = self.sagemaker_backend.update_inference_component_runtime_config(
            self._get_param("InferenceComponentName"), desired.get("CopyCount")
        )
        return ActionResult({"InferenceComponentArn": arn})

    handlers = (create, describe, list_, delete, update, update_runtime)
    return [(SageMakerResponse, op, fn) for op, fn in zip(_OPS, handlers, strict=True)]


def config_patches(
    components: Callable[[Any], dict[str, Any]], not_found: Callable[[Any, str], Exception]
) -> list[tuple[Any, str, Any]]:
    original_create = SageMakerResponse.create_endpoint_config
    original_validate = SageMakerModelBackend.validate_production_variants
    original_resource = SageMakerModelBackend._get_resource_from_arn

    def create_endpoint_config(self: SageMakerResponse) -> ActionResult:
        variants = self._get_param("ProductionVariants") or []
        role = self._get_param("ExecutionRoleArn")
        if any(not v.get("ModelName") for v in variants) and not role:
            raise ValidationError(
                message="ExecutionRoleArn is required for an endpoint configuration whose "
                "variants host inference components (no ModelName)."
            )
        result = original_create(self)
        if role:
            config = self.sagemaker_backend.endpoint_configs[self._get_param("EndpointConfigName")]
            config.execution_role_arn = role  # echoed as ExecutionRoleArn by describe
        return result

    def validate_production_variants(self: SageMakerModelBackend, variants: list) -> None:
        original_validate(self, [v for v in variants if v.get("ModelName")])

    def get_resource_from_arn(self: SageMakerModelBackend, arn: str) -> Any:
        kind, _, name = arn.split(":")[-1].partition("/")
        if kind == "inference-component":
            ic = components(self).get(name)
            if ic is None:
                raise not_found(self, name)
            return ic
        return original_resource(self, arn)

    return [
        (SageMakerResponse, "create_endpoint_config", create_endpoint_config),
        (SageMakerModelBackend, "validate_production_variants", validate_production_variants),
        (SageMakerModelBackend, "_get_resource_from_arn", get_resource_from_arn),
    ]


def autoscaling_patches() -> list[tuple[Any, str, Any]]:
    """moto checks scalable dimensions against its own enum in both modules: widen it."""
    original = aas_models.ScalableDimensionValueSet
    members = {m.name: m.value for m in original}
    members["SAGEMAKER_INFERENCE_COMPONENT_DESIRED_COPY_COUNT"] = COPY_DIMENSION
    widened = Enum("ScalableDimensionValueSet", members)  # type: ignore[misc]
    return [
        (aas_models, "ScalableDimensionValueSet", widened),
        (aas_responses, "ScalableDimensionValueSet", widened),
    ]
