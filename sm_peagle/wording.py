"""The SDK's wording vocabulary: how a message or remedy names what it is about, so each
face words it its own way.

Text speaks Python: `str(text)` names keyword arguments (`k=`) and SDK calls
(`sm_peagle.delete('ep')`). What it names is kept as data, so the CLI renders the same
text with its flags (`-k`) and commands (`peagle delete ep --yes`) from one table
(`sm_peagle/cli/faces.py`), and no SDK code knows which face called it:

- `Param("k")` / `Param("k", 5)`: a parameter, with the value to give it;
- `Call("delete", "ep")`: an SDK call (the CLI command of the same name);
- `Phrase("local")`: words that differ between the faces otherwise (a plugin target's
  `--local` at the CLI, its client in Python);
- `text("{k} must be at most 15, got {got}", got=99)`: a `Text` (a `str` whose value is
  the Python wording) from a format template, where each `{name}` not given as an
  argument is `Param(name)`, and a given `Param`/`Call` stays structured.

The errors (`sm_peagle.errors`) carry their message and remedy as a `Text`; that module
re-exports every name here, and `sm_peagle.errors` is the public path to them. This module
imports only the standard library, so anything may word its messages with it.
"""

from __future__ import annotations

import string
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol


class _Unset:
    """No value given (None can be a value)."""

    def __repr__(self) -> str:
        return "UNSET"

    def __reduce__(self) -> str:
        return "UNSET"  # pickled by name: one sentinel in every process


UNSET: Any = _Unset()


@dataclass(frozen=True)
class Param:
    """A parameter of an SDK call named in a message: `k=` (or `k=5` with a value) in
    Python; the flag that sets it at the CLI (`-k`, `-k 5`)."""

    name: str
    value: Any = UNSET

    def __str__(self) -> str:
        return PYTHON.param(self)


@dataclass(frozen=True)
class Call:
    """An SDK call suggested as a fix: `sm_peagle.<op>(*args, **kwargs)` in Python; at the
    CLI, the `peagle` command of the same name (`drafter_push` is `peagle drafter push`)."""

    op: str
    args: tuple[Any, ...] = ()
    kwargs: tuple[tuple[str, Any], ...] = ()

    def __init__(self, op: str, *args: Any, **kwargs: Any) -> None:
        object.__setattr__(self, "op", op)
        object.__setattr__(self, "args", tuple(args))
        object.__setattr__(self, "kwargs", tuple(kwargs.items()))

    def __str__(self) -> str:
        return PYTHON.call(self)


@dataclass(frozen=True)
class Phrase:
    """Words that differ between the faces and are neither a parameter nor a call: a
    plugin's local target (`local`: its `--local` at the CLI, its client in Python;
    `local_run`: a run on it; `unreachable`: what to do when it does not answer), the
    result document (`json`: `--json`, `.to_dict()`). Each face words `json` from its
    table (`PHRASES` here, the CLI's in `cli/faces.py`) and the target's keys from the
    plugin (`target_phrase`)."""

    key: str

    def __str__(self) -> str:
        return PYTHON.phrase(self)


# The Python wording of each Phrase key (a unit test holds the CLI's table to the same keys).
PHRASES = {
    "json": "the result's to_dict()",
}
# The keys a plugin's target words, each face taking its side of a `contract.Wording`:
# key -> (where, the attribute): the first installed target's `offer` / `run`, or the
# `unreachable` of the target this process talks to.
TARGET_PHRASES = {
    "local": ("installed", "offer"),
    "local_run": ("installed", "run"),
    "unreachable": ("current", "unreachable"),
}


def target_phrase(key: str, face: str) -> str:
    """Phrase `key` of `TARGET_PHRASES` in `face`'s words ("cli" or "python"), from the
    plugin's target; with no target installed (or none to word it), where to get one."""
    from . import plugins

    where, attribute = TARGET_PHRASES[key]
    if where == "installed":
        found = plugins.targets()
        source: Any = found[0] if found else None
    else:
        source = plugins.current_target()
    wording = getattr(source, attribute, None)
    if wording is not None:
        return str(getattr(wording, face))
    return f"a local target plugin ({plugins.install_hint()})"


def phrase_in(p: Phrase, face: str, table: dict[str, str]) -> str:
    """`p` in `face`'s words: its table's, else the plugin target's (`target_phrase`)."""
    return table[p.key] if p.key in table else target_phrase(p.key, face)


class _Etc:
    """`...` in a suggested call: more arguments the reader fills in."""

    def __repr__(self) -> str:
        return "..."

    __str__ = __repr__


# `Call("update", name, ETC)`: `sm_peagle.update('ep', ...)`, `peagle update ep ...`.
ETC: Any = _Etc()

Part = str | Param | Call | Phrase


class Face(Protocol):
    """How one face (Python, the CLI) words a parameter and a call."""

    def param(self, p: Param) -> str: ...

    def call(self, c: Call) -> str: ...

    def phrase(self, p: Phrase) -> str: ...


