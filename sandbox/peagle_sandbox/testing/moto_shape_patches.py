"""Patches that keep moto's SageMaker answers inside botocore's output shapes.

moto 5.2.5 answers ``"VpcConfig": {}`` in DescribeModel when a model has no VPC, and
``"DataCaptureConfig": {}`` in DescribeEndpointConfig and DescribeEndpoint when nothing
is captured. SageMaker leaves the member out; an empty object is not a valid value either:
botocore's model marks ``VpcConfig.SecurityGroupIds`` / ``Subnets``, the four members of
``DataCaptureConfigSummary`` and three of ``DataCaptureConfig`` as required. boto3 passes
the empty objects through, but the ``sagemaker`` SDK's resource classes
(``sagemaker.core.resources``, pydantic models generated from the same service model)
refuse them: ``Model.get``, ``EndpointConfig.get``, ``Endpoint.get`` and everything built
on them (``create``, ``refresh``, ``wait_for_status``) raised ``ValidationError`` ("Field
required") on every endpoint moto made. That was the whole of facts 7's "resource classes
break on moto's responses".

The fix uses moto's own per-member hook, ``RESPONSE_KEY_PATH_TO_TRANSFORMER`` on the
response class: an empty (or None) value of those members is serialized as absent.
"""

from __future__ import annotations

from typing import Any

from moto.sagemaker.responses import SageMakerResponse

__all__ = ["EMPTY_MEANS_ABSENT", "shape_patches"]

# Members (matched as the end of moto's response key path, e.g.
# "DescribeModelOutput.VpcConfig") whose empty value means "not set".
EMPTY_MEANS_ABSENT = (".VpcConfig", ".DataCaptureConfig")


def _absent_if_empty(value: Any) -> Any:
    return None if value in ({}, None) else value


def shape_patches() -> list[tuple[type, str, Any]]:
    """(class, attribute, replacement) triples; originals are captured at install time."""
    inherited = getattr(SageMakerResponse, "RESPONSE_KEY_PATH_TO_TRANSFORMER", None) or {}
    transformers = dict(inherited)
    transformers.update({suffix: _absent_if_empty for suffix in EMPTY_MEANS_ABSENT})
    return [(SageMakerResponse, "RESPONSE_KEY_PATH_TO_TRANSFORMER", transformers)]
