"""What is live of an endpoint's monitoring (`read_monitoring`), and what of it gc may
collect (`find_orphans`): read only. The ownership rules are `lifecycle/monitoring.py`'s
(its docstring); making, changing and removing are there.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC
from typing import Any

from ..planning.monitoring import (
    FILTER_NAMES,
    GROK_MATCH,
    THRESHOLD_TAG,
    alarm_name,
    dashboard_name,
    endpoint_log_group,
)

__all__ = [
    "KEEP_LOGS",
    "MONITORING_KINDS",
    "LiveMonitoring",
    "find_orphans",
    "read_monitoring",
    "read_monitoring_if_allowed",
]

KEEP_LOGS = "peagle:keep-logs"
# The kinds a deploy records in `created` for its rollback (the name of a metric filter is
# "<log group>:<filter>": neither a log group name nor a filter name may hold a colon).
MONITORING_KINDS = (
    "log_group", "transformer", "metric_filter", "alarm", "dashboard", "rollout_alarm"
)  # fmt: skip
# A rollout's own alarms (planning/rollout.py: `<endpoint>-rollout-<signal>`).
ROLLOUT_SUFFIXES = ("-rollout-speculation", "-rollout-latency", "-rollout-errors")
PEAGLE_FILTERS = frozenset(FILTER_NAMES.values())


def _code(e: Exception) -> str:
    return str(getattr(e, "response", {}).get("Error", {}).get("Code", ""))


def is_gone(e: Exception) -> bool:
    """A CloudWatch Logs or CloudWatch error that says the resource does not exist."""
    return _code(e) in ("ResourceNotFoundException", "ResourceNotFound", "ResourceNotFoundFault")


def _tags(items: Any) -> dict[str, str]:
    if isinstance(items, dict):
        return {str(k): str(v) for k, v in items.items()}
    return {t["Key"]: t["Value"] for t in items or []}


def monitoring_label(kind: str, name: str) -> str:
    """How delete and gc name a monitoring resource, with its kind: the alarm and the
    dashboard share a name, and a transformer is named by its log group. `kind` is one
    of MONITORING_KINDS; a metric filter's `name` is `<group>:<filter>` or the filter."""
    if kind == "metric_filter":
        group, _, f = name.rpartition(":")
        return f"metric filter {f} on {group}" if group else f"metric filter {f}"
    if kind == "transformer":
        return f"transformer on {name}"
    if kind == "rollout_alarm":
        return f"rollout alarm {name}"
    return f"{kind.replace('_', ' ')} {name}"


def cloudwatch_tags(cw: Any, arn: str) -> dict[str, str]:
    """An alarm's or dashboard's tags (CloudWatch ListTagsForResource) as a mapping."""
    return _tags(cw.list_tags_for_resource(ResourceARN=arn).get("Tags", []))


def owned_by(tags: dict[str, str], endpoint: str) -> bool:
    """peagle made it for `endpoint`: `peagle:managed=true` and `peagle:deployment`."""
    return tags.get("peagle:managed") == "true" and tags.get("peagle:deployment") == endpoint


# -- reading ----------------------------------------------------------------------------


def find_log_group(logs: Any, group: str) -> dict[str, Any] | None:
    """DescribeLogGroups with the exact name as the prefix, then the exact match (a prefix
    also answers `<group>-2`); None when there is no such group."""
    for page in logs.get_paginator("describe_log_groups").paginate(logGroupNamePrefix=group):
        for g in page.get("logGroups", []):
            if g["logGroupName"] == group:
                return dict(g)
    return None


def group_arn(g: dict[str, Any]) -> str:
    # `logGroupArn` has no ":*" suffix, which ListTagsForResource wants; older answers
    # only have `arn` (with it).
    return str(g.get("logGroupArn") or g["arn"].removesuffix(":*"))


def group_tags(logs: Any, g: dict[str, Any]) -> dict[str, str]:
    try:
        return _tags(logs.list_tags_for_resource(resourceArn=group_arn(g)).get("tags", {}))
    except Exception as e:
        if is_gone(e):
            return {}
        raise


def transformer_of(logs: Any, group: str) -> list[dict[str, Any]] | None:
    """The group's transformer configuration, None when it has none."""
    try:
        config = logs.get_transformer(logGroupIdentifier=group).get("transformerConfig")
    except Exception as e:
        if is_gone(e):
            return None
        raise
    return list(config) if config else None


def is_peagles_transformer(config: list[dict[str, Any]] | None) -> bool:
    return bool(config) and (config[0].get("grok") or {}).get("match") == GROK_MATCH  # type: ignore[index]


def peagle_filters(logs: Any, group: str) -> list[str]:
    """The names of peagle's metric filters on `group` (none when it does not exist)."""
    try:
        found = logs.describe_metric_filters(logGroupName=group, filterNamePrefix="peagle-")
    except Exception as e:
        if is_gone(e):
            return []
        raise
    return sorted(
        f["filterName"] for f in found.get("metricFilters", []) if f["filterName"] in PEAGLE_FILTERS
    )


