"""Service-level objectives and goodput (as `vllm bench serve --goodput` and AIPerf define it).

    slo = parse_slo("ttft=500ms,tpot=50ms,e2e=20s")   # any subset of ttft, tpot, e2e
    goodput(records, slo, wall_s)

A request *meets the SLO* when it completed (ok) and each given metric is at or below its
threshold: TTFT (sent -> first content token), TPOT ((end - TTFT) / (tokens - 1)) and e2e
(sent -> last byte), with the same definitions as the level's distributions. A request
with a single output token has no TPOT and meets any TPOT objective (there is no time per
output token after the first). A failed request meets none.

Goodput is the throughput of the requests that met every objective, over the level's wall
time: `requests_per_s` and `output_tokens_per_s`. `share` is the fraction of *all* requests
(failed ones included) that met each objective, and `all` that met every one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..errors import SpecError
from ..errors import text as words

__all__ = ["METRICS", "format_slo", "goodput", "meets", "parse_slo", "request_meets"]

# SLO name -> the record field it limits.
METRICS = {"ttft": "ttft_s", "tpot": "tpot_s", "e2e": "e2e_s"}
_ALIASES = {"e2el": "e2e", "latency": "e2e"}
_VALUE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m)?\s*$")
_UNIT = {"ms": 0.001, "s": 1.0, "m": 60.0}


def parse_slo(text: str | None) -> dict[str, float] | None:
    """`ttft=500ms,tpot=50ms,e2e=20s` -> {"ttft": 0.5, "tpot": 0.05, "e2e": 20.0} (seconds).
    A bare number is milliseconds, as in `vllm bench serve --goodput ttft:500`."""
    if text is None or not text.strip():
        return None
    out: dict[str, float] = {}
    for part in text.split(","):
        if not part.strip():
            continue
        name, sep, value = part.replace(":", "=", 1).partition("=")
        name = _ALIASES.get(name.strip().lower(), name.strip().lower())
        match = _VALUE.match(value)
        if not sep or name not in METRICS or match is None:
            raise SpecError(
                words("{slo}: expected NAME=VALUE with NAME in ttft, tpot, e2e and VALUE like "
                     "500ms or 2s, got {v!r}", v=part.strip()),
                field="slo", value=text, rule="NAME=VALUE, NAME in ttft, tpot, e2e",
            )  # fmt: skip
        seconds = float(match.group(1)) * _UNIT[match.group(2) or "ms"]
        if seconds <= 0:
            raise SpecError(words("{slo}: {n} must be positive, got {v!r}", n=name,
                                 v=value.strip()), field="slo", value=text)  # fmt: skip
        if name in out:
            raise SpecError(words("{slo}: {n} given twice", n=name), field="slo", value=text)
        out[name] = seconds
    if not out:
        raise SpecError(words("{slo}: give at least one of ttft, tpot, e2e"), field="slo",
                        value=text)  # fmt: skip
    return out


def format_slo(slo: Mapping[str, float]) -> str:
    """{"ttft": 0.5} -> "ttft<=500ms"."""

    def one(v: float) -> str:
        return f"{v * 1000:g}ms" if v < 1 else f"{v:g}s"

    return ", ".join(f"{k}<={one(v)}" for k, v in slo.items())


def _value(record: Any, field: str) -> Any:
    return record.get(field) if isinstance(record, Mapping) else getattr(record, field)


def request_meets(record: Any, slo: Mapping[str, float]) -> dict[str, bool]:
    """Per objective, whether `record` (a RequestRecord or its dict) met it."""
    ok = bool(_value(record, "ok"))
    out = {}
    for name, limit in slo.items():
        value = _value(record, METRICS[name])
        if not ok:
            out[name] = False
        elif value is None:
            out[name] = name == "tpot"  # one output token: no TPOT to exceed
        else:
            out[name] = float(value) <= limit
    return out


def meets(record: Any, slo: Mapping[str, float]) -> bool:
    return all(request_meets(record, slo).values())


def goodput(
    records: Sequence[Any] | Iterable[Any], slo: Mapping[str, float], wall_s: float | None
) -> dict[str, Any]:
    """The level's goodput under `slo` (see the module docstring)."""
    records = list(records)
    per = [request_meets(r, slo) for r in records]
    good = [r for r, m in zip(records, per, strict=True) if all(m.values())]
    tokens = sum(int(_value(r, "output_tokens") or 0) for r in good)
    n = len(records)
    share: dict[str, float | None] = {
        name: (sum(m[name] for m in per) / n if n else None) for name in slo
    }
    share["all"] = len(good) / n if n else None
    return {
        "slo_s": dict(slo),
        "requests": len(good),
        "output_tokens": tokens,
        "requests_per_s": len(good) / wall_s if wall_s else None,
        "output_tokens_per_s": tokens / wall_s if wall_s else None,
        "share": share,
    }
