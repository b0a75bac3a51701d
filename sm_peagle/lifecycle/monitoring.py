"""The monitoring resources of an endpoint (`monitoring:`, `--monitor`): made, read, changed
and removed. The requests themselves are planned in `planning/monitoring.py`; this module
sends them, reads what is live, and removes exactly what peagle made.

Ownership (docs/guides/health.md):
- the log group `/aws/sagemaker/Endpoints/<endpoint>`: peagle creates it only when it does
  not exist, tags it (`peagle:managed`, `peagle:deployment`), sets its retention and owns
  it: it goes with the endpoint unless `keep_logs` (the `peagle:keep-logs` tag, or
  `delete(keep_logs=True)`). A group that existed before is never created, tagged, given
  a retention or deleted: only peagle's transformer and filters are put there and removed.
- the transformer: one per log group; peagle's is the one whose grok `match` is
  `GROK_MATCH`. Another one on the group refuses the deploy before anything is created.
- the metric filters: peagle's by name (`FILTER_NAMES`).
- the alarm and the dashboard `<endpoint>-speculation`: peagle's when they carry
  `peagle:managed=true` and `peagle:deployment=<endpoint>`.

Deploy sends these after the endpoint config and before CreateEndpoint: SageMaker creates
the group (untagged, never expiring) on its first write if it does not exist yet.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import Param, SpecError, text
from ..planning.monitoring import THRESHOLD_TAG, MonitoringPlan, dashboard_name, endpoint_log_group
from .monitoring_read import (
    KEEP_LOGS,
    MONITORING_KINDS,
    PEAGLE_FILTERS,
    LiveMonitoring,
    cloudwatch_tags,
    find_log_group,
    find_orphans,
    group_arn,
    group_tags,
    is_gone,
    is_peagles_transformer,
    monitoring_label,
    owned_by,
    peagle_alarm,
    peagle_dashboard,
    read_monitoring,
    transformer_of,
)

__all__ = [
    "KEEP_LOGS",
    "MONITORING_KINDS",
    "THRESHOLD_TAG",
    "LiveMonitoring",
    "MonitoringRemoval",
    "check_monitoring",
    "ensure_monitoring",
    "find_orphans",
    "monitoring_changes",
    "plan_removal",
    "read_monitoring",
    "remove_monitoring",
    "remove_one",
    "sync_monitoring",
    "wanted_monitoring",
]

Say = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


# -- making -----------------------------------------------------------------------------


def check_monitoring(aws: Any, mp: MonitoringPlan) -> bool:
    """Preflight, before anything is created: does the log group exist? A group with a
    transformer that is not peagle's is refused (SpecError, exit 2): a group has one
    transformer, and replacing someone's would change what their filters see."""
    _refuse_foreign_names(aws, mp)
    logs = aws.client("logs")
    g = find_log_group(logs, mp.log_group)
    if g is None:
        return False
    config = transformer_of(logs, mp.log_group)
    if config and not is_peagles_transformer(config):
        raise SpecError(
            f"log group {mp.log_group} already has a transformer peagle did not make; "
            "a log group has one, and monitoring needs its own there; nothing was created",
            remedy=text(
                "remove that transformer (CloudWatch Logs DeleteTransformer on {group}), "
                "or deploy without monitoring ({monitor})",
                group=mp.log_group,
                monitor=Param("monitor", False),
            ),
            field="monitor",
            value=True,
        )
    return True


