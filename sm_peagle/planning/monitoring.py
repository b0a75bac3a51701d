"""Speculation health that AWS computes after peagle exits: the exact CloudWatch Logs and
CloudWatch requests behind `monitoring:` (`--monitor`). Pure: no I/O.

The mechanism (docs/guides/health.md says why this one): SageMaker writes the container's output
to `/aws/sagemaker/Endpoints/<endpoint>`, and vLLM writes one line per stats interval
(`VLLM_LOG_STATS_INTERVAL`, 10 s by default; vllm 0.31.0 `envs.py`) while it drafted:

    SpecDecoding metrics: Mean acceptance length: 1.85, Accepted throughput: …,
    Drafted throughput: …, Accepted: 120 tokens, Drafted: 300 tokens, …

(vllm 0.31.0 `v1/spec_decode/metrics.py`, `SpecDecodingLogging.log`; no line for an
interval without drafts). A log-group transformer (PutTransformer) parses it with one grok
pattern into numeric fields and adds the endpoint's name; three metric filters
(`applyOnTransformedLogs`) publish them as metrics; an alarm watches the acceptance length;
a dashboard shows them beside SageMaker's own metrics.

SageMaker's `MetricsConfig.EnableDetailedObservability` was the alternative; botocore's
model does not say which metric names it publishes, and no AWS page read here lists
vLLM's spec-decode counters among them, so it is not used.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..checks import failed, passed
from ..errors import Param, text

__all__ = [
    "ACCEPTED_FIELD",
    "ACCOUNT_PLACEHOLDER",
    "DIMENSION",
    "DRAFTED_FIELD",
    "ENDPOINT_FIELD",
    "FILTER_NAMES",
    "GROK_MATCH",
    "LENGTH_FIELD",
    "METRIC_ACCEPTANCE_LENGTH",
    "METRIC_ACCEPTED",
    "METRIC_DRAFTED",
    "NAMESPACE",
    "OFF_BELOW",
    "THRESHOLD_TAG",
    "MonitoringPlan",
    "add_monitoring",
    "alarm_name",
    "dashboard_name",
    "default_threshold",
    "endpoint_log_group",
    "monitoring_plan",
]

NAMESPACE = "Peagle/SpeculativeDecoding"
DIMENSION = "EndpointName"
METRIC_ACCEPTANCE_LENGTH = "AcceptanceLength"
METRIC_ACCEPTED = "AcceptedTokens"
METRIC_DRAFTED = "DraftedTokens"

# The fields the transformer writes (the metric filters and peagle's log reader use them).
LENGTH_FIELD = "acceptance_length"
ACCEPTED_FIELD = "accepted"
DRAFTED_FIELD = "drafted"
ENDPOINT_FIELD = "peagle_endpoint"

# Under 128 characters and 5 patterns: the limits of the older grok documentation (the
# current model allows 512 and 20), so it holds under both.
GROK_MATCH = (
    f"Mean acceptance length: %{{NUMBER:{LENGTH_FIELD}}},%{{DATA}} "
    f"Accepted: %{{NUMBER:{ACCEPTED_FIELD}}} tokens, Drafted: %{{NUMBER:{DRAFTED_FIELD}}}"
)
# Every metric filter matches the transformed SpecDecoding lines only: other lines have no
# acceptance_length field (an acceptance length is at least 1: the target's bonus token).
FILTER_PATTERN = f"{{ $.{LENGTH_FIELD} >= 1 }}"

FILTER_NAMES = {
    METRIC_ACCEPTANCE_LENGTH: "peagle-acceptance-length",
    METRIC_ACCEPTED: "peagle-accepted-tokens",
    METRIC_DRAFTED: "peagle-drafted-tokens",
}
_FILTER_FIELDS = {
    METRIC_ACCEPTANCE_LENGTH: (LENGTH_FIELD, "None"),
    METRIC_ACCEPTED: (ACCEPTED_FIELD, "Count"),
    METRIC_DRAFTED: (DRAFTED_FIELD, "Count"),
}

# An idle endpoint writes no SpecDecoding line, so its periods have no datapoint: the
# alarm says INSUFFICIENT_DATA ("no data"), never OK ("paying") or ALARM ("off").
TREAT_MISSING_DATA = "missing"

# Below this acceptance length the drafts are (nearly) never accepted: speculation is off
# in effect, whatever the threshold (1% of a token per target step).
OFF_BELOW = 1.01

# The break-even model behind the default threshold (docs/guides/health.md, "The threshold"):
# one P-EAGLE step costs a target step plus the drafter's single forward pass plus the
# verification of K more positions, each priced at this share of a target decode step.
STEP_COST_SHARE = 0.05

_OWN_TAGS = {"peagle:managed": "true"}
# On the alarm only: "default" when its threshold came from K (an update of K moves it with
# K), "spec" when the spec set it. PutMetricAlarm ignores Tags on an alarm that exists, so
# a later change of it is a TagResource (lifecycle/monitoring.py).
THRESHOLD_TAG = "peagle:threshold"

# The alarm widget needs the alarm's ARN, whose account a pure plan does not know: deploy
# puts the caller's account in (`MonitoringPlan.dashboard_for`), CloudFormation its own.
ACCOUNT_PLACEHOLDER = "${AWS::AccountId}"


def endpoint_log_group(endpoint: str) -> str:
    """The log group SageMaker writes an endpoint's container output to."""
    return f"/aws/sagemaker/Endpoints/{endpoint}"


