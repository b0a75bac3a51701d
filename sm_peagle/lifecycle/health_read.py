"""The reads behind `health` and `status`'s speculation line: peagle's alarm on an endpoint
(DescribeAlarms), its metrics over a window (GetMetricData), and, where no metric exists,
the engine's own log lines.

Every window is on AWS's clock (`AwsContext.synced_aws_now`): the log events and the
datapoints are stamped there, and a sandbox's clock may be days ahead of this machine's.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from ..planning.monitoring import (
    DIMENSION,
    METRIC_ACCEPTANCE_LENGTH,
    METRIC_ACCEPTED,
    METRIC_DRAFTED,
    NAMESPACE,
    alarm_name,
)

__all__ = [
    "AlarmView",
    "AlarmsUnreadable",
    "Sample",
    "sagemaker_invocations",
    "engine_traffic",
    "metric_samples",
    "alarm_watching",
    "period_window",
    "spec_line_samples",
]

# vLLM's engine stats line (vllm 0.31.0 `v1/metrics/loggers.py`, LoggingStatLogger.log),
# written every stats interval in which the engine had work:
# "Engine 000: Avg prompt throughput: 12.0 tokens/s, Avg generation throughput: 41.2 tokens/s"
_GENERATION = re.compile(r"Avg generation throughput:\s*([0-9.]+)\s*tokens/s")


@dataclass(frozen=True)
class Sample:
    """One piece of SpecDecoding data: a period's metrics, or one log line.

    Attributes:
        t: when (epoch seconds, AWS's clock): the period's start, or the line's time.
        acceptance_length: the mean acceptance length (a period's Average of the lines').
        accepted: accepted draft tokens (a period's Sum), or None when unknown.
        drafted: drafted tokens (a period's Sum), or None when unknown.
        count: how many lines it stands for (a period's SampleCount; 1 for a line).
    """

    t: float
    acceptance_length: float
    accepted: int | None = None
    drafted: int | None = None
    count: int = 1


# A caller whose policy has no cloudwatch:DescribeAlarms (one written before monitoring
# existed) still gets `status`, and `health` from the log lines.
DENIED = frozenset(("AccessDenied", "AccessDeniedException", "UnauthorizedOperation"))


class AlarmsUnreadable(Exception):
    """DescribeAlarms was denied: whether peagle's alarm exists is unknown."""


@dataclass(frozen=True)
class AlarmView:
    """peagle's alarm on an endpoint, as DescribeAlarms gives it."""

    name: str
    state: str
    reason: str | None
    threshold: float
    period: int

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "state": self.state, "reason": self.reason}


def alarm_watching(aws: Any, endpoint: str) -> AlarmView | None:
    """The alarm `<endpoint>-speculation` if it watches this endpoint's AcceptanceLength
    in peagle's namespace, else None: what health and status READ. One DescribeAlarms: the
    metric, namespace and dimension identify it (its peagle:managed tags would cost a
    ListTagsForResource more, and an alarm on exactly that metric is peagle's to read
    either way). What peagle may CHANGE or delete is decided by the tags instead
    (`monitoring_read.peagle_alarm`)."""
    name = alarm_name(endpoint)
    try:
        found = aws.client("cloudwatch").describe_alarms(
            AlarmNames=[name], AlarmTypes=["MetricAlarm"]
        )
    except Exception as e:
        code = getattr(e, "response", {}).get("Error", {}).get("Code", "")
        if code in DENIED:
            raise AlarmsUnreadable(f"cannot read CloudWatch alarms ({code})") from e
        raise
    for a in found.get("MetricAlarms", []):
        dims = {d["Name"]: d["Value"] for d in a.get("Dimensions", [])}
        if (
            a.get("Namespace") == NAMESPACE
            and a.get("MetricName") == METRIC_ACCEPTANCE_LENGTH
            and dims.get(DIMENSION) == endpoint
        ):
            return AlarmView(
                name=a["AlarmName"],
                state=a["StateValue"],
                reason=a.get("StateReason"),
                threshold=float(a["Threshold"]),
                period=int(a["Period"]),
            )
    return None


def period_window(aws: Any, seconds: float, period: int) -> tuple[float, float]:
    """(start, end) in epoch seconds on AWS's clock: end is AWS's now, start the first
    period boundary at most `seconds` before it, so the window is whole periods but the
    last (in progress) and "1h" of 60 s periods is 60 of them; both paths count the same
    periods from it (GetMetricData's from its StartTime)."""
    end = aws.synced_aws_now().timestamp()
    start = math.ceil((end - seconds) / period) * period
    return float(start), end


def metric_samples(
    aws: Any, endpoint: str, window: tuple[float, float], period: int
) -> list[Sample]:
    """One `Sample` per period with data, from GetMetricData: AcceptanceLength (Average,
    and its SampleCount: the lines it averages), AcceptedTokens and DraftedTokens (Sum).
    A period without a line has no datapoint (the filters set no default value)."""
    from datetime import UTC, datetime

    dims = [{"Name": DIMENSION, "Value": endpoint}]
    queries = [
        ("length", METRIC_ACCEPTANCE_LENGTH, "Average"),
        ("lines", METRIC_ACCEPTANCE_LENGTH, "SampleCount"),
        ("accepted", METRIC_ACCEPTED, "Sum"),
        ("drafted", METRIC_DRAFTED, "Sum"),
    ]
    request = {
        "MetricDataQueries": [
            {
                "Id": qid,
                "MetricStat": {
                    "Metric": {"Namespace": NAMESPACE, "MetricName": metric, "Dimensions": dims},
                    "Period": period,
                    "Stat": stat,
                },
                "ReturnData": True,
            }
            for qid, metric, stat in queries
        ],
        "StartTime": datetime.fromtimestamp(window[0], UTC),
        "EndTime": datetime.fromtimestamp(window[1], UTC),
        "ScanBy": "TimestampAscending",
    }
    series: dict[str, dict[float, float]] = {q[0]: {} for q in queries}
    cw = aws.client("cloudwatch")
    for page in cw.get_paginator("get_metric_data").paginate(**request):
        for r in page.get("MetricDataResults", []):
            for ts, value in zip(r.get("Timestamps", []), r.get("Values", []), strict=False):
                series[r["Id"]][ts.timestamp()] = value
    out = []
    for t in sorted(series["length"]):
        acc, drf = series["accepted"].get(t), series["drafted"].get(t)
        out.append(
            Sample(
                t=t,
                acceptance_length=series["length"][t],
                accepted=int(acc) if acc is not None else None,
                drafted=int(drf) if drf is not None else None,
                count=int(series["lines"].get(t) or 1),
            )
        )
    return out


def spec_line_samples(lines: list[dict[str, Any]], window: tuple[float, float]) -> list[Sample]:
    """One `Sample` per SpecDecoding line in the window, from the lines as the bench reads
    them (`benchmarking.acceptance.read_spec_lines`, which the caller runs: lifecycle sits
    below benchmarking)."""
    return [
        Sample(
            t=ln["t"],
            acceptance_length=ln["mean_acceptance_length"],
            accepted=ln.get("accepted"),
            drafted=ln.get("drafted"),
        )
        for ln in lines
        if window[0] <= ln["t"] <= window[1]
    ]


def engine_traffic(
    aws: Any, endpoint: str, window: tuple[float, float], component: str | None = None
) -> str | None:
    """What shows the endpoint generated in the window, from the engine's own stats lines
    (generation throughput > 0), or None: told apart from an idle endpoint, a window
    without SpecDecoding lines means speculation is not running. Only those lines are
    fetched (a filter pattern), not the window's access log."""
    from botocore.exceptions import ClientError

    from .endpoint_logs import log_group

    request = {
        "logGroupName": log_group(endpoint, component),
        "startTime": int(window[0] * 1000),
        "endTime": int(window[1] * 1000) + 1000,
        "filterPattern": '"Avg generation throughput"',
    }
    busy: list[float] = []
    try:
        for page in aws.client("logs").get_paginator("filter_log_events").paginate(**request):
            for e in page.get("events", []):
                m = _GENERATION.search(e.get("message", ""))
                if m and float(m.group(1)) > 0:
                    busy.append(float(m.group(1)))
    except ClientError as e:
        if e.response.get("Error", {}).get("Code") != "ResourceNotFoundException":
            raise
    if not busy:
        return None
    return (
        f"{len(busy)} engine stats line(s) with generation throughput > 0, up to "
        f"{max(busy):.1f} tokens/s"
    )


def sagemaker_invocations(
    aws: Any, endpoint: str, variant: str, window: tuple[float, float]
) -> str | None:
    """What AWS/SageMaker's Invocations say of the window (Sum > 0), or None."""
    from datetime import UTC, datetime

    # Per minute (SageMaker publishes Invocations each minute; CloudWatch keeps minutes 15
    # days, hours 455), summed here. Not a period from the window's span: that span moves
    # with where in its period each call falls, and the same question must send the same
    # request (the CLI and the SDK do: tests/integration/test_parity.py).
    span = window[1] - window[0]
    period = 60 if span <= 15 * 86400 else 3600
    got = aws.client("cloudwatch").get_metric_data(
        MetricDataQueries=[
            {
                "Id": "inv",
                "MetricStat": {
                    "Metric": {
                        "Namespace": "AWS/SageMaker",
                        "MetricName": "Invocations",
                        "Dimensions": [
                            {"Name": "EndpointName", "Value": endpoint},
                            {"Name": "VariantName", "Value": variant},
                        ],
                    },
                    "Period": period,
                    "Stat": "Sum",
                },
            }
        ],
        StartTime=datetime.fromtimestamp(window[0], UTC),
        EndTime=datetime.fromtimestamp(window[1], UTC),
    )
    total = sum(sum(r.get("Values", [])) for r in got.get("MetricDataResults", []))
    return f"AWS/SageMaker Invocations {int(total)}" if total > 0 else None
