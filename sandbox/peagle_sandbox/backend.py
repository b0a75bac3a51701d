"""Read SageMaker endpoints straight from moto's in-process backend.

The runtime and the log simulator live in the process that runs moto's server, so they see
the same backend objects the control plane writes; no API round trip, no credentials.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

from moto.sagemaker.models import sagemaker_backends

from peagle_sandbox.engine import Speculation
from peagle_sandbox.testing.moto_sagemaker import SageMakerHarness

__all__ = ["EndpointView", "all_endpoints", "config_view", "lookup"]

# Statuses in which a real endpoint answers InvokeEndpoint (an update keeps the old config
# serving until it completes).
SERVING = frozenset({"InService", "Updating", "SystemUpdating", "RollingBack"})


@dataclass(frozen=True)
class EndpointView:
    region: str
    name: str
    arn: str
    status: str
    created: str
    config: str = ""
    variant: str = "AllTraffic"
    model_name: str | None = None
    image: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    component: str | None = None  # the inference component this view is routed to

    @property
    def incarnation(self) -> str:
        """Changes when the endpoint is re-created or an update switches its config: real
        SageMaker then runs new instances, with new log streams and a new start-up."""
        return f"{self.created}|{self.config}"

    @property
    def speculation(self) -> Speculation:
        return Speculation.from_env(self.env)

    @property
    def speculative_config(self) -> dict[str, Any] | None:
        raw = self.env.get("SM_VLLM_SPECULATIVE_CONFIG")
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            return None

    @property
    def max_model_len(self) -> int | None:
        raw = self.env.get("SM_VLLM_MAX_MODEL_LEN") or self.env.get("OPTION_MAX_MODEL_LEN")
        return int(raw) if raw and raw.isdigit() else None

    @property
    def serving(self) -> bool:
        return self.status in SERVING


def _view(
    harness: SageMakerHarness,
    backend: Any,
    region: str,
    name: str,
    config_name: str | None = None,
    status: str | None = None,
) -> EndpointView | None:
    endpoint = backend.endpoints.get(name)
    if endpoint is None:
        return None
    try:
        # Advances a time-based Creating/Updating timeline without consuming describe steps.
        live = harness.status_of(name, region) if harness.installed else endpoint.endpoint_status
    except KeyError:  # deleted meanwhile
        return None
    view = EndpointView(
        region=region,
        name=name,
        arn=str(endpoint.arn),
        status=str(status or live),
        created=str(endpoint.creation_time),
        config=str(config_name or endpoint.endpoint_config_name),
    )
    config = backend.endpoint_configs.get(view.config)
    variants = getattr(config, "production_variants", None) or []
    if not variants:
        return view
    variant = variants[0]
    model = backend._models.get(variant.get("ModelName"))
    container = (getattr(model, "primary_container", None) or {}) if model else {}
    return replace(
        view,
        variant=variant.get("VariantName") or "AllTraffic",
        model_name=variant.get("ModelName"),
        image=container.get("Image"),
        env=dict(container.get("Environment") or {}),
    )


def lookup(harness: SageMakerHarness, account: str, region: str, name: str) -> EndpointView | None:
    """The endpoint as the runtime sees it now, or None if it does not exist."""
    return _view(harness, sagemaker_backends[account][region], region, name)


def config_view(
    harness: SageMakerHarness, account: str, region: str, name: str, config: str, status: str
) -> EndpointView | None:
    """The endpoint as a fleet running `config` serves it (a guardrail deployment's new
    fleet, before the endpoint itself names that config), with `status` as that fleet's
    own; None if the endpoint does not exist."""
    return _view(harness, sagemaker_backends[account][region], region, name, config, status)


def all_endpoints(harness: SageMakerHarness, account: str) -> list[EndpointView]:
    """Every endpoint in every region the control plane has touched."""
    out = []
    for region, backend in list(sagemaker_backends[account].items()):
        for name in list(backend.endpoints):
            view = _view(harness, backend, region, name)
            if view is not None:
                out.append(view)
    return out
