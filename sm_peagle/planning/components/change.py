"""One inference component's configuration changed in a deployed spec.

On an endpoint that hosts inference components, K and mode are per component
(`inference_components.components[].k` / `.mode`): the spec's top-level K and mode only
fill in what a component leaves unset. So `peagle update EP -k 5` names no component and
is refused (`refuse_top_level_change`), and `peagle update EP --component p-eagle -k 5`
(`Endpoint.update(component="p-eagle", k=5)`) replaces that one component's K or mode
(`change_component`); the lifecycle then updates that component only.
`component_changes` says what changes, from the two plans.
"""

from __future__ import annotations

import json
from typing import Any

from ...errors import Call, Param, SpecError, Text, text
from ..spec.loading import spec_from_data
from ..spec.model import DeploymentSpec
from .specs import ComponentSpec

__all__ = ["change_component", "component_changes", "refuse_top_level_change"]

SPEC_ENV = "SM_VLLM_SPECULATIVE_CONFIG"


def _hosts_components(spec: DeploymentSpec) -> bool:
    return spec.endpoint.hosting == "inference-components"


def _components(spec: DeploymentSpec) -> list[ComponentSpec]:
    """The spec's components; none listed is one named for the spec's mode (as planned)."""
    ics = spec.inference_components
    return (ics.components if ics else None) or [ComponentSpec(name=spec.speculative.mode.value)]


def _mode_of(spec: DeploymentSpec, comp: ComponentSpec) -> str:
    return comp.resolved_mode(spec.speculative.mode.value)


def _flags(component: str, k: int | None, mode: str | None) -> Text:
    """`component='p-eagle' k=5` in Python, `--component p-eagle -k 5` at the CLI."""
    given = {"component": Param("component", component)}
    if mode is not None:
        given["mode"] = Param("mode", mode)
    if k is not None:
        given["k"] = Param("k", k)
    return text(" ".join(f"{{{key}}}" for key in given), **given)


def refuse_top_level_change(
    spec: DeploymentSpec, endpoint: str, *, k: int | None, mode: str | None
) -> None:
    """SpecError when K or mode is changed without naming a component on an endpoint that
    hosts components: each component has its own, so nothing would say which."""
    if not _hosts_components(spec) or (k is None and mode is None):
        return
    comps = _components(spec)
    takers = [c.name for c in comps if _mode_of(spec, c) != "baseline"]
    what = "K is" if k is not None else "mode is"
    if k is not None and not takers:
        example = _flags(comps[0].name, k, mode or "p-eagle")
        raise SpecError(
            text(
                "{endpoint} hosts inference components, none of which takes a K "
                "({names} run baseline); pass {example} (K is per component)",
                endpoint=endpoint,
                names=", ".join(c.name for c in comps),
                example=example,
            ),
            field="component",
        )
    choices = takers if k is not None else [c.name for c in comps]
    listed = f": {', '.join(choices)}" if len(choices) > 1 else ""
    raise SpecError(
        text(
            "{endpoint} hosts inference components; pass {example} ({what} per component{listed})",
            endpoint=endpoint,
            example=_flags(choices[0], k, mode),
            what=what,
            listed=listed,
        ),
        field="component",
    )


def _find(spec: DeploymentSpec, endpoint: str, component: str) -> ComponentSpec:
    from .hosting import component_full_name

    comps = _components(spec)
    for comp in comps:
        if component in (comp.name, component_full_name(endpoint, comp.name)):
            return comp
    raise SpecError(
        f"{endpoint} has no inference component {component!r}; its components: "
        f"{', '.join(c.name for c in comps)}",
        remedy=text("see `{status}`", status=Call("status", endpoint)),
        field="component",
        value=component,
    )


def change_component(
    spec: DeploymentSpec,
    endpoint: str,
    component: str,
    *,
    k: int | None = None,
    mode: str | None = None,
) -> DeploymentSpec:
    """`spec` with one component's K and/or mode replaced (the component by its short
    name or its full InferenceComponentName). Switching to baseline drops its K; a K for
    a component that runs baseline is refused. SpecError for an endpoint without
    components, an unknown component, or nothing to change."""
    if not _hosts_components(spec):
        raise SpecError(
            text(
                "{endpoint} hosts no inference components; drop {component} (`{update}` "
                "changes its K)",
                endpoint=endpoint,
                update=Call("update", endpoint, k="N"),
            ),
            field="component",
            value=component,
        )
    if k is None and mode is None:
        raise SpecError(
            text("update {c}: give {k}, {mode} or {copies}", c=Param("component", component)),
            field="component",
            value=component,
        )
    comp = _find(spec, endpoint, component)
    new_mode = mode or _mode_of(spec, comp)
    if k is not None and new_mode == "baseline":
        raise SpecError(
            f"component {comp.name} runs baseline (no speculative decoding): it takes no K",
            remedy=text("give it a mode too: {flags}", flags=_flags(comp.name, k, "p-eagle")),
            field="k",
            value=k,
        )
    data = spec.model_dump(mode="json", exclude_unset=True)
    ics = data.setdefault("inference_components", {})
    ics["components"] = [c.model_dump(mode="json", exclude_unset=True) for c in _components(spec)]
    target = next(c for c in ics["components"] if c["name"] == comp.name)
    if mode is not None:
        target["mode"] = mode
        if mode == "baseline":
            target.pop("k", None)
    if k is not None:
        target["k"] = k
    return spec_from_data(data)


def _settings(plan: Any) -> dict[str, tuple[str, Any]]:
    """Component short name -> (mode, K) as planned (K from the speculative config the
    component's container gets, so a K left to the default shows its value)."""
    models = {m["ModelName"]: m for m in plan.component_models}
    out: dict[str, tuple[str, Any]] = {}
    for comp, req in zip(_components(plan.spec), plan.inference_components, strict=False):
        spec = req["Specification"]
        container = spec.get("Container") or models.get(spec.get("ModelName"), {}).get(
            "PrimaryContainer", {}
        )
        raw = (container.get("Environment") or {}).get(SPEC_ENV)
        k = json.loads(raw).get("num_speculative_tokens", "-") if raw else "-"
        out[comp.name] = (_mode_of(plan.spec, comp), k)
    return out


def component_changes(old: Any, new: Any) -> list[str]:
    """`component p-eagle: K 7 -> 5`, `component k7: mode p-eagle -> eagle3`, ... from
    the plans before and after; a component only one of them has is `added`/`removed`."""
    before, after = _settings(old), _settings(new)
    lines: list[str] = []
    for name in [*before, *(n for n in after if n not in before)]:
        if name not in after or name not in before:
            lines.append(f"component {name}: {'removed' if name not in after else 'added'}")
            continue
        (m0, k0), (m1, k1) = before[name], after[name]
        diffs = [f"mode {m0} -> {m1}"] * (m0 != m1) + [f"K {k0} -> {k1}"] * (k0 != k1)
        if diffs:
            lines.append(f"component {name}: {', '.join(diffs)}")
    return lines
