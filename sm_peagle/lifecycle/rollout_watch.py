"""Watching a rollout: the phase from DescribeEndpoint's PendingDeploymentSummary (one line
per change), the bake windows seen, and, after a rollback, the alarm that caused it (from
CloudWatch's alarm history: DescribeEndpoint names none).

The phase is the newest VariantStatus of the pending variant: Creating/Updating before any
traffic moved ("provisioning the new fleet"), ActivatingTraffic then Baking once a step
took its share; the step is the first planned one whose share reaches the new fleet's
(CurrentInstanceCount of DesiredInstanceCount). A guardrail rollback shows `Updating`
without a pending summary (RollingBack is documented only for
UpdateEndpointWeightsAndCapacities; it is treated as in progress too).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import Call, DeploymentFailed, DeploymentTimeout, text
from ..planning.rollout import RolloutPlan
from .waiter import WaitState, describe_or_gone

__all__ = [
    "Watch",
    "describe_phase",
    "epoch",
    "rollout_status",
    "phase_name",
    "rollback_alarm",
    "watch_rollout",
]

IN_PROGRESS = {"Creating", "Updating", "SystemUpdating", "RollingBack"}
BAD = {"Failed", "UpdateRollbackFailed", "OutOfService"}
EPS = 1e-6


def epoch(value: Any) -> float | None:
    if value is None:
        return None
    if hasattr(value, "timestamp"):
        return float(value.timestamp())
    try:
        return float(value)
    except (TypeError, ValueError):
        from datetime import datetime

        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()


def _clock(seconds: int) -> str:
    return f"{seconds // 60}:{seconds % 60:02d}"


def step_index(rp: RolloutPlan, share: float) -> int:
    """The planned step (0-based) the new fleet's share has reached."""
    for i, step in enumerate(rp.steps):
        if share <= step.share + EPS:
            return i
    return len(rp.steps) - 1


def phase_name(rp: RolloutPlan, i: int) -> str:
    """ "canary bake", "step 2 of 4 bake", "batch 1 of 3 bake", "final bake"."""
    step = rp.steps[i]
    if step.final:
        return "final bake"
    if rp.strategy == "canary":
        return "canary bake"
    n = len([s for s in rp.steps if not s.final])
    what = "batch" if rp.strategy == "rolling" else "step"
    return f"{what} {i + 1} of {n} bake"


def _pending(desc: dict[str, Any]) -> dict[str, Any] | None:
    pds = desc.get("PendingDeploymentSummary") or {}
    variants = pds.get("ProductionVariants") or []
    return variants[0] if variants else None


def describe_phase(
    rp: RolloutPlan, desc: dict[str, Any]
) -> tuple[str, str, int | None, float | None] | None:
    """(phase, line, step, bake start) for one description, or None when no rollout phase
    shows (settled). The line is what `update` prints when the phase changes."""
    status = desc.get("EndpointStatus")
    pv = _pending(desc)
    if pv is None:
        if status in ("Updating", "RollingBack"):
            return "rolling back", "rolling back to the old fleet", None, None
        return None
    vs = (pv.get("VariantStatus") or [{}])[-1]
    state = vs.get("Status", "Creating")
    want = int(pv.get("DesiredInstanceCount") or rp.fleet or 1)
    now = int(pv.get("CurrentInstanceCount") or 0)
    if state == "Deleting":  # traffic returns to the old fleet
        return "rolling back", "rolling back to the old fleet", None, None
    if state not in ("ActivatingTraffic", "Baking") or now == 0:
        return "provisioning", "provisioning the new fleet", None, None
    share = now / want if want else 1.0
    i = step_index(rp, share)
    step = rp.steps[i]
    name = phase_name(rp, i)
    unit = "copies" if rp.component else "instances"
    label = "final bake" if step.final else name.removesuffix(" bake")
    alarms = ", ".join(rp.alarm_names) or "none"
    line = (
        f"{label}: {now} of {want} {unit} on {rp.new_config} ({share:.0%}), "
        f"baking {_clock(step.bake_s)} (alarms: {alarms})"
    )
    start = epoch(vs.get("StartTime")) if state == "Baking" else None
    return name, line, i, start


