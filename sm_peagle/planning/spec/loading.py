"""A spec from a file or a dict: parse, apply dotted overrides, validate, and turn what
went wrong into one line with a fix (`SpecError`).

A file that does not parse is named with the line and column the parser stopped at and
what it expected there (`d.yaml:3:7: invalid YAML: expected ',' or '}', but got ':' in a
flow mapping started at line 2`). A spec that parses but does not validate names each bad
field by its dotted path, and, when the value came from the file, the file, line and
column of its key, so a user can jump straight to it.
"""

from __future__ import annotations

import json
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ...errors import UNSET, Call, Param, SpecError, Text, as_text, text
from .model import DeploymentSpec

__all__ = ["KEYWORDS", "keyword_for", "load_spec", "merge_overrides", "spec_from_data"]

SCHEMA_FIX = text("`{schema}` lists every field and its rules", schema=Call("schema"))
MAPPING_FIX = text(
    "a spec is a mapping such as `model: gpt-oss-20b`; `{schema}` lists every field",
    schema=Call("schema"),
)

# The spec field each flat option (an SDK keyword, a CLI flag) sets: the inverse of
# `SpecOptions.overrides()` (a unit test keeps them in step). An error about one of these
# fields names the keyword as its `field`, whether the value came from the keyword or a
# spec file: it is the option a caller changes.
KEYWORDS: dict[str, str] = {
    "autoscaling.max_instances": "autoscale",
    "autoscaling.min_instances": "autoscale",
    "autoscaling.target_concurrency": "target_concurrency",
    "autoscaling.target_invocations": "target_invocations",
    "container.image": "image",
    "container.vllm_version": "vllm_version",
    "drafter.bucket": "bucket",
    "drafter.source": "drafter",
    "endpoint.fallback_instance_types": "fallback",
    "endpoint.hosting": "hosting",
    "endpoint.instance_count": "instance_count",
    "endpoint.instance_type": "instance_type",
    "endpoint.name": "name",
    "endpoint.routing_strategy": "routing_strategy",
    "inference_components.accelerators_per_copy": "accelerators_per_copy",
    "inference_components.components": "components",
    "inference_components.copies": "copies",
    "inference_components.max_instances": "max_instances",
    "inference_components.min_instances": "min_instances",
    "inference_components.scale_in.cooldown_minutes": "scale_in_cooldown_minutes",
    "inference_components.scale_in.max_step_size": "scale_in_max_step",
    "inference_components.scale_in.strategy": "scale_in_strategy",
    "inference_components.scale_to_zero": "scale_to_zero",
    "model": "model",
    "model_data": "model_data",
    "monitoring.enabled": "monitor",
    "endpoint.rollout": "rollout",
    "endpoint.rollout.bake": "bake",
    "endpoint.rollout.size": "rollout",
    "endpoint.rollout.strategy": "rollout",
    "endpoint.ttl": "ttl",
    "endpoint.ttl_role": "ttl_role",
    "region": "region",
    "role": "role",
    "speculative.mode": "mode",
    "speculative.num_speculative_tokens": "k",
    "speculative.num_speculative_tokens_per_batch_size": "k_schedule",
}


def keyword_for(path: str) -> str | None:
    """The SDK keyword that sets spec field `path` or a field inside it (the longest
    match: `inference_components.components.0.k` is `components`), or None."""
    parts = path.split(".")
    for n in range(len(parts), 0, -1):
        found = KEYWORDS.get(".".join(parts[:n]))
        if found is not None:
            return found
    return None


def _join(texts: list[Text], sep: str) -> Text:
    """`sep.join(texts)`, the parameters and calls each names kept."""
    keys = {f"t{i}": t for i, t in enumerate(texts)}
    return text(sep.join(f"{{{key}}}" for key in keys), **keys)


# Where a validation error's field is in the file ("d.yaml:3:5"), or None.
Locate = Callable[[tuple[Any, ...]], "str | None"]


# -- pydantic's errors, one line each ---------------------------------------------------------
def _model_in(annotation: Any) -> type | None:
    """The pydantic model inside an annotation (`X`, `X | None`, `list[X]`), if one."""
    from pydantic import BaseModel

    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def _section(loc: tuple[Any, ...]) -> type | None:
    """The spec model a location points into (None when it is not a model's field)."""
    cls: type | None = DeploymentSpec
    for part in loc:
        if isinstance(part, int):  # an item of a list of models: the same model
            continue
        field = getattr(cls, "model_fields", {}).get(part)
        if field is None:
            return None
        cls = _model_in(field.annotation)
    return cls


