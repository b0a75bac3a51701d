"""SageMaker's deployment guardrails for the moto harness: UpdateEndpoint with a
`DeploymentConfig` runs its steps on the harness clock and rolls back on a named alarm.

Sources: botocore 1.44.8's model (`DeploymentConfig`, `PendingDeploymentSummary`,
`LastDeploymentConfig`) and AWS's deployment-guardrails guides (blue/green canary and
linear, rolling, auto-rollback, exclusions). What they leave open is marked [INF]:

- Validation: botocore's model (moto_validate) and the documented rules: one update policy;
  CanarySize with CANARY, LinearStepSize with LINEAR; CanarySize <= 50% of the variant's
  instances, LinearStepSize 10-50%, rolling MaximumBatchSize 5-50%; a step of one
  instance or more [INF: a percentage below one instance is undocumented, refused];
  MaximumExecutionTimeoutInSeconds larger than the waits ("should be larger"); the new
  config keeps the variant name [DOC]; rolling takes one variant [DOC]; every alarm exists
  in CloudWatch [INF]. Refusals are ValidationException; their wording is assumed.
- The schedule [INF where the guides are silent] (design38 decision 1): provisioning
  (VariantStatus Creating; `provisioning_seconds`, or held until `fleet_ready`), then per
  step ActivatingTraffic at the shift instant and Baking for WaitIntervalInSeconds; the
  blue/green final bake (TerminationWaitInSeconds) at 100%; rolling provisions each batch
  before it shifts and has no final bake. Then commit: InService on the new config.
- Rollback (decision 2): a named alarm in ALARM at a bake's start, or a StateUpdate to
  ALARM inside a bake ([start, end), from the alarm history's timestamps), or
  MaximumExecutionTimeoutInSeconds passed, or the new fleet failing. Then `Updating` for
  `rollback_seconds` and InService on the OLD config, PendingDeploymentSummary gone,
  FailureReason = `rollback_failure_reason` (None by default: terraform PR #49020's case)
  or the new fleet's failure. A clock jump is walked in time order: the earliest event wins.
- PendingDeploymentSummary's variant [INF]: CurrentWeight = DesiredWeight x the new
  fleet's traffic share; CurrentInstanceCount = the new-fleet instances taking traffic
  (share x DesiredInstanceCount: 0 while provisioning, 1 of 2 during a canary of 1).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from moto.cloudwatch.models import cloudwatch_backends

from peagle_sandbox.testing.moto_rollout_rules import Step, check_deployment, fleet_size, refuse

__all__ = [
    "Rollout",
    "RolloutState",
    "Segment",
    "alarm_tripped",
    "fire",
    "next_event",
    "render",
    "retained_variants",
    "start_component_rollout",
    "start_endpoint_rollout",
    "state_at",
    "walk_component",
    "walk_endpoint",
]

Key = tuple[str, str, str]  # (account_id, region, endpoint or component name)
Listener = Callable[[str, str, str, str, str], object]


@dataclass(frozen=True)
class RolloutState:
    """A guardrail deployment in progress, as the sandbox reads it.

    kind: "ALL_AT_ONCE" | "CANARY" | "LINEAR" | "ROLLING". phase: "provisioning" |
    "baking" | "final-bake" | "rolling-back". step: 1-based of `steps`. share: the new
    fleet's traffic share now (the previous step's while a rolling batch provisions; 0.0
    while the first provisions or while rolling back). bake_ends: epoch seconds or None.
    """

    endpoint: str
    region: str
    old_config: str
    new_config: str
    kind: str
    phase: str
    step: int
    steps: int
    share: float
    bake_ends: float | None
    alarms: tuple[str, ...]


@dataclass(frozen=True)
class Segment:
    phase: str  # provisioning | baking | final-bake
    step: int  # 1-based
    start: float
    end: float
    share: float
    instances: int


@dataclass
class Rollout:
    """One guardrail deployment (an endpoint's, or a component's rolling update)."""

    key: Key
    old_config: str
    new_config: str
    kind: str
    steps: list[Step]
    alarms: tuple[str, ...]
    deployment_config: dict[str, Any]
    started: float
    fleet: int
    provisioning_s: float
    held: bool = False  # provisioning waits for fleet_ready (the real engine)
    ready_at: float | None = None
    timeout_s: float | None = None
    failure: str | None = None  # a scheduled failure of the new fleet (at provisioning's end)
    rollback_at: float | None = None
    rollback_until: float | None = None
    rollback_reason: str | None = None
    payload: dict[str, Any] = field(default_factory=dict)  # what a commit applies

    @property
    def rolling(self) -> bool:
        return self.kind == "ROLLING"

    def segments(self) -> list[Segment]:
        """The schedule from `started`; a held provisioning lasts until fleet_ready."""
        first = (
            (self.ready_at if self.ready_at is not None else math.inf)
            if self.held
            else self.started + self.provisioning_s
        )
        later = 0.0 if self.held else self.provisioning_s  # one engine stands for all [INF]
        out: list[Segment] = [Segment("provisioning", 1, self.started, first, 0.0, 0)]
        t, share, up = first, 0.0, 0
        for i, step in enumerate(self.steps, start=1):
            if self.rolling and i > 1:
                out.append(Segment("provisioning", i, t, t + later, share, up))
                t += later
            phase = "final-bake" if step.final else "baking"
            out.append(Segment(phase, i, t, t + step.bake_s, step.share, step.instances))
            t += step.bake_s
            share, up = step.share, step.instances
        return out

    def commit_at(self) -> float:
        return self.segments()[-1].end

    def state(self, now: float, region: str) -> RolloutState:
        name = self.key[2]
        if self.rollback_at is not None:
            return RolloutState(name, region, self.old_config, self.new_config, self.kind,
                                "rolling-back", 0, len(self.steps), 0.0, None,
                                self.alarms)  # fmt: skip
        seg = self.segment_at(now)
        bake_ends = seg.end if seg.phase != "provisioning" else None
        return RolloutState(name, region, self.old_config, self.new_config, self.kind,
                            seg.phase, seg.step, len(self.steps), seg.share, bake_ends,
                            self.alarms)  # fmt: skip

    def segment_at(self, now: float) -> Segment:
        segs = self.segments()
        for seg in segs:
            if seg.start <= now < seg.end:
                return seg
        return segs[-1]


# ---------------------------------------------------------------- alarms in bakes


def _history_states(history: list[dict[str, Any]], name: str) -> list[tuple[float, str, str]]:
    """(epoch, old state, new state) of the alarm's StateUpdates, oldest first."""
    out = []
    for item in history:
        if item["AlarmName"] != name or item["HistoryItemType"] != "StateUpdate":
            continue
        data = json.loads(item["HistoryData"])
        at = item["Timestamp"].replace(tzinfo=UTC).timestamp()
        out.append((at, data["oldState"]["stateValue"], data["newState"]["stateValue"]))
    return sorted(out)


