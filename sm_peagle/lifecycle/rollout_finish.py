"""The end of a rollout: after a commit, the rollout's alarms go and each bake is checked
for traffic on the new fleet (an idle bake verified nothing: its alarms had nothing to
see); after a rollback, the alarm that caused it is named (`RolloutRolledBack`)."""

from __future__ import annotations

from typing import Any

from ..errors import Call, RolloutRolledBack, RolloutUnverified, text
from ..planning.rollout import RolloutPlan
from .rollout import RolloutReport, idle_bakes, remove_rollout_alarms
from .rollout_watch import Watch, phase_name, rollback_alarm

__all__ = ["finish_rollout", "rolled_back", "unverified_error"]


def _report(rp: RolloutPlan, seen: Watch, **kw: Any) -> RolloutReport:
    return RolloutReport(
        strategy=rp.strategy,
        steps=[s.to_dict() for s in rp.steps],
        alarms=list(rp.alarm_names),
        notes=list(rp.notes),
        phases=list(seen.phases),
        deployment_config=rp.deployment_config,
        new_config=rp.new_config,
        **kw,
    )


def _end(desc: dict[str, Any], seen: Watch, now: float) -> float:
    """When the deployment committed: the endpoint's LastModifiedTime when it falls after
    the deployment's start; else AWS's now, when the watch saw it settled."""
    from .rollout_watch import epoch

    t = epoch(desc.get("LastModifiedTime"))
    if t is None or (seen.started is not None and t < seen.started):
        return now
    return min(t, now)


def finish_rollout(
    lc: Any,
    name: str,
    rp: RolloutPlan,
    seen: Watch,
    desc: dict[str, Any],
    created: list[tuple[str, str]],
) -> RolloutReport:
    """After the switch-over: remove the rollout's alarms, read each bake's invocations
    on the new fleet, say "done" (with a warning per idle bake) and report."""
    remove_rollout_alarms(lc, created, name)
    windows = seen.windows(rp, _end(desc, seen, lc.aws.synced_aws_now().timestamp()))
    variant = (desc.get("ProductionVariants") or [{}])[0].get("VariantName", "AllTraffic")
    idle = idle_bakes(lc.aws, name, variant, rp.new_config, windows)
    notes = [] if idle is not None else ["the bakes' invocations could not be read"]
    for i in idle or []:
        lc.say(
            f"warning: bake {i} of {len(windows)} saw no invocations on the new fleet: not verified"
        )
    lc.say(f"done: {name} serves {rp.new_config}")
    report = _report(rp, seen, unverified_bakes=list(idle or []), outcome="completed")
    if notes:
        report.notes.extend(notes)
    return report


def unverified_error(
    name: str, report: RolloutReport, *, require_traffic: bool
) -> RolloutUnverified | None:
    """`RolloutUnverified` when a bake saw no traffic and the spec requires traffic (the
    default), else None."""
    if not report.unverified_bakes or not require_traffic:
        return None
    n = len(report.steps)
    new = report.new_config
    bakes = ", ".join(str(i) for i in report.unverified_bakes)
    word = "bake" if len(report.unverified_bakes) == 1 else "bakes"
    return RolloutUnverified(
        f"rollout of {name} completed but not verified: {word} {bakes} of {n} saw no "
        f"invocations on the new fleet; {name} serves {new}",
        unverified_bakes=report.unverified_bakes,
        serving=new,
        rollout=report,
        remedy=text(
            "send traffic during the bakes, or set rollout.require_traffic: false to accept "
            "an idle bake (then `{status}` shows it)",
            status=Call("status", name),
        ),
    )


def rolled_back(
    lc: Any,
    name: str,
    rp: RolloutPlan,
    seen: Watch,
    desc: dict[str, Any],
    old_config: str,
    sent_at: float,
) -> RolloutRolledBack:
    """The error for a rollout SageMaker rolled back: the first alarm to go to ALARM since
    the deployment started (DescribeAlarmHistory), its reason, and the bake it hit."""
    since = min(seen.started or sent_at, sent_at) - 1
    found = rollback_alarm(lc.aws, rp.alarm_names, since)
    phase = phase_name(rp, seen.last_step) if seen.last_step is not None else None
    if found is not None and seen.bake_starts:
        hit = [i for i, t in seen.bake_starts.items() if t <= found[2]]
        if hit:
            phase = phase_name(rp, max(hit))
    during = f" during the {phase}" if phase else ""
    reason = desc.get("FailureReason")
    if found is not None:
        alarm, why, _ = found
        cause = f"alarm {alarm} ({why})" if why else f"alarm {alarm}"
    else:
        alarm, why = None, None
        cause = (
            "no rollback alarm went to ALARM (the execution timeout, or SageMaker's own "
            f"reason: {reason or 'none given'})"
        )
    return RolloutRolledBack(
        f"update of {name} rolled back by SageMaker{during}: {cause}; still serving {old_config}",
        alarm=alarm,
        alarm_reason=why,
        phase=phase,
        still_serving=old_config,
        failure_reason=reason,
        remedy=text(
            "read `{health}` and `{logs}` for what the new fleet did",
            health=Call("health", name),
            logs=Call("logs", name),
        ),
    )


def component_rolled_back(
    lc: Any, component: str, rp: RolloutPlan, old_model: str | None
) -> RolloutRolledBack:
    """A component's rolling update SageMaker rolled back (it names its old model again):
    the first of the rollout's alarms to go to ALARM, when any did."""
    since = lc.aws.synced_aws_now().timestamp() - (rp.wait_s or 3600)
    found = rollback_alarm(lc.aws, rp.alarm_names, since) if rp.alarm_names else None
    cause = f"alarm {found[0]} ({found[1]})" if found else "no rollback alarm went to ALARM"
    return RolloutRolledBack(
        f"update of inference component {component} rolled back by SageMaker: {cause}; "
        f"still serving {old_model}",
        alarm=found[0] if found else None,
        alarm_reason=found[1] if found else None,
        phase="rolling update",
        still_serving=old_model,
    )