def _field_paths(cls: type, prefix: str = "") -> list[str]:
    """Every field's dotted path under `cls`, nested sections included."""
    out: list[str] = []
    for name, field in getattr(cls, "model_fields", {}).items():
        out.append(prefix + name)
        sub = _model_in(field.annotation)
        if sub is not None and sub is not cls:
            out.extend(_field_paths(sub, f"{prefix}{name}."))
    return out


def _unknown_key(loc: tuple[Any, ...]) -> str:
    """`unknown key 'x'` with the key the user most likely meant, or the keys allowed there:
    the allowed values of a key are the section's fields."""
    key = str(loc[-1])
    section = _section(loc[:-1])
    fields = list(getattr(section, "model_fields", {}))
    # A key that exists in another section (`mode` at the top level) is first: a right key
    # in the wrong place is likelier than a typo that happens to be close to another key.
    here = ".".join(str(p) for p in loc[:-1])
    elsewhere = [
        p
        for p in _field_paths(DeploymentSpec)
        if p.rsplit(".", 1)[-1] == key and p.rpartition(".")[0] != here
    ]
    if elsewhere:
        return f"unknown key {key!r} here, did you mean {' or '.join(elsewhere)}?"
    import difflib

    close = difflib.get_close_matches(key, fields, n=1, cutoff=0.6)
    if close:
        return f"unknown key {key!r}, did you mean {close[0]!r}?"
    if fields:
        return f"unknown key {key!r}, the keys here are: {', '.join(sorted(fields))}"
    return text(
        "unknown key {key!r} (not a field of this section; see `{schema}`)",
        key=key,
        schema=Call("schema"),
    )


def _format_one(error: dict[str, Any], locate: Locate | None = None) -> Text:
    loc = ".".join(str(p) for p in error["loc"]) or "spec"
    msg: str | Text = error["msg"]
    if error["type"] == "extra_forbidden":
        msg = _unknown_key(tuple(error["loc"]))
    elif error["type"] == "missing" and error["loc"][:1] == ("autoscaling",):
        loc, msg = (
            "autoscaling",
            text(
                "a scaling target needs a range: {autoscale} "
                "(or autoscaling.min_instances and max_instances in the spec)",
                autoscale=Param("autoscale", "MIN:MAX"),
            ),
        )
    elif msg.startswith("Value error, "):
        # A validator's own message, a Text when it names a keyword (`k=` / `-k`).
        raised = (error.get("ctx") or {}).get("error")
        said = raised.args[0] if raised is not None and raised.args else None
        msg = said if isinstance(said, Text) else msg[len("Value error, ") :]
    elif error["type"] in ("enum", "literal_error"):  # the allowed values, and what was given
        msg = f"{msg}, got {error.get('input')!r}"
    where = locate(tuple(error["loc"])) if locate is not None else None
    return text(
        "{loc}: {msg}" + (" ({where})" if where else ""), loc=loc, msg=as_text(msg), where=where
    )


def _field_of(error: dict[str, Any]) -> tuple[str | None, Any]:
    """(the SDK keyword an error is about, the value given) for `SpecError.field`/`value`:
    the keyword that sets the field, else the keyword the validator's message names (a
    rule across fields, such as baseline's K), else the field's dotted path."""
    loc = ".".join(str(p) for p in error["loc"])
    keyword = keyword_for(loc) if loc else None
    if keyword is not None:
        exact = KEYWORDS.get(loc) == keyword and error["type"] != "missing"
        return keyword, error.get("input") if exact else UNSET
    raised = (error.get("ctx") or {}).get("error")
    said = raised.args[0] if raised is not None and raised.args else None
    if isinstance(said, Text) and said.names():
        return said.names()[0], UNSET
    return (loc or None), UNSET


def _validation_error(err: Any, locate: Locate | None = None) -> SpecError:
    """Every error, in order, on one line: a user fixes them all in one go. The field is
    the first error's."""
    errors = err.errors()
    lines = list(dict.fromkeys(_format_one(e, locate) for e in errors))
    field, value = _field_of(errors[0]) if errors else (None, UNSET)
    return SpecError(_join(lines, "; "), remedy=SCHEMA_FIX, field=field, value=value)