def state_at(history: list[dict[str, Any]], name: str, current: str, t: float) -> str:
    """The alarm's state at `t`, from its history (the current state when none)."""
    changes = _history_states(history, name)
    before = [new for at, _, new in changes if at <= t]
    if before:
        return before[-1]
    after = [old for at, old, _ in changes if at > t]
    return after[0] if after else current


def alarm_tripped(
    history: list[dict[str, Any]], states: dict[str, str], names: tuple[str, ...],
    start: float, end: float, now: float,
) -> tuple[float, str] | None:  # fmt: skip
    """The earliest (time, alarm) at which one of `names` is ALARM inside the bake window
    [start, end) seen up to `now`: ALARM when it starts, or a StateUpdate to ALARM in it."""
    best: tuple[float, str] | None = None
    for name in names:
        if name not in states:
            continue  # deleted since: its history no longer speaks for it
        if state_at(history, name, states[name], start) == "ALARM":
            hit: float | None = start
        else:
            hit = next(
                (at for at, _, new in _history_states(history, name)
                 if new == "ALARM" and start <= at < end and at <= now),
                None,
            )  # fmt: skip
        if hit is not None and (best is None or hit < best[0]):
            best = (hit, name)
    return best


def next_event(rollout: Rollout, now: float, history: list[dict[str, Any]],
               states: dict[str, str]) -> tuple[str, float, str | None] | None:  # fmt: skip
    """What ends the rollout by `now`, the earliest first: ("rollback", at, reason) or
    ("commit", at, None); None while it runs on."""
    events: list[tuple[float, int, str, str | None]] = []
    segs = rollout.segments()
    prov_end = segs[0].end
    if rollout.failure is not None and prov_end <= now:
        events.append((prov_end, 0, "rollback", rollout.failure))
    if rollout.timeout_s is not None:
        deadline = rollout.started + rollout.timeout_s
        if deadline <= now and deadline < rollout.commit_at():
            events.append((deadline, 1, "rollback", None))
    for seg in segs:
        if seg.phase == "provisioning" or seg.start > now:
            continue
        hit = alarm_tripped(history, states, rollout.alarms, seg.start, seg.end, now)
        if hit is not None:
            events.append((hit[0], 0, "rollback", None))
            break
    commit = rollout.commit_at()
    if commit <= now:
        events.append((commit, 2, "commit", None))
    if not events:
        return None
    at, _, kind, reason = min(events, key=lambda e: (e[0], e[1]))
    return kind, at, reason


