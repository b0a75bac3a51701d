"""An update with a rollout (`endpoint.rollout`, `--rollout`): the live facts it is planned
from, the preflight, its rollback alarms, and what happened to it (`RolloutReport`).

The order (docs/guides/rollouts.md; design decisions 4-8 of issue 38):
1. live facts: the fleet (the variant's DesiredInstanceCount, else CurrentInstanceCount),
   the live acceptance and p90 model latency over the last hour;
2. `planning.rollout.plan_rollout` (SpecError, exit 2, before anything is created);
3. preflight: every user alarm exists, none of the alarms is in ALARM now (SageMaker would
   roll back at once), the variant keeps its name (AWS requires it for blue/green and
   rolling), the UpdateEndpoint request passes botocore's model;
4. the new model and config (update.py), then the rollout's alarms (recorded for the
   rollback as kind `rollout_alarm`), then UpdateEndpoint with the DeploymentConfig;
5. the watch (`rollout_watch.py`), then either the switch-over or the removal; the
   rollout's alarms go either way once the update settled (their history stays).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ..errors import Param, SpecError, text
from ..planning.rollout import ROLLOUT_TAG, RolloutPlan, plan_rollout
from ..planning.steps.rollout import provisioning_allowance

__all__ = [
    "ROLLOUT_ALARM",
    "RolloutReport",
    "check_alarms",
    "component_rollout",
    "component_rollouts",
    "idle_bakes",
    "prepare_rollout",
    "put_rollout_alarms",
    "remove_rollout_alarm",
    "remove_stale_rollout_alarms",
    "update_request",
]

ROLLOUT_ALARM = "rollout_alarm"  # the kind a rollout's alarm has in a run's `created`
HOUR = 3600
# AWS/SageMaker publishes its endpoint metrics per minute.
MINUTE = 60


@dataclass(frozen=True)
class RolloutReport:
    """What a rollout did; `to_dict()` is `rollout` in `peagle update --json`.

    Attributes:
        strategy: "all-at-once", "canary", "linear" or "rolling".
        steps: the planned steps ({share, bake_s, final}).
        alarms: the alarms SageMaker watched (AutoRollbackConfiguration order).
        notes: what the plan left out and why (a signal with no baseline, ...).
        phases: the phases seen, in order ("provisioning", "canary bake", "final bake",
            "rolling back").
        unverified_bakes: the bakes (1-based) that saw no invocation on the new fleet.
        outcome: "completed", "rolled-back", or "planned" (`update --dry-run`).
        deployment_config: the DeploymentConfig sent (None: a plain update).
        new_config: the endpoint config the rollout moved to.
    """

    strategy: str
    steps: list[dict[str, Any]] = field(default_factory=list)
    alarms: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    phases: list[str] = field(default_factory=list)
    unverified_bakes: list[int] = field(default_factory=list)
    outcome: str = "completed"
    deployment_config: dict[str, Any] | None = None
    new_config: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "strategy": self.strategy,
            "outcome": self.outcome,
            "new_config": self.new_config,
            "steps": self.steps,
            "alarms": self.alarms,
            "phases": self.phases,
            "unverified_bakes": self.unverified_bakes,
            "notes": self.notes,
            "deployment_config": self.deployment_config,
        }


def _code(e: Exception) -> str:
    return str(getattr(e, "response", {}).get("Error", {}).get("Code", ""))


def fleet_of(variant: dict[str, Any]) -> int:
    """The live fleet a step is a share of: DesiredInstanceCount (a scaled endpoint's size
    now), else CurrentInstanceCount."""
    for key in ("DesiredInstanceCount", "CurrentInstanceCount"):
        if variant.get(key) is not None:
            return int(variant[key])
    return 1


def live_acceptance(aws: Any, endpoint: str, notes: list[str]) -> float | None:
    """The live fleet's mean acceptance length over the last hour, in the speculation
    alarm's own terms: the mean over the SpecDecoding lines (each period's Average
    weighted by its SampleCount), since the alarm averages lines too. None without data."""
    from .health_read import metric_samples, period_window

    try:
        samples = metric_samples(aws, endpoint, period_window(aws, HOUR, MINUTE), MINUTE)
    except Exception as e:
        notes.append(f"live acceptance not read ({_code(e) or e})")
        return None
    lines = sum(s.count for s in samples)
    if not lines:
        return None
    return round(sum(s.acceptance_length * s.count for s in samples) / lines, 3)


def live_latency_p90_ms(aws: Any, endpoint: str, variant: str, notes: list[str]) -> float | None:
    """The live fleet's p90 ModelLatency over the last hour, in ms (AWS publishes it in
    microseconds): GetMetricStatistics, one period of an hour; the highest p90 when the
    hour straddles two periods. None without data."""
    now = aws.synced_aws_now().timestamp()
    start = math.floor((now - HOUR) / MINUTE) * MINUTE
    try:
        got = aws.client("cloudwatch").get_metric_statistics(
            Namespace="AWS/SageMaker",
            MetricName="ModelLatency",
            Dimensions=[
                {"Name": "EndpointName", "Value": endpoint},
                {"Name": "VariantName", "Value": variant},
            ],
            StartTime=datetime.fromtimestamp(start, UTC),
            EndTime=datetime.fromtimestamp(now, UTC),
            Period=HOUR,
            ExtendedStatistics=["p90"],
        )
    except Exception as e:
        notes.append(f"live latency not read ({_code(e) or e})")
        return None
    values = [
        float(p["ExtendedStatistics"]["p90"])
        for p in got.get("Datapoints", [])
        if "p90" in (p.get("ExtendedStatistics") or {})
    ]
    return round(max(values) / 1000.0, 1) if values else None


def _monitored(aws: Any, endpoint: str, notes: list[str]) -> bool:
    """Does the endpoint's speculation metric exist (peagle's monitoring is on)? Its
    alarm says so: one DescribeAlarms."""
    from .health_read import AlarmsUnreadable, alarm_watching

    try:
        return alarm_watching(aws, endpoint) is not None
    except AlarmsUnreadable as e:
        notes.append(str(e))
        return False


def _threshold(aws: Any, plan: Any) -> float | None:
    """The "stops paying" threshold the speculation alarm starts from: the spec's own
    (`monitoring.threshold`), else the one the live alarm was given by a spec (its
    `peagle:threshold` tag says "spec"), else None (the default for the new K)."""
    from ..planning.monitoring import THRESHOLD_TAG
    from .monitoring_read import peagle_alarm

    if plan.spec.monitoring is not None and plan.spec.monitoring.threshold is not None:
        return float(plan.spec.monitoring.threshold)
    try:
        found = peagle_alarm(aws.client("cloudwatch"), plan.names["endpoint"])
    except Exception:  # unreadable tags: the default for K, as a fresh alarm would have
        return None
    if found is not None and found[1].get(THRESHOLD_TAG) == "spec":
        return float(found[0]["Threshold"])
    return None


def prepare_rollout(
    lc: Any, plan: Any, current: dict[str, Any], config_req: dict[str, Any]
) -> RolloutPlan | None:
    """The rollout of this update, planned from the live facts and checked (preflight),
    or None when the spec asks for none. SpecError (exit 2) before anything is created."""
    spec = plan.spec.endpoint.rollout
    if spec is None:
        return None
    name = plan.names["endpoint"]
    old = (current.get("ProductionVariants") or [{}])[0]
    new = config_req["ProductionVariants"][0]
    if old.get("VariantName") and old["VariantName"] != new["VariantName"]:
        raise SpecError(
            text(
                "rollout: the variant is {old} now and the new config names it {new}; AWS "
                "requires the same variant name for a blue/green or rolling deployment",
                old=old["VariantName"], new=new["VariantName"],
            ),
            field="rollout",
            value=spec.strategy,
            remedy="keep the variant's name, or update without a rollout",
        )  # fmt: skip
    notes: list[str] = []
    k = (plan.speculative_config or {}).get("num_speculative_tokens")
    monitored = bool(k) and _monitored(lc.aws, name, notes)
    acceptance = live_acceptance(lc.aws, name, notes) if monitored else None
    latency = None
    wants_latency = spec.rollback_on is None or "latency" in spec.rollback_on
    if wants_latency and spec.latency_ms is None:  # the default threshold needs the live p90
        latency = live_latency_p90_ms(lc.aws, name, new["VariantName"], notes)
    user_tags = {t["Key"]: t["Value"] for t in plan.create_endpoint.get("Tags", [])
                 if not t["Key"].startswith("peagle:")}  # fmt: skip
    rp = plan_rollout(
        spec,
        endpoint=name,
        new_config=config_req["EndpointConfigName"],
        variant=new["VariantName"],
        fleet=fleet_of(old),
        pools=bool(plan.spec.endpoint.fallback_instance_types),
        k=k,
        monitored=monitored,
        threshold=_threshold(lc.aws, plan) if monitored else None,
        live_acceptance=acceptance,
        live_latency_p90_ms=latency,
        provisioning_s=provisioning_allowance(config_req),
        tags=user_tags,
    )
    rp.notes[:0] = notes
    check_alarms(lc.aws, rp)
    for note in rp.notes:  # a signal left out is said before anything is sent
        lc.say(f"rollout note: {note}")
    request = update_request(name, rp.new_config, rp, autoscaled=bool(plan.autoscaling))
    _check_shapes("sagemaker", "UpdateEndpoint", request)
    for alarm in rp.alarms:
        _check_shapes("cloudwatch", "PutMetricAlarm", alarm)
    return rp


def planned_rollout(lc: Any, plan: Any) -> RolloutReport | None:
    """What `update --dry-run` would roll out (outcome "planned"), from the same live
    facts and checks as the update itself; None without a rollout. Reads only."""
    from .resources import tagged_requests

    if plan.spec.endpoint.rollout is None:
        return None
    current = lc.sm.describe_endpoint(EndpointName=plan.names["endpoint"])
    rp = prepare_rollout(lc, plan, current, tagged_requests(plan)[1])
    if rp is None:
        return None
    return RolloutReport(
        rp.strategy,
        steps=[s.to_dict() for s in rp.steps],
        alarms=list(rp.alarm_names),
        notes=list(rp.notes),
        outcome="planned",
        deployment_config=rp.deployment_config,
        new_config=rp.new_config,
    )


def unused(plan: Any) -> str:
    """What an update with nothing to change says of the rollout it was given: it moves
    nothing, and it is not kept (the endpoint's tags never carry it)."""
    if plan.spec.endpoint.rollout is None:
        return ""
    return " (the rollout applies only to an update that changes what runs)"


def _check_shapes(service: str, operation: str, request: dict[str, Any]) -> None:
    from ..planning.steps.aws_shapes import validate_request

    errors = validate_request(service, operation, request)
    if errors:
        raise SpecError(
            text("rollout: {op} would be refused by AWS: {why}", op=operation,
                 why="; ".join(errors[:3])),
            field="rollout",
            remedy="change the rollout's values named above",
        )  # fmt: skip


def update_request(
    name: str, config: str, rp: RolloutPlan | None, *, autoscaled: bool
) -> dict[str, Any]:
    """UpdateEndpoint's parameters: without a rollout (or one with nothing to send) the
    plain request; else the DeploymentConfig, and RetainAllVariantProperties only when the
    endpoint autoscales (it keeps the scaled instance count; terraform-provider-aws PR
    #49069's reason). Never RetainDeploymentConfig."""
    out: dict[str, Any] = {"EndpointName": name, "EndpointConfigName": config}
    if rp is not None and rp.deployment_config is not None:
        out["DeploymentConfig"] = rp.deployment_config
        if autoscaled:
            out["RetainAllVariantProperties"] = True
    return out


def check_alarms(aws: Any, rp: RolloutPlan) -> None:
    """Every user alarm exists, and none of the alarms (the user's, or a rollout alarm an
    earlier run left) is in ALARM now: SageMaker would roll back at once."""
    if not rp.alarm_names:
        return
    got = aws.client("cloudwatch").describe_alarms(
        AlarmNames=list(rp.alarm_names), AlarmTypes=["MetricAlarm", "CompositeAlarm"]
    )
    found = {
        a["AlarmName"]: a for a in got.get("MetricAlarms", []) + got.get("CompositeAlarms", [])
    }
    missing = [a for a in rp.user_alarms if a not in found]
    if missing:
        raise SpecError(
            text("rollout: alarm {a} does not exist in CloudWatch; SageMaker rolls back on "
                 "alarms by name", a=", ".join(missing)),
            field="rollout",
            value=missing[0],
            remedy="create it first, or drop it from rollout.alarms",
        )  # fmt: skip
    own = {a["AlarmName"] for a in rp.alarms}
    for name in rp.alarm_names:
        alarm = found.get(name)
        if alarm is None or alarm.get("StateValue") != "ALARM":
            continue
        if name in own:
            continue  # peagle's own, left by an earlier run: PutMetricAlarm resets it
        raise SpecError(
            text("rollout: alarm {a} is in ALARM now: SageMaker would roll back at once",
                 a=name),
            field="rollout",
            value=name,
            remedy=text("wait until it is OK, or update without it ({r})",
                        r=Param("rollout", "all-at-once")),
        )  # fmt: skip


def put_rollout_alarms(
    aws: Any,
    rp: RolloutPlan,
    created: list[tuple[str, str]],
    trying: list[tuple[str, str]],
    say: Callable[[str], None],
) -> None:
    """PutMetricAlarm for each of peagle's rollback alarms, each recorded for the rollback
    (in `trying` while in flight, then in `created`)."""
    from .rollout_watch import BAKE_TAG, STRATEGY_TAG

    cw = aws.client("cloudwatch")
    bakes = [s.bake_s for s in rp.steps] or [0]
    # What `status` shows of a rollout in progress, which DescribeEndpoint does not say.
    extra = [
        {"Key": STRATEGY_TAG, "Value": rp.strategy},
        {"Key": BAKE_TAG, "Value": f"{bakes[0]}/{bakes[-1]}"},
    ]
    for alarm in rp.alarms:
        trying[:] = [(ROLLOUT_ALARM, alarm["AlarmName"])]
        cw.put_metric_alarm(**{**alarm, "Tags": [*alarm.get("Tags", []), *extra]})
        created.append(trying.pop())
        say(f"put rollout alarm {alarm['AlarmName']}")


def remove_rollout_alarm(aws: Any, name: str, endpoint: str) -> bool:
    """Delete one of peagle's rollout alarms of `endpoint` (False: gone, or not peagle's:
    its tags must say peagle made it for this endpoint's rollout)."""
    from .monitoring_read import cloudwatch_tags, is_gone, owned_by

    cw = aws.client("cloudwatch")
    try:
        found = cw.describe_alarms(AlarmNames=[name]).get("MetricAlarms", [])
        if not found:
            return False
        tags = cloudwatch_tags(cw, found[0]["AlarmArn"])
        if not owned_by(tags, endpoint) or ROLLOUT_TAG not in tags:
            return False
        cw.delete_alarms(AlarmNames=[name])
    except Exception as e:
        if is_gone(e):
            return False
        raise
    return True


def remove_rollout_alarms(
    lc: Any, created: list[tuple[str, str]], endpoint: str
) -> list[tuple[str, str]]:
    """Once the update settled: remove the rollout's alarms (their history stays in
    CloudWatch); each removed leaves `created`. What could not be removed is said, and
    returned."""
    left: list[tuple[str, str]] = []
    for item in [c for c in created if c[0] == ROLLOUT_ALARM]:
        try:
            if remove_rollout_alarm(lc.aws, item[1], endpoint):
                lc.say(f"removed rollout alarm {item[1]}")
            created.remove(item)
        except Exception as e:  # the update itself is done: say what is left, go on
            lc.say(f"could not delete rollout alarm {item[1]}: {e}")
            left.append(item)
    return left


def idle_bakes(
    aws: Any, endpoint: str, variant: str, new_config: str, windows: list[tuple[float, float]]
) -> list[int] | None:
    """The bakes (1-based) with no invocation on the new fleet: AWS/SageMaker Invocations
    {EndpointName, VariantName, EndpointConfigName=NEW} (AWS publishes the new fleet's
    metrics with that dimension), Sum per minute over each window (minute-aligned: the
    periods the window touches). None when CloudWatch could not be read."""
    cw = aws.client("cloudwatch")
    out: list[int] = []
    for i, (start, end) in enumerate(windows, 1):
        lo = math.floor(start / MINUTE) * MINUTE
        hi = max(math.ceil(end / MINUTE) * MINUTE, lo + MINUTE)
        try:
            got = cw.get_metric_statistics(
                Namespace="AWS/SageMaker",
                MetricName="Invocations",
                Dimensions=[
                    {"Name": "EndpointName", "Value": endpoint},
                    {"Name": "VariantName", "Value": variant},
                    {"Name": "EndpointConfigName", "Value": new_config},
                ],
                StartTime=datetime.fromtimestamp(lo, UTC),
                EndTime=datetime.fromtimestamp(hi, UTC),
                Period=MINUTE,
                Statistics=["Sum"],
            )
        except Exception:
            return None
        if sum(float(p.get("Sum", 0)) for p in got.get("Datapoints", [])) <= 0:
            out.append(i)
    return out


def component_rollout(lc: Any, name: str, component: str, options: Any) -> Any:
    """The RolloutSpec of one inference component's update (`options.rollout`, `.bake`;
    design decision 7; None when neither is given), checked now on the component's copies
    (reads only) so a strategy it cannot take is SpecError (exit 2: canary and linear name
    rolling) before the confirm and before any request changes anything."""
    from ..planning.spec.loading import merge_overrides, spec_from_data
    from ..planning.spec.options import rollout_overrides
    from .components import find_component

    if options.rollout is None and options.bake is None:
        return None
    doc = merge_overrides(
        {"model": "placeholder"}, rollout_overrides(options.rollout, options.bake)
    )
    spec = spec_from_data(doc).endpoint.rollout  # the spec's own checks, the field named
    assert spec is not None
    ic = find_component(lc.sm, name, component)
    desc = lc.sm.describe_inference_component(InferenceComponentName=ic)
    component_rollouts(lc, spec, name, {ic: desc})
    return spec


def component_rollouts(
    lc: Any, spec: Any, endpoint: str, live: dict[str, dict[str, Any]]
) -> dict[str, RolloutPlan]:
    """Each live component's rollout (UpdateInferenceComponent's RollingUpdatePolicy over
    its copies), its user alarms checked; SpecError before anything is sent. A component
    endpoint has no peagle alarm to watch (its metrics carry InferenceComponentName, and it
    has no monitoring): the plan notes that, and only `rollout.alarms` roll it back."""
    out: dict[str, RolloutPlan] = {}
    for ic, desc in live.items():
        rc = desc.get("RuntimeConfig") or {}
        copies = int(rc.get("DesiredCopyCount") or rc.get("CurrentCopyCount") or 1)
        out[ic] = plan_rollout(
            spec,
            endpoint=endpoint,
            new_config=ic,
            variant=desc.get("VariantName", "AllTraffic"),
            fleet=copies,
            component=True,
        )
    if out:
        check_alarms(lc.aws, next(iter(out.values())))
    return out


def remove_stale_rollout_alarms(lc: Any, endpoint: str) -> list[str]:
    """The rollout alarms an update cut short twice left (peagle's, by their tags), removed
    by the update that finishes it (`lifecycle.reconcile`): the endpoint has settled, so
    no rollout watches them. One line per alarm removed."""
    cw = lc.aws.client("cloudwatch")
    found = cw.describe_alarms(AlarmNamePrefix=f"{endpoint}-rollout-").get("MetricAlarms", [])
    return [
        f"removed rollout alarm {a['AlarmName']}"
        for a in found
        if remove_rollout_alarm(lc.aws, a["AlarmName"], endpoint)
    ]