@dataclass
class Watch:
    """What the watch saw: the phases in order, each step's bake start (when seen), and
    the deployment's start (PendingDeploymentSummary.StartTime)."""

    phases: list[str] = field(default_factory=list)
    bake_starts: dict[int, float] = field(default_factory=dict)
    started: float | None = None
    last_step: int | None = None

    def windows(self, rp: RolloutPlan, end: float) -> list[tuple[float, float]]:
        """Each step's bake window: from its Baking StartTime when seen; one not seen is
        placed back from the next one's start (or the commit, `end`) by its bake time:
        the steps follow one another, and a shift takes no time (an assumption; a rolling
        batch's provisioning comes before its bake, so the bake is still the last part)."""
        out: list[tuple[float, float]] = [(0.0, 0.0)] * len(rp.steps)
        nxt = end
        for i in reversed(range(len(rp.steps))):
            start = self.bake_starts.get(i, nxt - rp.steps[i].bake_s)
            out[i] = (start, start + rp.steps[i].bake_s)
            nxt = start
        return out


def watch_rollout(
    lc: Any,
    name: str,
    rp: RolloutPlan,
    *,
    limit: float,
    on_poll: Callable[[WaitState], None] | None = None,
    seen: Watch | None = None,
) -> dict[str, Any]:
    """Poll DescribeEndpoint until the update settles (InService, on either config); one
    line per phase change (`lc.say`). DeploymentFailed for Failed/UpdateRollbackFailed,
    DeploymentTimeout after `limit` seconds."""

    w = seen if seen is not None else Watch()
    start = time.monotonic()
    interval, polls, last_status = lc.poll_initial, 0, None
    while True:
        desc = describe_or_gone(lc.sm, name)
        polls += 1
        status = desc["EndpointStatus"]
        pds = desc.get("PendingDeploymentSummary") or {}
        if w.started is None and pds.get("StartTime") is not None:
            w.started = epoch(pds["StartTime"])
        phase = describe_phase(rp, desc)
        if phase is not None and phase[0] == "rolling back" and not w.phases:
            phase = None  # Updating before the summary shows: nothing moved yet
        if phase is not None:
            key, line, i, bake_start = phase
            if i is not None and bake_start is not None:
                w.bake_starts.setdefault(i, bake_start)
            if i is not None:
                w.last_step = i
            if not w.phases or w.phases[-1] != key:
                w.phases.append(key)
                lc.say(line)
        elapsed = time.monotonic() - start
        if on_poll:
            on_poll(WaitState(name, status, elapsed, polls, desc))
        if status == "InService":
            return desc
        if status in BAD:
            raise DeploymentFailed(
                f"endpoint {name} is {status}: {desc.get('FailureReason') or 'no reason given'}"
                + (
                    "; a mix of the old and new fleets may be serving"
                    if status == "UpdateRollbackFailed"
                    else ""
                ),
                failure_reason=desc.get("FailureReason"),
                remedy=text("read `{logs}`; AWS's rolling deployment guide says how to "
                            "recover", logs=Call("logs", name)),
            )  # fmt: skip
        if elapsed >= limit:
            raise DeploymentTimeout(
                f"endpoint {name} still {status} after {elapsed:.0f}s of its rollout",
                remedy=text("`{update}` waits for it and finishes it",
                            update=Call("update", name, yes=True)),
            )  # fmt: skip
        interval = lc.poll_initial if status != last_status else min(interval * 1.5, lc.poll_max)
        last_status = status
        lc.sleep(min(interval, max(limit - elapsed, 0.01)))


