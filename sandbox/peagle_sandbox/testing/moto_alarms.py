"""CloudWatch metric alarms evaluated on the harness clock, and their history: moto 5.2.5
stores alarms but never evaluates one, and has no DescribeAlarmHistory.

What is computed (AWS's PutMetricAlarm reference and "Configuring how CloudWatch alarms
treat missing data"), and what is ASSUMED:
- A new alarm starts INSUFFICIENT_DATA ("Unchecked: Initial alarm creation"); PutMetricAlarm
  on an existing one keeps its state and replaces its configuration (AWS's reference says
  both). Each is a ConfigurationUpdate in the alarm's history.
- Evaluated: an alarm on one metric (Namespace, MetricName, Dimensions matched exactly:
  "CloudWatch treats each unique combination of dimensions as a separate metric", so an
  alarm on {EndpointName, VariantName, EndpointConfigName} sees only that fleet's
  datapoints, one on {EndpointName, VariantName} only those published with exactly those
  two (moto_sagemaker_metrics publishes both); Unit if set) with
  Statistic (Average, Sum, Minimum, Maximum, SampleCount) or ExtendedStatistic pNN.
  ASSUMPTION: pNN is the nearest-rank percentile of the period's datapoints (CloudWatch's
  own estimator is not documented; for the few datapoints a test writes nearest rank is
  exact). Not evaluated, left as they are: metric-math and
  Metrics Insights alarms (`Metrics`), composite alarms, anomaly-detection operators.
- ASSUMPTION: periods are aligned to the epoch in multiples of Period, and an alarm is
  evaluated once per period boundary that passes on the harness clock (AWS evaluates
  every minute; for the 60 s periods peagle uses the two agree), on the last
  EvaluationPeriods complete periods. A datapoint belongs to the period its timestamp
  falls in (start inclusive), and each period is stamped with its start.
- Missing data (TreatMissingData, default `missing`): `breaching` / `notBreaching` count a
  missing period as breaching / not; `ignore` keeps the state when every period is
  missing; `missing` goes INSUFFICIENT_DATA when every period is missing. Otherwise the
  alarm is ALARM when at least DatapointsToAlarm (default EvaluationPeriods) periods
  breach, else OK. ASSUMPTION: AWS's longer "evaluation range" and its logic that avoids
  a premature ALARM on intermittent data are not emulated (only the last N periods count).
- A change of state is stamped at the boundary where it happened (not when read), with
  StateReason in AWS's wording ("Threshold Crossed: 3 out of the last 5 datapoints
  [1.05 (29/11/26 21:04:00), ...] were less than the threshold (1.2) (minimum 3 datapoints
  for OK -> ALARM transition).", "Insufficient Data: 5 datapoints were unknown."), a
  StateReasonData JSON (version, queryDate, startDate, statistic, period,
  recentDatapoints, threshold, evaluatedDatapoints) and a StateUpdate history item whose
  HistoryData holds oldState and newState. ASSUMPTION: the wording is AWS's as its alarm
  history shows it; the exact text of rare cases (a single datapoint) may differ.
- ASSUMPTION: after a clock jump of more than `MAX_BOUNDARIES` periods only the last
  ones are evaluated (earlier states would be overwritten anyway).
"""

from __future__ import annotations

import json
import math
import threading
from collections import defaultdict
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any

from moto.cloudwatch.models import (
    Alarm,
    CloudWatchBackend,
    MetricAggregatedDatum,
    MetricDatum,
    cloudwatch_backends,
)
from moto.cloudwatch.responses import CloudWatchResponse
from moto.core.responses import ActionResult

from peagle_sandbox.testing.moto_validate import check_cloudwatch

__all__ = ["AlarmEvaluator", "alarm_patches"]

