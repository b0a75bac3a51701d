"""Speculation health on the real engine (issue 37): traffic that makes the engine write
its `SpecDecoding metrics` lines in chosen alarm periods, and what AWS's side (the moto
harness in the sandbox) computed from them.

vLLM writes one line per stats interval in which it drafted (`VLLM_LOG_STATS_INTERVAL`,
10 s by default: vllm 0.31.0 `envs.py`; 2 s in these sandboxes: `STATS_INTERVAL_S`), timed
by its own monotonic clock, while the log events are stamped on the sandbox clock. So a
period "with data" is made by sending a burst, waiting (bounded, real time) for the line
it causes, then advancing the sandbox clock by one alarm period: the next burst's line
lands in the next period.
"""

from __future__ import annotations

import json
import time
import urllib.request
from typing import Any

from tests.conformance.engine_proc import STATS_INTERVAL_S
from tests.e2e.test_sandbox_engine_host import Cli

PERIOD_S = 60  # the monitoring default (`MonitoringSpec.period_seconds`)
SPEC_MARK = "SpecDecoding metrics:"


def sandbox_epoch(cli: Cli) -> float:
    """Sandbox time now (seconds), as the sandbox's clock says it."""
    with urllib.request.urlopen(f"{cli.state()['url']}/_peagle/clock", timeout=10) as r:
        return float(json.loads(r.read())["epoch"])


def spec_events(cli: Cli, name: str, since: float) -> list[dict[str, Any]]:
    """The endpoint's SpecDecoding log events stamped at or after `since` (sandbox time)."""
    logs = cli.client("logs")
    out: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {
        "logGroupName": f"/aws/sagemaker/Endpoints/{name}",
        "startTime": int(since * 1000),
    }
    while True:
        page = logs.filter_log_events(**kwargs)
        out += [e for e in page["events"] if SPEC_MARK in e["message"]]
        if not page.get("nextToken"):
            return out
        kwargs["nextToken"] = page["nextToken"]


def burst_until_line(
    cli: Cli, name: str, *, requests: int = 3, temperature: float = 0.0, timeout: float = 40.0
) -> list[dict[str, Any]]:
    """Send `requests` invocations, then wait (bounded) until the engine has logged the
    SpecDecoding lines covering them: the first new line, then one stats interval more
    (the work may straddle two intervals), after which the idle engine logs none. The new
    lines."""
    since = sandbox_epoch(cli)
    for i in range(requests):
        cli("--sandbox", "invoke", name, f"Tell me about the number {i}.", "--max-tokens", "32",
            "--temperature", str(temperature), "--json")  # fmt: skip
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if spec_events(cli, name, since):
            time.sleep(STATS_INTERVAL_S + 1)
            return spec_events(cli, name, since)
        time.sleep(1.0)
    raise AssertionError(f"no SpecDecoding line from {name} within {timeout:.0f} s of traffic")


def advance(cli: Cli, seconds: float) -> None:
    cli("sandbox", "clock", "advance", f"{int(seconds)}s")


def alarm(cli: Cli, name: str) -> dict[str, Any]:
    """peagle's alarm on `name`, as CloudWatch (the harness) describes it."""
    [found] = cli.client("cloudwatch").describe_alarms(AlarmNames=[f"{name}-speculation"])[
        "MetricAlarms"
    ]
    return found


def health(cli: Cli, name: str, *args: str) -> dict[str, Any]:
    return json.loads(cli("--sandbox", "health", name, *args, "--json").stdout)


def metric_sums(cli: Cli, name: str, start: float, end: float) -> dict[str, float]:
    """Sum of AcceptedTokens and DraftedTokens over [start, end) (sandbox time), from
    CloudWatch: what the metric filters published."""
    from datetime import UTC, datetime

    cw = cli.client("cloudwatch")
    out = {}
    for metric in ("AcceptedTokens", "DraftedTokens"):
        points = cw.get_metric_statistics(
            Namespace="Peagle/SpeculativeDecoding",
            MetricName=metric,
            Dimensions=[{"Name": "EndpointName", "Value": name}],
            StartTime=datetime.fromtimestamp(start, UTC),
            EndTime=datetime.fromtimestamp(end, UTC),
            Period=PERIOD_S,
            Statistics=["Sum"],
        )["Datapoints"]
        out[metric] = sum(p["Sum"] for p in points)
    return out