def rollback_alarm(
    aws: Any, alarms: list[str], since: float
) -> tuple[str, str | None, float] | None:
    """The alarm that went to ALARM first since `since` (epoch s), its StateReason and
    when: CloudWatch DescribeAlarmHistory (StateUpdate) per alarm. None when none did (a
    rollback on the execution timeout, or a history that cannot be read)."""
    from datetime import UTC, datetime

    cw = aws.client("cloudwatch")
    first: tuple[str, str | None, float] | None = None
    for alarm in alarms:
        try:
            pages = cw.get_paginator("describe_alarm_history").paginate(
                AlarmName=alarm,
                HistoryItemType="StateUpdate",
                StartDate=datetime.fromtimestamp(since, UTC),
                EndDate=datetime.fromtimestamp(aws.synced_aws_now().timestamp() + 60, UTC),
            )
            items = [i for p in pages for i in p.get("AlarmHistoryItems", [])]
        except Exception:
            continue
        for item in items:
            try:
                data = json.loads(item.get("HistoryData") or "{}")
            except ValueError:
                data = {}
            new = data.get("newState") or {}
            if new.get("stateValue") != "ALARM":
                continue
            when = epoch(item.get("Timestamp")) or 0.0
            if first is None or when < first[2]:
                first = (alarm, new.get("stateReason") or item.get("HistorySummary"), when)
    return first


STRATEGY_TAG = "peagle:rollout-strategy"  # on a rollout's alarms: for `status` to name it
BAKE_TAG = "peagle:rollout-bake"  # "<step bake s>/<final bake s>"


def rollout_status(aws: Any, name: str, desc: dict[str, Any]) -> dict[str, Any] | None:
    """A rollout in progress, for `status` (None when no deployment is pending): the new
    config, the strategy (from peagle's rollout alarms' tags; None for a rollout peagle did
    not start), the phase, the new fleet's share, the bake's start and what is left of it,
    and the rollout alarms with their states (one DescribeAlarms)."""
    from datetime import UTC, datetime

    pv = _pending(desc)
    pds = desc.get("PendingDeploymentSummary") or {}
    if pv is None:
        return None
    vs = (pv.get("VariantStatus") or [{}])[-1]
    state = vs.get("Status")
    want = int(pv.get("DesiredInstanceCount") or 0)
    now_up = int(pv.get("CurrentInstanceCount") or 0)
    share = round(now_up / want, 4) if want else None
    phase = {"ActivatingTraffic": "shifting", "Baking": "baking", "Deleting": "rolling back"}
    out: dict[str, Any] = {
        "new_config": pds.get("EndpointConfigName"),
        "strategy": None,
        "phase": phase.get(str(state), "provisioning"),
        "new_share": share,
        "bake_started": None,
        "bake_left_s": None,
        "alarms": [],
    }
    tags: dict[str, str] = {}
    try:
        cw = aws.client("cloudwatch")
        found = cw.describe_alarms(AlarmNamePrefix=f"{name}-rollout-").get("MetricAlarms", [])
        out["alarms"] = [{"name": a["AlarmName"], "state": a["StateValue"]} for a in found]
        if found:
            from .monitoring_read import cloudwatch_tags

            tags = cloudwatch_tags(cw, found[0]["AlarmArn"])
    except Exception as e:  # a policy without DescribeAlarms still gets the rest
        out["alarms_unreadable"] = str(getattr(e, "response", {}).get("Error", {}).get("Code"))
    out["strategy"] = tags.get(STRATEGY_TAG)
    if state == "Baking" and vs.get("StartTime") is not None:
        start = epoch(vs["StartTime"])
        assert start is not None
        out["bake_started"] = datetime.fromtimestamp(start, UTC).isoformat()
        bakes = [int(b) for b in tags.get(BAKE_TAG, "").split("/") if b.isdigit()]
        if bakes:
            bake = bakes[-1] if share is not None and share >= 1 else bakes[0]
            left = start + bake - aws.synced_aws_now().timestamp()
            out["bake_left_s"] = max(0, int(left))
    return out
