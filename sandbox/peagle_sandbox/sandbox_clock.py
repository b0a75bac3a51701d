"""The sandbox clock: the one time of the sandbox's control plane.

Every control-plane wait and timestamp the sandbox emulates reads it: Creating, Updating
and Deleting of endpoints and inference components, resource `CreationTime` and
`LastModifiedTime`, log event times, metric datapoints, the HTTP `Date` header, and
(as later features arrive) CloudWatch periods, schedules and rollout phases. Tests move it
instead of sleeping: freeze it, then `advance(15 * 60)`; a demo runs it fast
(`rate=60`: a sandbox minute per real second).

What the sandbox measures stays real: the engine's token timings, TTFT and tokens/s are
real seconds, and while an invocation is in flight (`real_time()`) a running clock counts
1:1 with real time, so a benchmark's measuring phase lasts on the sandbox clock what it
lasts on the wall. A frozen clock stays frozen (a test that froze it moves it itself).

Sandbox time never goes backwards: `advance` refuses a negative step, and a rate change
continues from the current instant. Stdlib only: the moto harness (`testing/`) and the
server both use this one type.
"""

from __future__ import annotations

import math
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

__all__ = ["SandboxClock", "format_duration", "parse_duration"]

_LAST = datetime(9998, 1, 1, tzinfo=UTC).timestamp()  # far enough; datetime ends at 9999

_UNITS = {"d": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0}
_DURATION = re.compile(r"(?:(\d+(?:\.\d+)?)d)?(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m)?"
                       r"(?:(\d+(?:\.\d+)?)s)?")  # fmt: skip


def parse_duration(text: str | float) -> float:
    """'15m', '2d', '1h30m', '45s', '1.5h' or plain seconds -> seconds (ValueError else)."""
    if isinstance(text, bool):
        raise ValueError(f"{text!r} is not a duration")
    if isinstance(text, int | float):
        seconds = float(text)
    else:
        raw = text.strip().lower()
        if re.fullmatch(r"\d+(\.\d+)?", raw):
            seconds = float(raw)
        else:
            m = _DURATION.fullmatch(raw)
            if not raw or m is None or not any(m.groups()):
                raise ValueError(f"{text!r} is not a duration (forms: 15m, 2d, 1h30m, 45s)")
            seconds = sum(
                float(g) * u for g, u in zip(m.groups(), _UNITS.values(), strict=True) if g
            )
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"{text!r} is not a duration >= 0")
    return seconds


def format_duration(seconds: float) -> str:
    """90061 -> '1d1h1m1s' (whole seconds; '0s' for nothing)."""
    left, out = int(round(abs(seconds))), ""
    for unit, size in _UNITS.items():
        if left >= size:
            out += f"{left // int(size)}{unit}"
            left %= int(size)
    return ("-" if seconds < 0 else "") + (out or "0s")


