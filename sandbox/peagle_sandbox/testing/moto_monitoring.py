"""CloudWatch Logs and CloudWatch as AWS computes them, for speculation health (issue 37):
what moto 5.2.5 lacks, patched on its classes like the rest of the harness.

moto has no PutTransformer / GetTransformer / DeleteTransformer / TestTransformer, keeps
only four members of PutMetricFilter (dropping `applyOnTransformedLogs`), appends a second
filter of the same name instead of replacing it, never evaluates a metric filter, leaves
a deleted log group's filters behind, ignores PutDashboard's `Tags`, and never evaluates
an alarm. Here:

- The transformer API, stored on the log group (so DeleteLogGroup removes it, as AWS
  does); a log group that does not exist is `ResourceNotFoundException`.
  ASSUMPTION: GetTransformer on a group without a transformer is ResourceNotFoundException
  (AWS's reference lists the error, not when); DeleteTransformer there succeeds.
- PutMetricFilter keeps every member botocore has, replaces a filter of the same name on
  the same group, and refuses a group that does not exist; DescribeMetricFilters echoes
  them (with `creationTime`); DeleteLogGroup removes the group's filters.
- Ingestion: every event stored in a log group (PutLogEvents, `harness.seed_logs`, the
  SIMULATED log simulator and the real engine's host all reach `LogGroup.put_log_events`)
  goes through the group's transformer, then each metric filter (on the transformed event
  with `applyOnTransformedLogs`, else on the raw message), and what a filter publishes
  lands in moto's CloudWatch backend of the same account and region at the EVENT's
  timestamp (`moto_grok` says what is computed and what is assumed).
- GetMetricStatistics reports periods aligned to the epoch in multiples of Period, as AWS
  does (moto starts them at the first datapoint's own time).
- PutDashboard keeps its `Tags` (ListTagsForResource on the dashboard's ARN answers them,
  TagResource accepts the ARN, DeleteDashboards drops them).
- Alarms: `moto_alarms` (evaluated on the harness clock; DescribeAlarmHistory).
- PutTransformer, TestTransformer, PutMetricFilter, PutRetentionPolicy, PutDashboard and
  PutMetricAlarm are checked against botocore's model (`moto_validate`) first, and refused
  with AWS's error. PutRetentionPolicy also takes only the day counts AWS lists.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from moto.cloudwatch.models import (
    CloudWatchBackend,
    MetricDatum,
    Statistics,
    cloudwatch_backends,
)
from moto.cloudwatch.responses import CloudWatchResponse
from moto.core import utils as moto_utils
from moto.core.responses import ActionResult
from moto.logs.exceptions import InvalidParameterException, ResourceNotFoundException
from moto.logs.models import LogGroup, LogsBackend, logs_backends
from moto.logs.responses import LogsResponse

from peagle_sandbox.testing import moto_grok
from peagle_sandbox.testing.moto_validate import (
    check_cloudwatch,
    check_logs,
    validation_message,
)

__all__ = ["RETENTION_DAYS", "monitoring_patches", "transformer_of"]

# PutRetentionPolicy's documented values (botocore's model states them in prose only).
RETENTION_DAYS = (1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096,
                  1827, 2192, 2557, 2922, 3288, 3653)  # fmt: skip
_TRANSFORMER = "_peagle_transformer"  # attribute of moto's LogGroup instance


def _group_name(identifier: str) -> str:
    """A log group's name from its name or ARN (`arn:…:log-group:NAME[:*]`)."""
    if identifier.startswith("arn:") and ":log-group:" in identifier:
        name = identifier.split(":log-group:", 1)[1]
        return name[:-2] if name.endswith(":*") else name
    return identifier


def _group(backend: LogsBackend, identifier: str) -> LogGroup:
    group = backend.groups.get(_group_name(identifier))
    if group is None:
        raise ResourceNotFoundException()
    return group


def transformer_of(group: LogGroup) -> dict[str, Any] | None:
    """The transformer stored on a log group (creationTime, lastModifiedTime, config)."""
    found: dict[str, Any] | None = group.__dict__.get(_TRANSFORMER)
    return found


def _now_ms() -> int:
    # Through the module: the harness patches `moto.core.utils.utcnow` (the clock), and
    # this module is not a moto module the clock patch would reach by name.
    return int(moto_utils.unix_time_millis(moto_utils.utcnow()))


# ---------------------------------------------------------------- logs: responses


def _body(response: LogsResponse) -> dict[str, Any]:
    params: dict[str, Any] = json.loads(response.body or "{}")
    return params


def put_transformer(self: LogsResponse) -> str:
    params = _body(self)
    check_logs("PutTransformer", params)
    group = _group(self.logs_backend, params["logGroupIdentifier"])
    now = _now_ms()
    old = transformer_of(group)
    group.__dict__[_TRANSFORMER] = {
        "creationTime": old["creationTime"] if old else now,
        "lastModifiedTime": now,
        "transformerConfig": params["transformerConfig"],
    }
    return ""


