"""The sandbox clock from the outside: `peagle_sandbox.clock()` and `SandboxClient.clock`.

A `SandboxClockHandle` talks to a running sandbox's `/_peagle/clock` route: `GET` answers
the clock's state, `POST` with exactly one action (`{"advance": seconds}`, `{"freeze":
true}`, `{"resume": true[, "rate": r]}`) moves it and answers the new state. The server
runs whatever became due (status changes, log lines) before it answers, so a test that
advanced sees them at once. Every input is checked here, before a request is sent: a bad
duration or rate is a SpecError (exit 2 in the CLI) and nothing reaches the sandbox.

Standard library only (urllib, as `manager.health`): no boto3 for a loopback call.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from sm_peagle.contract import SpecError

from .sandbox_clock import format_duration, parse_duration

__all__ = ["MAX_ADVANCE", "ClockState", "SandboxClockHandle", "check_duration", "check_rate"]

# One advance moves the clock at most ten years: sandbox time must stay a datetime (year
# 9999 at most), and no test or demo needs more in one step.
MAX_ADVANCE = 3650 * 86400.0

_DURATION_FIX = "a duration such as 15m, 2d, 1h30m, 45s or a number of seconds"


@dataclass(frozen=True)
class ClockState:
    """The sandbox clock as the sandbox reports it; `to_dict()` is its document (the
    `peagle sandbox clock --json` output).

    Attributes:
        now: Sandbox time now, an aware UTC datetime.
        rate: Sandbox seconds per real second while it runs (kept while frozen).
        frozen: Whether sandbox time stands still until advanced or resumed.
        ahead_seconds: How far sandbox time is ahead of the wall clock (negative: behind).
        doc: The sandbox's document, as it answered.
    """

    now: datetime
    rate: float
    frozen: bool
    ahead_seconds: float
    doc: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> ClockState:
        """The state from the sandbox's document (`GET /_peagle/clock`)."""
        if doc.get("epoch") is not None:  # to the millisecond; `now` is to the second
            now = datetime.fromtimestamp(float(doc["epoch"]), tz=UTC)
        else:
            now = datetime.fromisoformat(str(doc["now"]))
            now = now if now.tzinfo is not None else now.replace(tzinfo=UTC)
        return cls(
            now=now.astimezone(UTC),
            rate=float(doc["rate"]),
            frozen=bool(doc["frozen"]),
            ahead_seconds=float(doc.get("ahead_seconds") or 0.0),
            doc=dict(doc),
        )

    def line(self) -> str:
        """One line for people: `sandbox clock: 2026-12-01 18:00:00Z, rate 60x (running),
        2d ahead of real time`."""
        when = self.now.strftime("%Y-%m-%d %H:%M:%SZ")
        how = "frozen" if self.frozen else "running"
        ahead = self.ahead_seconds
        if abs(ahead) < 1:
            where = "on real time"
        elif ahead > 0:
            where = f"{format_duration(ahead)} ahead of real time"
        else:
            where = f"{format_duration(-ahead)} behind real time"
        return f"sandbox clock: {when}, rate {self.rate:g}x ({how}), {where}"

    def to_dict(self) -> dict[str, Any]:
        """The sandbox's document: now (ISO), epoch, rate, frozen, ahead_seconds, ..."""
        if self.doc:
            return dict(self.doc)
        return {
            "now": self.now.isoformat(timespec="seconds"),
            "epoch": round(self.now.timestamp(), 3),
            "rate": self.rate,
            "frozen": self.frozen,
            "ahead_seconds": self.ahead_seconds,
        }


def check_duration(duration: str | float | timedelta) -> float:
    """`duration` in seconds ('15m', '2d', '1h30m', '45s', seconds, a timedelta), or a
    SpecError (field `duration`) for anything else, a negative one or over ten years."""
    if isinstance(duration, timedelta):
        seconds: float | None = duration.total_seconds()
        problem = "negative: the clock only moves forward" if seconds < 0 else None
    else:
        try:
            seconds, problem = parse_duration(duration), None  # type: ignore[arg-type]
        except (ValueError, TypeError, AttributeError):
            seconds, problem = None, "not a duration >= 0 (forms: 15m, 2d, 1h30m, 45s, seconds)"
    if problem is None and seconds is not None and seconds > MAX_ADVANCE:
        problem = "more than 3650d (ten years) in one step"
    if problem is not None or seconds is None:
        raise SpecError(
            f"duration {duration!r}: {problem}",
            remedy=_DURATION_FIX,
            field="duration",
            value=duration,
            rule="a duration >= 0 and at most 3650d",
        )
    return seconds


