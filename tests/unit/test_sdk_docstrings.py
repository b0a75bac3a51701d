"""The SDK reference (docs/reference/sdk, mkdocstrings over `sm_peagle.__all__`) shows each
public function, class, method and property with its docstring: one without a docstring
shows only its signature there. Every public name of the SDK has one, and every parameter
of the client's methods and of the public functions is described in its `Args:` section
(the reference's Parameters table lists only those)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import sm_peagle


def _undocumented() -> list[str]:
    missing = []
    for name in sm_peagle.__all__:
        obj = getattr(sm_peagle, name)
        if not inspect.isclass(obj):
            if callable(obj) and not inspect.getdoc(obj):
                missing.append(name)
            continue
        if not obj.__doc__:
            missing.append(name)
        for attr, value in vars(obj).items():
            if attr.startswith("_"):
                continue
            fn = value.fget if isinstance(value, property) else value
            if isinstance(fn, staticmethod | classmethod):
                fn = fn.__func__
            if (callable(fn) or isinstance(value, property)) and not fn.__doc__:
                missing.append(f"{name}.{attr}")
    return missing


def test_every_public_name_of_the_sdk_has_a_docstring() -> None:
    assert _undocumented() == []


# -- every parameter of the public calls is described in its docstring's Args: section --


def undocumented_parameters(fn: Callable[..., Any]) -> list[str]:
    """The parameters of `fn` (but `self`, `*args`, `**kwargs`) that its docstring's
    `Args:` section does not describe, and (as "name?") the entries that describe no
    parameter: what mkdocstrings leaves out of the reference's Parameters table, or
    shows there wrongly."""
    import griffe

    doc = griffe.Docstring(
        inspect.getdoc(fn) or "", parser="google", parser_options={"warnings": False}
    )
    described = [
        p.name
        for section in doc.parsed
        if section.kind is griffe.DocstringSectionKind.parameters
        for p in section.value
    ]
    params = [
        p.name
        for p in inspect.signature(fn).parameters.values()
        if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    # An entry may describe `*args`/`**options` (by that name), though none is required.
    every = set(inspect.signature(fn).parameters)
    return [p for p in params if p not in described] + [
        f"{d}?" for d in described if d.lstrip("*") not in every
    ]


def public_calls() -> dict[str, Callable[..., Any]]:
    """Every public method of `sm_peagle.Client` (its operations) and every public
    function of `sm_peagle` that is not one of them."""
    from sm_peagle.client import Client

    out: dict[str, Callable[..., Any]] = {}
    for name in dir(Client):
        value = getattr(Client, name)
        if not name.startswith("_") and inspect.isfunction(value):
            out[f"Client.{name}"] = value
    for name in sm_peagle.__all__:
        obj = getattr(sm_peagle, name)
        if callable(obj) and not inspect.isclass(obj) and f"Client.{name}" not in out:
            out[name] = obj
    return out


def test_the_parameter_check_finds_what_is_missing_or_stale() -> None:
    def f(name: str, *args: Any, k: int = 1, mode: str = "x", **kwargs: Any) -> None:
        """Do it.

        Args:
            name: the name.
            mode: how.
            size: gone.
        """

    def g(a: int) -> None:
        """No Args section."""

    assert undocumented_parameters(f) == ["k", "size?"]
    assert undocumented_parameters(g) == ["a"]


def test_every_parameter_of_the_public_calls_is_documented() -> None:
    missing = {name: m for name, fn in public_calls().items() if (m := undocumented_parameters(fn))}
    listed = "\n".join(f"{name}: {', '.join(m)}" for name, m in sorted(missing.items()))
    assert not missing, f"parameters without an Args: entry (name? = an entry for none):\n{listed}"
