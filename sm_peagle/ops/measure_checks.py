"""One validation for every measurement and traffic argument, shared by the SDK and the CLI.

The CLI passes raw values (`"1,2,4"`, `"25s"`, a path) and the SDK accepts Python values
(`2`, `[1, 4]`, `25.0`); both come through here, so a bad value gets the same `SpecError`
(exit 2, with a fix) from either side, before any request is sent or any file written.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import SpecError
from ..runtime.payloads import check_max_tokens, check_temperature, check_top_p
from .session import check_output_path

__all__ = [
    "MAX_REQUESTS",
    "check_error_rate",
    "check_max_tokens",
    "check_output_path",
    "check_prompt",
    "check_requests",
    "check_temperature",
    "check_top_p",
    "parse_levels",
    "parse_rates",
    "parse_seconds",
]

# `-n` per level. Every request's record (times, tokens, inter-token gaps) stays in memory
# until its level is summarized, and each one is a paid invocation: 100,000 requests of
# 256 tokens is 25.6M output tokens. More than that is almost surely a typo (an extra
# zero); a longer run is `--duration`, which streams through the same memory per level.
MAX_REQUESTS = 100_000


def parse_levels(value: Any, flag: str = "--concurrency") -> list[int]:
    """Concurrency (or K) levels from an int, a list of ints or the CLI's `"1,2,4"`;
    SpecError for an empty item (`1,,4`), a non-integer, zero or a negative."""
    if isinstance(value, bool):
        raise SpecError(
            f"{flag}: expected positive integers, got {value!r}", remedy=f"{flag} 1,4,8"
        )
    if isinstance(value, int):
        items: list[Any] = [value]
        shown = str(value)
    elif isinstance(value, str):
        shown = value
        parts = [p.strip() for p in value.split(",")]
        if not value.strip() or any(not p for p in parts):
            raise SpecError(
                f"{flag}: expected comma-separated integers, got {value!r}",
                remedy=f"{flag} 1,4,8",
            )
        try:
            items = [int(p) for p in parts]
        except ValueError:
            raise SpecError(
                f"{flag}: expected comma-separated integers, got {value!r}", remedy=f"{flag} 1,4,8"
            ) from None
    elif isinstance(value, Sequence):
        items, shown = list(value), ",".join(map(str, value))
        if any(isinstance(v, bool) or not isinstance(v, int) for v in items):
            raise SpecError(
                f"{flag}: expected integers, got {list(value)!r}", remedy=f"{flag} 1,4,8"
            )
    else:
        raise SpecError(
            f"{flag}: expected an int, a list of ints or '1,4,8', got {value!r}",
            remedy=f"{flag} 1,4,8",
        )
    if not items or any(v < 1 for v in items):
        raise SpecError(
            f"{flag}: expected positive integers, got {shown!r}", remedy=f"{flag} 1,4,8"
        )
    return items


def parse_rates(value: Any) -> list[float | None]:
    """Open-loop arrival rates (requests/s) from a float, a list or `"0.5,2"`; [None]
    (closed loop) for None or an empty string."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return [None]
    if isinstance(value, str):
        try:
            vals = [float(x) for x in value.split(",") if x.strip()]
        except ValueError:
            raise SpecError(
                f"--rate: expected requests/s, got {value!r}", remedy="--rate 0.5,2 (requests/s)"
            ) from None
    elif isinstance(value, int | float) and not isinstance(value, bool):
        vals = [float(value)]
    else:
        try:
            vals = [float(x) for x in value]
        except (TypeError, ValueError):
            raise SpecError(
                f"--rate: expected requests/s, got {value!r}", remedy="--rate 0.5,2 (requests/s)"
            ) from None
    if not vals or any(not v > 0 for v in vals):
        raise SpecError(
            f"--rate: expected positive requests/s, got {value!r}",
            remedy="--rate 0.5,2 (requests/s)",
        )
    return list(vals)


def parse_seconds(value: Any, flag: str, *, allow_zero: bool) -> float:
    """`"25s"`, `"5m"`, `"1h30m"` or a number of seconds -> seconds; zero only when
    `allow_zero` (`--duration 0s` would measure nothing)."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise SpecError(f"{flag}: a duration, not {value!r}", remedy="e.g. 60s, 5m or 600")
    if isinstance(value, str):
        from ..lifecycle.waiter import parse_duration

        result = parse_duration(value)
    else:
        result = float(value)
    if result < 0:
        raise SpecError(f"{flag}: {value} is negative", remedy="e.g. 60s, 5m or 600")
    if result == 0 and not allow_zero:
        raise SpecError(f"{flag}: must be longer than 0, got {value!r}", remedy=f"{flag} 60s")
    return result


def check_requests(requests: Any, flag: str = "--requests") -> int | None:
    if requests is None:
        return None
    if isinstance(requests, bool) or not isinstance(requests, int):
        raise SpecError(
            f"{flag} must be a whole number, got {requests!r}", remedy=f"e.g. {flag} 64"
        )
    if requests < 1:
        raise SpecError(f"{flag} must be at least 1, got {requests}", remedy=f"e.g. {flag} 64")
    if requests > MAX_REQUESTS:
        raise SpecError(
            f"{flag} {requests}: more than {MAX_REQUESTS:,} requests per level",
            remedy="use --duration for a long run (the records of one level stay in memory)",
        )
    return requests


def check_error_rate(value: Any, flag: str = "--max-error-rate") -> float:
    """A fraction from 0 to 1 (a number, or the CLI's text of one); SpecError for a
    negative, more than 1, NaN or not a number. The message quotes the value as given,
    so `-0.5` from the SDK and `"-0.5"` from the CLI read the same."""
    rate: float | None = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        rate = float(value)
    elif isinstance(value, str):
        try:
            rate = float(value.strip())
        except ValueError:
            rate = None
    if rate is None or not 0.0 <= rate <= 1.0:  # NaN fails both comparisons
        raise SpecError(
            f"{flag}: expected a fraction from 0 to 1, got '{value}'",
            remedy=f"e.g. {flag} 0.05 (up to 5% of requests may fail); 0 allows none",
        )
    return rate


def check_prompt(prompt: Any, *, usage: str) -> str:
    """A non-empty prompt (SpecError naming `usage` as the fix)."""
    if prompt is None or not isinstance(prompt, str):
        raise SpecError("give a prompt (or --raw payload.json)", remedy=usage)
    if not prompt.strip():
        raise SpecError("prompt: empty; give some text (or --raw payload.json)", remedy=usage)
    return prompt