def alarm_name(endpoint: str) -> str:
    """`<endpoint>-speculation` (peagle's own tags on it say peagle made it)."""
    return f"{endpoint}-speculation"


def dashboard_name(endpoint: str) -> str:
    """`<endpoint>-speculation` (dashboard names take letters, digits, '-' and '_',
    which endpoint names are made of)."""
    return f"{endpoint}-speculation"


def default_threshold(k: int) -> float:
    """The acceptance length at which a P-EAGLE step at depth K stops paying, by the cost
    model above: 1 + 0.05 x (1 + K). K=3: 1.2; K=5: 1.3; K=7: 1.4."""
    return round(1.0 + STEP_COST_SHARE * (1 + k), 2)


@dataclass
class MonitoringPlan:
    """The requests behind `monitoring:`, in the order deploy sends them (all before
    CreateEndpoint, so the transformer sees the container's first line).

    Attributes:
        endpoint: the endpoint watched.
        log_group: its log group, `/aws/sagemaker/Endpoints/<endpoint>`.
        create_log_group: CreateLogGroup, sent only when the group does not exist yet
            (peagle then owns it: tagged peagle:managed, retention set, deleted with the
            endpoint unless `keep_logs`).
        retention: PutRetentionPolicy, for a group peagle creates only.
        transformer: PutTransformer (grok, typeConverter, addKeys).
        metric_filters: one PutMetricFilter per metric.
        alarm: PutMetricAlarm, "speculation stopped paying".
        dashboard: PutDashboard.
        k: the K the thresholds and the inferred tokens per second use.
        threshold: the alarm's acceptance-length threshold.
        threshold_source: "spec" or "default for K=<k>".
        keep_logs: keep a log group peagle created when the endpoint is deleted.
    """

    endpoint: str
    log_group: str
    create_log_group: dict[str, Any]
    retention: dict[str, Any]
    transformer: dict[str, Any]
    metric_filters: list[dict[str, Any]]
    alarm: dict[str, Any]
    dashboard: dict[str, Any]
    k: int
    threshold: float
    threshold_source: str
    keep_logs: bool = False
    tags: dict[str, str] = field(default_factory=dict)

    def requests(self) -> list[tuple[str, str, dict[str, Any]]]:
        """(service, operation, request) for everything, log group first."""
        return [
            ("logs", "CreateLogGroup", self.create_log_group),
            ("logs", "PutRetentionPolicy", self.retention),
            ("logs", "PutTransformer", self.transformer),
            *(("logs", "PutMetricFilter", f) for f in self.metric_filters),
            ("cloudwatch", "PutMetricAlarm", self.alarm),
            ("cloudwatch", "PutDashboard", self.dashboard),
        ]

    def dashboard_for(self, account: str) -> dict[str, Any]:
        """PutDashboard with the alarm widget's ARN in `account`."""
        body = self.dashboard["DashboardBody"].replace(ACCOUNT_PLACEHOLDER, account)
        return {**self.dashboard, "DashboardBody": body}

    def to_dict(self) -> dict[str, Any]:
        """The `monitoring` of `peagle plan --json`."""
        return {
            "endpoint": self.endpoint,
            "log_group": self.log_group,
            "k": self.k,
            "threshold": self.threshold,
            "threshold_source": self.threshold_source,
            "keep_logs": self.keep_logs,
            "requests": [
                {"service": s, "operation": op, "request": req} for s, op, req in self.requests()
            ],
        }