def _refuse_foreign_names(aws: Any, mp: MonitoringPlan) -> None:
    """An alarm or dashboard of peagle's name (`<endpoint>-speculation`) that peagle did not
    make (no peagle tags for this endpoint) would be overwritten by PutMetricAlarm or
    PutDashboard, and later deleted with the endpoint: refused (SpecError, exit 2) before
    anything is created."""
    cw = aws.client("cloudwatch")
    found = cw.describe_alarms(AlarmNames=[mp.alarm["AlarmName"]]).get("MetricAlarms", [])
    theirs = [
        f"alarm {a['AlarmName']}"
        for a in found
        if not owned_by(cloudwatch_tags(cw, a["AlarmArn"]), mp.endpoint)
    ]
    try:
        d = cw.get_dashboard(DashboardName=mp.dashboard["DashboardName"])
    except Exception as e:
        if not is_gone(e):
            raise
    else:
        if not owned_by(cloudwatch_tags(cw, d["DashboardArn"]), mp.endpoint):
            theirs.append(f"dashboard {d['DashboardName']}")
    if theirs:
        raise SpecError(
            f"{' and '.join(theirs)} already exist(s) and peagle did not make it; monitoring "
            "would overwrite it; nothing was created",
            remedy=text(
                "rename or delete it, or deploy without monitoring ({monitor})",
                monitor=Param("monitor", False),
            ),
            field="monitor",
            value=True,
        )


def _account(aws: Any) -> str:
    """The caller's account, for the dashboard's alarm widget (its ARN)."""
    return str(aws.account_id())


def ensure_monitoring(
    aws: Any,
    mp: MonitoringPlan,
    *,
    group_exists: bool,
    say: Say = _quiet,
    created: list[tuple[str, str]] | None = None,
    trying: list[tuple[str, str]] | None = None,
) -> None:
    """Send the monitoring requests (deploy, or apply turning it on). Each resource is in
    `trying` while its request is in flight and moves to `created` once AWS answers, so a
    rollback removes exactly what this run made; never a group that existed before."""
    logs, cw = aws.client("logs"), aws.client("cloudwatch")
    made = created if created is not None else []
    flight = trying if trying is not None else []

    def step(kind: str, name: str, send: Callable[[], Any], said: str) -> None:
        flight[:] = [(kind, name)]
        send()
        made.append(flight.pop())
        say(said)

    group = mp.log_group
    if not group_exists:
        step(
            "log_group",
            group,
            lambda: logs.create_log_group(**mp.create_log_group),
            f"created log group {group}",
        )
        logs.put_retention_policy(**mp.retention)
        say(f"set retention of {group} to {mp.retention['retentionInDays']} days")
    step(
        "transformer",
        group,
        lambda: logs.put_transformer(**mp.transformer),
        f"put transformer on {group}",
    )
    for f in mp.metric_filters:
        step(
            "metric_filter",
            f"{group}:{f['filterName']}",
            lambda f=f: logs.put_metric_filter(**f),
            f"put metric filter {f['filterName']} on {group}",
        )
    step(
        "alarm",
        mp.alarm["AlarmName"],
        lambda: cw.put_metric_alarm(**mp.alarm),
        f"put alarm {mp.alarm['AlarmName']} (acceptance length below {mp.threshold})",
    )
    account = _account(aws)
    step(
        "dashboard",
        mp.dashboard["DashboardName"],
        lambda: cw.put_dashboard(**mp.dashboard_for(account)),
        f"put dashboard {mp.dashboard['DashboardName']}",
    )


_ALARM_FIELDS = (
    "AlarmDescription",
    "ActionsEnabled",
    "AlarmActions",
    "Namespace",
    "MetricName",
    "Dimensions",
    "Statistic",
    "Period",
    "EvaluationPeriods",
    "DatapointsToAlarm",
    "Threshold",
    "ComparisonOperator",
    "TreatMissingData",
)


def _alarm_differs(live: dict[str, Any], want: dict[str, Any]) -> bool:
    return any(live.get(f) != want.get(f) for f in _ALARM_FIELDS)