def get_transformer(self: LogsResponse) -> str:
    params = _body(self)
    check_logs("GetTransformer", params)
    identifier = params.get("logGroupIdentifier", "")
    stored = transformer_of(_group(self.logs_backend, identifier))
    if stored is None:  # ASSUMPTION (module docstring)
        raise ResourceNotFoundException(msg="The specified log group has no transformer.")
    return json.dumps({"logGroupIdentifier": identifier, **stored})


def delete_transformer(self: LogsResponse) -> str:
    params = _body(self)
    check_logs("DeleteTransformer", params)
    group = _group(self.logs_backend, params.get("logGroupIdentifier", ""))
    group.__dict__.pop(_TRANSFORMER, None)
    return ""


def test_transformer(self: LogsResponse) -> str:
    params = _body(self)
    check_logs("TestTransformer", params)
    config = params["transformerConfig"]
    out = [
        {
            "eventNumber": i,
            "eventMessage": message,
            "transformedEventMessage": json.dumps(moto_grok.transform(config, message)),
        }
        for i, message in enumerate(params["logEventMessages"], start=1)
    ]
    return json.dumps({"transformedLogs": out})


def put_metric_filter(self: LogsResponse) -> str:
    params = _body(self)
    check_logs("PutMetricFilter", params)
    self.logs_backend.put_metric_filter_full(params)
    return ""


def put_retention_policy(self: LogsResponse) -> str:
    params = _body(self)
    check_logs("PutRetentionPolicy", params)
    days = params["retentionInDays"]
    if days not in RETENTION_DAYS:
        raise InvalidParameterException(
            msg=validation_message(
                [
                    f"Value '{days}' at 'retentionInDays' failed to satisfy constraint: "
                    f"Member must satisfy enum value set: [{', '.join(map(str, RETENTION_DAYS))}]"
                ]
            )
        )
    self.logs_backend.put_retention_policy(params["logGroupName"], days)
    return ""


# ---------------------------------------------------------------- logs: backend


def put_metric_filter_full(self: LogsBackend, params: dict[str, Any]) -> None:
    """Store a metric filter with every member it was given, replacing one of the same
    name on the same group (AWS's PutMetricFilter "creates or updates")."""
    group = _group(self, params["logGroupName"])
    stored = {k: v for k, v in params.items() if v is not None}
    stored["logGroupName"] = group.name
    old = [
        f
        for f in self.filters.metric_filters
        if f["filterName"] == stored["filterName"] and f["logGroupName"] == group.name
    ]
    stored["creationTime"] = old[0].get("creationTime", _now_ms()) if old else _now_ms()
    for f in old:
        self.filters.metric_filters.remove(f)
    self.filters.metric_filters.append(stored)


def _original(cls: type, name: str) -> Callable[..., Any]:
    fn: Callable[..., Any] = cls.__dict__[name]
    return fn


def _delete_log_group_patch() -> Callable[..., None]:
    original = _original(LogsBackend, "delete_log_group")

    def delete_log_group(self: LogsBackend, log_group_name: str) -> None:
        original(self, log_group_name)  # raises for a missing group, as AWS
        self.filters.metric_filters[:] = [
            f for f in self.filters.metric_filters if f["logGroupName"] != log_group_name
        ]

    return delete_log_group


def _delete_log_group_response_patch() -> Callable[..., str]:
    original = _original(LogsResponse, "delete_log_group")

    def delete_log_group(self: LogsResponse) -> str:
        check_logs("DeleteLogGroup", _body(self))
        result: str = original(self)
        return result

    return delete_log_group


def _put_log_events_patch() -> Callable[..., str]:
    original = _original(LogGroup, "put_log_events")

    def put_log_events(self: LogGroup, log_stream_name: str, log_events: list[dict]) -> str:
        token: str = original(self, log_stream_name, log_events)
        ingest(self, log_events)
        return token

    return put_log_events


def ingest(group: LogGroup, events: list[dict[str, Any]]) -> None:
    """Transformer, then metric filters, then datapoints, for events just stored."""
    backend = logs_backends[group.account_id][group.region]
    filters = [f for f in backend.filters.metric_filters if f["logGroupName"] == group.name]
    if not filters or not events:
        return
    stored = transformer_of(group)
    metrics = cloudwatch_backends[group.account_id][group.region]
    for event in events:
        message = event["message"]
        transformed = moto_grok.transform(stored["transformerConfig"], message) if stored else None
        raw = moto_grok.as_json(message)
        at = datetime.fromtimestamp(event["timestamp"] / 1000, tz=UTC).replace(tzinfo=None)
        for f in filters:
            on_transformed = f.get("applyOnTransformedLogs") and transformed is not None
            point = moto_grok.datapoint(f, message, transformed if on_transformed else raw)
            if point is not None:
                metrics.metric_data.append(
                    MetricDatum(
                        point.namespace,
                        point.name,
                        point.value,
                        [{"Name": n, "Value": v} for n, v in point.dimensions],
                        at,
                        point.unit,
                    )
                )


# ---------------------------------------------------------------- cloudwatch: statistics


