"""One validation for every measurement and traffic argument, shared by the SDK and the CLI.

The CLI passes raw values (`"1,2,4"`, `"25s"`, a path) and the SDK accepts Python values
(`2`, `[1, 4]`, `25.0`); both come through here, so a bad value gets the same `SpecError`
(exit 2, with a fix) from either side, before any request is sent or any file written.
Each error names the SDK keyword it is about (`field`, and `Param` in its text), which
the CLI words as its flag (`cli/faces.py`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from ..errors import Call, Param, SpecError, text
from ..runtime.payloads import check_max_tokens, check_temperature, check_top_p
from .session import check_output_path

__all__ = [
    "MAX_REQUESTS",
    "EndpointHandle",
    "check_error_rate",
    "check_locust",
    "check_max_tokens",
    "check_output_path",
    "check_prompt",
    "check_requests",
    "check_temperature",
    "check_top_p",
    "load_options",
    "locust_common",
    "parse_levels",
    "parse_rates",
    "parse_seconds",
    "race_targets",
    "race_usage",
    "slo_options",
]

# `requests` per level. Every request's record (times, tokens, inter-token gaps) stays in
# memory until its level is summarized, and each one is a paid invocation: 100,000
# requests of 256 tokens is 25.6M output tokens. More than that is almost surely a typo
# (an extra zero); a longer run is `duration`, which streams through the same memory.
MAX_REQUESTS = 100_000


class EndpointHandle(Protocol):
    """What a measurement needs of an `sm_peagle.Endpoint` handle passed instead of a
    name: its name, its AWS context, and its checked inference component and runtime."""

    name: str
    aws: Any

    def inference_component(self, component: str | None = None) -> str | None: ...

    def runtime(self, component: str | None = None) -> Any: ...


def parse_levels(value: Any, field: str = "concurrency") -> list[int]:
    """Concurrency (or K) levels from an int, a list of ints or the CLI's `"1,2,4"`;
    SpecError naming `field` for an empty item (`1,,4`), a non-integer, zero or a
    negative."""
    fix = text("{p}", p=Param(field, "1,4,8"))

    def bad(expected: str, got: Any) -> SpecError:
        return SpecError(
            text("{p}: expected {e}, got {g!r}", p=Param(field), e=expected, g=got),
            field=field, value=value, rule="positive integers", remedy=fix,
        )  # fmt: skip

    if isinstance(value, bool):
        raise bad("positive integers", value)
    if isinstance(value, int):
        items: list[Any] = [value]
        shown = str(value)
    elif isinstance(value, str):
        shown = value
        parts = [p.strip() for p in value.split(",")]
        if not value.strip() or any(not p for p in parts):
            raise bad("comma-separated integers", value)
        try:
            items = [int(p) for p in parts]
        except ValueError:
            raise bad("comma-separated integers", value) from None
    elif isinstance(value, Sequence):
        items, shown = list(value), ",".join(map(str, value))
        if any(isinstance(v, bool) or not isinstance(v, int) for v in items):
            raise bad("integers", list(value))
    else:
        raise bad("an int, a list of ints or '1,4,8'", value)
    if not items or any(v < 1 for v in items):
        raise bad("positive integers", shown)
    return items


def parse_rates(value: Any) -> list[float | None]:
    """Open-loop arrival rates (requests/s) from a float, a list or `"0.5,2"`; [None]
    (closed loop) for None or an empty string."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return [None]

    def bad(expected: str) -> SpecError:
        return SpecError(
            text("{rate}: expected {e}, got {v!r}", e=expected, v=value),
            field="rate", value=value, rule="requests/s, each > 0",
            remedy=text("{rate} (requests/s)", rate=Param("rate", "0.5,2")),
        )  # fmt: skip

    if isinstance(value, str):
        try:
            vals = [float(x) for x in value.split(",") if x.strip()]
        except ValueError:
            raise bad("requests/s") from None
    elif isinstance(value, int | float) and not isinstance(value, bool):
        vals = [float(value)]
    else:
        try:
            vals = [float(x) for x in value]
        except (TypeError, ValueError):
            raise bad("requests/s") from None
    if not vals or any(not v > 0 for v in vals):
        raise bad("positive requests/s")
    return list(vals)


def parse_seconds(value: Any, field: str, *, allow_zero: bool) -> float:
    """`"25s"`, `"5m"`, `"1h30m"` or a number of seconds -> seconds; zero only when
    `allow_zero` (`duration=0` would measure nothing). SpecError naming `field`."""
    fix = "e.g. 60s, 5m or 600"
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise SpecError(text("{p}: a duration, not {v!r}", p=Param(field), v=value),
                        field=field, value=value, rule="a duration", remedy=fix)  # fmt: skip
    if isinstance(value, str):
        from ..lifecycle.waiter import parse_duration

        result = parse_duration(value)
    else:
        result = float(value)
    if result < 0:
        raise SpecError(text("{p}: {v} is negative", p=Param(field), v=value),
                        field=field, value=value, rule="a duration >= 0", remedy=fix)  # fmt: skip
    if result == 0 and not allow_zero:
        raise SpecError(
            text("{p}: must be longer than 0, got {v!r}", p=Param(field), v=value),
            field=field, value=value, rule="a duration > 0",
            remedy=text("{p}", p=Param(field, "60s")),
        )  # fmt: skip
    return result


