"""CloudWatch logs of an endpoint, and vLLM's SpecDecoding metrics lines in them.

The acceptance length of a SageMaker endpoint can only be read here: vLLM logs
`SpecDecoding metrics: Mean acceptance length: 3.41, ... Avg Draft acceptance rate:
48.2%` every 10 s, and /metrics is not reachable through SageMaker.

An inference component's container logs go to its own group,
`/aws/sagemaker/InferenceComponents/<component>` (see
`peagle_sandbox.testing.moto_sagemaker.component_log_group` for where that name comes from).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any

SPEC_LINE = re.compile(r"SpecDecoding metrics:")
_ACCEPT_LEN = re.compile(r"Mean acceptance length:\s*([0-9.]+)")
_ACCEPT_RATE = re.compile(r"Avg Draft acceptance rate:\s*([0-9.]+)%")


def log_group(endpoint: str, component: str | None = None) -> str:
    """The endpoint's log group, or its inference `component`'s."""
    if component:
        return f"/aws/sagemaker/InferenceComponents/{component}"
    return f"/aws/sagemaker/Endpoints/{endpoint}"


def parse_spec_decoding(line: str) -> dict[str, float] | None:
    """{'mean_acceptance_length': 3.41, 'draft_acceptance_rate': 0.482} or None."""
    if not SPEC_LINE.search(line):
        return None
    out: dict[str, float] = {}
    if m := _ACCEPT_LEN.search(line):
        out["mean_acceptance_length"] = float(m.group(1))
    if m := _ACCEPT_RATE.search(line):
        out["draft_acceptance_rate"] = round(float(m.group(1)) / 100, 6)
    return out or None


def aws_offset(aws: Any) -> float:
    """Seconds AWS's clock is ahead of this machine's (`AwsClock.offset`, after reading a
    Date: `AwsContext.synced_aws_now`); 0.0 for a stand-in context without one."""
    synced, clock = getattr(aws, "synced_aws_now", None), getattr(aws, "aws_clock", None)
    if synced is None or clock is None:
        return 0.0
    synced()
    return float(clock.offset())


def aws_epoch(aws: Any) -> float:
    """AWS's now in epoch seconds (`AwsClock.now`: the local clock plus `aws_offset`): log
    events are stamped on AWS's clock, so a window `since` seconds back must be measured on
    it too (a local clock that is off, or a sandbox clock days ahead, would miss the lines
    written "now")."""
    return time.time() + aws_offset(aws)


def fetch_log_events(
    aws: Any,
    endpoint: str,
    *,
    since: float,
    until: float | None = None,
    start_ms: int | None = None,
    component: str | None = None,
) -> list[dict[str, Any]]:
    """Events of every stream of the endpoint's group (or its inference `component`'s),
    oldest first. Empty if no group."""
    from botocore.exceptions import ClientError

    logs = aws.client("logs")
    kwargs: dict[str, Any] = {
        "logGroupName": log_group(endpoint, component),
        "startTime": start_ms if start_ms is not None else int((aws_epoch(aws) - since) * 1000),
    }
    if until is not None:
        kwargs["endTime"] = int(until * 1000)
    events: list[dict[str, Any]] = []
    try:
        for page in logs.get_paginator("filter_log_events").paginate(**kwargs):
            events += page.get("events", [])
    except ClientError as e:
        if e.response.get("Error", {}).get("Code") == "ResourceNotFoundException":
            return []
        raise
    events.sort(key=lambda e: (e["timestamp"], e.get("eventId", "")))
    return events


def follow_log_events(
    aws: Any,
    endpoint: str,
    *,
    since: float,
    interval: float = 2.0,
    max_polls: int | None = None,
    component: str | None = None,
) -> Iterator[dict[str, Any]]:
    """Yield events as they arrive (like `tail -f`), never the same event twice."""
    seen: set[str] = set()
    start_ms = int((aws_epoch(aws) - since) * 1000)
    polls = 0
    while max_polls is None or polls < max_polls:
        for e in fetch_log_events(
            aws, endpoint, since=since, start_ms=start_ms, component=component
        ):
            key = e.get("eventId") or f"{e['timestamp']}:{e['message']}"
            if key not in seen:
                seen.add(key)
                yield e
                start_ms = max(start_ms, e["timestamp"])
        polls += 1
        if max_polls is None or polls < max_polls:
            time.sleep(interval)
