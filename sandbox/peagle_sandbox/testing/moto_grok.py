"""What CloudWatch Logs computes from a log event at ingestion, for the harness: a log-group
transformer's processors, a metric filter's pattern, and the datapoint a metric filter
publishes. Pure functions over one event (no moto); `moto_monitoring` calls them.

Emulated, and what is ASSUMED where AWS's documentation stops:
- Processors `grok`, `parseJSON`, `copyValue`, `addKeys`, `typeConverter`. Any other
  processor is valid input to PutTransformer but evaluating it raises `NotEmulated`
  (naming it): a test would otherwise pass on an event AWS transforms differently.
- The transformed event starts empty; `@message` (the default source) is the raw message.
  ASSUMPTION: a grok that does not match leaves the event as it was (no fields added).
- grok: `%{NUMBER:n}`, `%{INT:n}`, `%{DATA}` / `%{DATA:n}`, `%{GREEDYDATA}` /
  `%{GREEDYDATA:n}`, `%{WORD}`, `%{NOTSPACE}`, `%{SPACE}`; the text between is a regular
  expression, as in Logstash's grok (which AWS's follows); unanchored (a match anywhere in
  the line). Captures are strings (a `typeConverter` makes numbers). Another pattern name,
  or a `:type` suffix, raises `NotEmulated`.
- `typeConverter`: a missing key is skipped; ASSUMPTION: a value that does not convert
  ("abc" to integer) is left as it was.
- Keys with dots (`a.b`) are nested objects, as AWS's examples (`metadata.transformed_in`).
- Filter patterns: the empty pattern (every event), plain terms and quoted phrases (every
  one must occur in the raw message, case-sensitive), and JSON patterns `{ $.f OP v }`
  with OP in = != < <= > >=, joined by && and || (&& binds tighter: ASSUMPTION, the usual
  precedence) and grouped with parentheses. Numeric comparisons match only numeric values;
  = and != compare strings too. ASSUMPTION: a missing field matches no comparison (not
  even !=). Anything else (`?term`, `-term`, `%regex%`, `IS NULL`, `EXISTS`, wildcards,
  space-delimited `[...]`) raises `NotEmulated`.
- A datapoint's value: a number, or `$.field` (a number, or a string that is one);
  ASSUMPTION: a missing or non-numeric field publishes nothing, and so does a dimension
  whose `$.field` is missing.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

__all__ = [
    "Datapoint",
    "NotEmulated",
    "as_json",
    "datapoint",
    "matches",
    "transform",
]

EMULATED_PROCESSORS = ("grok", "parseJSON", "copyValue", "addKeys", "typeConverter")
_MESSAGE = "@message"


class NotEmulated(RuntimeError):
    """The harness does not compute this (valid AWS input it cannot evaluate)."""


# ---------------------------------------------------------------- fields (dotted keys)


def _get(event: dict[str, Any], key: str, message: str) -> Any:
    if key == _MESSAGE:
        return message
    node: Any = event
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def _has(event: dict[str, Any], key: str) -> bool:
    node: Any = event
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


def _set(event: dict[str, Any], key: str, value: Any, overwrite: bool = True) -> None:
    parts = key.split(".")
    node = event
    for part in parts[:-1]:
        nxt = node.get(part)
        if not isinstance(nxt, dict):
            nxt = node[part] = {}
        node = nxt
    if overwrite or parts[-1] not in node:
        node[parts[-1]] = value


# ---------------------------------------------------------------- grok

# Logstash's definitions (grok-patterns), as Python regular expressions.
_GROK = {
    "NUMBER": r"(?:[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))",
    "INT": r"(?:[+-]?[0-9]+)",
    "DATA": r".*?",
    "GREEDYDATA": r".*",
    "WORD": r"\b\w+\b",
    "NOTSPACE": r"\S+",
    "SPACE": r"\s*",
}
_TOKEN = re.compile(r"%\{(\w+)(?::([\w.@]+))?(?::(\w+))?\}")


@lru_cache(maxsize=64)
def _grok(match: str) -> tuple[re.Pattern[str], tuple[str, ...]]:
    """`match` as one regex, and the field each numbered group fills."""
    out, fields, at = [], [], 0
    for m in _TOKEN.finditer(match):
        out.append(match[at : m.start()])
        name, field, kind = m.groups()
        if name not in _GROK:
            raise NotEmulated(f"grok pattern %{{{name}}} is not emulated by the harness")
        if kind:
            raise NotEmulated(f"grok type suffix :{kind} is not emulated by the harness")
        if field:
            fields.append(field)
            out.append(f"({_GROK[name]})")
        else:
            out.append(f"(?:{_GROK[name]})")
        at = m.end()
    out.append(match[at:])
    try:
        return re.compile("".join(out)), tuple(fields)
    except re.error as e:
        raise NotEmulated(f"grok match {match!r} is not a regex the harness reads: {e}") from e


def _convert(value: Any, kind: str) -> Any:
    try:
        if kind == "integer":
            return int(value) if not isinstance(value, float) else int(value)
        if kind == "double":
            return float(value)
        if kind == "boolean":
            if isinstance(value, bool):
                return value
            low = str(value).lower()
            return {"true": True, "false": False}.get(low, value)
        return value if isinstance(value, str) else json.dumps(value)
    except (TypeError, ValueError):
        return value  # ASSUMPTION (module docstring): left as it was


def transform(config: list[dict[str, Any]], message: str) -> dict[str, Any]:
    """The transformed event (a JSON object) of raw `message` under `config`."""
    event: dict[str, Any] = {}
    for processor in config:
        ((name, body),) = processor.items()
        if name == "grok":
            source = _get(event, body.get("source", _MESSAGE), message)
            regex, fields = _grok(body["match"])
            found = regex.search(source) if isinstance(source, str) else None
            if found:
                for field, value in zip(fields, found.groups(), strict=True):
                    if value is not None:
                        _set(event, field, value)
        elif name == "parseJSON":
            source = _get(event, body.get("source", _MESSAGE), message)
            try:
                parsed = json.loads(source) if isinstance(source, str) else None
            except ValueError:
                parsed = None
            if isinstance(parsed, dict):
                if body.get("destination"):
                    _set(event, body["destination"], parsed)
                else:
                    event.update(parsed)
        elif name == "copyValue":
            for entry in body["entries"]:
                value = _get(event, entry["source"], message)
                if value is not None:
                    _set(event, entry["target"], copy.deepcopy(value),
                         entry.get("overwriteIfExists", False))  # fmt: skip
        elif name == "addKeys":
            for entry in body["entries"]:
                _set(event, entry["key"], entry["value"], entry.get("overwriteIfExists", False))
        elif name == "typeConverter":
            for entry in body["entries"]:
                if _has(event, entry["key"]):
                    _set(event, entry["key"], _convert(_get(event, entry["key"], message),
                                                      entry["type"]))  # fmt: skip
        else:
            raise NotEmulated(
                f"transformer processor {name!r} is not emulated by the harness "
                f"(emulated: {', '.join(EMULATED_PROCESSORS)})"
            )
    return event


# ---------------------------------------------------------------- filter patterns

_JSON_TOKENS = re.compile(
    r"\s*(?:(?P<op>&&|\|\||<=|>=|!=|=|<|>)|(?P<paren>[()])|(?P<sel>\$(?:\.[\w@-]+)+)"
    r'|(?P<str>"(?:[^"\\]|\\.)*")|(?P<num>[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?(?![\w.]))'
    r"|(?P<word>[A-Za-z_][\w.-]*))"
)
_TERM = re.compile(r'"((?:[^"\\]|\\.)*)"|(\S+)')


def _json_tokens(text: str, pattern: str) -> list[tuple[str, str]]:
    out, at = [], 0
    text = text.rstrip()
    while at < len(text):
        m = _JSON_TOKENS.match(text, at)
        if not m or m.end() == at:
            raise NotEmulated(f"filter pattern {pattern!r} is not emulated by the harness")
        kind = m.lastgroup or ""
        out.append((kind, m.group(kind)))
        at = m.end()
    return out


@lru_cache(maxsize=64)
def _parse_json_pattern(pattern: str) -> Any:
    """{ ... } -> a tree: ("or"|"and", a, b) or ("cmp", selector, op, value)."""
    tokens = _json_tokens(pattern.strip()[1:-1], pattern)
    pos = 0

    def peek() -> tuple[str, str] | None:
        return tokens[pos] if pos < len(tokens) else None

    def take() -> tuple[str, str]:
        nonlocal pos
        if pos >= len(tokens):
            raise NotEmulated(f"filter pattern {pattern!r} is not emulated by the harness")
        pos += 1
        return tokens[pos - 1]

    def disjunction() -> Any:
        node = conjunction()
        while peek() == ("op", "||"):
            take()
            node = ("or", node, conjunction())
        return node

    def conjunction() -> Any:
        node = atom()
        while peek() == ("op", "&&"):
            take()
            node = ("and", node, atom())
        return node

    def atom() -> Any:
        kind, text = take()
        if (kind, text) == ("paren", "("):
            node = disjunction()
            if take() != ("paren", ")"):
                raise NotEmulated(f"filter pattern {pattern!r} is not emulated by the harness")
            return node
        op_kind, op = take()
        value_kind, value = take()
        if kind != "sel" or op_kind != "op" or op in ("&&", "||"):
            raise NotEmulated(f"filter pattern {pattern!r} is not emulated by the harness")
        if value_kind == "num":
            literal: Any = float(value)
        elif value_kind == "str":
            literal = json.loads(value)
        elif value_kind == "word" and op in ("=", "!="):
            if "*" in value or value in ("NULL", "TRUE", "FALSE"):
                raise NotEmulated(f"filter pattern {pattern!r} is not emulated by the harness")
            literal = value
        else:
            raise NotEmulated(f"filter pattern {pattern!r} is not emulated by the harness")
        if isinstance(literal, str) and op not in ("=", "!="):
            raise NotEmulated(f"filter pattern {pattern!r} is not emulated by the harness")
        return ("cmp", text[2:], op, literal)

    tree = disjunction()
    if pos != len(tokens):
        raise NotEmulated(f"filter pattern {pattern!r} is not emulated by the harness")
    return tree


def _compare(actual: Any, op: str, literal: Any) -> bool:
    if isinstance(literal, float):
        if isinstance(actual, bool) or not isinstance(actual, int | float):
            return False
        a = float(actual)
        return {
            "=": a == literal,
            "!=": a != literal,
            "<": a < literal,
            "<=": a <= literal,
            ">": a > literal,
            ">=": a >= literal,
        }[op]
    if not isinstance(actual, str):
        return False
    return (actual == literal) if op == "=" else (actual != literal)


def _evaluate(tree: Any, event: dict[str, Any]) -> bool:
    kind = tree[0]
    if kind == "or":
        return _evaluate(tree[1], event) or _evaluate(tree[2], event)
    if kind == "and":
        return _evaluate(tree[1], event) and _evaluate(tree[2], event)
    _, selector, op, literal = tree
    if not _has(event, selector):
        return False  # ASSUMPTION (module docstring)
    return _compare(_get(event, selector, ""), op, literal)


def as_json(message: str) -> dict[str, Any] | None:
    try:
        parsed = json.loads(message)
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None


def matches(pattern: str, message: str, event: dict[str, Any] | None) -> bool:
    """Does `pattern` match? `event`: the JSON object it is tested on (the transformed
    event, or the raw message parsed as JSON; None when the raw message is not JSON)."""
    text = pattern.strip()
    if not text:
        return True
    if text.startswith("{"):
        if not text.endswith("}"):
            raise NotEmulated(f"filter pattern {pattern!r} is not emulated by the harness")
        tree = _parse_json_pattern(text)
        return event is not None and _evaluate(tree, event)
    terms = []
    for quoted, bare in _TERM.findall(text):
        if bare and (bare[0] in "?-[%" or "*" in bare or bare.startswith('"')):
            raise NotEmulated(f"filter pattern {pattern!r} is not emulated by the harness")
        terms.append(quoted.replace('\\"', '"') if quoted else bare)
    return all(term in message for term in terms)


# ---------------------------------------------------------------- datapoints


@dataclass(frozen=True)
class Datapoint:
    namespace: str
    name: str
    value: float
    dimensions: tuple[tuple[str, str], ...]
    unit: str


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _resolve(spec: str, event: dict[str, Any] | None) -> Any:
    """`$.field` from the event (None if missing), or the literal text."""
    if spec.startswith("$."):
        return _get(event, spec[2:], "") if event is not None and _has(event, spec[2:]) else None
    return spec


def datapoint(
    metric_filter: dict[str, Any], message: str, event: dict[str, Any] | None
) -> Datapoint | None:
    """What one metric filter publishes for one log event (None: nothing)."""
    (mt,) = metric_filter["metricTransformations"]
    if matches(metric_filter.get("filterPattern", ""), message, event):
        value = _number(_resolve(mt["metricValue"], event))
    elif mt.get("defaultValue") is not None:
        # AWS: "the value to emit when a filter pattern does not match a log event".
        value = float(mt["defaultValue"])
    else:
        return None
    if value is None:
        return None  # ASSUMPTION (module docstring)
    dims = []
    for name, spec in sorted((mt.get("dimensions") or {}).items()):
        resolved = _resolve(spec, event)
        if resolved is None or isinstance(resolved, dict | list):
            return None  # ASSUMPTION (module docstring)
        dims.append((name, resolved if isinstance(resolved, str) else json.dumps(resolved)))
    return Datapoint(
        namespace=mt["metricNamespace"],
        name=mt["metricName"],
        value=value,
        dimensions=tuple(dims),
        unit=mt.get("unit") or "None",  # AWS: "If you omit this, the unit is set as None."
    )
