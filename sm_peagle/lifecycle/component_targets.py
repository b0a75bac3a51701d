"""Which inference component an invocation names, checked before any traffic.

SageMaker requires `InferenceComponentName` on every invocation of an endpoint that hosts
inference components, and refuses one that names a component the endpoint does not
host. `invoke`, `chat`, `bench`, `race` and `logs` ask the control plane first
(ListInferenceComponents on the endpoint), so a missing or mistyped `--component` is one
line naming the endpoint's components (exit 2) instead of the runtime's long message
after the request left.

A component is named in full (`peagle-gpt-oss-20b-p-eagle-baseline`) or by the short name
it was deployed with (`baseline`: peagle names components `<endpoint>-<short>`).

When the control plane cannot answer (only the runtime API is redirected, no
ListInferenceComponents permission, a fake without components), nothing is checked and
the name goes out as given: the runtime then has the last word. An unreachable AWS is
the error it is (the runtime would be unreachable too).
"""

from __future__ import annotations

from typing import Any

from .. import settings
from ..errors import Call, Param, SpecError, text

__all__ = ["choices", "components_of", "resolve_component"]


def components_of(sm: Any, endpoint: str) -> list[str] | None:
    """The inference components on `endpoint` (empty: a single-model endpoint, or none
    yet), or None when the control plane cannot say."""
    from botocore.exceptions import ConnectionError, HTTPClientError

    if settings.runtime_only_redirected():  # a local server: no control plane for it
        return None
    try:
        pages = sm.get_paginator("list_inference_components").paginate(EndpointNameEquals=endpoint)
        return [c["InferenceComponentName"] for p in pages for c in p["InferenceComponents"]]
    except (ConnectionError, HTTPClientError):
        raise  # AWS unreachable: the runtime would be too; one error, one set of attempts
    except Exception:  # no permission, throttled, a fake without the call: not ours to judge
        return None


def choices(endpoint: str, names: list[str]) -> str:
    from ..planning.components.hosting import component_short_name

    short = [component_short_name(endpoint, n) for n in names]
    return ", ".join(f"{s} ({n})" if s != n else n for s, n in zip(short, names, strict=True))


def resolve_component(
    sm: Any, endpoint: str, component: str | None, *, flag: str = "component"
) -> str | None:
    """The InferenceComponentName to send to `endpoint` for `component` (None: none).

    SpecError (exit 2) when the endpoint hosts components and none is named, when the
    named one is not on the endpoint, or when one is named for an endpoint that hosts
    none; unchecked (returned as given) when the control plane cannot answer. `flag` is
    "/" when the caller wrote the choice as ENDPOINT/COMPONENT (race); otherwise messages
    name the `component` parameter (`component=` in Python, `--component` at the CLI)."""
    slash = flag == "/"
    names = components_of(sm, endpoint)
    if names is None:
        return component
    if not names:
        if component is None:
            return None
        raise SpecError(
            text(
                "endpoint {endpoint} hosts no inference components (or does not exist); "
                "drop {named}",
                endpoint=endpoint,
                named=f"/{component}" if slash else Param("component", component),
            ),
            remedy=text("see `{status}`", status=Call("status", endpoint)),
            field="component",
            value=component,
        )
    if component is None:
        raise SpecError(
            text(
                "endpoint {endpoint} hosts inference components and SageMaker needs one "
                "named: {how} with one of {choices}",
                endpoint=endpoint,
                how=f"write {endpoint}/COMPONENT" if slash else text("pass {component}"),
                choices=choices(endpoint, names),
            ),
            field="component",
            value=None,
        )
    from ..planning.components.hosting import component_full_name

    for name in (component, component_full_name(endpoint, component)):
        if name in names:
            return name
    raise SpecError(
        f"endpoint {endpoint} has no inference component {component!r}; "
        f"its components: {choices(endpoint, names)}",
        field="component",
        value=component,
    )
