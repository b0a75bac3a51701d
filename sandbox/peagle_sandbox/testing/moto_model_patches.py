"""Patches for moto's model calls.

moto 5.2.5's ``CreateModel`` never reads ``EnableNetworkIsolation``: its ``Model`` sets
``enable_network_isolation = False`` in its constructor, so ``DescribeModel`` answers False
whatever was sent (facts 7). botocore's model has the field on both ``CreateModelInput``
and ``DescribeModelOutput``, so the harness stores what the request asked for.

moto also accepts a second ``CreateModel`` or ``CreateEndpointConfig`` of a name that
exists, and replaces the first; SageMaker refuses it (ValidationException, "Cannot create
already existing model/endpoint configuration"), as moto itself does for endpoints. Two
deploys of one name racing each other only lose that way on AWS, so the harness refuses
too: a test of the race then sees what AWS would do.
"""

from __future__ import annotations

from typing import Any

from moto.core.responses import ActionResult
from moto.sagemaker.exceptions import ValidationError
from moto.sagemaker.models import SageMakerModelBackend
from moto.sagemaker.responses import SageMakerResponse

__all__ = ["model_patches"]


def model_patches() -> list[tuple[type, str, Any]]:
    """(class, attribute, replacement) triples; originals are captured at install time."""
    original_create = SageMakerResponse.create_model
    backend_model = SageMakerModelBackend.create_model
    backend_config = SageMakerModelBackend.create_endpoint_config

    def refuse_existing(backend: Any, kind: str, name: str, store: dict, arn_kind: str) -> None:
        if name in store:
            arn = f"arn:aws:sagemaker:{backend.region_name}:{backend.account_id}:{arn_kind}/{name}"
            raise ValidationError(message=f'Cannot create already existing {kind} "{arn}".')

    def create_model_backend(self: Any, model_name: str, *args: Any, **kwargs: Any) -> Any:
        refuse_existing(self, "model", model_name, self._models, "model")
        return backend_model(self, model_name, *args, **kwargs)

    def create_endpoint_config_backend(
        self: Any, endpoint_config_name: str, *args: Any, **kwargs: Any
    ) -> Any:
        refuse_existing(
            self, "endpoint configuration", endpoint_config_name, self.endpoint_configs,
            "endpoint-config",
        )  # fmt: skip
        return backend_config(self, endpoint_config_name, *args, **kwargs)

    def create_model(self: SageMakerResponse) -> ActionResult:
        result = original_create(self)
        model = self.sagemaker_backend._models[self._get_param("ModelName")]
        model.enable_network_isolation = bool(self._get_param("EnableNetworkIsolation", False))
        return result

    return [
        (SageMakerResponse, "create_model", create_model),
        (SageMakerModelBackend, "create_model", create_model_backend),
        (SageMakerModelBackend, "create_endpoint_config", create_endpoint_config_backend),
    ]