def monitoring_changes(
    live: LiveMonitoring | None, mp: MonitoringPlan | None
) -> list[tuple[str, Any, Any]]:
    """(path, live, wanted) for what turning monitoring on/off or changing it changes:
    `("monitoring", "off", "on")`, `("monitoring.threshold", 1.2, 1.5)`, ... Empty: the
    live resources match the plan."""
    if mp is None:
        return [] if live is None else [("monitoring", "on", "off")]
    if live is None or live.alarm is None:
        return [("monitoring", "off", "on")]
    a, want = live.alarm, mp.alarm
    out: list[tuple[str, Any, Any]] = []
    for path, key in (
        ("threshold", "Threshold"),
        ("period_seconds", "Period"),
        ("evaluation_periods", "EvaluationPeriods"),
        ("datapoints_to_alarm", "DatapointsToAlarm"),
        ("alarm_actions", "AlarmActions"),
    ):
        if a.get(key) != want.get(key):
            out.append((f"monitoring.{path}", a.get(key), want.get(key)))
    if not out and _alarm_differs(a, want):
        out.append(("monitoring.alarm", a.get("AlarmDescription"), want["AlarmDescription"]))
    if live.threshold_default != mp.threshold_source.startswith("default"):
        out.append(
            (
                "monitoring.threshold_source",
                _source(live.threshold_default),
                _source(not live.threshold_default),
            )
        )
    if live.log_group_owned:
        if live.retention_days != mp.retention["retentionInDays"]:
            out.append(
                (
                    "monitoring.log_retention_days",
                    live.retention_days,
                    mp.retention["retentionInDays"],
                )
            )
        if live.keep_logs != mp.keep_logs:
            out.append(("monitoring.keep_logs", live.keep_logs, mp.keep_logs))
    missing = sorted(PEAGLE_FILTERS - set(live.filters))
    if missing or not live.transformer:
        out.append(("monitoring.log_processing", "incomplete", "transformer and 3 metric filters"))
    account = live.account or ""
    if live.dashboard_body != mp.dashboard_for(account)["DashboardBody"]:
        out.append(
            (
                "monitoring.dashboard",
                "absent" if live.dashboard_body is None else "stale",
                "current",
            )
        )
    return out


def _source(default: bool) -> str:
    return "default" if default else "spec"


def sync_monitoring(
    aws: Any, mp: MonitoringPlan | None, live: LiveMonitoring | None, *, say: Say = _quiet
) -> list[str]:
    """Make the live monitoring match `mp` (None: off) with only the requests that differ:
    on (everything, after the preflight), off (removed as delete removes it), changed
    (re-put the alarm, dashboard, retention or tags that differ). Nothing reaches
    SageMaker. The names of what changed."""
    if mp is None:
        return remove_monitoring(aws, live.endpoint, say=say) if live else []
    if live is None or live.alarm is None:
        exists = check_monitoring(aws, mp)
        made: list[tuple[str, str]] = []
        ensure_monitoring(aws, mp, group_exists=exists, say=say, created=made)
        return [n for _, n in made]
    logs, cw = aws.client("logs"), aws.client("cloudwatch")
    done: list[str] = []
    group = mp.log_group
    if live.log_group_owned:
        if live.retention_days != mp.retention["retentionInDays"]:
            logs.put_retention_policy(**mp.retention)
            say(f"set retention of {group} to {mp.retention['retentionInDays']} days")
            done.append(group)
        if live.keep_logs != mp.keep_logs:
            arn = group_arn(find_log_group(logs, group) or {"arn": ""})
            if mp.keep_logs:
                logs.tag_resource(resourceArn=arn, tags={KEEP_LOGS: "true"})
            else:
                logs.untag_resource(resourceArn=arn, tagKeys=[KEEP_LOGS])
            say(f"{'tagged' if mp.keep_logs else 'untagged'} {group} {KEEP_LOGS}")
    if not live.transformer:
        logs.put_transformer(**mp.transformer)
        say(f"put transformer on {group}")
    for f in mp.metric_filters:
        if f["filterName"] not in live.filters:
            logs.put_metric_filter(**f)
            say(f"put metric filter {f['filterName']} on {group}")
    assert live.alarm is not None
    if _alarm_differs(live.alarm, mp.alarm):
        cw.put_metric_alarm(**mp.alarm)
        say(f"put alarm {mp.alarm['AlarmName']} (acceptance length below {mp.threshold})")
        done.append(mp.alarm["AlarmName"])
    want_source = _source(mp.threshold_source.startswith("default"))
    if live.alarm_tags.get(THRESHOLD_TAG) != want_source:
        # PutMetricAlarm ignores Tags on an alarm that exists.
        cw.tag_resource(
            ResourceARN=live.alarm["AlarmArn"], Tags=[{"Key": THRESHOLD_TAG, "Value": want_source}]
        )
    body = mp.dashboard_for(live.account or _account(aws))
    if live.dashboard_body != body["DashboardBody"]:
        cw.put_dashboard(**body)
        say(f"put dashboard {mp.dashboard['DashboardName']}")
        done.append(mp.dashboard["DashboardName"])
    return done