class SandboxClock:
    """Seconds since the epoch, running at `rate` sandbox seconds per real second.

    `start`: the sandbox time now (default: the wall clock's). `frozen`: start frozen.
    `real`: the real clock it runs on (monotonic; injectable for its own tests).
    Thread-safe: the server's request threads, its ticker and a test all read it.
    """

    def __init__(
        self,
        rate: float = 1.0,
        *,
        start: float | None = None,
        frozen: bool = False,
        real: Callable[[], float] = time.monotonic,
    ) -> None:
        self._check_rate(rate)
        self._real = real
        self._lock = threading.RLock()
        self._rate = float(rate)
        self._frozen = frozen
        self._holds = 0
        self._anchor = time.time() if start is None else float(start)
        self._anchor_real = real()
        self._listeners: list[Callable[[], None]] = []

    @staticmethod
    def _check_rate(rate: float) -> None:
        if isinstance(rate, bool) or not isinstance(rate, int | float):
            raise ValueError(f"clock rate {rate!r} is not a number")
        if not math.isfinite(rate) or rate <= 0:
            raise ValueError(f"clock rate must be a positive number (got {rate!r})")

    # ------------------------------------------------------------------ reading

    def _effective_rate(self) -> float:
        if self._frozen:
            return 0.0
        return 1.0 if self._holds else self._rate

    def now(self) -> float:
        """Sandbox time: seconds since the epoch."""
        with self._lock:
            return self._anchor + (self._real() - self._anchor_real) * self._effective_rate()

    def __call__(self) -> float:
        return self.now()

    def datetime(self) -> datetime:
        """Sandbox time as an aware UTC datetime."""
        return datetime.fromtimestamp(self.now(), tz=UTC)

    def naive_utcnow(self) -> datetime:
        """Sandbox time as a naive UTC datetime: what moto's `utcnow()` returns."""
        return self.datetime().replace(tzinfo=None)

    @property
    def rate(self) -> float:
        """Sandbox seconds per real second while it runs (kept while frozen)."""
        return self._rate

    @property
    def frozen(self) -> bool:
        return self._frozen

    def ahead(self) -> float:
        """How far sandbox time is ahead of the wall clock, in seconds."""
        return self.now() - time.time()

    def state(self) -> dict[str, Any]:
        """What `peagle sandbox clock` shows: now, rate, frozen, how far ahead."""
        with self._lock:
            now = self.now()
            return {
                "now": datetime.fromtimestamp(now, tz=UTC).isoformat(timespec="seconds"),
                "epoch": round(now, 3),
                "rate": self._rate,
                "frozen": self._frozen,
                "ahead_seconds": round(now - time.time(), 3),
                "real_time_holds": self._holds,
            }

    # ------------------------------------------------------------------ moving

    def _rebase(self) -> None:
        # Continue from this instant, so a change of rate never moves time by itself.
        self._anchor = self.now()
        self._anchor_real = self._real()

    def advance(self, seconds: float) -> float:
        """Move sandbox time forward by `seconds` (>= 0); returns the new time. Whatever
        became due (a status change, a log line) happens by the next read, and the
        listeners (`on_advance`: the server's ticker) run before this returns."""
        if isinstance(seconds, bool) or not isinstance(seconds, int | float):
            raise ValueError(f"cannot advance the clock by {seconds!r}")
        if not math.isfinite(seconds) or seconds < 0:
            raise ValueError(f"the clock only moves forward (got {seconds!r} seconds)")
        with self._lock:
            if self.now() + seconds >= _LAST:  # every timestamp must stay a datetime
                raise ValueError(f"advancing {seconds:g} s would pass the year 9998")
            self._rebase()
            self._anchor += float(seconds)
            now = self._anchor
        self._notify()
        return now

    def freeze(self) -> None:
        """Stop sandbox time (until `advance` or `resume`)."""
        with self._lock:
            self._rebase()
            self._frozen = True

    def resume(self, rate: float | None = None) -> None:
        """Run again, at `rate` (default: the rate it had)."""
        if rate is not None:
            self._check_rate(rate)
        with self._lock:
            self._rebase()
            self._frozen = False
            if rate is not None:
                self._rate = float(rate)
        self._notify()

    def set_rate(self, rate: float) -> None:
        """A new rate, frozen or not (a frozen clock stays frozen)."""
        self._check_rate(rate)
        with self._lock:
            self._rebase()
            self._rate = float(rate)

    @contextmanager
    def real_time(self) -> Iterator[None]:
        """While in the block (an invocation in flight), a running clock counts 1:1 with
        real time; nested and concurrent blocks count once."""
        with self._lock:
            self._rebase()
            self._holds += 1
        try:
            yield
        finally:
            with self._lock:
                self._rebase()
                self._holds -= 1

    def on_advance(self, callback: Callable[[], None]) -> None:
        """Call `callback` after each `advance` and `resume` (outside the clock's lock)."""
        self._listeners.append(callback)

    def _notify(self) -> None:
        for callback in list(self._listeners):
            callback()

    def __repr__(self) -> str:
        how = "frozen" if self._frozen else f"rate {self._rate:g}"
        return f"SandboxClock({self.datetime().isoformat(timespec='seconds')}, {how})"