MAX_BOUNDARIES = 20_160  # two weeks of one-minute periods
_OPS: dict[str, tuple[str, Callable[[float, float], bool]]] = {
    "GreaterThanOrEqualToThreshold": ("greater than or equal to", lambda v, t: v >= t),
    "GreaterThanThreshold": ("greater than", lambda v, t: v > t),
    "LessThanThreshold": ("less than", lambda v, t: v < t),
    "LessThanOrEqualToThreshold": ("less than or equal to", lambda v, t: v <= t),
}
_INITIAL_REASON = "Unchecked: Initial alarm creation"
Key = tuple[str, str, str]  # account, region, alarm name


def _iso(epoch: float) -> str:
    """AWS's timestamps inside StateReasonData: 2026-11-29T21:05:00.000+0000."""
    return datetime.fromtimestamp(epoch, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.000+0000")


def _short(epoch: float) -> str:
    """AWS's datapoint times inside StateReason: (29/11/26 21:04:00)."""
    return datetime.fromtimestamp(epoch, tz=UTC).strftime("%d/%m/%y %H:%M:%S")


def _epoch(naive_utc: datetime) -> float:
    if naive_utc.tzinfo is None:
        naive_utc = naive_utc.replace(tzinfo=UTC)
    return naive_utc.timestamp()


def _naive(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, tz=UTC).replace(tzinfo=None)


def _number(value: float) -> str:
    return repr(float(value))


def _statistic(alarm: Alarm, points: list[Any]) -> tuple[float, float] | None:
    """(value, sample count) of one period's datapoints, or None when it has none."""
    singles = [p.value for p in points if isinstance(p, MetricDatum)]
    sets = [p for p in points if isinstance(p, MetricAggregatedDatum)]
    count = len(singles) + sum(s.sample_count for s in sets)
    if not count:
        return None
    stat = alarm.statistic
    if alarm.extended_statistic:
        if sets or not singles:
            return None  # a percentile of statistic sets is not computable here
        q = float(alarm.extended_statistic[1:])
        ordered = sorted(singles)
        rank = max(1, math.ceil(q / 100 * len(ordered)))
        return ordered[rank - 1], count
    total = sum(singles) + sum(s.sum for s in sets)
    if stat == "Sum":
        return total, count
    if stat == "SampleCount":
        return float(count), count
    if stat == "Minimum":
        return min([*singles, *(s.min for s in sets)]), count
    if stat == "Maximum":
        return max([*singles, *(s.max for s in sets)]), count
    return total / count, count  # Average


def _evaluable(alarm: Alarm) -> bool:
    return bool(
        alarm.rule is None
        and not alarm.metric_data_queries
        and alarm.metric_name
        and alarm.comparison_operator in _OPS
        and alarm.period
        and alarm.evaluation_periods
        and alarm.threshold is not None
        and (alarm.statistic or alarm.extended_statistic)
    )


class AlarmEvaluator:
    """Per-alarm evaluation progress and the alarm history of every account and region."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._evaluated: dict[Key, float] = {}  # the last boundary evaluated
        self._history: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)

    def clear(self) -> None:
        with self._lock:
            self._evaluated.clear()
            self._history.clear()

    # ------------------------------------------------------------ configuration

    def on_put(self, backend: CloudWatchBackend, name: str, previous: Alarm | None) -> None:
        """After PutMetricAlarm: a new alarm starts INSUFFICIENT_DATA; an updated one keeps
        its state; evaluation restarts from the configuration's time."""
        alarm = backend.alarms[name]
        key = (backend.account_id, backend.region_name, name)
        now = _epoch(alarm.configuration_updated_timestamp)
        with self._lock:
            if previous is None:
                alarm.state_value = "INSUFFICIENT_DATA"
                alarm.state_reason = _INITIAL_REASON
                alarm.state_reason_data = None
                alarm.state_updated_timestamp = alarm.configuration_updated_timestamp
            else:
                alarm.state_value = previous.state_value
                alarm.state_reason = previous.state_reason
                alarm.state_reason_data = previous.state_reason_data
                alarm.state_updated_timestamp = previous.state_updated_timestamp
            if alarm.period:
                self._evaluated[key] = math.floor(now / int(alarm.period)) * int(alarm.period)
            verb = "created" if previous is None else "updated"
            self._record(backend, alarm, now, "ConfigurationUpdate", f'Alarm "{name}" {verb}', {
                "version": "1.0",
                "type": "Create" if previous is None else "Update",
                "createdAlarm" if previous is None else "updatedAlarm": {
                    "alarmName": name, "namespace": alarm.namespace,
                    "metricName": alarm.metric_name, "period": alarm.period,
                    "threshold": alarm.threshold, "evaluationPeriods": alarm.evaluation_periods,
                    "comparisonOperator": alarm.comparison_operator,
                    "treatMissingData": alarm.treat_missing_data,
                },
            })  # fmt: skip

    # ------------------------------------------------------------ evaluation

    def evaluate(self, now: float) -> int:
        """Evaluate every alarm for every period boundary passed up to `now`; returns the
        number of state changes."""
        changes = 0
        with self._lock:
            for backend in _backends():
                for alarm in list(backend.alarms.values()):
                    if _evaluable(alarm):
                        changes += self._evaluate_alarm(backend, alarm, now)
        return changes

    def _evaluate_alarm(self, backend: CloudWatchBackend, alarm: Alarm, now: float) -> int:
        key = (backend.account_id, backend.region_name, alarm.name)
        period = int(alarm.period)
        last = self._evaluated.get(key)
        if last is None:
            last = math.floor(_epoch(alarm.configuration_updated_timestamp) / period) * period
        due = math.floor(now / period) * period
        if due <= last:
            return 0
        first = max(last + period, due - (MAX_BOUNDARIES - 1) * period)
        buckets = self._buckets(backend, alarm)
        changes = 0
        for boundary in range(int(first), int(due) + 1, period):
            changes += self._evaluate_at(backend, alarm, boundary, buckets)
        self._evaluated[key] = due
        return changes

    def _buckets(self, backend: CloudWatchBackend, alarm: Alarm) -> dict[int, list[Any]]:
        want = sorted((d.name, d.value) for d in alarm.dimensions)
        period = int(alarm.period)
        out: dict[int, list[Any]] = defaultdict(list)
        for p in backend.metric_data:
            if p.namespace != alarm.namespace or p.name != alarm.metric_name:
                continue
            if sorted((d.name, d.value) for d in p.dimensions) != want:
                continue
            if alarm.unit and p.unit != alarm.unit:
                continue
            start = math.floor(_epoch(p.timestamp) / period) * period
            out[start].append(p)
        return out

    def _evaluate_at(
        self, backend: CloudWatchBackend, alarm: Alarm, boundary: int, buckets: dict
    ) -> int:
        period, n = int(alarm.period), int(alarm.evaluation_periods)
        m = int(alarm.datapoints_to_alarm or n)
        words, breaches = _OPS[alarm.comparison_operator]
        threshold = float(alarm.threshold)
        starts = [boundary - (i + 1) * period for i in range(n)]  # newest first
        values = {s: _statistic(alarm, buckets.get(s, [])) for s in starts}
        present = [(s, v) for s, v in values.items() if v is not None]
        missing = n - len(present)
        breaching = [(s, v) for s, v in present if breaches(v[0], threshold)]
        treat = alarm.treat_missing_data or "missing"
        count = len(breaching) + (missing if treat == "breaching" else 0)
        if not present and treat in ("missing", "ignore"):
            if treat == "ignore":
                return 0
            new = "INSUFFICIENT_DATA"
            noun = "datapoint was" if n == 1 else "datapoints were"
            reason = f"Insufficient Data: {n} {noun} unknown."
        else:
            new = "ALARM" if count >= m else "OK"
            reason = _threshold_reason(alarm, new, present, breaching, words, threshold, m, n)
        if new == alarm.state_value:
            return 0
        stat = alarm.extended_statistic or alarm.statistic
        data: dict[str, Any] = {
            "version": "1.0",
            "queryDate": _iso(boundary),
            "startDate": _iso(boundary - n * period),
            "statistic" if not alarm.extended_statistic else "extendedStatistic": stat,
            "period": period,
            "recentDatapoints": [v[0] for _, v in sorted(present)],
            "threshold": threshold,
            "evaluatedDatapoints": [
                {"timestamp": _iso(s), "sampleCount": v[1], "value": v[0]} for s, v in present
            ],
        }
        if alarm.unit:
            data["unit"] = alarm.unit
        old = {
            "stateValue": alarm.state_value,
            "stateReason": alarm.state_reason,
            **(
                {"stateReasonData": json.loads(alarm.state_reason_data)}
                if alarm.state_reason_data
                else {}
            ),
        }
        summary = f"Alarm updated from {alarm.state_value} to {new}"
        alarm.state_value = new
        alarm.state_reason = reason
        alarm.state_reason_data = json.dumps(data)
        alarm.state_updated_timestamp = _naive(boundary)
        self._record(backend, alarm, boundary, "StateUpdate", summary, {
            "version": "1.0",
            "oldState": old,
            "newState": {"stateValue": new, "stateReason": reason, "stateReasonData": data},
        })  # fmt: skip
        return 1

    def on_set_state(self, backend: CloudWatchBackend, name: str, old: dict[str, Any]) -> None:
        """After SetAlarmState: a StateUpdate in the history at the clock's time, as AWS
        records one (a guardrail rollback reads it); the next evaluation may move it back."""
        alarm = backend.alarms.get(name)
        if alarm is None or old.get("stateValue") == alarm.state_value:
            return
        new = {"stateValue": alarm.state_value, "stateReason": alarm.state_reason}
        if alarm.state_reason_data:
            new["stateReasonData"] = json.loads(alarm.state_reason_data)
        with self._lock:
            self._record(backend, alarm, _epoch(alarm.state_updated_timestamp), "StateUpdate",
                         f"Alarm updated from {old['stateValue']} to {alarm.state_value}",
                         {"version": "1.0", "oldState": old, "newState": new})  # fmt: skip

    # ------------------------------------------------------------ history

    def _record(
        self,
        backend: CloudWatchBackend,
        alarm: Alarm,
        at: float,
        kind: str,
        summary: str,
        data: dict[str, Any],
    ) -> None:
        self._history[(backend.account_id, backend.region_name)].append(
            {
                "AlarmName": alarm.name,
                "AlarmType": "MetricAlarm",
                "Timestamp": _naive(at),
                "HistoryItemType": kind,
                "HistorySummary": summary,
                "HistoryData": json.dumps(data),
            }
        )

    def history(self, backend: CloudWatchBackend, params: dict[str, Any]) -> list[dict]:
        """DescribeAlarmHistory's items (newest first unless ScanBy=TimestampAscending)."""
        items = list(self._history.get((backend.account_id, backend.region_name), []))
        name = params.get("AlarmName")
        kind = params.get("HistoryItemType")
        types = params.get("AlarmTypes") or []
        start, end = params.get("StartDate"), params.get("EndDate")
        out = []
        for item in items:
            at = item["Timestamp"].replace(tzinfo=UTC)
            if name and item["AlarmName"] != name:
                continue
            if kind and item["HistoryItemType"] != kind:
                continue
            if types and item["AlarmType"] not in types:
                continue
            if start is not None and at < _aware(start):
                continue
            if end is not None and at > _aware(end):
                continue
            out.append(item)
        newest_first = params.get("ScanBy", "TimestampDescending") != "TimestampAscending"
        out.sort(key=lambda i: i["Timestamp"], reverse=newest_first)
        limit = params.get("MaxRecords")
        return out[: int(limit)] if limit else out


def _aware(value: Any) -> datetime:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    return datetime.fromtimestamp(float(value), tz=UTC)


def _threshold_reason(
    alarm: Alarm,
    new: str,
    present: list[tuple[int, tuple[float, float]]],
    breaching: list[tuple[int, tuple[float, float]]],
    words: str,
    threshold: float,
    m: int,
    n: int,
) -> str:
    """AWS's "Threshold Crossed: ..." wording."""
    if new == "OK" and present and len(breaching) == len(present):
        # Every period with data breaches, but fewer than M of them (the rest missing):
        # AWS's wording for this case is not documented; the harness says what happened.
        listed = ", ".join(f"{_number(v[0])} ({_short(s)})" for s, v in breaching)
        k = len(breaching)
        return (
            f"Threshold Crossed: {k} out of the last {n} datapoints [{listed}] "
            f"{'was' if k == 1 else 'were'} {words} the threshold ({_number(threshold)}), "
            f"fewer than the {m} needed for ALARM (missing datapoints are not counted)."
        )
    if new == "ALARM":
        shown, verb_not = breaching, ""
        minimum, transition = m, f"{alarm.state_value} -> ALARM"
    else:
        shown = [p for p in present if p not in breaching]
        verb_not = "not "
        minimum, transition = n - m + 1, f"{alarm.state_value} -> OK"
    listed = ", ".join(f"{_number(v[0])} ({_short(s)})" for s, v in shown)
    k = len(shown)
    if n == 1:
        was = "was" if k == 1 else "were"
        return (
            f"Threshold Crossed: 1 datapoint [{listed}] {was} {verb_not}{words} the "
            f"threshold ({_number(threshold)})."
        )
    noun = "datapoint" if k == 1 else "datapoints"
    was = "was" if k == 1 else "were"
    min_noun = "datapoint" if minimum == 1 else "datapoints"
    return (
        f"Threshold Crossed: {k} out of the last {n} {noun} [{listed}] {was} {verb_not}"
        f"{words} the threshold ({_number(threshold)}) (minimum {minimum} {min_noun} for "
        f"{transition} transition)."
    )


def _backends() -> Iterable[CloudWatchBackend]:
    for regions in list(cloudwatch_backends.values()):
        yield from list(regions.values())


# ---------------------------------------------------------------- patches


def alarm_patches(
    evaluator: Callable[[], AlarmEvaluator], evaluate: Callable[[], object]
) -> list[tuple[type, str, Any]]:
    """DescribeAlarms / DescribeAlarmsForMetric evaluate first; DescribeAlarmHistory;
    SetAlarmState writes its StateUpdate to the history."""
    describe = CloudWatchResponse.__dict__["describe_alarms"]
    for_metric = CloudWatchResponse.__dict__["describe_alarms_for_metric"]

    def describe_alarms(self: CloudWatchResponse) -> ActionResult:
        check_cloudwatch("DescribeAlarms", self._get_params())
        evaluate()
        result: ActionResult = describe(self)
        return result

    def describe_alarms_for_metric(self: CloudWatchResponse) -> ActionResult:
        check_cloudwatch("DescribeAlarmsForMetric", self._get_params())
        evaluate()
        result: ActionResult = for_metric(self)
        return result

    def describe_alarm_history(self: CloudWatchResponse) -> ActionResult:
        params: dict[str, Any] = self._get_params()
        check_cloudwatch("DescribeAlarmHistory", params)
        evaluate()
        items = evaluator().history(self.cloudwatch_backend, params)
        return ActionResult({"AlarmHistoryItems": items})

    set_state = CloudWatchResponse.__dict__["set_alarm_state"]

    def set_alarm_state(self: CloudWatchResponse) -> ActionResult:
        alarm = self.cloudwatch_backend.alarms.get(self._get_param("AlarmName"))
        old = {"stateValue": alarm.state_value, "stateReason": alarm.state_reason} if alarm else {}
        result: ActionResult = set_state(self)
        evaluator().on_set_state(self.cloudwatch_backend, self._get_param("AlarmName"), old)
        return result

    return [
        (CloudWatchResponse, "set_alarm_state", set_alarm_state),
        (CloudWatchResponse, "describe_alarms", describe_alarms),
        (CloudWatchResponse, "describe_alarms_for_metric", describe_alarms_for_metric),
        (CloudWatchResponse, "describe_alarm_history", describe_alarm_history),
    ]