def wanted_monitoring(plan: Any, live: LiveMonitoring | None) -> MonitoringPlan | None:
    """The monitoring `plan`'s endpoint should have: the spec's when it has a
    `monitoring` section (`enabled: false`: none); without one, what is live, planned
    again for the plan's K (a threshold left to the default follows K), or none. A
    baseline plan has none: it writes no SpecDecoding line."""
    from ..planning.monitoring import monitoring_plan

    spec = plan.spec
    if spec.monitoring is not None:
        return plan.monitoring if spec.monitoring.enabled else None
    if live is None or not plan.speculative_config or plan.inference_components:
        return None
    k = int(plan.speculative_config.get("num_speculative_tokens") or 1)
    return monitoring_plan(
        plan.names["endpoint"],
        plan.region,
        k,
        live.as_spec(),
        variant=spec.endpoint.variant_name,
        user_tags=dict(spec.tags),
    )


# -- removing ---------------------------------------------------------------------------


@dataclass
class MonitoringRemoval:
    """What removing an endpoint's monitoring deletes, and what it keeps (and why)."""

    endpoint: str
    alarm: str | None = None
    dashboard: str | None = None
    filters: list[str] = field(default_factory=list)
    transformer: str | None = None  # the log group it is on
    log_group: str | None = None  # owned, and not kept
    kept_log_group: str | None = None  # why the group stays, when one exists
    # A rollout's alarms an interrupted update left (they go first, whatever else there is)
    rollout_alarms: list[str] = field(default_factory=list)

    @property
    def names(self) -> list[str]:
        """What goes, in deletion order, each named with its kind (`monitoring_label`)."""
        out = [monitoring_label("rollout_alarm", a) for a in self.rollout_alarms]
        out += [monitoring_label("alarm", self.alarm)] if self.alarm else []
        out += [monitoring_label("dashboard", self.dashboard)] if self.dashboard else []
        out += [monitoring_label("metric_filter", f) for f in self.filters]
        if self.transformer:
            out.append(monitoring_label("transformer", self.transformer))
        if self.log_group:
            out.append(monitoring_label("log_group", self.log_group))
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "alarm": self.alarm,
            "dashboard": self.dashboard,
            "metric_filters": self.filters,
            "transformer": self.transformer,
            "log_group": self.log_group,
            "kept_log_group": self.kept_log_group,
            "rollout_alarms": self.rollout_alarms,
        }


def plan_removal(
    aws: Any, endpoint: str, *, keep_logs: bool = False, live: LiveMonitoring | None = None
) -> MonitoringRemoval | None:
    """What removing `endpoint`'s monitoring deletes (None: it has none), with any rollout
    alarms an interrupted update left. Read only."""
    from .monitoring_read import rollout_alarm_names

    live = live or read_monitoring(aws, endpoint)
    rollout_alarms = rollout_alarm_names(aws.client("cloudwatch"), endpoint)
    if live is None:
        return (
            MonitoringRemoval(endpoint, rollout_alarms=rollout_alarms) if rollout_alarms else None
        )
    out = MonitoringRemoval(endpoint, rollout_alarms=rollout_alarms)
    out.alarm = live.alarm["AlarmName"] if live.alarm else None
    out.dashboard = dashboard_name(endpoint) if live.dashboard_body is not None else None
    out.filters = list(live.filters)
    out.transformer = live.log_group if live.transformer else None
    if live.log_group_exists:
        if not live.log_group_owned:
            out.kept_log_group = f"{live.log_group}: it existed before peagle's monitoring"
        elif keep_logs or live.keep_logs:
            why = "keep_logs" if keep_logs else f"tagged {KEEP_LOGS}"
            out.kept_log_group = f"{live.log_group}: {why}"
        else:
            out.log_group = live.log_group
    return out


