"""Update a component endpoint in place from a new plan (`peagle update`, `peagle apply`).

Per component: a new configuration (mode, K, image, environment) gets a new model and
UpdateInferenceComponent pointing at it, then the old model is removed once the component
is InService again; a new component is created; a component the plan no longer has is
removed (scaling first). The instances themselves (instance type, managed instance
scaling) are the endpoint config's: peagle refuses to change them in place (exit 2,
before any request), because it has no tested path for UpdateEndpoint under live
components (moto implements none, and no AWS source we hold says what happens to the
components then); delete and deploy instead.
"""

from __future__ import annotations

import time
from typing import Any

from ..errors import SpecError
from ..planning.plan_result import Plan
from .components import (
    _register_scaling,
    _tagged_components,
    deregister_component_scaling,
    list_components,
    wait_for_component,
)
from .resources import DeployResult, describe_existing, tagged_requests
from .update import _retag_endpoint

__all__ = ["update_components"]

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


def update_components(lc: Any, plan: Plan, *, timeout: float | None = None) -> DeployResult:
    """Bring the live components to the plan's; returns what was created."""
    plan.raise_for_failures()
    name = plan.names["endpoint"]
    current = describe_existing(lc.sm, name)
    _check_hosts(lc, plan, current["EndpointConfigName"])
    start, limit = time.monotonic(), timeout or 7200
    live = set(list_components(lc.sm, name))
    models, requests = _tagged_components(plan)
    by_name = {m["ModelName"]: m for m in models}
    created: list[tuple[str, str]] = []
    for req in requests:
        ic = req["InferenceComponentName"]
        if ic not in live:
            lc.sm.create_model(**by_name[req["Specification"]["ModelName"]])
            lc.sm.create_inference_component(**req)
            created.append(("inference_component", ic))
            wait_for_component(lc, ic, timeout=limit)
            continue
        _update_one(lc, ic, req, by_name, created, limit)
    for ic in sorted(live - {r["InferenceComponentName"] for r in requests}):
        deregister_component_scaling(lc, ic)
        old = lc.sm.describe_inference_component(InferenceComponentName=ic)["Specification"]
        lc.delete_and_confirm("inference_component", ic)
        lc.say(f"removed inference component {ic}")
        if old.get("ModelName"):
            _retire_model(lc, old["ModelName"])
    if plan.autoscaling:
        _register_scaling(lc, plan, [])
    _retag_endpoint(lc, current["EndpointArn"], tagged_requests(plan)[2]["Tags"])
    desc = lc.sm.describe_endpoint(EndpointName=name)
    return DeployResult(name, desc["EndpointStatus"], created, time.monotonic() - start, desc)


def _update_one(
    lc: Any,
    ic: str,
    req: dict[str, Any],
    models: dict[str, dict[str, Any]],
    created: list[tuple[str, str]],
    limit: float,
) -> None:
    """A new model for a changed configuration; copies follow the plan otherwise."""
    live = lc.sm.describe_inference_component(InferenceComponentName=ic)
    old_model = live["Specification"].get("ModelName")
    new_model = req["Specification"].get("ModelName")
    same = False
    if old_model and new_model:
        old = lc.sm.describe_model(ModelName=old_model)["PrimaryContainer"]
        same = _same_container(old, models[new_model]["PrimaryContainer"])
    if same:
        return
    lc.sm.create_model(**models[new_model])
    created.append(("model", new_model))
    lc.sm.update_inference_component(InferenceComponentName=ic, Specification=req["Specification"])
    lc.say(f"updating inference component {ic}: {old_model} -> {new_model}")
    wait_for_component(lc, ic, timeout=limit)
    if old_model:
        _retire_model(lc, old_model)


def _retire_model(lc: Any, model: str) -> None:
    """Delete a model its component no longer names, unless something else still uses it
    (an endpoint config, or any inference component: another endpoint's or a sibling)."""
    from .inventory import resource_users

    users = resource_users(lc.sm).get(model)
    if users:
        lc.say(f"kept old model {model}: {', '.join(sorted(users))} uses it")
        return
    lc.delete_and_confirm("model", model)
    lc.say(f"removed old model {model}")
