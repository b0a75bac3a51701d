"""The `sagemaker` SDK bridge: `Endpoint.to_sagemaker()` / `Endpoint.from_sagemaker()`.

SDK v3 replaced `Predictor` with the resource classes of `sagemaker.core.resources`
(distribution `sagemaker-core`). They are too heavy for a core dependency (about 260 MB
installed with their dependencies, over a second to import), so they come with the
`sagemaker` extra and are imported here, on first use only: `import sm_peagle`,
`peagle --help` and `peagle plan` never load them.

Both directions use one AWS identity: `to_sagemaker` hands the SDK peagle's boto3
session and region (sm_peagle.aws), and `from_sagemaker` reuses the session the resource
was fetched with, in the region of its ARN.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from ..errors import PeagleError, SpecError

__all__ = ["INSTALL", "SageMakerSdkMissing", "from_sagemaker", "resources", "to_sagemaker"]

INSTALL = "pip install 'sm-peagle[sagemaker]'"


class SageMakerSdkMissing(PeagleError, ImportError):
    """The `sagemaker` extra is not installed."""

    exit_code = 2


def resources() -> ModuleType:
    """`sagemaker.core.resources`, or SageMakerSdkMissing naming the extra to install."""
    try:
        from sagemaker.core import resources as module
    except ImportError as exc:
        raise SageMakerSdkMissing(
            f"the sagemaker SDK bridge needs sagemaker-core ({exc})", remedy=INSTALL
        ) from None
    return module


def to_sagemaker(endpoint: Any, component: str | None = None) -> Any:
    """The `sagemaker.core.resources.Endpoint` for `endpoint` (a peagle Endpoint), or the
    `InferenceComponent` named `component`, which must be on that endpoint."""
    sdk = resources()
    session, region = endpoint.aws.session, endpoint.aws.region
    if component is None:
        return sdk.Endpoint.get(endpoint_name=endpoint.name, session=session, region=region)
    from ..lifecycle.component_targets import resolve_component

    # The short name the user deployed works, as in every CLI command; a name the
    # endpoint does not host is peagle's one-line error, not the SDK's raw ClientError.
    name = resolve_component(
        endpoint.aws.client("sagemaker"), endpoint.name, component, flag="component="
    )
    found = sdk.InferenceComponent.get(
        inference_component_name=name, session=session, region=region
    )
    if found.endpoint_name != endpoint.name:
        raise SpecError(
            f"inference component {name!r} is on endpoint {found.endpoint_name!r}, "
            f"not {endpoint.name!r}"
        )
    return found


def from_sagemaker(cls: type, resource: Any, aws: Any = None) -> Any:
    """A peagle `cls` (Endpoint) attached to the endpoint of `resource`: a
    sagemaker.core Endpoint, or an InferenceComponent (its endpoint)."""
    sdk = resources()
    if not isinstance(resource, sdk.Endpoint | sdk.InferenceComponent):
        raise SpecError(
            "from_sagemaker takes a sagemaker.core.resources Endpoint or InferenceComponent, "
            f"not {type(resource).__name__}"
        )
    if aws is None:
        from ..aws import AwsContext

        arn = resource.endpoint_arn if isinstance(resource, sdk.Endpoint) else None
        arn = arn or getattr(resource, "inference_component_arn", None)
        region = _arn_region(arn) or getattr(resource, "_region", None)
        session = getattr(resource, "_session", None)
        # The identity the SDK resource was fetched with, in the resource's region even if
        # that session was made for another.
        aws = AwsContext(region) if session is None else AwsContext.from_session(session, region)
    return cls._attach(resource.endpoint_name, aws=aws)


def _arn_region(arn: Any) -> str | None:
    """The region field of `arn:partition:service:region:account:resource`."""
    parts = arn.split(":") if isinstance(arn, str) else []
    return parts[3] if len(parts) > 5 and parts[3] else None
