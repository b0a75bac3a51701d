"""Which endpoints took no traffic over a window (`ls --idle`, `gc --idle`), from CloudWatch's
`AWS/SageMaker` `Invocations`, on AWS's clock.

An endpoint is idle for a window W when it was InService for all of it (InService now, and
its CreationTime and LastModifiedTime at least W before AWS's now: nothing changed it within
the window) and the Sum of Invocations over [now - W, now] is 0 for every production variant
(dimensions EndpointName + VariantName, AWS's "SageMaker AI endpoint invocation metrics")
and every inference component it hosts (dimension InferenceComponentName). A metric without
datapoints is no traffic: SageMaker publishes Invocations when it serves requests. All the
endpoints are judged by one GetMetricData (up to 500 queries a call, its API limit).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from ..planning.spend import idle_period

__all__ = ["MAX_QUERIES", "idle_endpoints", "invocation_queries"]

MAX_QUERIES = 500  # GetMetricData's MetricDataQueries limit (botocore's model)


def invocation_queries(
    endpoint: str, variants: list[str], components: list[str], period: int
) -> list[dict[str, Any]]:
    """The Sum-of-Invocations queries (without Id) for one endpoint's variants and
    components."""
    dims = [
        [{"Name": "EndpointName", "Value": endpoint}, {"Name": "VariantName", "Value": v}]
        for v in variants
    ] + [[{"Name": "InferenceComponentName", "Value": c}] for c in components]
    return [
        {
            "MetricStat": {
                "Metric": {
                    "Namespace": "AWS/SageMaker",
                    "MetricName": "Invocations",
                    "Dimensions": d,
                },
                "Period": period,
                "Stat": "Sum",
            },
            "ReturnData": True,
        }
        for d in dims
    ]


def in_service_throughout(endpoint: dict[str, Any], since: datetime) -> bool:
    """InService now and unchanged since `since` (ListEndpoints/DescribeEndpoint fields)."""
    modified = endpoint.get("LastModifiedTime") or endpoint["CreationTime"]
    return (
        endpoint.get("EndpointStatus") == "InService"
        and endpoint["CreationTime"] <= since
        and modified <= since
    )


def idle_endpoints(
    cw: Any,
    endpoints: list[dict[str, Any]],
    components: dict[str, list[str]],
    window_s: float,
    now: datetime,
) -> list[str]:
    """The names of `endpoints` (DescribeEndpoint answers: status, times, variants) idle over
    the `window_s` seconds before `now` (AWS's clock), `components` naming the inference
    components each hosts; in the order given."""
    now = now.replace(microsecond=0)  # AWS's Date has whole seconds; so does the window
    since = now - timedelta(seconds=window_s)
    candidates = [e for e in endpoints if in_service_throughout(e, since)]
    if not candidates:
        return []
    period = idle_period(window_s, window_s)
    owner: dict[str, str] = {}  # query Id -> endpoint
    queries: list[dict[str, Any]] = []
    for e in candidates:
        name = e["EndpointName"]
        variants = [v["VariantName"] for v in e.get("ProductionVariants") or []]
        for q in invocation_queries(name, variants, components.get(name, []), period):
            qid = f"q{len(queries)}"
            owner[qid] = name
            queries.append({"Id": qid, **q})
    busy: set[str] = set()
    complete: set[str] = set()  # query Ids whose data CloudWatch says is whole
    for i in range(0, len(queries), MAX_QUERIES):
        pages = cw.get_paginator("get_metric_data").paginate(
            MetricDataQueries=queries[i : i + MAX_QUERIES], StartTime=since, EndTime=now
        )
        for page in pages:
            for r in page.get("MetricDataResults", []):
                if sum(r.get("Values", [])) > 0:
                    busy.add(owner[r["Id"]])
                if r.get("StatusCode") == "Complete":
                    complete.add(r["Id"])
    # A query that never came back Complete (InternalError, Forbidden) says nothing: its
    # endpoint is not called idle, so `gc --idle` never deletes on a failed read.
    busy |= {owner[q["Id"]] for q in queries if q["Id"] not in complete}
    return [e["EndpointName"] for e in candidates if e["EndpointName"] not in busy]
