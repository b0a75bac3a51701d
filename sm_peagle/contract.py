"""The plugin contract: everything a plugin may add to peagle, and everything it may import.

A plugin is a separate distribution. It declares one entry point in the group
`sm_peagle.plugins` (`ENTRY_POINT_GROUP`) whose object satisfies `Plugin`:

```toml
[project.entry-points."sm_peagle.plugins"]
myplugin = "my_package.peagle_plugin:PLUGIN"
```

peagle scans that group once per process, only when something asks (`peagle --help`, a
command a plugin adds, a root option or a `PEAGLE_*` variable peagle does not own, a model
name peagle does not know, advice its target words), and imports the entry point's module
then (`peagle plan` asks nothing: it loads no plugin). Keep that module
light: declarations only, with the work imported inside the functions it names.

What a plugin may contribute, each optional (`PluginBase` gives the empty defaults):

- **commands**: `CommandGroup`s, `peagle <name> …`, loaded only when they run;
- **models**: catalog entries (keyword dicts of `sm_peagle.catalog.models.ModelEntry`); a
  plugin with a target serves its models only there (refused anywhere else, before any
  request), and one without a target adds models AWS serves;
- **an AWS target**: an `AwsTarget`, something the client talks to instead of AWS (an
  endpoint URL and credentials), selected by global CLI options the target declares;
- **labels for results**: `ResultLabel`s, what produced the numbers a result carries;
- **settings**: `Setting`s, the plugin's own `PEAGLE_*` variables, listed in the settings
  reference next to peagle's;
- **doctor checks**: `DoctorCheck`s `peagle doctor` shows;
- **moved names**: old `sm_peagle.X` import paths that now live in the plugin, kept for one
  release with a `FutureWarning`.

This is a typed Protocol behind an entry point, not pluggy hook specifications: each
contribution has one provider per plugin and no ordering between plugins, so pluggy's hook
calling would add a dependency and an import to every start without deciding anything.

peagle itself names no plugin: not its module, its commands nor its settings (a test holds
that). A plugin imports only `sm_peagle` (its public SDK) and this module; what it needs of
peagle's internals is exported here, below `Plugin` (a test in the plugin's distribution
holds that).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ._lazy import lazy_getattr
from .plugins import CONTRACT_VERSION, ENTRY_POINT_GROUP

__all__ = [
    "CONTRACT_VERSION",
    "ENTRY_POINT_GROUP",
    "AwsTarget",
    "CommandGroup",
    "DoctorCheck",
    "Plugin",
    "PluginBase",
    "ResultLabel",
    "Setting",
    "TargetOption",
    "TargetState",
    "Wording",
    *sorted(
        [
            "AwsContext",
            "Client",
            "PeagleError",
            "SpecError",
            "VllmVersion",
            "CONTAINER_ENTRYPOINT",
            "cache_dir",
            "cli_output",
            "encode_message",
            "JsonOpt",
            "mask_hidden_rule",
            "model_stream_error",
            "note",
            "payload_part",
            "resolve_region",
            "speculative_of",
            "state_dir",
            "setting",
        ]
    ),
]

# The entry point group, and the contract's version (`CONTRACT_VERSION`, from the host):
# a plugin states the version it was written for (`Plugin.contract`), and peagle leaves
# out one written for another.


@dataclass(frozen=True)
class Setting:
    """An environment variable the plugin reads (a `PEAGLE_*` name), with what it does."""

    name: str
    doc: str


@dataclass(frozen=True)
class CommandGroup:
    """`peagle <name> …`: a typer app, named by `"module:attribute"` so listing it in
    `peagle --help` imports nothing; it is imported when one of its commands runs."""

    name: str
    help: str
    app: str

    def load(self) -> Any:
        module, _, attribute = self.app.partition(":")
        return getattr(importlib.import_module(module), attribute)


@dataclass(frozen=True)
class ResultLabel:
    """What produced the numbers a result carries, when it was not AWS.

    Attributes:
        label: As printed and stored with the result (`"LOCAL (SIMULATED)"`); a `*`
            stands for any text (`"LOCAL (engine *)"`), matched as `fnmatch` does.
        simulated: No model ran: the tokens and timings were made up, and documents say
            `"simulated": true`.
        caveat: One sentence on what the figures mean, printed with them.
    """

    label: str
    simulated: bool
    caveat: str


@dataclass(frozen=True)
class Wording:
    """One thing said to a user in each face: at the CLI (`--local`) and in Python
    (`my_plugin.client()`)."""

    cli: str
    python: str


@dataclass(frozen=True)
class TargetOption:
    """A global CLI option of a target (`peagle --local deploy …`), given before the
    command. `setting` is the environment variable with the same effect. A flag without
    a value switches the target on, and so does its setting (`PEAGLE_X=1`); an option
    with a value (`metavar`) given on the command line implies the target, while its
    setting only sets the value (it chooses nothing by itself)."""

    flag: str
    help: str
    setting: str | None = None
    metavar: str | None = None

    @property
    def takes_value(self) -> bool:
        return self.metavar is not None


@dataclass(frozen=True)
class TargetState:
    """The target this process talks to now.

    Attributes:
        name: The target's name (`AwsTarget.name`).
        url: Its control-plane URL.
        label: What produces results there (one of the plugin's `ResultLabel.label`s).
        engine: What serves the models there, in the plugin's words, or None.
        carry: The global options a command printed as advice must carry to reach the
            same target (`["--local", "--local-engine", "real"]`).
        unreachable: The remedy when the target does not answer.
    """

    name: str
    url: str
    label: str
    engine: str | None = None
    carry: tuple[str, ...] = ()
    unreachable: Wording | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)


@runtime_checkable
class AwsTarget(Protocol):
    """Something the client talks to instead of AWS: an endpoint URL and credentials.

    `peagle` strips the target's options (`options`) from the command line before the
    command parses, and when one is given (or its setting is on) calls `activate` with
    their values before the command runs. `activate` points this process at the target
    (the standard AWS settings, and `PEAGLE_TARGET`, peagle's one variable for it), so a
    command reaches it the way it reaches AWS. `current` then says what the process talks
    to; peagle asks only when `PEAGLE_TARGET` names this target.
    """

    name: str
    options: Sequence[TargetOption]
    # How a user reaches the target, as advice: the switch ("or use --local") and a run
    # of a command on it ("run it with `peagle --local …`").
    offer: Wording
    run: Wording

    def activate(self, values: Mapping[str, str | bool]) -> TargetState: ...

    def current(self) -> TargetState | None: ...

    # Optional (peagle asks with getattr; a target without it is asked nothing):
    # `schedule_error(url: str, schedule: str) -> str | None`, the last failed run of the
    # EventBridge Scheduler schedule "<group>/<name>" when the control plane at `url` is
    # this target's and it keeps its runs. AWS publishes no per-schedule history (a
    # dead-letter queue would hold it), so on AWS `status` says only that the deletion has
    # not happened; a target that runs schedules itself can say why.


@dataclass(frozen=True)
class DoctorCheck:
    """One line of `peagle doctor`: `status` is "ok", "warn", "failed" or "not checked"."""

    name: str
    status: str
    detail: str
    extra: Mapping[str, Any] = field(default_factory=dict)


@runtime_checkable
class Plugin(Protocol):
    """What the `sm_peagle.plugins` entry point's object provides (see the module)."""

    name: str
    distribution: str
    contract: int

    def commands(self) -> Sequence[CommandGroup]: ...

    def models(self) -> Sequence[Mapping[str, Any]]: ...

    def target(self) -> AwsTarget | None: ...

    def labels(self) -> Sequence[ResultLabel]: ...

    def settings(self) -> Sequence[Setting]: ...

    def doctor_checks(self) -> Sequence[DoctorCheck]: ...

    def moved(self) -> Mapping[str, str]: ...


class PluginBase:
    """The empty contribution of each kind: subclass it and override what you add."""

    name = ""
    distribution = ""
    contract = CONTRACT_VERSION

    def commands(self) -> Sequence[CommandGroup]:
        return ()

    def models(self) -> Sequence[Mapping[str, Any]]:
        return ()

    def target(self) -> AwsTarget | None:
        return None

    def labels(self) -> Sequence[ResultLabel]:
        return ()

    def settings(self) -> Sequence[Setting]:
        return ()

    def doctor_checks(self) -> Sequence[DoctorCheck]:
        return ()

    def moved(self) -> Mapping[str, str]:
        """Old `sm_peagle` path -> the plugin's path (`"sm_peagle.x": "my_pkg.x"`): a module
        or a top-level name; peagle forwards it for one release, with a FutureWarning."""
        return {}


# -- what a plugin may use of peagle ------------------------------------------------------
#
# Imported when asked for (`lazy_getattr`), so importing the contract costs nothing. This
# module is the plugins' facade over peagle, so it sits at the top of the layers, above the
# CLI (tests/unit/test_import_graph.py); nothing in peagle imports it. Everything else in
# `sm_peagle` below the public SDK (`sm_peagle.__all__`) is private to peagle.

# The serving container's entrypoint, as a module a plugin may run (`python -m …`).
CONTAINER_ENTRYPOINT = "sm_peagle.container.entrypoint"

# name -> the module of `sm_peagle` it comes from (the name is the same there).
_EXPORTS: dict[str, str] = {
    "AwsContext": "aws",
    "Client": "client",
    "PeagleError": "errors",
    "SpecError": "errors",
    "VllmVersion": "vllm.versions",
    "cache_dir": "settings",
    "state_dir": "settings",
    # `setting(name, default=None)`: the value of an environment variable a plugin
    # declared (`Plugin.settings`) or of one of peagle's; a plugin reads its settings here,
    # so the settings reference lists every variable that is read.
    "setting": "plugins",
    "encode_message": "runtime.eventstream_encode",
    "model_stream_error": "runtime.eventstream_encode",
    "payload_part": "runtime.eventstream_encode",
    "mask_hidden_rule": "vllm.versions",
    "resolve_region": "aws",
    "speculative_of": "lifecycle.inventory",
    # The CLI's output of this command (`--json`, `-q`, `-v` applied): a plugin's command
    # renders through it (`cli_output().result(value, render=...)`, `note(...)`).
    "JsonOpt": "cli.options",
    "cli_output": "cli.output",
    "note": "cli.output",
}

__getattr__ = lazy_getattr(__package__, _EXPORTS)