def monitoring_plan(
    endpoint: str,
    region: str,
    k: int,
    monitoring: Any,
    variant: str = "AllTraffic",
    user_tags: dict[str, str] | None = None,
) -> MonitoringPlan:
    """The requests for `monitoring` (a MonitoringSpec) on `endpoint` at depth `k`."""
    threshold = monitoring.threshold
    source = "spec"
    if threshold is None:
        threshold, source = default_threshold(k), f"default for K={k}"
    group = endpoint_log_group(endpoint)
    tags = {**(user_tags or {}), **_OWN_TAGS, "peagle:deployment": endpoint}
    if monitoring.keep_logs:
        tags["peagle:keep-logs"] = "true"
    filters = _metric_filters(endpoint, group)
    alarm = _alarm(endpoint, monitoring, threshold, source, tags)
    return MonitoringPlan(
        endpoint=endpoint,
        log_group=group,
        create_log_group={"logGroupName": group, "tags": tags},
        retention={"logGroupName": group, "retentionInDays": monitoring.log_retention_days},
        transformer={
            "logGroupIdentifier": group,
            "transformerConfig": [
                {"grok": {"source": "@message", "match": GROK_MATCH}},
                {
                    "typeConverter": {
                        "entries": [
                            {"key": LENGTH_FIELD, "type": "double"},
                            {"key": ACCEPTED_FIELD, "type": "integer"},
                            {"key": DRAFTED_FIELD, "type": "integer"},
                        ]
                    }
                },
                {
                    "addKeys": {
                        "entries": [
                            {"key": ENDPOINT_FIELD, "value": endpoint, "overwriteIfExists": True}
                        ]
                    }
                },
            ],
        },
        metric_filters=filters,
        alarm=alarm,
        dashboard={
            "DashboardName": dashboard_name(endpoint),
            "DashboardBody": dashboard_body(endpoint, region, k, threshold, variant),
            "Tags": _tag_list(tags),
        },
        k=k,
        threshold=threshold,
        threshold_source=source,
        keep_logs=monitoring.keep_logs,
        tags=tags,
    )


def _metric_filters(endpoint: str, group: str) -> list[dict[str, Any]]:
    """One PutMetricFilter per metric, each on the transformed SpecDecoding lines."""
    return [
        {
            "logGroupName": group,
            "filterName": FILTER_NAMES[metric],
            "filterPattern": FILTER_PATTERN,
            "metricTransformations": [
                {
                    "metricName": metric,
                    "metricNamespace": NAMESPACE,
                    "metricValue": f"$.{source_field}",
                    "dimensions": {DIMENSION: f"$.{ENDPOINT_FIELD}"},
                    "unit": unit,
                }
            ],
            "applyOnTransformedLogs": True,
        }
        for metric, (source_field, unit) in _FILTER_FIELDS.items()
    ]


def _alarm(
    endpoint: str, monitoring: Any, threshold: float, source: str, tags: dict[str, str]
) -> dict[str, Any]:
    """PutMetricAlarm: "speculation stopped paying"."""
    periods, breaching = monitoring.evaluation_periods, monitoring.alarm_datapoints
    return {
        "AlarmName": alarm_name(endpoint),
        "AlarmDescription": (
            f"peagle: speculation stopped paying on {endpoint}: mean acceptance length "
            f"below {threshold} ({source}) in {breaching} of {periods} periods of "
            f"{monitoring.period_seconds}s; no SpecDecoding line (idle) is no data"
        ),
        "ActionsEnabled": bool(monitoring.alarm_actions),
        "AlarmActions": list(monitoring.alarm_actions),
        "Namespace": NAMESPACE,
        "MetricName": METRIC_ACCEPTANCE_LENGTH,
        "Dimensions": [{"Name": DIMENSION, "Value": endpoint}],
        "Statistic": "Average",
        "Period": monitoring.period_seconds,
        "EvaluationPeriods": periods,
        "DatapointsToAlarm": breaching,
        "Threshold": threshold,
        "ComparisonOperator": "LessThanThreshold",
        "TreatMissingData": TREAT_MISSING_DATA,
        "Tags": _tag_list(
            {**tags, THRESHOLD_TAG: "default" if source.startswith("default") else "spec"}
        ),
    }


def _tag_list(tags: dict[str, str]) -> list[dict[str, str]]:
    return [{"Key": k, "Value": v} for k, v in sorted(tags.items())]


