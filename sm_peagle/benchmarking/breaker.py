"""A level stops when the endpoint stops answering, and a run is judged by its error rate.

Stopping. A request "could not connect" when no answer came back from the endpoint at
all: the connection was refused, reset or timed out (`AwsUnreachable`), its response
stream broke in the transport (`ModelStreamError:StreamBroken` / `:ReadTimeout`), or the
endpoint is gone (`NotFound`). An error *answer* from a live model (a 4xx ModelError for
a prompt that is too long, a throttle) is not one: the endpoint is there, and the error
rate judges it. The rule:

    a level stops after max(10, 2 x concurrency) consecutive "could not connect" failures

(`consecutive_limit`), counted per client process over its share of the concurrency.
Why that number: when an endpoint dies, every request in flight fails at once, so
`concurrency` failures in a row is one event, not yet a pattern; twice that means every
stream slot failed again after its first failure. The floor of 10 keeps a single stream
from stopping on a brief blip. Any other outcome (a success, an error answer) resets the
count. Once stopped, no new request is sent: at most `limit + concurrency` requests are
sent after the endpoint died (the ones counted, plus those already in flight when the
count was reached). A stopped level ends the run (its later levels are not sent).

Judging. The error rate of a run is failed / total over every measured request of every
level (warm-up requests are not measured). A run fails (`BenchmarkFailed`, exit 1, after
its results were printed and written) when that exceeds `max_error_rate` (default
`DEFAULT_MAX_ERROR_RATE`, 0.05: a benchmark with more than 1 request in 20 failing
measures the failures, not the endpoint), or when a level was stopped.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import Call, Param, text
from .metrics import RequestRecord

__all__ = [
    "CONNECTION_FAILURES",
    "DEFAULT_MAX_ERROR_RATE",
    "MIN_CONSECUTIVE",
    "Breaker",
    "consecutive_limit",
    "error_rate",
    "is_connection_failure",
    "run_verdict",
]

DEFAULT_MAX_ERROR_RATE = 0.05
MIN_CONSECUTIVE = 10

# error_kind of a record (load._error_kind) for which no answer came from the endpoint.
CONNECTION_FAILURES = frozenset(
    {
        "AwsUnreachable",
        "NotFound",
        "ModelStreamError:StreamBroken",
        "ModelStreamError:ReadTimeout",
    }
)


def consecutive_limit(concurrency: int) -> int:
    """How many "could not connect" failures in a row stop a level (module docstring)."""
    return max(MIN_CONSECUTIVE, 2 * max(concurrency, 1))


def is_connection_failure(record: RequestRecord) -> bool:
    return not record.ok and record.error_kind in CONNECTION_FAILURES


class Breaker:
    """Counts consecutive "could not connect" failures as requests finish (from any
    thread); `stop` is set once the count reaches `limit`, and the load loops send
    nothing after that."""

    def __init__(self, concurrency: int, stop: threading.Event | None = None) -> None:
        self.limit = consecutive_limit(concurrency)
        self.concurrency = concurrency
        self.stop = stop or threading.Event()
        self._run = 0
        self._lock = threading.Lock()
        self.stopped: dict[str, Any] | None = None

    def observe(self, record: RequestRecord) -> None:
        with self._lock:
            if not is_connection_failure(record):
                self._run = 0
                return
            self._run += 1
            if self._run >= self.limit and self.stopped is None:
                self.stopped = {
                    "reason": "the endpoint stopped answering",
                    "consecutive_failures": self._run,
                    "limit": self.limit,
                    "error_kind": record.error_kind,
                    "error": record.error,
                }
                self.stop.set()


def error_rate(levels: Iterable[Mapping[str, Any]]) -> tuple[int, int, float]:
    """(failed, total, failed / total) over the levels' measured requests (0.0 for none)."""
    failed = total = 0
    for level in levels:
        failed += int(level["requests"]["failed"])
        total += int(level["requests"]["total"])
    return failed, total, (failed / total if total else 0.0)


def run_verdict(doc: Mapping[str, Any], max_error_rate: float) -> dict[str, Any] | None:
    """None when the run passes; else what failed: `message`, `remedy`, `error_rate`,
    `max_error_rate`. A stopped level fails the run whatever its error rate."""
    levels = list(doc.get("levels") or [])
    failed, total, rate = error_rate(levels)
    stopped = next((lv for lv in levels if lv.get("stopped")), None)
    counts = f"{failed:,} of {total:,} requests failed"
    endpoint = doc.get("endpoint") or "the endpoint"
    verdict = {"error_rate": rate, "max_error_rate": max_error_rate}
    if stopped is not None:
        info = stopped["stopped"]
        return {
            **verdict,
            "message": text(
                "{e} stopped answering: {n} requests in a row could not connect ({kind}) at "
                "concurrency {c}, so the run stopped there; {counts} (error rate {r:.1%}, {m})",
                e=endpoint,
                n=info["consecutive_failures"],
                kind=info["error_kind"],
                c=stopped["concurrency"],
                counts=counts,
                r=rate,
                m=Param("max_error_rate", _shown(max_error_rate)),
            ),
            "remedy": text(
                "see `{s}` and `{lg}`", s=Call("status", endpoint), lg=Call("logs", endpoint)
            ),
        }
    if rate > max_error_rate:
        return {
            **verdict,
            "message": text(
                "{counts}: error rate {r:.1%} is over {m}",
                counts=counts,
                r=rate,
                m=Param("max_error_rate", _shown(max_error_rate)),
            ),
            "remedy": text(
                "see the failure reasons in the results; {m} accepts any error rate",
                m=Param("max_error_rate", 1),
            ),
        }
    return None


def _shown(value: float) -> float | int:
    # A whole number as an int, so both faces print the rate as `{:g}` did (1, not 1.0).
    return int(value) if float(value).is_integer() else value
