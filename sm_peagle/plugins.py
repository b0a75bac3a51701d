"""The host side of the plugin contract (`sm_peagle.contract`): find plugins, ask them.

Plugins are found by entry point (`contract.ENTRY_POINT_GROUP`), never by import: peagle
names no plugin. The scan of the installed distributions and the import of each plugin's
declarations happen once per process, and only when something asks (`peagle --help`, a
command or root option peagle does not own, an unknown `PEAGLE_*` variable, a model name
the catalog does not hold, a result label that is not AWS's).

A plugin that fails to load, or was written for another contract version, is left out with
a one-line warning: a broken plugin must not break the product.
"""

from __future__ import annotations

import json
import re
import sys
import warnings
from collections.abc import Mapping
from fnmatch import fnmatchcase
from functools import cache
from importlib import import_module, resources
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .contract import (
        AwsTarget,
        CommandGroup,
        Plugin,
        ResultLabel,
        Setting,
        TargetOption,
        TargetState,
    )

# The entry point group plugins declare, and the contract version this peagle speaks
# (`sm_peagle.contract` re-exports both: it is the plugins' module, at the top of the
# layers; this host sits at the bottom, where the product asks it, and imports the
# contract's types only to annotate).
ENTRY_POINT_GROUP = "sm_peagle.plugins"
# Raised when the contract changes incompatibly; a plugin states the version it was
# written for (`Plugin.contract`) and peagle leaves out one written for another.
CONTRACT_VERSION = 1

__all__ = [
    "CONTRACT_VERSION",
    "ENTRY_POINT_GROUP",
    "commands",
    "current_target",
    "entry_points",
    "install_hint",
    "known_command",
    "known_option",
    "installed",
    "label",
    "models",
    "moved",
    "moved_module",
    "reset",
    "setting",
    "settings",
    "source_label",
    "target_named",
    "target_option",
    "targets",
]


@cache
def installed() -> tuple[Plugin, ...]:
    """Every installed plugin, by entry-point name; each loaded once per process."""
    found: list[Plugin] = []
    for name, value in sorted(entry_points(ENTRY_POINT_GROUP)):
        try:
            plugin = _load(value)
        except Exception as exc:  # a broken plugin: say so, run without it
            _warn(f"plugin {name!r} ({value}) failed to load: {type(exc).__name__}: {exc}")
            continue
        version = getattr(plugin, "contract", None)
        if version != CONTRACT_VERSION:
            _warn(
                f"plugin {name!r} was written for plugin contract {version!r}, this peagle "
                f"speaks {CONTRACT_VERSION}: left out (upgrade the plugin)"
            )
            continue
        found.append(plugin)
    return tuple(found)


def entry_points(group: str) -> list[tuple[str, str]]:
    """(name, value) of each entry point in `group` of the installed distributions, the
    first distribution of a name on sys.path winning, as `importlib.metadata` finds them.

    For the plain case (directories on sys.path, and no finder but Python's own that
    provides distributions) each `*.dist-info` / `*.egg-info` directory's
    `entry_points.txt` is read directly: importing `importlib.metadata` costs more than
    the whole of `peagle --help`'s own work (benchmarks/cold_start.py). Anything else (a
    zip on sys.path, a custom finder) asks `importlib.metadata` itself."""
    import os
    import sys
    from importlib.machinery import PathFinder

    custom = [f for f in sys.meta_path if hasattr(f, "find_distributions") and f is not PathFinder]
    if custom or any(entry and os.path.isfile(entry) for entry in sys.path):
        return _from_importlib_metadata(group)
    seen: set[str] = set()
    out: list[tuple[str, str]] = []
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for child in names:
            stem, dot, kind = child.rpartition(".")
            if not dot or kind not in ("dist-info", "egg-info"):
                continue
            dist = re.sub(r"[-_.]+", "_", stem.split("-")[0]).lower()
            if dist in seen:
                continue
            seen.add(dist)
            out += _group_of(os.path.join(entry or ".", child, "entry_points.txt"), group)
    return out


def _from_importlib_metadata(group: str) -> list[tuple[str, str]]:
    from importlib import metadata

    return [(ep.name, ep.value) for ep in metadata.entry_points(group=group)]


def _group_of(path: str, group: str) -> list[tuple[str, str]]:
    """(name, value) of the entries of `[group]` in an entry_points.txt (INI: sections,
    `name = value` lines, `#`/`;` comments); none when the file is absent."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    out: list[tuple[str, str]] = []
    section = None
    for raw in lines:
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip()
        elif section == group and "=" in line:
            name, _, value = line.partition("=")
            out.append((name.strip(), value.strip()))
    return out


def _load(value: str) -> Any:
    """The object an entry point's value names (`module:attr.attr [extras]`)."""
    target = value.split("[", 1)[0].strip()
    module, _, attribute = target.partition(":")
    obj: Any = import_module(module.strip())
    for part in filter(None, attribute.strip().split(".")):
        obj = getattr(obj, part)
    return obj


def reset() -> None:
    """Forget the plugins found (tests that install or remove one in-process)."""
    installed.cache_clear()
    _labels.cache_clear()