def remove_monitoring(
    aws: Any,
    endpoint: str,
    *,
    keep_logs: bool = False,
    say: Say = _quiet,
    removal: MonitoringRemoval | None = None,
) -> list[str]:
    """Remove peagle's monitoring of `endpoint` (after the endpoint is gone, when deleting
    it): the alarm, the dashboard, peagle's filters and transformer, and the log group
    only if peagle owns it and nothing says keep. Each one already gone is fine. The
    names of what was deleted."""
    plan = removal or plan_removal(aws, endpoint, keep_logs=keep_logs)
    if plan is None:
        return []
    group = endpoint_log_group(endpoint)
    deleted: list[str] = []
    for name in plan.rollout_alarms:
        if remove_one(aws, "rollout_alarm", name, endpoint):
            deleted.append(monitoring_label("rollout_alarm", name))
    if plan.alarm and remove_one(aws, "alarm", plan.alarm, endpoint):
        deleted.append(monitoring_label("alarm", plan.alarm))
    if plan.dashboard and remove_one(aws, "dashboard", plan.dashboard, endpoint):
        deleted.append(monitoring_label("dashboard", plan.dashboard))
    for f in plan.filters:
        if remove_one(aws, "metric_filter", f"{group}:{f}", endpoint):
            deleted.append(monitoring_label("metric_filter", f))
    if plan.transformer and remove_one(aws, "transformer", group, endpoint):
        deleted.append(monitoring_label("transformer", group))
    if plan.log_group and remove_one(aws, "log_group", group, endpoint):
        deleted.append(monitoring_label("log_group", group))
    if plan.kept_log_group:
        say(f"kept log group {plan.kept_log_group}")
    return deleted


def remove_one(aws: Any, kind: str, name: str, endpoint: str) -> bool:
    """Delete one monitoring resource if it is peagle's (False: it was gone, or not
    peagle's). The ownership rules of the module docstring, checked again here: a
    rollback names what it sent, which is not proof of what exists now."""
    logs, cw = aws.client("logs"), aws.client("cloudwatch")
    try:
        if kind == "alarm":
            if peagle_alarm(cw, endpoint) is None:
                return False
            cw.delete_alarms(AlarmNames=[name])
        elif kind == "rollout_alarm":
            from .rollout import remove_rollout_alarm  # checks its tags itself

            return remove_rollout_alarm(aws, name, endpoint)
        elif kind == "dashboard":
            if peagle_dashboard(cw, endpoint) is None:
                return False
            cw.delete_dashboards(DashboardNames=[name])
        elif kind == "metric_filter":
            group, filter_name = name.rsplit(":", 1)
            if filter_name not in PEAGLE_FILTERS:
                return False
            logs.delete_metric_filter(logGroupName=group, filterName=filter_name)
        elif kind == "transformer":
            if not is_peagles_transformer(transformer_of(logs, name)):
                return False
            logs.delete_transformer(logGroupIdentifier=name)
        elif kind == "log_group":
            g = find_log_group(logs, name)
            if g is None or not owned_by(group_tags(logs, g), endpoint):
                return False
            logs.delete_log_group(logGroupName=name)
        else:
            raise ValueError(f"not a monitoring kind: {kind}")
    except Exception as e:
        if is_gone(e):
            return False
        raise
    return True