def check_requests(requests: Any, field: str = "requests") -> int | None:
    """`requests` per level: None (the default count), or a whole number from 1 to
    MAX_REQUESTS; SpecError naming `field` otherwise."""
    if requests is None:
        return None
    p = Param(field)
    fix = text("e.g. {p}", p=Param(field, 64))
    rule = f"a whole number from 1 to {MAX_REQUESTS:,}"
    if isinstance(requests, bool) or not isinstance(requests, int):
        raise SpecError(text("{p} must be a whole number, got {v!r}", p=p, v=requests),
                        field=field, value=requests, rule=rule, remedy=fix)  # fmt: skip
    if requests < 1:
        raise SpecError(text("{p} must be at least 1, got {v}", p=p, v=requests),
                        field=field, value=requests, rule=rule, remedy=fix)  # fmt: skip
    if requests > MAX_REQUESTS:
        raise SpecError(
            text("{p}: more than {n:,} requests per level", p=Param(field, requests),
                 n=MAX_REQUESTS),
            field=field, value=requests, rule=rule,
            remedy=text("use {duration} for a long run (the records of one level stay in "
                        "memory)"),
        )  # fmt: skip
    return requests


def check_error_rate(value: Any, field: str = "max_error_rate") -> float:
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
            text("{p}: expected a fraction from 0 to 1, got '{v}'", p=Param(field), v=value),
            field=field, value=value, rule="a fraction from 0 to 1",
            remedy=text("e.g. {p} (up to 5% of requests may fail); 0 allows none",
                        p=Param(field, 0.05)),
        )  # fmt: skip
    return rate


def check_prompt(prompt: Any, *, usage: str) -> str:
    """A non-empty prompt (SpecError naming `usage` as the fix)."""
    if prompt is None or not isinstance(prompt, str):
        raise SpecError(text("give a prompt (or {raw})", raw=Param("raw", "payload.json")),
                        field="prompt", value=prompt, remedy=usage)  # fmt: skip
    if not prompt.strip():
        raise SpecError(
            text("prompt: empty; give some text (or {raw})", raw=Param("raw", "payload.json")),
            field="prompt", value=prompt, rule="non-empty text", remedy=usage,
        )  # fmt: skip
    return prompt


def load_options(
    *, requests: Any, duration: Any, warmup: Any, dataset: Any, max_tokens: Any,
    temperature: Any, acceptance_wait: Any,
) -> dict[str, Any]:  # fmt: skip
    """The load keyword arguments of `bench_endpoint`, validated."""
    if requests is not None and duration is not None:
        raise SpecError(
            text("pass {requests} or {duration}, not both"), field="duration", value=duration,
            rule="requests or duration, not both",
            remedy=text("{r} for a count per level, {d} for a time",
                        r=Param("requests", "N"), d=Param("duration", "60s")),
        )  # fmt: skip
    check_requests(requests)
    if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
        raise SpecError(
            text("{warmup} must be a whole number >= 0, got {v!r}", v=warmup),
            field="warmup", value=warmup, rule="a whole number >= 0",
            remedy=text("{w} measures from the first request", w=Param("warmup", 0)),
        )  # fmt: skip
    check_max_tokens(max_tokens)
    return {
        "requests": requests,
        "duration_s": None if duration is None else parse_seconds(duration, "duration",
                                                                  allow_zero=False),
        "warmup": warmup,
        "dataset": dataset,
        "max_tokens": max_tokens,
        "temperature": check_temperature(temperature),
        "acceptance_wait_s": parse_seconds(acceptance_wait, "acceptance_wait", allow_zero=True),
    }  # fmt: skip