def dashboard_body(endpoint: str, region: str, k: int, threshold: float, variant: str) -> str:
    """The dashboard: invocations, model latency, tokens per second (inferred), acceptance
    and the alarm. Tokens per second is inferred, and labelled so: each draft step emits
    its accepted drafts plus the target's own token, and a step drafts K tokens, so
    tokens = accepted + drafted / K (the first token of each request is not counted)."""
    sm = ["AWS/SageMaker"]
    ep = ["EndpointName", endpoint, "VariantName", variant]
    mine = [NAMESPACE]
    dim = [DIMENSION, endpoint]
    alarm_arn = f"arn:aws:cloudwatch:{region}:{ACCOUNT_PLACEHOLDER}:alarm:{alarm_name(endpoint)}"

    def widget(x: int, y: int, title: str, metrics: list, **props: Any) -> dict[str, Any]:
        return {
            "type": "metric",
            "x": x,
            "y": y,
            "width": 12,
            "height": 6,
            "properties": {
                "title": title,
                "region": region,
                "view": "timeSeries",
                "period": 60,
                "metrics": metrics,
                **props,
            },
        }

    widgets = [
        widget(0, 0, "Invocations", [[*sm, "Invocations", *ep, {"stat": "Sum"}]]),
        widget(
            12,
            0,
            "Model latency (microseconds)",
            [
                [*sm, "ModelLatency", *ep, {"stat": "Average"}],
                [*sm, "ModelLatency", *ep, {"stat": "p90"}],
            ],
        ),
        widget(
            0,
            6,
            f"Tokens per second (inferred: accepted + drafted/{k}, per second)",
            [
                [*mine, METRIC_ACCEPTED, *dim, {"id": "acc", "stat": "Sum", "visible": False}],
                [*mine, METRIC_DRAFTED, *dim, {"id": "drf", "stat": "Sum", "visible": False}],
                [{"expression": f"(acc + drf / {k}) / PERIOD(acc)", "label": "tokens/s"}],
            ],
        ),
        widget(
            12,
            6,
            "Speculation: acceptance length and draft acceptance rate",
            [
                [*mine, METRIC_ACCEPTANCE_LENGTH, *dim, {"stat": "Average"}],
                [*mine, METRIC_ACCEPTED, *dim, {"id": "a", "stat": "Sum", "visible": False}],
                [*mine, METRIC_DRAFTED, *dim, {"id": "d", "stat": "Sum", "visible": False}],
                [{"expression": "100 * a / d", "label": "draft acceptance %", "yAxis": "right"}],
            ],
            annotations={"horizontal": [{"label": "stops paying below", "value": threshold}]},
        ),
        {
            "type": "alarm",
            "x": 0,
            "y": 12,
            "width": 24,
            "height": 3,
            "properties": {"title": "Speculation stopped paying", "alarms": [alarm_arn]},
        },
    ]
    return json.dumps({"widgets": widgets}, sort_keys=True, separators=(",", ":"))


def add_monitoring(p: Any) -> None:
    """Step 8 of `plan()`: the monitoring requests and their check (in place)."""
    spec = p.spec
    if not spec.monitored:
        return
    why = None
    if spec.speculative.mode.value == "baseline" or not p.speculative_config:
        why = text("a baseline endpoint (no speculation) writes no SpecDecoding line to watch")
        fix = text(
            "turn monitoring off ({monitor}), or deploy with {mode}",
            monitor=Param("monitor", False),
            mode=Param("mode", "p-eagle"),
        )
    elif spec.endpoint.hosting == "inference-components":
        why = text(
            "monitoring watches the endpoint's log group; inference components each write "
            "to their own (not built yet)"
        )
        fix = text(
            "turn monitoring off ({monitor}), or host one model on the endpoint ({hosting})",
            monitor=Param("monitor", False),
            hosting=Param("hosting", "endpoint"),
        )
    if why is not None:
        p.checks.append(failed("monitoring", why, fix, field="monitor"))
        return
    k = int(p.speculative_config.get("num_speculative_tokens") or 1)
    p.monitoring = monitoring_plan(
        p.names["endpoint"],
        p.region,
        k,
        spec.monitoring,
        variant=spec.endpoint.variant_name,
        user_tags=dict(spec.tags),
    )
    m = p.monitoring
    p.checks.append(
        passed(
            "monitoring",
            f"alarm {m.alarm['AlarmName']}: acceptance length below {m.threshold} "
            f"({m.threshold_source}) in {m.alarm['DatapointsToAlarm']} of "
            f"{m.alarm['EvaluationPeriods']} periods of {m.alarm['Period']}s",
        )
    )
