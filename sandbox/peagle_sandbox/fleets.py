"""Two fleets behind one endpoint while a guardrail deployment runs (issue 38).

An UpdateEndpoint with a `DeploymentConfig` (blue/green canary, linear, all at once, or
rolling) runs the new endpoint config on a new fleet next to the old one, and shifts traffic
to it step by step; the harness runs that schedule on the sandbox clock and says where it
stands (`harness.rollout_of`: the new fleet's traffic share now). Here:

- `route`: which fleet serves one invocation: the new one when the invocation's seeded
  draw falls below the share, else the old one (the endpoint's own view: DescribeEndpoint
  names the old config until the deployment commits). Over n invocations at share p the new
  fleet thus gets a Binomial(n, p) count; at share 0 (provisioning, rolling back) none.
- `new_fleet_view`: the endpoint as the new fleet serves it: NEW's model and Environment
  (K, drafter), so what it generates, logs and publishes follows the new config.
- `new_fleet_views`: every new fleet in progress, for the log simulator (each fleet writes
  its own stream, `AllTraffic/i-...` of its own incarnation).
- `publish`: AWS/SageMaker's metrics of one invocation for the fleet that served it, so the
  rollout's latency and error alarms (dimension EndpointConfigName) see the new fleet.

The sandbox stands one instance for each fleet, whatever its instance count: one stream
(SIMULATED) or one engine (`--engine vllm`) per fleet. So the lines each fleet writes per
stats interval are one per fleet, and the mix of the two fleets' lines in a period follows
the instance shares only when each fleet has one instance (a canary of 1 of 2).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from peagle_sandbox.backend import EndpointView, all_endpoints, config_view

__all__ = ["new_fleet_view", "new_fleet_views", "publish", "route"]

log = logging.getLogger("peagle.sandbox")


def new_fleet_view(harness: Any, account: str, state: Any) -> EndpointView | None:
    """The new fleet of the deployment `state` (a `RolloutState`) as a view: `Creating`
    while it is provisioned, `InService` once it takes (or has taken) traffic."""
    status = "Creating" if state.phase == "provisioning" else "InService"
    return config_view(harness, account, state.region, state.endpoint, state.new_config, status)


def route(harness: Any, account: str, region: str, view: EndpointView, draw: float) -> EndpointView:
    """The view of the fleet that serves an invocation of `view`'s endpoint, given the
    invocation's uniform draw in [0, 1): the new fleet's when a deployment is shifting traffic
    and `draw` < its share, else `view` (the old fleet, or the only one)."""
    if view.component is not None:  # a component's rolling update replaces copies in place
        return view
    state = harness.rollout_of(view.name, region)
    if state is None or not draw < state.share:
        return view
    return new_fleet_view(harness, account, state) or view


def new_fleet_views(
    harness: Any, account: str, endpoints: list[EndpointView] | None = None
) -> list[EndpointView]:
    """The new fleet of every endpoint (of `endpoints`, default all) with a guardrail
    deployment in progress."""
    out = []
    for view in all_endpoints(harness, account) if endpoints is None else endpoints:
        state = harness.rollout_of(view.name, view.region)
        if state is not None:
            fleet = new_fleet_view(harness, account, state)
            if fleet is not None:
                out.append(fleet)
    return out


def publish(harness: Any, view: EndpointView, arrival: float, code: int) -> None:
    """AWS/SageMaker's Invocations, ModelLatency and 4XX/5XX of one invocation, for the
    fleet (`view.config`) that served it (`harness.record_invocation`); `code`: the model's
    status. ModelLatency: arrival to the last byte; the invocation held the sandbox clock at
    real time, so these real seconds are sandbox seconds too."""
    try:
        harness.record_invocation(
            view.region,
            view.name,
            view.variant,
            view.config,
            latency_us=max(int((time.time() - arrival) * 1e6), 0),
            status_code=code,
            component=view.component,
        )
    except Exception:  # a metrics hiccup must not fail an invocation that was served
        log.exception("recording the metrics of an invocation of %s failed", view.name)
