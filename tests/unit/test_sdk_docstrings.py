"""The SDK reference (docs/reference/sdk, mkdocstrings over `sm_peagle.__all__`) shows each
public function, class, method and property with its docstring: one without a docstring
shows only its signature there. Every public name of the SDK has one."""

from __future__ import annotations

import inspect

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