def _warn(message: str) -> None:
    sys.stderr.write(f"warning: {message}\n")


def commands() -> dict[str, CommandGroup]:
    """name -> command group, of every plugin (the first plugin to claim a name keeps it)."""
    out: dict[str, CommandGroup] = {}
    for plugin in installed():
        for group in plugin.commands():
            out.setdefault(group.name, group)
    return out


def models() -> list[tuple[Mapping[str, Any], str | None]]:
    """(ModelEntry keywords, the name of the target that serves it) of every plugin model."""
    out: list[tuple[Mapping[str, Any], str | None]] = []
    for plugin in installed():
        target = plugin.target()
        for entry in plugin.models():
            out.append((entry, target.name if target is not None else None))
    return out


def targets() -> list[AwsTarget]:
    return [t for t in (p.target() for p in installed()) if t is not None]


def target_named(name: str) -> AwsTarget | None:
    return next((t for t in targets() if t.name == name), None)


def target_option(flag: str) -> tuple[AwsTarget, TargetOption] | None:
    """The target and option a root-level CLI flag belongs to, or None."""
    for target in targets():
        for option in target.options:
            if option.flag == flag:
                return target, option
    return None


def current_target() -> TargetState | None:
    """What this process talks to instead of AWS, or None for AWS: the target named by
    `PEAGLE_TARGET` (set by the target when it points the process at itself), asked."""
    from .settings import target_name

    name = target_name()
    if not name:
        return None
    target = target_named(name)
    return target.current() if target is not None else None


@cache
def _labels() -> dict[str, ResultLabel]:
    return {lab.label: lab for plugin in installed() for lab in plugin.labels()}


def label(text: str) -> ResultLabel | None:
    """The plugin label a result carries (None for AWS's, or one no plugin declares)."""
    labels = _labels()
    if text in labels:
        return labels[text]
    return next((lab for pattern, lab in labels.items() if fnmatchcase(text, pattern)), None)


def settings() -> list[tuple[str, Setting]]:
    """(plugin name, setting) of every plugin's declared environment variables."""
    return [(p.name, s) for p in installed() for s in p.settings()]


def setting(name: str, default: str | None = None) -> str | None:
    """The value of a declared variable, peagle's or a plugin's (KeyError otherwise: declare
    it first, so the settings reference lists every variable that is read)."""
    from . import settings as own

    if name in own.VARIABLES:
        return own.get(name, default)
    if not any(s.name == name for _, s in settings()):
        raise KeyError(f"{name} is not a declared peagle or plugin setting")
    return own.plugin_value(name, default)


def moved(old: str) -> str | None:
    """The plugin path an old `sm_peagle` path moved to, or None."""
    for plugin in installed():
        new = plugin.moved().get(old)
        if new:
            return new
    return None


def warn_moved(old: str, new: str, *, stacklevel: int = 3) -> None:
    """The one-line notice an old import path gives for one release (see CHANGELOG.md);
    `stacklevel` counts from here to the user's line."""
    warnings.warn(
        f"{old} moved to {new} (a separate distribution now); "
        "the old name goes away in the next release",
        FutureWarning,
        stacklevel=stacklevel,
    )


def moved_module(old: str) -> ModuleType:
    """The plugin module an old `sm_peagle` module path moved to, with the notice; an
    ImportError naming the old path when no installed plugin took it."""
    new = moved(old)
    if new is None:
        raise ImportError(f"{old} is gone: no installed plugin provides it ({install_hint()})")
    warn_moved(old, new)
    return import_module(new)


def moved_name(old: str) -> Any:
    """The plugin object an old `sm_peagle.<name>` moved to (AttributeError if none)."""
    new = moved(old)
    if new is None:
        raise AttributeError(old)
    module, _, attribute = new.rpartition(".")
    # here <- sm_peagle.__getattr__ <- the user's line
    warn_moved(old, new, stacklevel=4)
    return getattr(import_module(module), attribute)


@cache
def _known() -> dict[str, dict[str, str]]:
    # Plugins peagle knows of but does not ship: data (an index, as a package index lists
    # distributions), so `peagle <their command>` without them says how to install them.
    raw = resources.files(f"{__package__}.catalog").joinpath("data/known_plugins.json").read_text()
    return json.loads(raw)["plugins"]


def known_command(name: str) -> dict[str, str] | None:
    """The known-plugins entry whose distribution adds `peagle <name>`, or None."""
    return next((p for p in _known().values() if name in p.get("commands", ())), None)


def known_option(flag: str) -> dict[str, str] | None:
    """The known-plugins entry whose distribution adds the root option `flag`, or None."""
    return next((p for p in _known().values() if flag in p.get("options", ())), None)


def install_hint() -> str:
    """How to install the plugins peagle knows of, one line."""
    return "; ".join(f"{p['distribution']}: {p['install']}" for p in _known().values())


def source_label() -> str:
    """The label of what this process talks to now: its plugin target's, or AWS."""
    from .settings import AWS

    state = current_target()
    return state.label if state is not None else AWS
