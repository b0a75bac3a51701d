"""Patches for moto's model calls.

moto 5.2.5's ``CreateModel`` never reads ``EnableNetworkIsolation``: its ``Model`` sets
``enable_network_isolation = False`` in its constructor, so ``DescribeModel`` answers False
whatever was sent (facts 7). botocore's model has the field on both ``CreateModelInput``
and ``DescribeModelOutput``, so the harness stores what the request asked for.
"""

from __future__ import annotations

from typing import Any

from moto.core.responses import ActionResult
from moto.sagemaker.responses import SageMakerResponse

__all__ = ["model_patches"]


def model_patches() -> list[tuple[type, str, Any]]:
    """(class, attribute, replacement) triples; originals are captured at install time."""
    original_create = SageMakerResponse.create_model

    def create_model(self: SageMakerResponse) -> ActionResult:
        result = original_create(self)
        model = self.sagemaker_backend._models[self._get_param("ModelName")]
        model.enable_network_isolation = bool(self._get_param("EnableNetworkIsolation", False))
        return result

    return [(SageMakerResponse, "create_model", create_model)]
