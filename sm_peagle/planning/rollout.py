"""A rollout: the exact `DeploymentConfig` an update sends, the alarms that roll it back, and
the rules that decide which strategy an endpoint can take. Pure: no I/O (the live facts it
needs, the fleet size and the live acceptance, are arguments).

The sources (botocore 1.44.8's model; AWS's deployment-guardrails guides):
- `BlueGreenUpdatePolicy.TrafficRoutingConfiguration`: ALL_AT_ONCE | CANARY | LINEAR,
  `WaitIntervalInSeconds` 0..3600; `TerminationWaitInSeconds` 0..3600;
  `MaximumExecutionTimeoutInSeconds` 600..28800, "larger than the total waiting time".
- CanarySize "must be less than or equal to 50% of the variant's total instance count";
  LinearStepSize "must be 10-50%"; rolling MaximumBatchSize "between 5% to 50%". So each
  needs two instances at least (a step is one instance or more). A percentage that comes
  to less than one instance is refused: what SageMaker does with it is not documented.
- Inference components take `UpdateInferenceComponent`'s `RollingUpdatePolicy` only
  (COPY_COUNT | CAPACITY_PERCENT), 5-50% of the copies.
- "If any alarms are tripped during a deployment, SageMaker rolls back the deployment"
  (`AutoRollbackConfig`, 1..10 alarms).
- SageMaker publishes the new fleet's metrics with the dimension `EndpointConfigName` "after
  the new fleet starts receiving traffic" (the configuration guide's ModelLatency alarm):
  the latency and error alarms watch the new fleet only, so the old fleet cannot trip them.

The speculation alarm cannot be split by fleet: both fleets write the same variant's
streams to one log group, and the SpecDecoding line names neither. Its metric averages one
datapoint per line, and each instance writes one line per stats interval while it drafts,
so during a step where the new fleet has a share `s` of the instances the period average is
`s * L_new + (1 - s) * L_old`, with `L_old` the live fleet's acceptance over the last hour.
A canary is there to catch a regression against the fleet it replaces, so the new fleet
fails when it keeps less than half of the live fleet's gain over no speculation (capped at
what its own K can reach: `1 + K`), or stops paying (the monitoring threshold `T`):

    T_canary = max(T, 1 + REGRESSION * (min(L_old, 1 + K_new) - 1))      REGRESSION = 0.5

and the threshold for the mixed fleets is `s * T_canary + (1 - s) * L_old`: the period
average crosses it exactly when `L_new` crosses `T_canary`. A collapsed new fleet
(L_new = 1, nothing accepted) lowers the mix by `s * (T_canary - 1)` below the threshold;
below `MIN_VISIBLE` that is within the noise of `L_old`, and the speculation alarm is
refused for that step size. It is a model, stated as one in docs/guides/rollouts.md; the
all-at-once rollout has one fleet after the flip and uses `T`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ..errors import Param, SpecError, text
from .monitoring import (
    DIMENSION,
    METRIC_ACCEPTANCE_LENGTH,
    NAMESPACE,
    TREAT_MISSING_DATA,
    default_threshold,
)
from .spec.rollout_spec import MAX_ALARMS, MAX_TIMEOUT_S, MIN_TIMEOUT_S, RolloutSpec, parse_size

__all__ = [
    "MIN_VISIBLE",
    "ROLLOUT_TAG",
    "RolloutPlan",
    "Step",
    "canary_threshold",
    "mixed_threshold",
    "plan_rollout",
    "rollout_alarm_name",
]

# The least drop, in mean acceptance length, a collapsed new fleet must cause in the mixed
# metric for the speculation alarm to see it (an assumption: L_old moves by less over a bake).
MIN_VISIBLE = 0.05
# A canary fails when it keeps less than this share of the live fleet's gain (module doc).
REGRESSION = 0.5
# Default latency threshold: twice the live p90, and never below this (an assumption).
LATENCY_FACTOR, LATENCY_FLOOR_MS = 2.0, 1000.0
ALARM_PERIOD_S = 60
ROLLOUT_TAG = "peagle:rollout"  # on a rollout's alarms: the endpoint config it watches
_SIGNAL_SUFFIX = {"speculation": "rollout-speculation", "latency": "rollout-latency",
                  "errors": "rollout-errors"}  # fmt: skip


def rollout_alarm_name(endpoint: str, signal: str) -> str:
    """`<endpoint>-rollout-speculation`, `-rollout-latency`, `-rollout-errors`."""
    return f"{endpoint}-{_SIGNAL_SUFFIX[signal]}"


def mixed_threshold(share: float, threshold: float, live: float) -> float:
    """The speculation threshold while the new fleet has `share` of the instances: the
    mean of the two fleets' lines crosses it exactly when the new fleet's acceptance
    crosses `threshold` (module doc), rounded to 3 places."""
    return round(share * threshold + (1 - share) * live, 3)


def canary_threshold(threshold: float, live: float, k: int) -> float:
    """The acceptance below which a new fleet next to the live one fails (module doc):
    the monitoring threshold, or half the live fleet's gain (capped at 1 + K), whichever is
    higher; rounded to 3 places."""
    return round(max(threshold, 1 + REGRESSION * (min(live, 1 + k) - 1)), 3)


@dataclass(frozen=True)
class Step:
    """One step of the rollout: the new fleet's share of the instances (of the copies on a
    component endpoint) once it is taken, and how long it bakes."""

    share: float
    bake_s: int
    final: bool = False  # blue/green's final bake (TerminationWaitInSeconds)

    def to_dict(self) -> dict[str, Any]:
        return {"share": round(self.share, 4), "bake_s": self.bake_s, "final": self.final}


@dataclass(frozen=True)
class RolloutPlan:
    """What an update with a rollout sends and watches.

    Attributes:
        strategy: "all-at-once", "canary", "linear" or "rolling".
        endpoint: the endpoint's name.
        new_config: the endpoint config the update moves to (the alarms watch it).
        fleet: instances (copies on a component endpoint) the steps are shares of.
        deployment_config: UpdateEndpoint's (UpdateInferenceComponent's) DeploymentConfig,
            or None for a plain update (an inference component rolled out all at once:
            components have no blue/green policy).
        alarms: PutMetricAlarm requests for peagle's rollback alarms, in send order.
        alarm_names: every alarm in AutoRollbackConfiguration (peagle's, then the user's).
        user_alarms: the user's own alarms (`rollout.alarms`), which must exist.
        steps: the traffic steps and their bakes, in order.
        wait_s: how long peagle waits for the whole update (the execution timeout + 10 min).
        notes: what the plan left out and why (an alarm with no baseline, ...).
        component: True for an inference component's rolling update.
    """

    strategy: str
    endpoint: str
    new_config: str
    fleet: int
    deployment_config: dict[str, Any] | None
    alarms: list[dict[str, Any]] = field(default_factory=list)
    alarm_names: list[str] = field(default_factory=list)
    user_alarms: list[str] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    wait_s: float = 0.0
    notes: list[str] = field(default_factory=list)
    component: bool = False

    @property
    def bakes(self) -> list[tuple[float, float]]:
        """(start offset, end offset) of each bake in seconds after traffic first reaches
        the new fleet, assuming each shift is instant (the watcher reads real times)."""
        out, t = [], 0.0
        for step in self.steps:
            out.append((t, t + step.bake_s))
            t += step.bake_s
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "strategy": self.strategy,
            "endpoint": self.endpoint,
            "new_config": self.new_config,
            "fleet": self.fleet,
            "deployment_config": self.deployment_config,
            "alarms": self.alarm_names,
            "alarm_requests": self.alarms,
            "steps": [s.to_dict() for s in self.steps],
            "wait_s": self.wait_s,
            "notes": self.notes,
        }


def _refuse(message: Any, *, fix: Any, field: str = "rollout", value: Any = None) -> SpecError:
    return SpecError(message, field=field, value=value, remedy=fix)


def step_count(spec: RolloutSpec, fleet: int, *, component: bool = False) -> int:
    """The size of one step in instances (copies), checked against AWS's percentage rule
    for the strategy; SpecError (exit 2) naming the strategy the fleet can take."""
    strategy = spec.strategy
    unit = "copies" if component else "instances"
    if strategy == "all-at-once":
        return fleet
    if fleet < 2:
        name = {"canary": "a canary", "linear": "a linear shift", "rolling": "a rolling update"}
        raise _refuse(
            text(
                "rollout: {what} needs at least 2 {unit}: a step is 1 or more and at most "
                "50% of the {unit} (SageMaker's rule); this one has {n}",
                what=name[strategy], unit=unit, n=fleet,
            ),
            fix=text(
                "use {aao}, or give it 2 {unit} or more",
                aao=Param("rollout", "all-at-once"), unit=unit,
            ),
            value=strategy,
        )  # fmt: skip
    default = 1 if strategy == "canary" else max(1, math.ceil(fleet / 4))
    kind, n = parse_size(spec.size) if spec.size is not None else ("count", default)
    count = n if kind == "count" else n * fleet / 100
    low, high = {"canary": (0, 50), "linear": (10, 50), "rolling": (5, 50)}[strategy]
    percent = 100 * count / fleet
    fits = max(1, math.ceil(low * fleet / 100)), math.floor(high * fleet / 100)
    if count < 1 or not (low <= percent <= high) or (kind == "count" and n > fits[1]):
        rule = (
            f"at most 50% of the {unit}" if strategy == "canary" else f"{low}-{high}% of the {unit}"
        )
        given = spec.size if spec.size is not None else n
        raise _refuse(
            text(
                "rollout: a {strategy} step of {given} is {pct:.0f}% of {n} {unit} ({c:g}); "
                "SageMaker takes {rule}, and at least 1",
                strategy=strategy, given=given, pct=percent, n=fleet, unit=unit, c=count,
                rule=rule,
            ),
            fix=text(
                "use {size} ({lo}-{hi} {unit})",
                size=Param("rollout", f"{strategy}:{fits[0]}"), lo=fits[0], hi=fits[1], unit=unit,
            )
            if fits[0] <= fits[1]
            else text("use {aao}", aao=Param("rollout", "all-at-once")),
            value=f"{strategy}:{given}",
        )  # fmt: skip
    return math.floor(count) if kind == "percent" else n


def _steps(spec: RolloutSpec, fleet: int, size: int) -> list[Step]:
    """The shares the new fleet reaches, each followed by its bake."""
    if spec.strategy == "all-at-once":
        return [Step(1.0, spec.final_wait, final=True)]
    if spec.strategy == "canary":
        return [Step(size / fleet, spec.bake), Step(1.0, spec.final_wait, final=True)]
    shares = [min(i * size, fleet) / fleet for i in range(1, math.ceil(fleet / size) + 1)]
    if spec.strategy == "rolling":  # every batch bakes; the old instances go batch by batch
        return [Step(s, spec.bake) for s in shares]
    # linear: each step short of the whole fleet bakes, then the final bake at 100%
    return [*(Step(s, spec.bake) for s in shares if s < 1), Step(1.0, spec.final_wait, final=True)]


def _capacity(spec_size: Any, size: int, *, component: bool) -> dict[str, Any]:
    """CapacitySize: what the user wrote (a percentage stays one), else the count."""
    if spec_size is not None and parse_size(spec_size)[0] == "percent":
        return {"Type": "CAPACITY_PERCENT", "Value": parse_size(spec_size)[1]}
    return {"Type": "COPY_COUNT" if component else "INSTANCE_COUNT", "Value": size}


def _timeout(spec: RolloutSpec, steps: list[Step], provisioning_s: float) -> int:
    """MaximumExecutionTimeoutInSeconds: the spec's, or the provisioning allowance plus
    every bake (each new batch provisions on a rolling update), within 600..28800."""
    waits = sum(s.bake_s for s in steps)
    batches = len(steps) if spec.strategy == "rolling" else 1
    wanted = spec.timeout or int(provisioning_s * batches + waits)
    if spec.timeout is not None and spec.timeout <= waits:
        raise _refuse(
            text(
                "rollout: timeout {t} s is not longer than its bakes ({w} s); SageMaker "
                "wants MaximumExecutionTimeoutInSeconds larger than the total waiting time",
                t=spec.timeout, w=waits,
            ),
            fix=text("raise the timeout above {w} s, or bake less", w=waits),
            field="rollout",
            value=spec.timeout,
        )  # fmt: skip
    return max(MIN_TIMEOUT_S, min(MAX_TIMEOUT_S, wanted))


def _check_hosting(strategy: str, fleet: int, *, component: bool, pools: bool) -> None:
    """Blue/green traffic shifting is the endpoint's, not a component's; no guardrails on
    fallback pools (undocumented)."""
    if component and strategy in ("canary", "linear"):
        raise _refuse(
            text(
                "rollout: {s} is blue/green traffic shifting, which inference components do "
                "not take (UpdateInferenceComponent offers a RollingUpdatePolicy only)",
                s=strategy,
            ),
            fix=text("use {r}", r=Param("rollout", "rolling" if fleet >= 2 else "all-at-once")),
            value=strategy,
        )
    if pools and strategy != "all-at-once":
        raise _refuse(
            text(
                "rollout: {s} on a variant with fallback instance pools is not supported: AWS "
                "documents no guardrail behaviour for instance pools",
                s=strategy,
            ),
            fix=text("use {aao}, or deploy without fallback instance types",
                     aao=Param("rollout", "all-at-once")),
            value=strategy,
        )  # fmt: skip


def plan_rollout(
    spec: RolloutSpec,
    *,
    endpoint: str,
    new_config: str,
    variant: str,
    fleet: int,
    component: bool = False,
    pools: bool = False,
    k: int | None = None,
    monitored: bool = False,
    threshold: float | None = None,
    live_acceptance: float | None = None,
    live_latency_p90_ms: float | None = None,
    provisioning_s: float = 900.0,
    tags: dict[str, str] | None = None,
    live_facts: bool = True,
) -> RolloutPlan:
    """The rollout of one update, or SpecError (exit 2, nothing sent).

    Args:
        spec: the spec's `endpoint.rollout`.
        endpoint, new_config, variant: the endpoint, the config it moves to, its variant.
        fleet: the live instance count (DesiredInstanceCount; a scaled endpoint's current
            size), or the component's copies.
        component: an inference component's update (UpdateInferenceComponent).
        pools: the variant has fallback instance pools (guardrails refused: not verified).
        k: the new K (None: baseline, nothing to watch on speculation).
        monitored: the endpoint's speculation metric exists (`monitoring`).
        threshold: the monitoring threshold for the new K (None: the default from K).
        live_acceptance: the live fleet's mean acceptance length over the last hour.
        live_latency_p90_ms: the live fleet's p90 ModelLatency over the last hour, in ms.
        provisioning_s: how long a new fleet may take to come up (download + health check).
        tags: the endpoint's user tags, added to the alarms' own.
        live_facts: False when the caller reads no live metric (`plan`): an alarm whose
            threshold needs one is left out with a note that update derives it.
    """
    strategy = spec.strategy
    _check_hosting(strategy, fleet, component=component, pools=pools)
    size = step_count(spec, fleet, component=component)
    steps = _steps(spec, fleet, size)
    notes: list[str] = []
    alarms = _alarms(
        spec, endpoint, new_config, variant, steps, k=k, monitored=monitored,
        threshold=threshold, live_acceptance=live_acceptance,
        live_latency_p90_ms=live_latency_p90_ms, tags=tags or {}, notes=notes,
        component=component, live_facts=live_facts,
    )  # fmt: skip
    names = [a["AlarmName"] for a in alarms] + list(spec.alarms)
    if len(names) > MAX_ALARMS:
        raise _refuse(
            text("rollout: {n} rollback alarms; SageMaker takes at most {m}", n=len(names),
                 m=MAX_ALARMS),
            fix="name fewer alarms in rollout.alarms, or drop a signal from rollout.rollback_on",
            field="rollout",
        )  # fmt: skip
    timeout = _timeout(spec, steps, provisioning_s)
    config = _deployment_config(spec, steps, size, names, timeout, component=component)
    return RolloutPlan(
        strategy=strategy,
        endpoint=endpoint,
        new_config=new_config,
        fleet=fleet,
        deployment_config=config,
        alarms=alarms,
        alarm_names=names,
        user_alarms=list(spec.alarms),
        steps=steps,
        wait_s=float(timeout + 600),
        notes=notes,
        component=component,
    )


def _deployment_config(
    spec: RolloutSpec, steps: list[Step], size: int, alarms: list[str], timeout: int,
    *, component: bool,
) -> dict[str, Any] | None:  # fmt: skip
    rollback = {"AutoRollbackConfiguration": {"Alarms": [{"AlarmName": a} for a in alarms]}}
    if spec.strategy == "rolling":
        policy: dict[str, Any] = {
            "MaximumBatchSize": _capacity(spec.size, size, component=component),
            "WaitIntervalInSeconds": spec.bake,
            "MaximumExecutionTimeoutInSeconds": timeout,
        }
        if spec.rollback_size is not None:
            kind, n = parse_size(spec.rollback_size)
            policy["RollbackMaximumBatchSize"] = (
                {"Type": "CAPACITY_PERCENT", "Value": n}
                if kind == "percent"
                else {"Type": "COPY_COUNT" if component else "INSTANCE_COUNT", "Value": n}
            )
        return {"RollingUpdatePolicy": policy, **(rollback if alarms else {})}
    if component:  # all-at-once on a component: its plain update (no blue/green there)
        return None
    routing: dict[str, Any] = {"Type": {"all-at-once": "ALL_AT_ONCE", "canary": "CANARY",
                                        "linear": "LINEAR"}[spec.strategy],
                               "WaitIntervalInSeconds": 0 if spec.strategy == "all-at-once"
                               else spec.bake}  # fmt: skip
    if spec.strategy == "canary":
        routing["CanarySize"] = _capacity(spec.size, size, component=False)
    elif spec.strategy == "linear":
        routing["LinearStepSize"] = _capacity(spec.size, size, component=False)
    return {
        "BlueGreenUpdatePolicy": {
            "TrafficRoutingConfiguration": routing,
            "TerminationWaitInSeconds": steps[-1].bake_s,
            "MaximumExecutionTimeoutInSeconds": timeout,
        },
        **(rollback if alarms else {}),
    }


def _periods(bake_s: int) -> tuple[int, int]:
    """EvaluationPeriods and DatapointsToAlarm that fit one bake: up to 3 of 5 minutes."""
    n = max(1, min(5, bake_s // ALARM_PERIOD_S))
    return n, min(3, n)


def _alarms(
    spec: RolloutSpec, endpoint: str, new_config: str, variant: str, steps: list[Step], *,
    k: int | None, monitored: bool, threshold: float | None, live_acceptance: float | None,
    live_latency_p90_ms: float | None, tags: dict[str, str], notes: list[str],
    component: bool, live_facts: bool = True,
) -> list[dict[str, Any]]:  # fmt: skip
    """PutMetricAlarm requests for `rollback_on` (default: every signal that applies)."""
    explicit = spec.rollback_on is not None
    signals = list(spec.rollback_on) if explicit else ["speculation", "latency", "errors"]
    shortest = min((s.bake_s for s in steps), default=0)
    periods = _periods(shortest)
    own = {**tags, "peagle:managed": "true", "peagle:deployment": endpoint,
           ROLLOUT_TAG: new_config}  # fmt: skip
    out: list[dict[str, Any]] = []

    def skip(signal: str, why: Any, fix: Any, live: str | None = None) -> None:
        if live is not None and not live_facts:  # plan: a gap update fills, not a refusal
            return notes.append(_unread(rollout_alarm_name(endpoint, signal), live))
        if explicit:
            raise _refuse(text("rollout: cannot roll back on {s}: {why}", s=signal, why=why),
                          fix=fix, value=signal)  # fmt: skip
        notes.append(f"no {signal} rollback alarm: {why}")

    if shortest < ALARM_PERIOD_S * periods[1]:
        skip_all = text(
            "a bake of {b} s holds fewer than {m} alarm periods of {p} s", b=shortest,
            m=periods[1], p=ALARM_PERIOD_S,
        )  # fmt: skip
        for signal in signals:
            skip(signal, skip_all, text("bake {m} s or more", m=ALARM_PERIOD_S * periods[1]))
        return []
    if component and "speculation" in signals:
        signals.remove("speculation")  # no monitoring on component endpoints (issue 37)
        skip("speculation", "inference-component endpoints are not monitored",
             "drop speculation from rollout.rollback_on")  # fmt: skip
    if "speculation" in signals:
        alarm = _speculation_alarm(
            endpoint, steps, k=k, monitored=monitored, threshold=threshold,
            live=live_acceptance, periods=periods, skip=skip,
        )  # fmt: skip
        if alarm is not None:
            out.append({**alarm, "Tags": _tags(own)})
    fleet_dims = [
        {"Name": "EndpointName", "Value": endpoint},
        {"Name": "VariantName", "Value": variant},
        {"Name": "EndpointConfigName", "Value": new_config},
    ]
    if component:
        fleet_dims = None  # a component's metrics carry InferenceComponentName, not a config
    if "latency" in signals:
        limit = spec.latency_ms
        source = "rollout.latency_ms"
        if limit is None and live_latency_p90_ms is not None:
            limit = max(LATENCY_FLOOR_MS, LATENCY_FACTOR * live_latency_p90_ms)
            source = f"2 x the live p90 ({live_latency_p90_ms:.0f} ms), at least 1000 ms"
        if limit is None:
            skip("latency", "no ModelLatency on the live endpoint in the last hour to set a "
                 "threshold from", "set rollout.latency_ms", live="p90 ModelLatency")  # fmt: skip
        elif fleet_dims is None:
            skip("latency", "a component's metrics are not split by fleet",
                 "drop latency from rollout.rollback_on")  # fmt: skip
        else:
            out.append(_sagemaker_alarm(
                rollout_alarm_name(endpoint, "latency"), "ModelLatency", fleet_dims,
                threshold=round(limit * 1000), statistic=("ExtendedStatistic", "p90"),
                periods=periods, tags=own,
                what=f"the new fleet's p90 model latency above {limit:.0f} ms ({source})",
            ))  # fmt: skip
    if "errors" in signals:
        if fleet_dims is None:
            skip("errors", "a component's metrics are not split by fleet",
                 "drop errors from rollout.rollback_on")  # fmt: skip
        else:
            out.append(_sagemaker_alarm(
                rollout_alarm_name(endpoint, "errors"), "Invocation5XXErrors", fleet_dims,
                threshold=spec.error_rate, statistic=("Statistic", "Average"), periods=periods,
                tags=own, what=f"the new fleet's 5xx share above {spec.error_rate:g}",
            ))  # fmt: skip
    return out


def _unread(alarm: str, live: str) -> str:
    return (f"{alarm}: its threshold needs the live fleet's {live} over the last hour, which "
            "update reads and plan does not")  # fmt: skip


def _speculation_alarm(
    endpoint: str, steps: list[Step], *, k: int | None, monitored: bool,
    threshold: float | None, live: float | None, periods: tuple[int, int], skip: Any,
) -> dict[str, Any] | None:  # fmt: skip
    if k is None or k < 1:
        skip("speculation", "the new spec does not speculate (baseline)",
             "drop speculation from rollout.rollback_on")  # fmt: skip
        return None
    if not monitored:
        skip("speculation", "the endpoint has no speculation metric (monitoring is off)",
             text("turn it on with {m}", m=Param("monitor", True)))  # fmt: skip
        return None
    t_new = threshold if threshold is not None else default_threshold(k)
    share = steps[0].share  # the first step: the smallest share, the hardest to see
    if share >= 1.0:
        t, how = t_new, f"the threshold for K={k}"
    else:
        if live is None:
            skip("speculation", "no acceptance measured on the live fleet in the last hour, "
                 "so the threshold for the mixed fleets cannot be derived",
                 "send traffic first, or roll out all-at-once", live="acceptance")  # fmt: skip
            return None
        if live <= t_new:
            skip("speculation", f"the live fleet's acceptance ({live:.2f}) is not above the "
                 f"new threshold ({t_new:g}): the mix cannot tell the fleets apart",
                 "roll out all-at-once")  # fmt: skip
            return None
        t_canary = canary_threshold(t_new, live, k)
        visible = share * (t_canary - 1.0)
        if visible < MIN_VISIBLE - 1e-9:  # exactly the limit is allowed
            skip("speculation", f"a step of {share:.0%} shows a collapsed new fleet as a drop "
                 f"of {visible:.3f} in the mean, under {MIN_VISIBLE} (the noise allowed)",
                 "use a larger first step")  # fmt: skip
            return None
        t = mixed_threshold(share, t_canary, live)
        how = (f"{share:.0%} new at {t_canary:g} (T={t_new:g}, or half the live gain) mixed "
               f"with the live fleet's {live:.2f}: {share:g}*{t_canary:g} + "
               f"{1 - share:g}*{live:.2f}")  # fmt: skip
    n, m = periods
    return {
        "AlarmName": rollout_alarm_name(endpoint, "speculation"),
        "AlarmDescription": (
            f"peagle rollout of {endpoint}: the new fleet's speculation stopped paying; mean "
            f"acceptance length below {t} ({how}) in {m} of {n} periods of {ALARM_PERIOD_S}s"
        ),
        "ActionsEnabled": False,
        "Namespace": NAMESPACE,
        "MetricName": METRIC_ACCEPTANCE_LENGTH,
        "Dimensions": [{"Name": DIMENSION, "Value": endpoint}],
        "Statistic": "Average",
        "Period": ALARM_PERIOD_S,
        "EvaluationPeriods": n,
        "DatapointsToAlarm": m,
        "Threshold": t,
        "ComparisonOperator": "LessThanThreshold",
        "TreatMissingData": TREAT_MISSING_DATA,
    }


def _sagemaker_alarm(
    name: str, metric: str, dims: list[dict[str, str]], *, threshold: float,
    statistic: tuple[str, str], periods: tuple[int, int], tags: dict[str, str], what: str,
) -> dict[str, Any]:  # fmt: skip
    n, m = periods
    return {
        "AlarmName": name,
        "AlarmDescription": f"peagle rollout: {what} in {m} of {n} periods of {ALARM_PERIOD_S}s",
        "ActionsEnabled": False,
        "Namespace": "AWS/SageMaker",
        "MetricName": metric,
        "Dimensions": dims,
        statistic[0]: statistic[1],
        "Period": ALARM_PERIOD_S,
        "EvaluationPeriods": n,
        "DatapointsToAlarm": m,
        "Threshold": threshold,
        "ComparisonOperator": "GreaterThanThreshold",
        # AWS's own example for the new fleet: no traffic yet is not a breach.
        "TreatMissingData": "notBreaching",
        "Tags": _tags(tags),
    }


def _tags(tags: dict[str, str]) -> list[dict[str, str]]:
    return [{"Key": k, "Value": v} for k, v in sorted(tags.items())]