def check_rate(rate: float | str, flag: str = "rate") -> float:
    """`rate` (sandbox seconds per real second) as a positive finite number, or a SpecError
    (field `rate`). A string is read as a number ("60"), as the CLI passes it."""
    value: float | None = None
    if not isinstance(rate, bool):
        try:
            value = float(rate)
        except (TypeError, ValueError):
            value = None
    if value is None or not math.isfinite(value) or value <= 0:
        raise SpecError(
            f"{flag}: must be a positive number of sandbox seconds per real second (got {rate!r})",
            remedy=f"{flag}{' ' if flag.startswith('--') else '='}60 (a sandbox minute per "
            "real second), or 1 for real time",
            field="rate",
            value=rate,
            rule="a positive number",
        )
    return value


class SandboxClockHandle:
    """The clock of the sandbox at `url`: read it, move it forward, freeze it, run it.
    `peagle_sandbox.clock()` returns the running sandbox's, and `SandboxClient.clock` a
    client's (`peagle_sandbox.client().clock.advance("2d")`).

    Each call is one request to the sandbox and returns its new `ClockState`. A bad input
    is a SpecError before anything is sent; a sandbox that does not answer, or answers
    without a clock (an older server), is a SandboxError.

    Args:
        url: The sandbox's control-plane URL (`peagle sandbox status` shows it).
        engine_label: What the sandbox's engine is (`SIMULATED` or the real vLLM engine),
            for the label of the results.
        timeout: Seconds to wait for each answer.

    Attributes:
        url: The sandbox's URL.
        engine_label: What the sandbox's engine is.
    """

    def __init__(self, url: str, *, engine_label: str = "SIMULATED", timeout: float = 30.0):
        self.url = url.rstrip("/")
        self.engine_label = engine_label
        self._timeout = timeout

    def state(self) -> ClockState:
        """The clock now: sandbox time, rate, frozen or running, how far ahead."""
        return self._call(None)

    def advance(self, duration: str | float | timedelta) -> ClockState:
        """Move sandbox time forward; whatever became due (an endpoint InService, a log
        line) has happened when this returns. A running clock keeps running; a frozen one
        stays frozen.

        Args:
            duration: How far: "15m", "2d", "1h30m", "45s", a number of seconds, or a
                timedelta; >= 0 and at most 3650d (SpecError before anything is sent).
        """
        return self._call({"advance": check_duration(duration)})

    def freeze(self) -> ClockState:
        """Stop sandbox time: it moves only when advanced, until `resume`."""
        return self._call({"freeze": True})

    def resume(self, rate: float | str | None = None) -> ClockState:
        """Run sandbox time again (a running clock: at the new rate).

        Args:
            rate: Sandbox seconds per real second from now on, a positive number (default:
                the rate it had; SpecError before anything is sent).
        """
        body: dict[str, Any] = {"resume": True}
        if rate is not None:
            body["rate"] = check_rate(rate)
        return self._call(body)

    def _call(self, body: dict[str, Any] | None) -> ClockState:
        import urllib.error
        import urllib.request

        from .manager import SandboxError

        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            f"{self.url}/_peagle/clock",
            data=data,
            method="GET" if body is None else "POST",
            headers={"Content-Type": "application/json"} if data is not None else {},
        )
        # No proxies: an HTTP(S)_PROXY must not intercept loopback (as manager.health).
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            with opener.open(request, timeout=self._timeout) as resp:
                doc = json.loads(resp.read())
        except urllib.error.HTTPError as e:
            if e.code == 404:
                raise SandboxError(
                    f"the sandbox at {self.url} has no clock (an older peagle-sandbox)",
                    remedy="`peagle sandbox stop`, then `peagle sandbox start`",
                ) from None
            said = _error_of(e)
            if e.code == 400:
                raise SpecError(
                    f"sandbox clock: {said}",
                    remedy="advance by a duration >= 0, freeze, or resume at a rate > 0",
                ) from None
            raise SandboxError(
                f"the sandbox clock at {self.url} failed (HTTP {e.code}): {said}",
                remedy="see the sandbox's log (`peagle sandbox status` names it)",
            ) from None
        except (OSError, ValueError) as e:
            raise SandboxError(
                f"the sandbox at {self.url} does not answer ({e})",
                remedy="`peagle sandbox status`, or restart it",
            ) from None
        try:
            return ClockState.from_dict(doc)
        except (KeyError, TypeError, ValueError):
            raise SandboxError(
                f"the sandbox at {self.url} answered a clock document peagle cannot read",
                remedy="`peagle sandbox stop`, then `peagle sandbox start`",
            ) from None

    def __repr__(self) -> str:
        return f"SandboxClockHandle({self.url!r})"


def _error_of(e: Any) -> str:
    """The one-line error a sandbox answers (`{"error": ...}`), else the HTTP reason."""
    try:
        doc = json.loads(e.read())
        return " ".join(str(doc["error"]).split())
    except (OSError, ValueError, KeyError, TypeError):
        return str(e.reason)
