"""Lazy package attributes: a name is imported from its submodule on first use, so
importing a package (and `peagle --help`) costs nothing until a name is touched."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_getattr(package: str, table: Mapping[str, str]) -> Callable[[str], Any]:
    """A module-level `__getattr__` resolving `name` from `package.<table[name]>`."""

    def __getattr__(name: str) -> Any:
        if name in table:
            return getattr(importlib.import_module(f".{table[name]}", package), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
