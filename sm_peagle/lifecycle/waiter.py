"""Wait for an endpoint with our own poller, not boto3's 60-minute waiter.

A P-EAGLE deployment may legitimately take a 3600 s model download plus a 3600 s
health-check window; boto3's `endpoint_in_service` waiter gives up at 60 minutes. This
poller uses an adaptive interval (fast at first, slower while nothing changes), reports
every poll to a callback (the CLI's live view), and raises typed errors.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import Call, DeploymentFailed, DeploymentTimeout, NotFound, text

TERMINAL_OK = {"InService"}
TERMINAL_BAD = {"Failed", "UpdateRollbackFailed", "OutOfService"}
TRANSIENT = {"Creating", "Updating", "SystemUpdating", "RollingBack", "Deleting"}


@dataclass
class WaitState:
    endpoint: str
    status: str
    elapsed: float
    polls: int
    description: dict[str, Any] = field(default_factory=dict)
    log_line: str | None = None

    @property
    def variant_summary(self) -> str:
        parts = []
        for v in self.description.get("ProductionVariants", []) or []:
            cur, want = v.get("CurrentInstanceCount"), v.get("DesiredInstanceCount")
            st = ",".join(s.get("Status", "?") for s in v.get("VariantStatus", []) or [])
            parts.append(f"{v.get('VariantName')} {cur}/{want}" + (f" {st}" if st else ""))
        return "; ".join(parts)


def parse_duration(text: str, field: str | None = None) -> float:
    """'2d', '2h', '90m', '1h30m', '2d12h', '45s' or plain seconds -> seconds. `field`: the
    parameter that gave it, for the error."""
    import re

    text = text.strip().lower()
    if re.fullmatch(r"\d+(\.\d+)?", text):
        return float(text)
    m = re.fullmatch(r"(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?", text)
    if not text or not m or not any(m.groups()):
        from ..errors import SpecError

        raise SpecError(
            f"duration {text!r} is not a duration",
            remedy="use forms like 2d, 2h, 90m, 1h30m or 600s",
            field=field,
            value=text,
            rule="2d, 2h, 90m, 1h30m, 600s or seconds",
        )
    d, h, mnt, s = (int(g or 0) for g in m.groups())
    return float(d * 86400 + h * 3600 + mnt * 60 + s)


def default_timeout(create_config: dict[str, Any]) -> float:
    """Download + health-check windows of the variant, plus margin for provisioning (the
    same allowance a rollout's execution timeout gives each new fleet)."""
    from ..planning.steps.rollout import provisioning_allowance

    return provisioning_allowance(create_config)


def describe_or_gone(sm: Any, name: str) -> dict[str, Any]:
    """DescribeEndpoint while waiting on it: NotFound when it was deleted meanwhile."""
    from botocore.exceptions import ClientError

    try:
        return dict(sm.describe_endpoint(EndpointName=name))
    except ClientError as e:
        if "Could not find" in str(e):
            raise NotFound(f"endpoint {name} does not exist (it was deleted)") from None
        raise


def wait_for_endpoint(
    sm: Any,
    name: str,
    *,
    timeout: float,
    wanted: str = "InService",
    on_poll: Callable[[WaitState], None] | None = None,
    log_tail: Callable[[], str | None] | None = None,
    poll_initial: float = 5.0,
    poll_max: float = 30.0,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> dict[str, Any]:
    """Poll until `wanted`; raise DeploymentFailed / DeploymentTimeout otherwise."""

    start = clock()
    interval = poll_initial
    polls = 0
    last_status = None
    while True:
        desc = describe_or_gone(sm, name)
        polls += 1
        status = desc["EndpointStatus"]
        state = WaitState(
            name, status, clock() - start, polls, desc, log_tail() if log_tail else None
        )
        if on_poll:
            on_poll(state)
        if status == wanted:
            return desc
        if status in TERMINAL_BAD or (status == "InService" and wanted != "InService"):
            raise DeploymentFailed(
                f"endpoint {name} is {status}: {desc.get('FailureReason') or 'no reason given'}",
                failure_reason=desc.get("FailureReason"),
                remedy=text(
                    "read the log lines above; `{logs}` shows more", logs=Call("logs", name)
                ),
            )
        if state.elapsed >= timeout:
            raise DeploymentTimeout(
                f"endpoint {name} still {status} after {state.elapsed:.0f}s",
                remedy=text("raise {timeout}, or check `{logs}`", logs=Call("logs", name)),
            )
        # Poll fast while the state moves, back off while it sits still.
        interval = poll_initial if status != last_status else min(interval * 1.5, poll_max)
        last_status = status
        sleep(min(interval, max(timeout - state.elapsed, 0.01)))
