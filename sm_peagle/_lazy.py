"""Lazy package attributes: a name is imported from its submodule on first use, so
importing a package (and `peagle --help`) costs nothing until a name is touched."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_getattr(package: str, table: Mapping[str, str]) -> Callable[[str], Any]:
    """A module-level `__getattr__` resolving `name` from `package.<table[name]>` (an
    operation such as `deploy` maps to `client`, whose own `__getattr__` gives the default
    client's method). No module is named here: the table's own entries are the edges
    (tests/unit/test_import_graph.py reads them)."""

    def __getattr__(name: str) -> Any:
        if name in table:
            module = importlib.import_module(f".{table[name]}", package)
            return getattr(module, name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
