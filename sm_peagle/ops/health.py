"""`health`: is speculation paying on an endpoint? A verdict (paying, degraded, off, no
data) with its evidence, from what the engine itself wrote.

    client = sm_peagle.Client(region="us-east-1")
    report = client.health("my-endpoint", window="1h")
    print(report.verdict, report.acceptance_length)

With peagle's monitoring on the endpoint (`deploy --monitor`) it reads the CloudWatch
metrics AWS computed from vLLM's SpecDecoding lines and the alarm's state; on any other
endpoint it reads the lines themselves. `peagle health` makes this call as it is. Also
`status`'s speculation line (`speculation_of`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..errors import Param, SpecError, text
from .health_results import HealthReport, acceptance, health_verdict
from .session import Session, check_endpoint_name, seconds

__all__ = ["HealthOps", "HealthReport", "speculation_of"]

# Without peagle's alarm, periods are counted as its default alarm would count them
# (MonitoringSpec.period_seconds), so both paths give the same "data in N of M periods".
DEFAULT_PERIOD = 60
STATUS_WINDOW = 3600.0  # status shows the last hour


class HealthOps(Session):
    """`health`: the operation of `sm_peagle.Client` that judges speculation on an
    endpoint."""

    def health(
        self, name: str, *, window: str | float = "1h", component: str | None = None
    ) -> HealthReport:
        """Whether speculation pays on the endpoint over the last `window`: "paying",
        "degraded", "off" or "no data", with the evidence.

        Args:
            name: the endpoint's name.
            window: how far back from AWS's now: "1h", "30m", "2h" or seconds.
            component: judge this inference component (full or short name), from its own
                log group.

        Returns:
            A `HealthReport`: `verdict`, `acceptance_length`, `draft_acceptance_rate`, the
            threshold and its source, the alarm (if peagle's monitoring is on), how many
            periods of the window had data, and `evidence` (one line each).

        Raises:
            SpecError: `name` or `component` is not a SageMaker name, `window` is not a
                positive duration, or the component is not on the endpoint (nothing is
                sent for the first three).
            NotFound: there is no such endpoint.
        """
        from ..lifecycle import health_read as read
        from ..lifecycle.component_targets import resolve_component
        from ..lifecycle.inventory import endpoint_status
        from ..planning.components.hosting import component_short_name

        name = check_endpoint_name(name)
        # A number is checked here, so its error names the field as a string's does.
        number = isinstance(window, int | float) and not isinstance(window, bool)
        window_s = seconds(window, "window") if not number else float(window)
        if not window_s or window_s <= 0:
            raise SpecError(
                text(
                    "{window}: the window must be longer than 0, not {value}",
                    window=Param("window"),
                    value=window,
                ),
                remedy="e.g. 1h, 30m or 600",
                field="window",
                value=window,
            )
        if component is not None:
            check_endpoint_name(component, "component")
        ctx = self._connect()
        sm = ctx.client("sagemaker")
        st = endpoint_status(sm, name)
        served = st
        if component is not None or st.get("components") is not None:
            component = resolve_component(sm, name, component)
            served = next((c for c in st.get("components") or [] if c["name"] == component), {})
        mode, k, cfg = served.get("mode"), served.get("k"), served.get("speculative_config")
        baseline = mode == "baseline"
        k_schedule = bool((cfg or {}).get("num_speculative_tokens_per_batch_size"))
        # Monitoring watches an endpoint's own log group; a component has none of it.
        alarm, denied = None, None
        if component is None:
            try:
                alarm = read.alarm_watching(ctx, name)
            except read.AlarmsUnreadable as e:  # the lines still tell
                denied = str(e)
        period = alarm.period if alarm else DEFAULT_PERIOD
        win = read.period_window(ctx, window_s, period)
        if alarm is not None:
            source, samples = "metric", read.metric_samples(ctx, name, win, period)
        else:
            from ..benchmarking.acceptance import read_spec_lines

            lines = read_spec_lines(ctx, name, win[0], win[1], component)
            source, samples = "log lines", read.spec_line_samples(lines, win)
        traffic = None
        if not samples and not baseline:
            traffic = read.engine_traffic(ctx, name, win, component)
            # SageMaker's Invocations only where monitoring is on: a caller without it may
            # hold no cloudwatch:GetMetricData, and the engine's lines already answer.
            if traffic is None and alarm is not None and st.get("variant"):
                traffic = read.sagemaker_invocations(ctx, name, st["variant"], win)
        report = health_verdict(
            endpoint=name
            if component is None
            else f"{name}/{component_short_name(name, component)}",
            source=source,
            window=win,
            period_seconds=period,
            samples=samples,
            traffic=traffic,
            k=k,
            k_schedule=k_schedule,
            baseline=baseline,
            threshold=alarm.threshold if alarm else None,
            threshold_source=f"alarm {alarm.name}" if alarm else None,
            alarm=alarm.to_dict() if alarm else None,
        )
        if denied:
            evidence = [*report.evidence, f"{denied}: judged from the log lines"]
            report = dataclasses.replace(report, evidence=evidence)
        return report


def speculation_of(ctx: Any, name: str, doc: dict[str, Any]) -> dict[str, Any] | None:
    """`EndpointStatus.speculation`: None without peagle's alarm on the endpoint (one
    DescribeAlarms), else the alarm, its state and the last hour's acceptance (one
    GetMetricData): {"alarm", "alarm_state", "acceptance_length_1h",
    "draft_acceptance_rate_1h"}; when DescribeAlarms is denied, those None and
    "unreadable" saying so."""
    from ..lifecycle import health_read as read

    try:
        alarm = read.alarm_watching(ctx, name)
    except read.AlarmsUnreadable as e:  # not "monitoring off": unknown, and why
        return {
            "alarm": None,
            "alarm_state": None,
            "acceptance_length_1h": None,
            "draft_acceptance_rate_1h": None,
            "unreadable": str(e),
        }
    if alarm is None:
        return None
    win = read.period_window(ctx, STATUS_WINDOW, alarm.period)
    samples = read.metric_samples(ctx, name, win, alarm.period)
    length = rate = None
    if samples:
        cfg = doc.get("speculative_config") or {}
        schedule = bool(cfg.get("num_speculative_tokens_per_batch_size"))
        length, rate, _ = acceptance(samples, doc.get("k"), schedule)
    return {
        "alarm": alarm.name,
        "alarm_state": alarm.state,
        "acceptance_length_1h": round(length, 4) if length is not None else None,
        "draft_acceptance_rate_1h": round(rate, 4) if rate is not None else None,
    }