def naive(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, tz=UTC).replace(tzinfo=None)


# ---------------------------------------------------------------- endpoints


def _retained(variants: list[dict[str, Any]], old: list[dict[str, Any]],
              excluded: set[str]) -> list[dict[str, Any]]:  # fmt: skip
    """RetainAllVariantProperties: the live variants' counts and weights stay."""
    keep = {
        "DesiredInstanceCount": ("CurrentInstanceCount", "DesiredInstanceCount"),
        "DesiredWeight": ("CurrentWeight", "DesiredWeight"),
    }
    by_name = {v["VariantName"]: v for v in old}
    out = []
    for variant in variants:
        merged = dict(variant)
        live = by_name.get(variant["VariantName"], {})
        for prop, members in keep.items():
            if prop in excluded:
                continue
            for member in members:
                if member in live:
                    merged[member] = live[member]
        out.append(merged)
    return out


def _provisioning_s(harness: Any) -> float:
    """How long a new fleet provisions: `provisioning_seconds`, else `updating_seconds`."""
    prov = harness.provisioning_seconds
    return float(harness.updating_seconds or 0.0 if prov is None else prov)


def start_endpoint_rollout(
    harness: Any,
    key: Key,
    endpoint: Any,
    config: Any,
    variants: list[dict[str, Any]],
    params: dict[str, Any],
    failure: str | None,
) -> Rollout:
    """Validate UpdateEndpoint's DeploymentConfig and start its schedule (ValidationError
    before anything changes). `variants` are the new config's, processed by moto."""
    account, region, name = key
    new_names = [v["VariantName"] for v in config.production_variants]
    old_names = [v["VariantName"] for v in endpoint.production_variants]
    if sorted(new_names) != sorted(old_names):
        # AWS's guide, deployment-guardrails-exclusions (its words).
        raise refuse("When doing a blue/green or rolling deployment, your new endpoint "
                      "configuration must have the same variant name as the old endpoint "
                      f"configuration ({', '.join(old_names)}).")  # fmt: skip
    dc = params["DeploymentConfig"]
    if dc.get("RollingUpdatePolicy") and len(new_names) > 1:
        raise refuse("Rolling deployments do not support multi-variant endpoints.")
    excluded = {e.get("VariantPropertyType") for e in
                params.get("ExcludeRetainedVariantProperties") or []}  # fmt: skip
    retain = bool(params.get("RetainAllVariantProperties"))
    first = config.production_variants[0]
    fleet = fleet_size(first, endpoint.production_variants[0], retain, excluded)
    request = {"EndpointName": name, "EndpointConfigName": config.endpoint_config_name,
               **{k: v for k, v in params.items() if v is not None}}  # fmt: skip
    kind, steps, alarms, timeout = check_deployment(
        "UpdateEndpoint", request, fleet=fleet, alarms_region=(account, region)
    )
    if retain:
        variants = _retained(variants, endpoint.production_variants, excluded)
    now = harness.clock.now()
    rollout = Rollout(
        key=key,
        old_config=endpoint.endpoint_config_name,
        new_config=config.endpoint_config_name,
        kind=kind,
        steps=steps,
        alarms=alarms,
        deployment_config=dc,
        started=now,
        fleet=fleet,
        provisioning_s=_provisioning_s(harness),
        held=harness._rollout_held(),
        timeout_s=timeout,
        failure=failure,
        payload={
            "variants": variants,
            "sources": config.production_variants,
            "data_capture": config.data_capture_config,
        },
    )
    endpoint.endpoint_status = "Updating"
    endpoint.failure_reason = None
    endpoint.last_modified_time = naive(now)
    render(rollout, endpoint, now)
    return rollout