def _validate(data: dict[str, Any], locate: Locate | None = None) -> DeploymentSpec:
    from pydantic import ValidationError

    try:
        return DeploymentSpec.model_validate(data)
    except ValidationError as e:
        raise _validation_error(e, locate) from None


def spec_from_data(data: dict[str, Any]) -> DeploymentSpec:
    """Validate a dict into a spec; raise SpecError naming every bad field."""
    return _validate(data)


# -- where a field is in the file -------------------------------------------------------------
def _locator(path: Path, text: str, overridden: set[str]) -> Locate:
    """Find a validation error's key in the file, by the YAML parser's node marks (JSON
    is YAML too). Composed only when an error needs it, once. A field an override set
    (a CLI option) is not in the file, so it gets no position."""
    nodes: list[Any] = []

    def root() -> Any:
        if not nodes:
            import yaml

            try:
                nodes.append(yaml.compose(text, Loader=yaml.SafeLoader))
            except yaml.YAMLError:  # parsed as JSON but not as YAML: no positions
                nodes.append(None)
        return nodes[0]

    def locate(loc: tuple[Any, ...]) -> str | None:
        dotted = ".".join(str(p) for p in loc)
        if not loc or any(
            dotted == o or dotted.startswith(o + ".") or o.startswith(dotted + ".")
            for o in overridden
        ):
            return None
        mark = _mark(root(), loc)
        return f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else None

    return locate