class _PythonFace:
    """The SDK's own wording: keyword arguments and `sm_peagle.<op>(…)` calls."""

    def param(self, p: Param) -> str:
        return f"{p.name}=" if p.value is UNSET else f"{p.name}={p.value!r}"

    def call(self, c: Call) -> str:
        # `yes` is the CLI's answer to its prompt; an SDK call asks only when given confirm=.
        args = [repr(a) for a in c.args] + [f"{k}={v!r}" for k, v in c.kwargs if k != "yes"]
        return f"sm_peagle.{c.op}({', '.join(args)})"

    def phrase(self, p: Phrase) -> str:
        return phrase_in(p, "python", PHRASES)


PYTHON: Face = _PythonFace()


class Text(str):
    """A message or remedy whose value is its Python wording, with the parameters and
    calls it names kept in `parts`, so another face (the CLI) can word them its way."""

    parts: tuple[Part, ...]

    def __new__(cls, parts: tuple[Part, ...] | list[Part]) -> Text:
        parts = tuple(parts)
        self = super().__new__(cls, _render(parts, PYTHON))
        self.parts = parts
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        # Rebuilt from its parts (a benchmark worker process pickles its errors): str's
        # own reduction would pass the rendered value where the parts go.
        return (Text, (self.parts,))

    def render(self, face: Face) -> str:
        """This text in `face`'s words."""
        return _render(self.parts, face)

    # `message + "; nothing was created"` keeps the parts (str's own + would flatten the
    # Text to its Python wording, and the CLI could no longer word it).
    def __add__(self, other: object) -> Text:
        if not isinstance(other, str):
            return NotImplemented
        tail = other.parts if isinstance(other, Text) else (other,)
        return Text(_merge([*self.parts, *tail]))

    def __radd__(self, other: object) -> Text:
        if not isinstance(other, str):
            return NotImplemented
        return Text(_merge([other, *self.parts]))

    def names(self) -> list[str]:
        """The parameters named, in order (a Call's keywords included)."""
        out: list[str] = []
        for p in self.parts:
            if isinstance(p, Param):
                out.append(p.name)
        return out


def _render(parts: tuple[Part, ...], face: Face, legacy: Callable[[str], str] | None = None) -> str:
    out = []
    for p in parts:
        if isinstance(p, Param):
            out.append(face.param(p))
        elif isinstance(p, Call):
            out.append(face.call(p))
        elif isinstance(p, Phrase):
            out.append(face.phrase(p))
        else:
            out.append(legacy(p) if legacy else p)
    return "".join(out)


_FORMATTER = string.Formatter()


def text(template: str, /, **values: Any) -> Text:
    """A `Text` from a format template: `{name}` is `values[name]` (a Param or Call stays
    structured; anything else is formatted as str.format would), or `Param(name)` when
    not given. `text("{k} must be 1..15, got {got!r}", got=99)`."""
    parts: list[Part] = []
    for literal, name, spec, conversion in _FORMATTER.parse(template):
        if literal:
            parts.append(literal)
        if name is None:
            continue
        if name not in values:
            parts.append(Param(name))
            continue
        value = values[name]
        if isinstance(value, Param | Call | Phrase) and not spec and not conversion:
            parts.append(value)
        elif isinstance(value, Text) and not spec and not conversion:
            parts.extend(value.parts)
        else:
            value = _FORMATTER.convert_field(value, conversion)
            parts.append(_FORMATTER.format_field(value, spec or ""))
    return Text(_merge(parts))


def _merge(parts: list[Part]) -> tuple[Part, ...]:
    out: list[Part] = []
    for p in parts:
        if isinstance(p, str) and not isinstance(p, Text) and out and isinstance(out[-1], str):
            out[-1] = out[-1] + p
        else:
            out.append(str(p) if isinstance(p, Text) else p)
    return tuple(out)


def concat(pieces: list[str | Text], sep: str = "") -> Text:
    """The pieces joined by `sep` as one Text (each Text's parameters and calls kept)."""
    parts: list[Part] = []
    for i, piece in enumerate(pieces):
        if i and sep:
            parts.append(sep)
        parts.extend(piece.parts if isinstance(piece, Text) else (str(piece),))
    return Text(_merge(parts))


def as_text(value: str | Text | Call | Param | Phrase | None) -> Text | None:
    """A message or remedy as a Text (None stays None): a plain str is one literal part."""
    if value is None:
        return None
    if isinstance(value, Text):
        return value
    if isinstance(value, Call | Param | Phrase):
        return Text((value,))
    return Text((str(value),))


def render(value: str | None, face: Face, legacy: Callable[[str], str] | None = None) -> str | None:
    """`value` in `face`'s words: a Text rendered part by part; free text (a plain str, or
    a Text's literal parts) through `legacy` when given (the CLI's rewrite of `peagle …`
    commands still written as text)."""
    if value is None:
        return None
    if isinstance(value, Text):
        return _render(value.parts, face, legacy)
    return legacy(value) if legacy else value