def peagle_alarm(cw: Any, endpoint: str) -> tuple[dict[str, Any], dict[str, str]] | None:
    """peagle's alarm on `endpoint` and its tags, None when there is none (or it is not
    peagle's)."""
    found = cw.describe_alarms(AlarmNames=[alarm_name(endpoint)], AlarmTypes=["MetricAlarm"])
    for a in found.get("MetricAlarms", []):
        tags = cloudwatch_tags(cw, a["AlarmArn"])
        if owned_by(tags, endpoint):
            return a, tags
    return None


def rollout_alarm_names(cw: Any, endpoint: str) -> list[str]:
    """The rollout alarms peagle left on `endpoint` (an update interrupted twice, or one
    whose clean-up failed): named `<endpoint>-rollout-<signal>` and tagged for this
    endpoint's rollout. Read only."""
    from ..planning.rollout import ROLLOUT_TAG

    found = cw.describe_alarms(AlarmNamePrefix=f"{endpoint}-rollout-").get("MetricAlarms", [])
    out = []
    for a in found:
        if not a["AlarmName"].endswith(ROLLOUT_SUFFIXES):
            continue
        if a["AlarmName"].rsplit("-rollout-", 1)[0] != endpoint:
            continue  # `<endpoint>-rollout-x-rollout-errors` is another endpoint's
        tags = cloudwatch_tags(cw, a["AlarmArn"])
        if owned_by(tags, endpoint) and ROLLOUT_TAG in tags:
            out.append(a["AlarmName"])
    return out


def peagle_dashboard(cw: Any, endpoint: str) -> dict[str, Any] | None:
    """peagle's dashboard on `endpoint` (GetDashboard's answer), None when there is none."""
    try:
        d = cw.get_dashboard(DashboardName=dashboard_name(endpoint))
    except Exception as e:
        if is_gone(e):
            return None
        raise
    tags = cloudwatch_tags(cw, d["DashboardArn"])
    return dict(d) if owned_by(tags, endpoint) else None


@dataclass(frozen=True)
class LiveMonitoring:
    """What is live of an endpoint's monitoring (`read_monitoring`).

    Attributes:
        endpoint: the endpoint watched.
        log_group: its log group's name.
        alarm: peagle's alarm as DescribeAlarms answers it, None if there is none.
        alarm_tags: the alarm's tags.
        dashboard_body: peagle's dashboard's body, None if there is none.
        filters: the names of peagle's metric filters on the group.
        transformer: peagle's transformer is on the group.
        log_group_exists: the group exists.
        log_group_owned: peagle created it (its tags say so).
        retention_days: the group's retention (None: never expires, or no group).
        keep_logs: an owned group is tagged `peagle:keep-logs=true`.
    """

    endpoint: str
    log_group: str
    alarm: dict[str, Any] | None
    alarm_tags: dict[str, str]
    dashboard_body: str | None
    filters: list[str]
    transformer: bool
    log_group_exists: bool
    log_group_owned: bool
    retention_days: int | None
    keep_logs: bool

    @property
    def account(self) -> str | None:
        """The account, from the alarm's ARN (arn:aws:cloudwatch:REGION:ACCOUNT:alarm:…)."""
        return self.alarm["AlarmArn"].split(":")[4] if self.alarm else None

    @property
    def threshold_default(self) -> bool:
        """The alarm's threshold came from K (the alarm's `peagle:threshold` tag)."""
        return self.alarm_tags.get(THRESHOLD_TAG, "default") == "default"

    def as_spec(self) -> Any:
        """The MonitoringSpec that plans to what is live (for `adopt` and for an update of
        K, which keeps monitoring); the threshold is left to the default when it came
        from K. The retention and keep_logs only of a group peagle owns."""
        from ..planning.spec.model import MonitoringSpec

        a = self.alarm or {}
        data: dict[str, Any] = {"enabled": True}
        if a:
            if not self.threshold_default:
                data["threshold"] = a["Threshold"]
            data["period_seconds"] = a["Period"]
            data["evaluation_periods"] = a["EvaluationPeriods"]
            data["datapoints_to_alarm"] = a.get("DatapointsToAlarm", a["EvaluationPeriods"])
            data["alarm_actions"] = list(a.get("AlarmActions") or [])
        if self.log_group_owned and self.retention_days:
            data["log_retention_days"] = self.retention_days
        data["keep_logs"] = self.keep_logs
        return MonitoringSpec.model_validate(data)


