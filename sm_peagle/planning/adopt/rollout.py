"""`peagle adopt`: the endpoint's last DeploymentConfig back as `endpoint.rollout`.

DescribeEndpoint's `LastDeploymentConfig` is "the most recent deployment configuration for
the endpoint" (botocore's model). It maps onto the spec's rollout field by field, the
inverse of `planning/rollout.py`:
- BlueGreenUpdatePolicy: ALL_AT_ONCE -> all-at-once (its bake is TerminationWaitInSeconds);
  CANARY / LINEAR -> canary / linear, `size` from CanarySize / LinearStepSize, `bake` from
  WaitIntervalInSeconds, `final_bake` from TerminationWaitInSeconds when it differs (its
  default is 0);
- RollingUpdatePolicy -> rolling, `size` from MaximumBatchSize, `rollback_size` from
  RollbackMaximumBatchSize;
- MaximumExecutionTimeoutInSeconds -> `timeout` (what ran, kept);
- CapacitySize: INSTANCE_COUNT / COPY_COUNT -> a count, CAPACITY_PERCENT -> "N%";
- AutoRollbackConfiguration: peagle's own `<endpoint>-rollout-*` alarms are dropped (the
  next update makes them again, from the live fleet); any other alarm name is kept in
  `alarms`. Without peagle's alarms, `rollback_on` is [] (none of them ran).
Their thresholds cannot be read back: peagle deletes a rollout's alarms once it settles.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from ..rollout import rollout_alarm_name
from ..spec.rollout_spec import ROLLBACK_SIGNALS, RolloutSpec

__all__ = ["rollout_from"]

_TYPES = {"ALL_AT_ONCE": "all-at-once", "CANARY": "canary", "LINEAR": "linear"}


def _size(capacity: dict[str, Any] | None) -> int | str | None:
    if not capacity:
        return None
    value = capacity.get("Value")
    return f"{value}%" if capacity.get("Type") == "CAPACITY_PERCENT" else value


def _fields(config: dict[str, Any]) -> dict[str, Any]:
    """The rollout's fields but its alarms; ValueError for a config with no policy."""
    blue_green = config.get("BlueGreenUpdatePolicy")
    rolling = config.get("RollingUpdatePolicy")
    out: dict[str, Any] = {}
    if rolling:
        out["strategy"] = "rolling"
        out["size"] = _size(rolling.get("MaximumBatchSize"))
        out["bake"] = rolling.get("WaitIntervalInSeconds", 0)
        out["rollback_size"] = _size(rolling.get("RollbackMaximumBatchSize"))
        out["timeout"] = rolling.get("MaximumExecutionTimeoutInSeconds")
    elif blue_green:
        routing = blue_green.get("TrafficRoutingConfiguration") or {}
        strategy = _TYPES.get(routing.get("Type", ""))
        if strategy is None:
            raise ValueError(f"traffic routing type {routing.get('Type')!r} is not one peagle has")
        final = blue_green.get("TerminationWaitInSeconds", 0)  # "Default is 0"
        out["strategy"] = strategy
        if strategy == "all-at-once":
            out["bake"] = final  # all-at-once's one bake is the final one
        else:
            out["bake"] = routing.get("WaitIntervalInSeconds", 0)
            out["size"] = _size(routing.get("CanarySize") or routing.get("LinearStepSize"))
            if final != out["bake"]:
                out["final_bake"] = final
        out["timeout"] = blue_green.get("MaximumExecutionTimeoutInSeconds")
    else:
        raise ValueError("it names no update policy")
    return {k: v for k, v in out.items() if v is not None}


def rollout_from(config: dict[str, Any] | None, endpoint: str) -> tuple[dict | None, list[str]]:
    """(the `endpoint.rollout` section, notes) for DescribeEndpoint's LastDeploymentConfig;
    (None, notes) when there is none or it cannot be one (the notes say why)."""
    if not config:
        return None, []
    try:
        fields = _fields(config)
    except ValueError as e:
        return None, [f"LastDeploymentConfig not carried: {e}"]
    rollback = config.get("AutoRollbackConfiguration") or {}
    names = [a["AlarmName"] for a in rollback.get("Alarms", [])]
    own = {rollout_alarm_name(endpoint, s) for s in ROLLBACK_SIGNALS}
    dropped = [n for n in names if n in own]
    fields["alarms"] = [n for n in names if n not in own]
    if not dropped:
        fields["rollback_on"] = []  # the last update ran without peagle's alarms
    try:
        spec = RolloutSpec(**fields)
    except ValidationError as e:
        reason = "; ".join(err["msg"] for err in e.errors())
        return None, [f"LastDeploymentConfig not carried ({reason})"]
    notes = [f"rollout from LastDeploymentConfig: {spec.strategy}"]
    if dropped:
        notes.append(
            f"peagle's rollout alarms ({', '.join(dropped)}) left out: the next update makes "
            "them again from the live fleet (their thresholds are not read back)"
        )
    # the strategy written out even when it is the default: the section reads on its own
    return {"strategy": spec.strategy, **spec.model_dump(mode="json", exclude_defaults=True)}, notes