def render(rollout: Rollout, endpoint: Any, now: float) -> None:
    """PendingDeploymentSummary for where the rollout is at `now`."""
    started = naive(rollout.started)
    out = []
    for variant, source in zip(rollout.payload["variants"], rollout.payload["sources"],
                               strict=True):  # fmt: skip
        weight = float(source.get("InitialVariantWeight", 1.0))
        if rollout.rollback_at is not None:
            share, up = 0.0, 0
            status = [
                {
                    "Status": "Deleting",
                    "StartTime": naive(rollout.rollback_at),
                    "StatusMessage": "Rolling back: traffic returns to the old fleet.",
                }
            ]
        else:
            seg = rollout.segment_at(now)
            share, up = (seg.share, seg.instances)
            if seg.phase == "provisioning":
                status = [
                    {
                        "Status": "Creating",
                        "StartTime": naive(seg.start),
                        "StatusMessage": f"Launching instances of the new fleet "
                        f"(step {seg.step} of {len(rollout.steps)}).",
                    }
                ]
            else:
                shifted = {
                    "Status": "ActivatingTraffic",
                    "StartTime": naive(seg.start),
                    "StatusMessage": f"Shifting {seg.share:.0%} of traffic to the new fleet.",
                }
                status = [shifted]
                if now > seg.start:
                    status.append(
                        {
                            "Status": "Baking",
                            "StartTime": naive(seg.start),
                            "StatusMessage": f"Baking until {naive(seg.end)}Z.",
                        }
                    )
        entry = {
            "VariantName": variant["VariantName"],
            "DesiredInstanceCount": rollout.fleet,
            "CurrentInstanceCount": up,
            "DesiredWeight": weight,
            "CurrentWeight": round(weight * share, 6),
            "VariantStatus": status,
        }
        if source.get("InstanceType"):
            entry["InstanceType"] = source["InstanceType"]
        out.append(entry)
    endpoint.pending_deployment_summary = {
        "EndpointConfigName": rollout.new_config,
        "ProductionVariants": out,
        "StartTime": started,
    }


def _history(harness: Any, account: str, region: str) -> list[dict[str, Any]]:
    """The alarm history that speaks for the alarms as they are now: a StateUpdate of an
    earlier alarm of the same name (deleted, then put again, as each rollout puts its
    `<endpoint>-rollout-*` alarms afresh) is not the new alarm's. AWS keeps that history
    under the name too; a new alarm starts INSUFFICIENT_DATA whatever the old one was.
    By position, not time: on a frozen clock both can carry the same timestamp."""
    items = list(harness.alarms._history.get((account, region), []))
    born: dict[str, int] = {}  # each name's last "created" entry
    for i, item in enumerate(items):
        created = str(item.get("HistorySummary", "")).endswith(" created")
        if item["HistoryItemType"] == "ConfigurationUpdate" and created:
            born[item["AlarmName"]] = i
    return [item for i, item in enumerate(items) if i >= born.get(item["AlarmName"], 0)]


def _states(account: str, region: str) -> dict[str, str]:
    alarms = cloudwatch_backends[account][region].alarms
    # A copy first: the server's request threads may put an alarm meanwhile.
    return {name: str(a.state_value) for name, a in list(alarms.items())}


Outcome = tuple[str, str, str, str, str]  # region, name, outcome, old config, new config


def walk_endpoint(harness: Any, rollout: Rollout, endpoint: Any, now: float) -> Outcome | None:
    """Move one endpoint's rollout to `now`: commit, roll back, or render where it is.
    Returns the outcome once the endpoint has settled."""
    account, region, name = rollout.key
    if rollout.rollback_at is None:
        event = next_event(rollout, now, _history(harness, account, region),
                           _states(account, region))  # fmt: skip
        if event is not None and event[0] == "commit":
            at = event[1]
            endpoint.endpoint_config_name = rollout.new_config
            endpoint.production_variants = rollout.payload["variants"]
            endpoint.data_capture_config = rollout.payload["data_capture"]
            _settled(endpoint, rollout, at, None)
            return (region, name, "committed", rollout.old_config, rollout.new_config)
        if event is not None:
            rollout.rollback_at = event[1]
            rollout.rollback_until = event[1] + float(harness.rollback_seconds or 0.0)
            rollout.rollback_reason = event[2] or harness.rollback_failure_reason
    if rollout.rollback_until is not None and rollout.rollback_until <= now:
        _settled(endpoint, rollout, rollout.rollback_until, rollout.rollback_reason)
        return (region, name, "rolled-back", rollout.old_config, rollout.new_config)
    render(rollout, endpoint, now)
    return None