def read_monitoring(aws: Any, endpoint: str) -> LiveMonitoring | None:
    """What is live of peagle's monitoring of `endpoint`; None when there is no alarm of
    peagle's, none of its metric filters and no log group it made (not monitored; a
    rollback cut short may leave only the group)."""
    logs, cw = aws.client("logs"), aws.client("cloudwatch")
    group = endpoint_log_group(endpoint)
    found = peagle_alarm(cw, endpoint)
    filters = peagle_filters(logs, group)
    g = find_log_group(logs, group)
    tags = group_tags(logs, g) if g else {}
    owned = g is not None and owned_by(tags, endpoint)
    if found is None and not filters and not owned:
        return None
    d = peagle_dashboard(cw, endpoint)
    return LiveMonitoring(
        endpoint=endpoint,
        log_group=group,
        alarm=found[0] if found else None,
        alarm_tags=found[1] if found else {},
        dashboard_body=d.get("DashboardBody") if d else None,
        filters=filters,
        transformer=g is not None and is_peagles_transformer(transformer_of(logs, group)),
        log_group_exists=g is not None,
        log_group_owned=owned,
        retention_days=g.get("retentionInDays") if g else None,
        keep_logs=owned and tags.get(KEEP_LOGS) == "true",
    )


DENIED = ("AccessDenied", "AccessDeniedException", "UnauthorizedOperation")


def read_monitoring_if_allowed(
    aws: Any, endpoint: str, say: Any = None
) -> tuple[LiveMonitoring | None, bool]:
    """(read_monitoring's answer, True) or, when the caller may not read CloudWatch (a
    deployer policy from before monitoring), (None, False) and a warning on `say`: an
    update or apply that asks nothing of monitoring must not fail for it."""
    try:
        return read_monitoring(aws, endpoint), True
    except Exception as e:
        if _code(e) not in DENIED:
            raise
        if say is not None:
            say(f"warning: monitoring of {endpoint} not read (access denied); left as it is")
        return None, False


# -- gc ---------------------------------------------------------------------------------

# What gc may collect: (kind, name, endpoint), in deletion order per endpoint.
Orphan = tuple[str, str, str]


def find_orphans(aws: Any, live: set[str], now: Any, min_age_seconds: float) -> list[Orphan]:
    """peagle's alarms, dashboards and log groups (by their tags: never one without them)
    whose endpoint is not in `live`, older than `min_age_seconds` on AWS's clock (`now`),
    and peagle's filters and transformer on the log group of each such endpoint. A log
    group tagged `peagle:keep-logs` is kept, as delete keeps it."""
    from datetime import datetime, timedelta

    logs, cw = aws.client("logs"), aws.client("cloudwatch")
    cutoff = now - timedelta(seconds=min_age_seconds)
    found: dict[str, list[tuple[str, str]]] = {}

    def old(when: Any) -> bool:
        if isinstance(when, (int, float)):  # CloudWatch Logs: milliseconds since the epoch
            when = datetime.fromtimestamp(when / 1000, tz=UTC)
        return when is None or when <= cutoff

    from ..planning.rollout import ROLLOUT_TAG

    suffix = "-speculation"
    for page in cw.get_paginator("describe_alarms").paginate(AlarmTypes=["MetricAlarm"]):
        for a in page.get("MetricAlarms", []):
            name = a["AlarmName"]
            rollout = name.endswith(ROLLOUT_SUFFIXES)  # a rollout's: `<ep>-rollout-<signal>`
            ep = name.rsplit("-rollout-", 1)[0] if rollout else name.removesuffix(suffix)
            if not name.endswith(suffix) and not rollout or ep in live:
                continue
            tags = cloudwatch_tags(cw, a["AlarmArn"])
            if rollout and ROLLOUT_TAG not in tags:
                continue
            if owned_by(tags, ep) and old(a.get("AlarmConfigurationUpdatedTimestamp")):
                found.setdefault(ep, []).append(("rollout_alarm" if rollout else "alarm", name))
    for page in cw.get_paginator("list_dashboards").paginate():
        for d in page.get("DashboardEntries", []):
            ep = d["DashboardName"].removesuffix(suffix)
            if not d["DashboardName"].endswith(suffix) or ep in live:
                continue
            tags = cloudwatch_tags(cw, d["DashboardArn"])
            if owned_by(tags, ep) and old(d.get("LastModified")):
                found.setdefault(ep, []).append(("dashboard", d["DashboardName"]))
    prefix = endpoint_log_group("")
    groups = logs.get_paginator("describe_log_groups").paginate(logGroupNamePrefix=prefix)
    owned_groups: dict[str, bool] = {}
    for page in groups:
        for g in page.get("logGroups", []):
            ep = g["logGroupName"].removeprefix(prefix)
            if ep in live or "/" in ep:
                continue
            tags = group_tags(logs, g)
            if owned_by(tags, ep):
                owned_groups[ep] = True
                if tags.get(KEEP_LOGS) != "true" and old(g.get("creationTime")):
                    found.setdefault(ep, []).append(("log_group", g["logGroupName"]))
    out: list[Orphan] = []
    for ep, items in sorted(found.items()):
        group = endpoint_log_group(ep)
        out += [(k, n, ep) for k, n in items if k in ("rollout_alarm", "alarm", "dashboard")]
        out += [("metric_filter", f"{group}:{f}", ep) for f in peagle_filters(logs, group)]
        if is_peagles_transformer(transformer_of(logs, group)):
            out.append(("transformer", group, ep))
        out += [(k, n, ep) for k, n in items if k == "log_group"]
    return out