def _mark(node: Any, loc: tuple[Any, ...]) -> Any:
    """The mark of the deepest key (or list item) along `loc` that the file has."""
    import yaml

    mark = None
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            hit = next((kv for kv in node.value if kv[0].value == str(part)), None)
            if hit is None:
                break
            mark, node = hit[0].start_mark, hit[1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            if not 0 <= part < len(node.value):
                break
            node = node.value[part]
            mark = node.start_mark
        else:
            break
    return mark


# -- a file that does not parse ---------------------------------------------------------------
def _yaml_what(e: Any) -> str:
    """What the YAML parser expected, in its words, with the construct it was in."""
    problem = (getattr(e, "problem", None) or "").strip()
    context = (getattr(e, "context", None) or "").strip()
    pm, cm = getattr(e, "problem_mark", None), getattr(e, "context_mark", None)
    started = (
        f" started at line {cm.line + 1}"
        if cm is not None and pm is not None and (cm.line != pm.line)
        else ""
    )
    if not problem:
        return (str(e).splitlines() or [type(e).__name__])[0]
    if not context or context == "while scanning for the next token":
        return problem
    for lead in ("while parsing ", "while scanning ", "while constructing "):
        if context.startswith(lead):
            return f"{problem} in {context[len(lead) :]}{started}"
    # ("expected a single document in the stream", "but found another document")
    return f"{context}, {problem}"


def _yaml_fix(e: Any, line: int, column: int) -> str:
    text = f"{getattr(e, 'context', '') or ''} {getattr(e, 'problem', '') or ''}"
    if "'\\t'" in text:
        return "indent with spaces: YAML does not allow tabs"
    if "flow mapping" in text:
        return (
            "separate the entries of {…} with commas and close it with '}', "
            "or write the mapping as indented `key: value` lines"
        )
    if "flow sequence" in text:
        return "separate the items of […] with commas and close it with ']'"
    if "mapping values are not allowed" in text:
        return (
            "quote a value that contains ': ' (name: \"a: b\"), or put a nested key on its own line"
        )
    if "quoted scalar" in text:
        return "close the quote that this value opens"
    if "<block end>" in text or "simple key" in text:
        return (
            "check the indentation: the keys of one mapping start in the same column, "
            "and `- item` lines do not mix with `key: value` lines at one level"
        )
    if "single document" in text:
        return "a spec is one YAML document: remove the `---` line or split the file"
    return f"correct the YAML at line {line}, column {column}"


def _parse_yaml(p: Path, text: str) -> Any:
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line, column = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
        raise SpecError(
            f"{p}:{line}:{column}: invalid YAML: {_yaml_what(e)}", remedy=_yaml_fix(e, line, column)
        ) from None
    except yaml.reader.ReaderError as e:  # a byte YAML does not allow (a control character)
        char = chr(e.character) if isinstance(e.character, int) else str(e.character)
        line = text.count("\n", 0, e.position) + 1
        column = e.position - (text.rfind("\n", 0, e.position) + 1) + 1
        code = ord(char)
        escape = f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
        raise SpecError(
            f"{p}:{line}:{column}: invalid YAML: character {char!r} is not allowed",
            remedy=f"remove it, or write it inside double quotes as {escape}",
        ) from None
    except yaml.YAMLError as e:
        what = (str(e).splitlines() or [type(e).__name__])[0]
        raise SpecError(f"{p}: invalid YAML: {what}", remedy="correct the YAML") from None


_JSON_FIXES = {
    "Expecting property name enclosed in double quotes": (
        "JSON keys need double quotes, and there is no comma after the last entry; "
        "or write the spec as YAML"
    ),
    "Expecting value": (
        "give a value there: a string in double quotes, a number, true, false, null, "
        "an object or a list; and no comma after the last entry"
    ),
    "Expecting ',' delimiter": "separate the entries with commas",
    "Expecting ':' delimiter": 'write each entry as "key": value',
    "Extra data": "a spec is one JSON object: remove what follows its closing '}'",
    "Unterminated string starting at": "close the string with a double quote",
}


def _parse_json(p: Path, text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        what = e.msg[:1].lower() + e.msg[1:]
        fix = _JSON_FIXES.get(e.msg, f"correct the JSON at line {e.lineno}, column {e.colno}")
        raise SpecError(f"{p}:{e.lineno}:{e.colno}: invalid JSON: {what}", remedy=fix) from None


def _read(p: Path) -> str:
    try:
        return p.read_text(encoding="utf-8")
    except FileNotFoundError:
        fix = f"check the path; a relative path is from {Path.cwd()}"
        raise SpecError(f"cannot read spec file {str(p)!r}: no such file", remedy=fix) from None
    except IsADirectoryError:
        raise SpecError(
            f"cannot read spec file {str(p)!r}: it is a directory",
            remedy="give the path of a .yaml or .json spec file",
        ) from None
    except OSError as e:
        raise SpecError(
            f"cannot read spec file {str(p)!r}: {e.strerror}",
            remedy="make the file readable, or give another path",
        ) from None
    except UnicodeDecodeError as e:
        raise SpecError(
            f"cannot read spec file {str(p)!r}: not UTF-8 text (byte {e.object[e.start]:#04x} "
            f"at offset {e.start})",
            remedy="save the spec as UTF-8 YAML or JSON",
        ) from None


def load_spec(path: str | Path, overrides: dict[str, Any] | None = None) -> DeploymentSpec:
    """Load a YAML or JSON spec file, apply dotted-path overrides, and validate.

    Args:
        path: the spec file (.yaml, .yml or .json).
        overrides: dotted-path values laid over the file,
            e.g. `{"speculative.num_speculative_tokens": 5}`.

    Returns:
        The validated `DeploymentSpec`.

    Raises:
        SpecError: the message names the file (and the line and column where the file
            says it) and the remedy says what to change.
    """
    p = Path(path)
    text = _read(p)
    data = _parse_json(p, text) if p.suffix == ".json" else _parse_yaml(p, text)
    if data is None:
        raise SpecError(f"{p}: the file is empty", remedy=MAPPING_FIX)
    if not isinstance(data, dict):
        kind = "a list" if isinstance(data, list) else f"a single value ({type(data).__name__})"
        raise SpecError(
            f"{p}: a spec must be a mapping at the top level, this file holds {kind}",
            remedy=MAPPING_FIX,
        )
    overrides = overrides or {}
    overridden = {k for k, v in overrides.items() if v is not None}
    return _validate(merge_overrides(data, overrides), _locator(p, text, overridden))


class _Cleared:
    """An override that removes the field (back to its default), unlike None (not given)."""

    def __repr__(self) -> str:
        return "CLEARED"


CLEARED: Any = _Cleared()


def merge_overrides(data: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """Apply {"endpoint.instance_type": "ml.g7e.4xlarge"}-style overrides (None = unset,
    CLEARED = removed)."""
    # default=str: YAML reads `2025-01-01` as a date, which JSON cannot hold; as text it
    # reaches the field's own check.
    out = json.loads(json.dumps(data, default=str))
    for dotted, value in overrides.items():
        if value is None:
            continue
        node = out
        *parents, leaf = dotted.split(".")
        for i, part in enumerate(parents):
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                parent = ".".join(parents[: i + 1])
                raise SpecError(
                    f"{dotted}: cannot set it, {parent} in the spec is not a mapping",
                    remedy=f"write {parent} as a mapping of keys, or drop the option",
                )
        if value is CLEARED:
            node.pop(leaf, None)
            continue
        node[leaf] = value
    return out
