"""Step 9 of `plan()`: the rollout the spec asks for (`endpoint.rollout`), as the next
`update` would send it, for `plan` and the exports to show.

A deployment never sends it: CreateEndpoint takes no DeploymentConfig. The plan knows the
fleet only as the spec's `instance_count` (the live one may have scaled) and reads no live
metric, so an alarm whose threshold needs the live fleet (the mixed-fleet speculation
threshold, the default latency threshold) is left out with a note saying update derives it.
A strategy the spec's fleet cannot take is a warning here, not a failure: the deployment is
fine, and `update` refuses it (exit 2) if the live fleet still cannot take it.
"""

from __future__ import annotations

from typing import Any

from ...checks import passed, warned
from ...errors import SpecError, Text, text
from ..rollout import plan_rollout

__all__ = ["add_rollout", "provisioning_allowance"]


def provisioning_allowance(create_config: dict[str, Any]) -> float:
    """How long a new fleet may take to come up: the variant's download and health-check
    windows plus 15 minutes: the allowance the update's waiter gives a new endpoint too
    (lifecycle/waiter.default_timeout), so the plan and the update send the same timeout."""
    v = create_config["ProductionVariants"][0]
    return float(
        v.get("ModelDataDownloadTimeoutInSeconds", 3600)
        + v.get("ContainerStartupHealthCheckTimeoutInSeconds", 3600)
        + 15 * 60
    )


def _unprefixed(message: Text) -> Text:
    """The refusal without its `rollout: ` prefix: the check's name says it already."""
    parts = list(message.parts)
    if parts and isinstance(parts[0], str):
        parts[0] = parts[0].removeprefix("rollout: ")
    return Text(parts)


def _fleet(p: Any) -> tuple[int, bool]:
    """(instances, or copies on a component endpoint; component?). A component endpoint's
    update rolls one component: the smallest copy count is the one that must fit."""
    if p.inference_components:
        copies = [ic.get("RuntimeConfig", {}).get("CopyCount", 1) for ic in p.inference_components]
        return min(copies), True
    return p.spec.endpoint.instance_count, False


def add_rollout(p: Any) -> None:
    """`p.rollout` (a RolloutPlan) and a `rollout` check, when the spec has a rollout."""
    spec = p.spec.endpoint.rollout
    if spec is None:
        return
    fleet, component = _fleet(p)
    k = (p.speculative_config or {}).get("num_speculative_tokens")
    try:
        p.rollout = plan_rollout(
            spec,
            endpoint=p.names["endpoint"],
            new_config=p.create_endpoint_config["EndpointConfigName"],
            variant=p.spec.endpoint.variant_name,
            fleet=fleet,
            component=component,
            pools=bool(p.spec.endpoint.fallback_instance_types),
            k=int(k) if k else None,
            monitored=p.monitoring is not None,
            threshold=p.monitoring.threshold if p.monitoring is not None else None,
            provisioning_s=provisioning_allowance(p.create_endpoint_config),
            tags=dict(p.spec.tags),
            live_facts=False,
        )
    except SpecError as e:
        # the spec's fleet, not the live one (autoscaling may have grown it): a warning
        message = text(
            "{m} (for the spec's fleet; update judges the live one)", m=_unprefixed(e.message)
        )
        p.checks.append(warned("rollout", message, e.remedy, field="rollout"))
        return
    r = p.rollout
    unit = "copies" if component else "instances"
    alarms = ", ".join(r.alarm_names) or "none"
    p.checks.append(
        passed(
            "rollout",
            f"{r.strategy} over {r.fleet} {unit} in {len(r.steps)} step(s), for the next "
            f"update (deploy sends none); rollback alarms: {alarms}",
        )
    )
