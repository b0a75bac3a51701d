"""Plugins peagle finds by entry point, never by import: the product does not depend on them.

The local sandbox (the `peagle-sandbox` distribution in `sandbox/`) plugs in here, the way
pytest finds its plugins. It declares:

- `sm_peagle.plugins` / `sandbox`: a module with `use_sandbox(**options)` (start the sandbox
  if needed and point this process's AWS settings at it) and `cli_activate()`;
- `sm_peagle.commands` / `sandbox`: the `peagle sandbox …` command group;
- `sm_peagle.models`: sandbox-only catalog entries (tiny models whose weights exist only in
  the sandbox), which the SDK refuses against AWS.

Looking entry points up costs a scan of the installed distributions, so it happens only when
one of these is asked for.
"""

from __future__ import annotations

import importlib
import warnings
from importlib import metadata
from types import ModuleType
from typing import Any

from .errors import SpecError

__all__ = [
    "SANDBOX_INSTALL",
    "command_groups",
    "moved_module",
    "plugin_models",
    "sandbox_plugin",
    "use_sandbox",
]

# The one line that installs the sandbox next to the product, from a checkout.
SANDBOX_INSTALL = "pip install -e ./sandbox"


def _entry_points(group: str) -> list[metadata.EntryPoint]:
    return sorted(metadata.entry_points(group=group), key=lambda ep: ep.name)


def sandbox_plugin() -> Any:
    """The sandbox's plugin module; SpecError with the install line when it is absent."""
    for ep in _entry_points("sm_peagle.plugins"):
        if ep.name == "sandbox":
            return ep.load()
    raise SpecError(
        "the local sandbox is not installed (it is a separate distribution, peagle-sandbox)",
        remedy=SANDBOX_INSTALL,
    )


def command_groups() -> dict[str, Any]:
    """name -> typer app of every command group a plugin adds (`peagle sandbox …`)."""
    return {ep.name: ep for ep in _entry_points("sm_peagle.commands")}


def plugin_models() -> list[dict[str, Any]]:
    """ModelEntry keyword dicts of every sandbox-only model a plugin registers."""
    out: list[dict[str, Any]] = []
    for ep in _entry_points("sm_peagle.models"):
        out.extend(ep.load())
    return out


def moved(old: str, new: str) -> None:
    """The one-line notice an old import path gives for one release (see CHANGELOG.md)."""
    warnings.warn(
        f"{old} moved to {new} (the sandbox is its own distribution now); "
        "the old name goes away in the next release",
        FutureWarning,
        stacklevel=3,
    )


def moved_module(old: str, submodule: str) -> ModuleType:
    """The sandbox's module `peagle_sandbox.<submodule>`, for a deprecated `sm_peagle.…`
    path, found through the plugin (so the product still names no emulator module)."""
    package = sandbox_plugin().__name__.rpartition(".")[0]
    new = f"{package}.{submodule}"
    moved(old, new)
    return importlib.import_module(new)


def use_sandbox(**options: Any) -> Any:
    """Deprecated home of `peagle_sandbox.use_sandbox()`: start the sandbox if needed and
    point this process's AWS settings at it."""
    moved("sm_peagle.use_sandbox", "peagle_sandbox.use_sandbox")
    return sandbox_plugin().use_sandbox(**options)
