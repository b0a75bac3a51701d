"""Invocation routing by `InferenceComponentName` in the sandbox runtime.

An endpoint that hosts inference components answers only invocations that name one
(header `X-Amzn-SageMaker-Inference-Component`, botocore's location for
`InferenceComponentName`); the component's model environment then decides what the
engine does (P-EAGLE K=7, baseline, ...). Refusals are SageMaker's `ValidationError`
(HTTP 400), one of the error shapes botocore's sagemaker-runtime model lists for
InvokeEndpoint:

- no component named on an endpoint that has components: AWS's message as users
  report it (aws-samples/amazon-kendra-langchain-extensions issue 64);
- a component with no copies (scaled to zero, or still starting): the wording is an
  ASSUMPTION (no citable source found for the exact text); it says what to do;
- an unknown component: the wording is an ASSUMPTION too.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from moto.sagemaker.models import sagemaker_backends

from peagle_sandbox.backend import EndpointView
from peagle_sandbox.testing.moto_components import advance_component, inference_components_of

__all__ = ["HEADER", "NAME_REQUIRED", "component_views", "no_capacity", "route_component"]

HEADER = "HTTP_X_AMZN_SAGEMAKER_INFERENCE_COMPONENT"  # WSGI form of the header
NAME_REQUIRED = (
    "Inference Component Name header is required for endpoints to which you plan to deploy "
    "inference components. Please include Inference Component Name header or consider using "
    "SageMaker models."
)


def no_capacity(component: str) -> str:
    """ASSUMED wording (see the module docstring) for a component with no copies."""
    return (
        f"Inference Component {component} has no capacity to process this request "
        "(0 copies: scaled to zero or still starting). With scale to zero, Application Auto "
        "Scaling adds a copy after this failure; retry in a few minutes, or set copies with "
        f"`peagle update ENDPOINT --component {component} --copies 1`."
    )


def route_component(
    harness: Any, account: str, region: str, view: EndpointView, environ: dict[str, Any]
) -> tuple[EndpointView, str | None]:
    """The view of the named component (its model's image and environment), or a refusal."""
    name = environ.get(HEADER) or None
    backend = sagemaker_backends[account][region]
    hosted = {
        n: ic for n, ic in inference_components_of(backend).items() if ic.endpoint_name == view.name
    }
    if not hosted:
        if name:
            return view, f"Inference Component {name} not found for endpoint {view.name}."
        return view, None
    if name is None:
        return view, NAME_REQUIRED
    ic = hosted.get(name)
    if ic is not None and harness.installed:
        advance_component(harness, backend, ic, consume=False)
    if ic is None or ic.status in ("Deleting", "Failed"):
        return view, f"Inference Component {name} not found for endpoint {view.name}."
    if ic.current == 0:
        return view, no_capacity(name)
    return _component_view(backend, view, ic), None


def _component_view(backend: Any, view: EndpointView, ic: Any) -> EndpointView:
    """`view` as the component `ic` serves it: its model's image and environment, its own
    status and creation time (a re-created component is a new incarnation)."""
    spec = ic.specification or {}
    container = spec.get("Container") or {}
    if spec.get("ModelName"):
        model = backend._models.get(spec["ModelName"])
        container = (getattr(model, "primary_container", None) or {}) if model else {}
    return replace(
        view,
        model_name=spec.get("ModelName"),
        image=container.get("Image"),
        env=dict(container.get("Environment") or {}),
        component=ic.name,
        status=str(ic.status),
        created=str(ic.created),
    )


def component_views(harness: Any, account: str, view: EndpointView) -> list[EndpointView]:
    """One view per inference component on `view`'s endpoint (none on a single-model
    endpoint), for the log simulator, which writes each to the component's log group."""
    backend = sagemaker_backends[account][view.region]
    out = []
    for ic in list(inference_components_of(backend).values()):
        if ic.endpoint_name != view.name:
            continue
        if harness.installed:
            advance_component(harness, backend, ic, consume=False)
        if ic.name in inference_components_of(backend):  # a finished delete removes it
            out.append(_component_view(backend, view, ic))
    return out
