"""SageMaker's own invocation metrics (namespace AWS/SageMaker) for the moto harness, and
GetMetricStatistics as CloudWatch answers it for them.

`record_invocation` puts what SageMaker publishes per InvokeEndpoint (AWS's "Amazon
SageMaker AI metrics in Amazon CloudWatch" page): Invocations (1, Units None), ModelLatency
(microseconds), Invocation4XXErrors and Invocation5XXErrors (1 when the model answered
that class of status code, else 0; Units None), at the clock's time, with the dimensions
{EndpointName, VariantName} and {EndpointName, VariantName, EndpointConfigName}. AWS's
deployment-guardrails configuration guide says the latter is published "after the new
fleet starts receiving traffic"; the harness publishes it always [INF: simpler, and an
alarm on a new fleet's config sees only that fleet's invocations either way]. An inference
component's invocation is published with {InferenceComponentName} instead, as AWS's
metrics page lists for components.

moto's GetMetricStatistics matches dimensions as a subset (a {EndpointName, VariantName}
query would also count the {.., EndpointConfigName} datapoints, twice the invocations)
and ignores ExtendedStatistics. AWS: "CloudWatch treats each unique combination of
dimensions as a separate metric", so a query with Dimensions matches them exactly here,
and ExtendedStatistics pNN are computed by nearest rank (ASSUMPTION: CloudWatch's own
percentile estimate is not documented; nearest rank is exact for the few datapoints a test
writes). The alarm evaluator (moto_alarms) matches dimensions exactly and computes pNN the
same way.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

from moto.cloudwatch.models import MetricDatum, cloudwatch_backends
from moto.cloudwatch.responses import CloudWatchResponse
from moto.core.responses import ActionResult

__all__ = ["NAMESPACE", "metrics_patches", "nearest_rank", "record_invocation"]

NAMESPACE = "AWS/SageMaker"


def nearest_rank(values: list[float], percentile: float) -> float:
    """The nearest-rank percentile: the smallest value with at least p% at or below it."""
    ordered = sorted(values)
    rank = max(1, math.ceil(percentile / 100 * len(ordered)))
    return ordered[rank - 1]


def _dimension_sets(endpoint: str, variant: str, config: str, component: str | None) -> list:
    if component:
        return [[{"Name": "InferenceComponentName", "Value": component}]]
    base = [{"Name": "EndpointName", "Value": endpoint}, {"Name": "VariantName", "Value": variant}]
    return [base, [*base, {"Name": "EndpointConfigName", "Value": config}]]


def record_invocation(
    account_id: str,
    now: float,
    region: str,
    endpoint: str,
    variant: str,
    config: str,
    *,
    latency_us: float,
    status_code: int,
    component: str | None = None,
    at: float | None = None,
) -> None:
    """Put one invocation's AWS/SageMaker datapoints into moto's CloudWatch at `at` (epoch
    seconds; default `now`, the clock's)."""
    stamp = datetime.fromtimestamp(now if at is None else at, tz=UTC).replace(tzinfo=None)
    values = [
        ("Invocations", 1.0, "None"),
        ("ModelLatency", float(latency_us), "Microseconds"),
        ("Invocation4XXErrors", 1.0 if 400 <= status_code < 500 else 0.0, "None"),
        ("Invocation5XXErrors", 1.0 if 500 <= status_code < 600 else 0.0, "None"),
    ]
    backend = cloudwatch_backends[account_id][region]
    for dims in _dimension_sets(endpoint, variant, config, component):
        for name, value, unit in values:
            backend.metric_data.append(MetricDatum(NAMESPACE, name, value, dims, stamp, unit))


def _key(dims: Any) -> list[tuple[str, str]]:
    return sorted((d.name, d.value) if hasattr(d, "name") else (d["Name"], d.get("Value"))
                  for d in dims)  # fmt: skip


def metrics_patches() -> list[tuple[type, str, Any]]:
    """GetMetricStatistics: exact dimension match, and ExtendedStatistics."""
    original = CloudWatchResponse.__dict__["get_metric_statistics"]

    def get_metric_statistics(self: CloudWatchResponse) -> ActionResult:
        dims = self._get_param("Dimensions", []) or []
        extended = self._get_param("ExtendedStatistics") or []
        statistics = self._get_param("Statistics") or []
        if not dims and not extended:
            result: ActionResult = original(self)
            return result
        backend = self.cloudwatch_backend
        stats = backend.get_metric_statistics(
            self._get_param("Namespace"),
            self._get_param("MetricName"),
            self._get_param("StartTime"),
            self._get_param("EndTime"),
            self._get_int_param("Period"),
            statistics or ["SampleCount"],
            unit=self._get_param("Unit"),
            dimensions=dims,
        )
        want = _key(dims)
        out = []
        for point in stats:
            if dims:
                point.metric_data = [m for m in point.metric_data if _key(m.dimensions) == want]
            if not point.metric_data:
                continue
            if not statistics:
                point.stats = []
            if extended:
                singles = [m.value for m in point.metric_data if isinstance(m, MetricDatum)]
                point.extended_statistics = {
                    p: nearest_rank(singles, float(p[1:])) for p in extended if singles
                }
            out.append(point)
        return ActionResult({"Label": self._get_param("MetricName"), "Datapoints": out})

    return [(CloudWatchResponse, "get_metric_statistics", get_metric_statistics)]
