"""Patches for moto's endpoint calls: create (refuse a duplicate, start a schedule),
describe / list (advance it), delete (refused while inference components remain on it,
see `moto_components.refuse_endpoint_delete`; else forget it, at once or after the
harness's `deleting_seconds` of Deleting), and UpdateEndpoint, which
moto does not implement, on both the backend and the response class. Each calls the
installed harness's hook (`moto_timelines.EndpointTimelines`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from moto.core.responses import ActionResult
from moto.sagemaker.exceptions import ValidationError
from moto.sagemaker.models import FakeEndpoint, SageMakerModelBackend
from moto.sagemaker.responses import SageMakerResponse

from peagle_sandbox.testing.moto_components import refuse_endpoint_delete

__all__ = ["endpoint_patches"]


def endpoint_patches(_harness: Callable[[], Any]) -> list[tuple[type, str, Any]]:
    """(class, attribute, replacement) triples; `_harness()` returns the installed one."""
    original_create = SageMakerModelBackend.create_endpoint
    original_describe = SageMakerModelBackend.describe_endpoint
    original_delete = SageMakerModelBackend.delete_endpoint
    original_list = SageMakerModelBackend.list_endpoints

    def create_endpoint(
        self: SageMakerModelBackend,
        endpoint_name: str,
        endpoint_config_name: str,
        tags: list[dict[str, str]],
    ) -> FakeEndpoint:
        _harness()._reap(self)  # an endpoint whose Deleting is over frees its name
        if endpoint_name in self.endpoints:
            # moto silently overwrites; AWS refuses, and deployers must handle that.
            arn = FakeEndpoint.arn_formatter(endpoint_name, self.account_id, self.region_name)
            raise ValidationError(message=f'Cannot create already existing endpoint "{arn}".')
        endpoint = original_create(self, endpoint_name, endpoint_config_name, tags)
        _harness()._on_create(self, endpoint)
        return endpoint

    def describe_endpoint(self: SageMakerModelBackend, endpoint_name: str) -> dict[str, Any]:
        _harness()._on_describe(self, endpoint_name)
        return original_describe(self, endpoint_name)

    def delete_endpoint(self: SageMakerModelBackend, endpoint_name: str) -> None:
        harness = _harness()
        harness._reap(self)
        refuse_endpoint_delete(harness, self, endpoint_name)  # components must go first
        endpoint = self.endpoints.get(endpoint_name)
        if endpoint is not None and harness._begin_delete(self, endpoint):
            return  # Deleting for the harness's deleting_seconds (moto_timelines)
        original_delete(self, endpoint_name)
        harness._on_delete(self, endpoint_name)

    def list_endpoints(self: SageMakerModelBackend, *args: Any, **kwargs: Any) -> Any:
        _harness()._on_list(self)
        return original_list(self, *args, **kwargs)

    def update_endpoint(
        self: SageMakerModelBackend,
        endpoint_name: str,
        endpoint_config_name: str,
        deployment: dict[str, Any] | None = None,
        **_ignored: Any,
    ) -> str:
        return _harness()._update_endpoint(self, endpoint_name, endpoint_config_name, deployment)

    def response_update_endpoint(self: SageMakerResponse) -> ActionResult:
        # DeploymentConfig runs a guardrail deployment (moto_rollouts); the Retain* members
        # keep the live variant properties / reuse the last DeploymentConfig.
        members = (
            "DeploymentConfig",
            "RetainAllVariantProperties",
            "ExcludeRetainedVariantProperties",
            "RetainDeploymentConfig",
        )
        deployment = {m: self._get_param(m) for m in members if self._get_param(m) is not None}
        arn = self.sagemaker_backend.update_endpoint(
            endpoint_name=self._get_param("EndpointName"),
            endpoint_config_name=self._get_param("EndpointConfigName"),
            deployment=deployment,
        )
        return ActionResult({"EndpointArn": arn})

    return [
        (SageMakerModelBackend, "create_endpoint", create_endpoint),
        (SageMakerModelBackend, "describe_endpoint", describe_endpoint),
        (SageMakerModelBackend, "delete_endpoint", delete_endpoint),
        (SageMakerModelBackend, "list_endpoints", list_endpoints),
        (SageMakerModelBackend, "update_endpoint", update_endpoint),
        # BaseResponse.call_action routes "UpdateEndpoint" to the method named
        # camelcase_to_underscores(action), found via inspect on the class at each request.
        (SageMakerResponse, "update_endpoint", response_update_endpoint),
    ]
