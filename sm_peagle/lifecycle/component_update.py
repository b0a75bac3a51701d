"""Update a component endpoint in place from a new plan (`peagle update`, `peagle apply`).

Per component: a new configuration (mode, K, image, environment) gets a new model and
UpdateInferenceComponent pointing at it, then the old model is removed once the component
is InService again; a new component is created; a peagle component the plan no longer
has is removed (scaling first). A component someone else added to the endpoint (no
peagle:managed tag) is never changed or removed, nor is its model. The instances
themselves (instance type, managed instance scaling) are the endpoint config's: peagle
refuses to change them in place (exit 2, before any request), because it has no tested
path for UpdateEndpoint under live components (moto implements none, and no AWS source
we hold says what happens to the components then); delete and deploy instead.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from ..errors import SpecError
from ..planning.plan_result import Plan
from .components import (
    deregister_component_scaling,
    register_component_scaling,
    split_components,
    tagged_components,
    wait_for_component,
)
from .resources import DeployResult, describe_existing, tagged_requests
from .update import retag_endpoint

__all__ = ["ComponentChange", "plan_component_change", "update_components"]

_HOST_KEYS = ("InstanceType", "InitialInstanceCount", "ManagedInstanceScaling", "VolumeSizeInGB")


def _same_container(a: dict[str, Any], b: dict[str, Any]) -> bool:
    keys = ("Image", "Environment", "ModelDataSource", "AdditionalModelDataSources")
    return all(a.get(k) == b.get(k) for k in keys)


def _check_hosts(lc: Any, plan: Plan, config_name: str) -> None:
    live = lc.sm.describe_endpoint_config(EndpointConfigName=config_name)["ProductionVariants"][0]
    want = plan.create_endpoint_config["ProductionVariants"][0]
    changed = [k for k in _HOST_KEYS if live.get(k) != want.get(k)]
    if changed:
        raise SpecError(
            f"{plan.names['endpoint']}: {', '.join(changed)} of a component endpoint cannot "
            "be changed in place by peagle",
            remedy=f"`peagle delete {plan.names['endpoint']} --yes`, then deploy the new spec",
        )


class _ModelUsers:
    """Who still uses a model, for retiring the old ones. Everything except peagle's own
    components on this endpoint (other endpoints, their configs and components, and the
    foreign components here) is scanned once, on first need: an update changes none of it.
    What peagle's components here name changes as each is created, updated or removed, so
    it is tracked in `mine`, not read from that one scan."""

    def __init__(self, lc: Any, endpoint: str, mine: dict[str, str | None]) -> None:
        self.lc, self.endpoint, self.mine = lc, endpoint, mine
        self._others: dict[str, set[str]] | None = None

    def of(self, model: str) -> set[str]:
        if self._others is None:
            from .inventory import resource_users

            self._others = resource_users(self.lc.sm, skip_components=frozenset(self.mine))
        users = set(self._others.get(model, ()))
        if model in self.mine.values():
            users.add(self.endpoint)
        return users


@dataclass(frozen=True)
class ComponentChange:
    """One component's K/mode change, planned: the new plan, what changes (`component
    p-eagle: K 7 -> 5`), and whether the scale-to-zero requests stay as they were."""

    plan: Plan
    changes: list[str]
    same_scaling: bool
    unchanged: bool = False  # the component already runs these values: nothing to send

    def apply(self, lc: Any, *, timeout: float | None = None) -> DeployResult:
        return update_components(
            lc, self.plan, timeout=timeout, register_scaling=not self.same_scaling
        )


def plan_component_change(
    sm: Any, endpoint: str, component: str, *, k: int | None, mode: str | None
) -> ComponentChange:
    """The deployed spec (its tags) with `component`'s K and/or mode replaced, planned.
    SpecError (nothing sent) for an endpoint without components, an unknown component,
    a K for a baseline component, or a plan that fails its checks."""
    from ..planning.components.change import change_component, component_changes
    from ..planning.meaning import same_meaning
    from .resolve import plan
    from .spec_tags import deployed_spec

    current = deployed_spec(sm, endpoint)
    new = plan(change_component(current, endpoint, component, k=k, mode=mode))
    new.raise_for_failures()
    old = plan(current)
    if same_meaning(old, new):  # the values it runs: the deployed spec stands, tags and all
        return ComponentChange(old, [], True, unchanged=True)
    return ComponentChange(new, component_changes(old, new), old.autoscaling == new.autoscaling)


def update_components(
    lc: Any, plan: Plan, *, timeout: float | None = None, register_scaling: bool = True
) -> DeployResult:
    """Bring peagle's live components to the plan's; returns what was created. With
    `register_scaling` False the plan's scale-to-zero requests are not re-sent: for a
    change of one component's K or mode, which leaves every scaling request as it was
    (`peagle update --component NAME -k N` checks that), so no other component sees one."""
    plan.raise_for_failures()
    name = plan.names["endpoint"]
    current = describe_existing(lc.sm, name)
    _check_hosts(lc, plan, current["EndpointConfigName"])
    mine, foreign = split_components(lc.sm, name)
    models, requests = tagged_components(plan)
    taken = [
        r["InferenceComponentName"] for r in requests if r["InferenceComponentName"] in foreign
    ]
    if taken:
        raise SpecError(
            f"{name}: inference component(s) {', '.join(taken)} were not created by peagle; "
            "nothing was changed",
            remedy="remove them, or rename the plan's components",
        )
    start, limit = time.monotonic(), timeout or 7200
    specs = {ic: lc.sm.describe_inference_component(InferenceComponentName=ic) for ic in mine}
    users = _ModelUsers(
        lc, name, {ic: d["Specification"].get("ModelName") for ic, d in specs.items()}
    )
    by_name = {m["ModelName"]: m for m in models}
    created: list[tuple[str, str]] = []
    for req in requests:
        ic = req["InferenceComponentName"]
        if ic not in specs:
            lc.sm.create_model(**by_name[req["Specification"]["ModelName"]])
            lc.sm.create_inference_component(**req)
            users.mine[ic] = req["Specification"].get("ModelName")
            created.append(("inference_component", ic))
            wait_for_component(lc, ic, timeout=limit)
            continue
        _update_one(lc, specs[ic], req, by_name, created, limit, users)
    for ic in sorted(set(mine) - {r["InferenceComponentName"] for r in requests}):
        deregister_component_scaling(lc, ic)
        lc.delete_and_confirm("inference_component", ic)
        lc.say(f"removed inference component {ic}")
        old = users.mine.pop(ic)
        if old:
            _retire_model(lc, old, users)
    for ic in foreign:
        lc.say(f"kept inference component {ic}: not peagle's")
    if plan.autoscaling and register_scaling:
        register_component_scaling(lc, plan, [])
    retag_endpoint(lc, current["EndpointArn"], tagged_requests(plan)[2]["Tags"])
    desc = lc.sm.describe_endpoint(EndpointName=name)
    return DeployResult(name, desc["EndpointStatus"], created, time.monotonic() - start, desc)


def _same_inline(live: dict[str, Any], spec: dict[str, Any]) -> bool:
    """Whether a component's inline container (DescribeInferenceComponent's summary: the
    image under DeployedImage.SpecifiedImage) is the one the plan asks for."""
    want = spec.get("Container") or {}
    image = (live.get("DeployedImage") or {}).get("SpecifiedImage", live.get("Image"))
    return (
        image == want.get("Image")
        and (live.get("Environment") or {}) == (want.get("Environment") or {})
        and live.get("ArtifactUrl") == want.get("ArtifactUrl")
    )


def _update_one(
    lc: Any,
    live: dict[str, Any],
    req: dict[str, Any],
    models: dict[str, dict[str, Any]],
    created: list[tuple[str, str]],
    limit: float,
    users: _ModelUsers,
) -> None:
    """A new model for a changed configuration; copies follow the plan otherwise."""
    ic = live["InferenceComponentName"]
    old_model = live["Specification"].get("ModelName")
    new_model = req["Specification"].get("ModelName")
    same = False
    if old_model and new_model:
        old = lc.sm.describe_model(ModelName=old_model)["PrimaryContainer"]
        same = _same_container(old, models[new_model]["PrimaryContainer"])
    elif not old_model and not new_model:  # an inline container (no model) both times
        same = _same_inline(live["Specification"].get("Container") or {}, req["Specification"])
    if same:
        return
    if new_model:  # an inline container has no model to create
        lc.sm.create_model(**models[new_model])
        created.append(("model", new_model))
    lc.sm.update_inference_component(InferenceComponentName=ic, Specification=req["Specification"])
    users.mine[ic] = new_model
    lc.say(f"updating inference component {ic}: {old_model} -> {new_model}")
    wait_for_component(lc, ic, timeout=limit)
    if old_model:
        _retire_model(lc, old_model, users)


def _retire_model(lc: Any, model: str, users: _ModelUsers) -> None:
    """Delete a model its component no longer names, unless something else still uses it
    (an endpoint config, or any inference component: another endpoint's or a sibling)."""
    using = users.of(model)
    if using:
        lc.say(f"kept old model {model}: {', '.join(sorted(using))} uses it")
        return
    lc.delete_and_confirm("model", model)
    lc.say(f"removed old model {model}")