def slo_options(
    *, slo: Any, search: bool, share: float, limit: int, probes: int, burstiness: float,
    rate: Any,
) -> dict[str, Any]:  # fmt: skip
    """SLO, goodput, the max-concurrency search and bursty arrivals, validated."""
    from ..benchmarking.slo import parse_slo

    slo_s = dict(slo) if isinstance(slo, dict) else parse_slo(slo)
    if not burstiness > 0:
        raise SpecError(
            text("{burstiness} must be positive, got {v!r}", v=burstiness),
            field="burstiness", value=burstiness, rule="> 0",
            remedy="1 is Poisson arrivals, below 1 burstier, e.g. 0.5",
        )  # fmt: skip
    if burstiness != 1.0 and not rate:
        raise SpecError(
            text("{burstiness} shapes open-loop arrivals: give {rate} too"),
            field="rate", value=rate, rule="needed with burstiness",
            remedy=text("add {r} (requests/s), or drop {burstiness}", r=Param("rate", 2)),
        )  # fmt: skip
    out: dict[str, Any] = {"slo": slo_s, "burstiness": burstiness}
    if search:
        if slo_s is None:
            raise SpecError(
                text("{search} needs {slo} (what must hold)"), field="slo", value=slo,
                rule="needed with search",
                remedy=text("add e.g. {s}", s=Param("slo", "ttft=500ms,tpot=50ms")),
            )  # fmt: skip
        if rate:
            raise SpecError(
                text("{search} is closed loop: drop {rate}"), field="rate", value=rate,
                rule="not with search", remedy=text("drop {rate}, or drop {search}"),
            )  # fmt: skip
        if not 0 < share <= 1 or limit < 1 or probes < 1:
            field, value = (
                ("slo_share", share) if not 0 < share <= 1
                else ("search_limit", limit) if limit < 1 else ("max_probes", probes)
            )  # fmt: skip
            raise SpecError(
                text("need 0 < {slo_share} <= 1, {search_limit} >= 1, {max_probes} >= 1, got "
                     "{a!r}, {b!r}, {c!r}", a=share, b=limit, c=probes),
                field=field, value=value,
                remedy=text("e.g. {a} {b} {c}", a=Param("slo_share", 0.99),
                            b=Param("search_limit", 1024), c=Param("max_probes", 16)),
            )  # fmt: skip
        out["search"] = {"target_share": share, "max_concurrency": limit, "max_probes": probes}
    return out


def check_locust(levels: list[int], opts: dict[str, Any], locust_workers: Any, *,
                 slo: Any, search: bool, rate: Any, burstiness: float, requests_out: Any,
                 component: Any, workers: int) -> None:  # fmt: skip
    """What Locust's distributed mode can run: one closed-loop level, no SLO search,
    no per-request export, no component (SpecError naming `locust`)."""
    if slo or search or burstiness != 1.0 or requests_out or component:
        raise SpecError(
            text("{locust} does not take {slo}, {search}, {burstiness}, {requests_out} or "
                 "{component}"),
            field="locust", value=True,
        )  # fmt: skip
    bad_workers = isinstance(locust_workers, bool) or not isinstance(locust_workers, int)
    if (len(levels) > 1 or rate or opts["duration_s"] or opts["warmup"] or workers > 1
            or bad_workers or locust_workers < 1):  # fmt: skip
        raise SpecError(
            text("{locust} runs one closed-loop level: one {concurrency} (the users), "
                 "{requests} and {locust_workers} >= 1; not {rate}, {duration}, {warmup}, "
                 "{workers}"),
            field="locust", value=True,
        )  # fmt: skip


def locust_common(users: int, opts: dict[str, Any]) -> dict[str, Any]:
    """The load keywords a Locust run takes, from the validated options."""
    return {
        "users": users,
        "requests": opts["requests"] or max(8, 4 * users),  # as LoadSpec.planned_requests
        "dataset": opts["dataset"],
        "max_tokens": opts["max_tokens"],
        "temperature": opts["temperature"],
        "acceptance_wait_s": opts["acceptance_wait_s"],
    }


def race_usage() -> Any:
    """The ways to name race's two sides: two endpoints, or two components of one."""
    return text(
        "{a} | {b}",
        a=Call("race", "EP-A", "EP-B"),
        b=Call("race", "EP/COMP-A", "EP/COMP-B"),
    )


def race_targets(a: str, b: str | None, components: list[str]) -> list[tuple[str, str | None]]:
    """[(endpoint, component or None)] for sides A and B, from the arguments."""
    if components:
        if b is not None or "/" in a or len(components) != 2:
            raise SpecError(
                text("{components} races two components of one endpoint: give one endpoint "
                     "and {components} twice (got {n} endpoint(s), {m} {components})",
                     n=1 + (b is not None), m=len(components)),
                field="components", value=list(components), rule="two, with one endpoint",
                remedy=race_usage(),
            )  # fmt: skip
        return [(a, components[0]), (a, components[1])]
    if b is None:
        raise SpecError("race needs two sides", field="b", value=None, remedy=race_usage())
    out: list[tuple[str, str | None]] = []
    for field, side in (("a", a), ("b", b)):
        endpoint, slash, component = side.partition("/")
        if not endpoint or (slash and (not component or "/" in component)):
            raise SpecError(
                f"race: {side!r} is not ENDPOINT or ENDPOINT/COMPONENT", field=field,
                value=side, rule="ENDPOINT or ENDPOINT/COMPONENT", remedy=race_usage(),
            )  # fmt: skip
        out.append((endpoint, component or None))
    return out