def _settled(endpoint: Any, rollout: Rollout, at: float, reason: str | None) -> None:
    endpoint.endpoint_status = "InService"
    endpoint.pending_deployment_summary = None
    endpoint.failure_reason = reason
    endpoint.last_deployment_config = rollout.deployment_config
    endpoint.last_modified_time = naive(at)


def fire(listeners: list[Listener], outcomes: list[Outcome]) -> None:
    """Call each listener with each outcome (outside the harness lock)."""
    for outcome in outcomes:
        for listener in list(listeners):
            listener(*outcome)


def retained_variants(
    endpoint: Any, variants: list[dict[str, Any]], params: dict[str, Any]
) -> list[dict[str, Any]]:
    """A plain UpdateEndpoint's RetainAllVariantProperties: the live counts and weights."""
    excluded = {e.get("VariantPropertyType") for e in
                params.get("ExcludeRetainedVariantProperties") or []}  # fmt: skip
    return _retained(variants, endpoint.production_variants, excluded)


# ---------------------------------------------------------------- inference components


def start_component_rollout(
    harness: Any, ic: Any, specification: Any, copies: int | None, dc: dict[str, Any]
) -> Rollout:
    """UpdateInferenceComponent with a DeploymentConfig (RollingUpdatePolicy): validated
    like an endpoint's (5-50% of the copies), then its batches on the clock. The component
    keeps its old Specification until the commit; a rollback keeps it for good."""
    account, region = ic.arn.split(":")[4], ic.arn.split(":")[3]
    fleet = copies if copies is not None else ic.desired
    request: dict[str, Any] = {"InferenceComponentName": ic.name, "DeploymentConfig": dc}
    if specification:
        request["Specification"] = specification
    if copies is not None:
        request["RuntimeConfig"] = {"CopyCount": copies}
    kind, steps, alarms, timeout = check_deployment(
        "UpdateInferenceComponent", request, fleet=fleet, alarms_region=(account, region),
        component=True,
    )  # fmt: skip
    now = harness.clock.now()
    return Rollout(
        key=(account, region, ic.name),
        old_config=ic.name,
        new_config=ic.name,
        kind=kind,
        steps=steps,
        alarms=alarms,
        deployment_config=dc,
        started=now,
        fleet=fleet,
        provisioning_s=_provisioning_s(harness),
        timeout_s=timeout,
        payload={"specification": specification or ic.specification, "copies": fleet},
    )


def walk_component(harness: Any, ic: Any, now: float) -> str | None:
    """Move a component's rolling update to `now`; "committed" / "rolled-back" once it
    settled (the component is InService either way), else None."""
    rollout: Rollout = ic.rollout
    account, region, _ = rollout.key
    if rollout.rollback_at is None:
        event = next_event(rollout, now, _history(harness, account, region),
                           _states(account, region))  # fmt: skip
        if event is not None and event[0] == "commit":
            ic.specification = rollout.payload["specification"]
            ic.desired = ic.current = rollout.payload["copies"]
            _component_settled(ic, rollout, event[1], None)
            return "committed"
        if event is not None:
            rollout.rollback_at = event[1]
            rollout.rollback_until = event[1] + float(harness.rollback_seconds or 0.0)
            rollout.rollback_reason = event[2] or harness.rollback_failure_reason
    if rollout.rollback_until is not None and rollout.rollback_until <= now:
        _component_settled(ic, rollout, rollout.rollback_until, rollout.rollback_reason)
        return "rolled-back"
    return None


def _component_settled(ic: Any, rollout: Rollout, at: float, reason: str | None) -> None:
    ic.rollout = None
    ic.status = "InService"
    ic.failure_reason = reason
    ic.last_deployment_config = rollout.deployment_config
    ic.modified = naive(at)