def _aligned_statistics_patch() -> Callable[..., list[Any]]:
    """GetMetricStatistics with periods aligned to the epoch in multiples of Period, as
    AWS's datapoint timestamps are (moto starts its first period at the first datapoint's
    own time, so a metric-filter datapoint at 08:00:00.001 reported 08:00:00.001)."""
    original = _original(CloudWatchBackend, "get_metric_statistics")

    def get_metric_statistics(self: CloudWatchBackend, *args: Any, **kwargs: Any) -> list[Any]:
        stats: list[Any] = original(self, *args, **kwargs)
        period = int(kwargs.get("period", args[4] if len(args) > 4 else 60))
        regrouped: dict[datetime, Any] = {}
        for point in [p for s in stats for p in s.metric_data]:
            epoch = point.timestamp.replace(tzinfo=UTC).timestamp()
            start = datetime.fromtimestamp(epoch - epoch % period, tz=UTC).replace(tzinfo=None)
            if start not in regrouped:
                regrouped[start] = Statistics(stats[0].stats, start)
            regrouped[start].metric_data.append(point)
            regrouped[start].unit = point.unit
        return [regrouped[k] for k in sorted(regrouped)]

    return get_metric_statistics


# ---------------------------------------------------------------- cloudwatch: dashboards


def _cw_params(response: CloudWatchResponse) -> dict[str, Any]:
    params: dict[str, Any] = response._get_params()
    return params


def _put_dashboard_patch() -> Callable[..., ActionResult]:
    original = _original(CloudWatchResponse, "put_dashboard")

    def put_dashboard(self: CloudWatchResponse) -> ActionResult:
        params = _cw_params(self)
        check_cloudwatch("PutDashboard", params)
        result: ActionResult = original(self)
        dashboard = self.cloudwatch_backend.dashboards[params["DashboardName"]]
        tags = params.get("Tags") or []
        if tags:
            self.cloudwatch_backend.tagger.tag_resource(dashboard.arn, tags)
        return result

    return put_dashboard


def _delete_dashboards_patch() -> Callable[..., ActionResult]:
    original = _original(CloudWatchResponse, "delete_dashboards")

    def delete_dashboards(self: CloudWatchResponse) -> ActionResult:
        check_cloudwatch("DeleteDashboards", _cw_params(self))
        backend = self.cloudwatch_backend
        arns = {name: d.arn for name, d in backend.dashboards.items()}
        result: ActionResult = original(self)
        for name, arn in arns.items():
            if name not in backend.dashboards:
                backend.tagger.delete_all_tags_for_resource(arn)
        return result

    return delete_dashboards


def _tag_resource_patch() -> Callable[..., None]:
    original = _original(CloudWatchBackend, "tag_resource")

    def tag_resource(self: CloudWatchBackend, arn: str, tags: dict[str, str]) -> None:
        if arn in {d.arn for d in self.dashboards.values()}:
            self.tagger.tag_resource(arn, self.tagger.convert_dict_to_tags_input(tags))
            return
        original(self, arn, tags)

    return tag_resource


OnAlarmPut = Callable[[CloudWatchBackend, str, Any], None]


def _put_metric_alarm_patch(on_put: OnAlarmPut) -> Any:
    original = _original(CloudWatchResponse, "put_metric_alarm")

    def put_metric_alarm(self: CloudWatchResponse) -> ActionResult:
        params = _cw_params(self)
        check_cloudwatch("PutMetricAlarm", params)
        previous = self.cloudwatch_backend.alarms.get(params["AlarmName"])
        result: ActionResult = original(self)
        on_put(self.cloudwatch_backend, params["AlarmName"], previous)
        return result

    return put_metric_alarm


def monitoring_patches(
    on_alarm_put: OnAlarmPut | None = None,
) -> list[tuple[type, str, Any]]:
    """(class, attribute, replacement) triples; originals are captured at install time."""
    return [
        (LogsResponse, "put_transformer", put_transformer),
        (LogsResponse, "get_transformer", get_transformer),
        (LogsResponse, "delete_transformer", delete_transformer),
        (LogsResponse, "test_transformer", test_transformer),
        (LogsResponse, "put_metric_filter", put_metric_filter),
        (LogsResponse, "put_retention_policy", put_retention_policy),
        (LogsBackend, "put_metric_filter_full", put_metric_filter_full),
        (LogsBackend, "delete_log_group", _delete_log_group_patch()),
        (LogsResponse, "delete_log_group", _delete_log_group_response_patch()),
        (LogGroup, "put_log_events", _put_log_events_patch()),
        (CloudWatchBackend, "get_metric_statistics", _aligned_statistics_patch()),
        (CloudWatchResponse, "put_dashboard", _put_dashboard_patch()),
        (CloudWatchResponse, "delete_dashboards", _delete_dashboards_patch()),
        (CloudWatchBackend, "tag_resource", _tag_resource_patch()),
        (
            CloudWatchResponse,
            "put_metric_alarm",
            _put_metric_alarm_patch(on_alarm_put or (lambda _b, _n, _p: None)),
        ),
    ]
