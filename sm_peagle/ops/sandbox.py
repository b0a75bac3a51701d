"""The local sandbox as SDK calls: `sandbox_start()`, `sandbox_stop()`, `sandbox_status()`.

The sandbox is a separate distribution (`peagle-sandbox`); these reach it only through its
plugin entry point (`sm_peagle.plugins.sandbox_plugin()`), never by import, and raise
SpecError with the install line when it is absent. Options are checked by the plugin before
anything starts: a bad or busy port, URL, time scale, interval or state directory is a
SpecError.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..plugins import sandbox_plugin

__all__ = [
    "SandboxStart",
    "SandboxState",
    "SandboxStop",
    "sandbox_start",
    "sandbox_status",
    "sandbox_stop",
]


@dataclass(frozen=True)
class SandboxStart:
    """The sandbox that runs now; `to_dict()` is the `peagle sandbox start --json`
    document (its state).

    Attributes:
        info: Its state: pid, port, url, runtime_url, log, engine, engine_label, ...
        already_running: Whether it was already running with the same options.
        died_url: The URL of a sandbox found dead, whose state this start replaced (its
            endpoints are gone), else None.
    """

    info: dict[str, Any]
    already_running: bool = False
    died_url: str | None = None

    @property
    def url(self) -> str:
        return str(self.info["url"])

    @property
    def pid(self) -> int:
        return int(self.info["pid"])

    @property
    def engine_label(self) -> str:
        return str(self.info.get("engine_label") or "SIMULATED")

    def to_dict(self) -> dict[str, Any]:
        # The document `peagle sandbox start --json` prints: the sandbox's state.
        return dict(self.info)


@dataclass(frozen=True)
class SandboxState:
    """Whether the sandbox runs (`running`), answers (`healthy`), and its state; `died`
    when the state names a sandbox whose process is gone (and `url` where it ran).
    `to_dict()` is the `peagle sandbox status --json` document.

    Attributes:
        doc: The sandbox's state document, which the properties read.
    """

    doc: dict[str, Any] = field(default_factory=dict)

    @property
    def running(self) -> bool:
        return bool(self.doc.get("running"))

    @property
    def died(self) -> bool:
        return bool(self.doc.get("died"))

    @property
    def url(self) -> str | None:
        return self.doc.get("url")

    @property
    def healthy(self) -> bool:
        return bool(self.doc.get("healthy"))

    def to_dict(self) -> dict[str, Any]:
        return dict(self.doc)


@dataclass(frozen=True)
class SandboxStop:
    """Whether a sandbox was stopped (`stopped`, its `pid`), or why not (`note`);
    `to_dict()` is the `peagle sandbox stop --json` document.

    Attributes:
        doc: The stop's document, which the properties read.
    """

    doc: dict[str, Any] = field(default_factory=dict)

    @property
    def stopped(self) -> bool:
        return bool(self.doc.get("stopped"))

    @property
    def note(self) -> str | None:
        return self.doc.get("note")

    def to_dict(self) -> dict[str, Any]:
        return dict(self.doc)


def sandbox_start(**options: Any) -> SandboxStart:
    """Start the local sandbox in the background, or join the one that runs with the same
    port, upstream and engine (also when two starts race: one sandbox, both return it).
    Options, as `peagle sandbox start`: port (0..65535, 0 or None: any free one), upstream
    (an http(s) URL with a host, of an OpenAI-compatible server), creating_seconds (>= 0),
    metrics_interval (> 0), time_scale (> 0), engine ("simulated" or "vllm").

    SpecError, before anything starts, for a bad option, a port another program listens on,
    or a state directory (PEAGLE_STATE_DIR) that is not a directory or cannot be written;
    SpecError naming the install line when the sandbox is not installed. A sandbox found
    dead is replaced and named in `died_url`."""
    doc = sandbox_plugin().start(**options)
    return SandboxStart(dict(doc["info"]), bool(doc.get("already_running")), doc.get("died_url"))


def sandbox_status() -> SandboxState:
    """Whether the sandbox runs, where, and whether it answers."""
    return SandboxState(dict(sandbox_plugin().status()))


def sandbox_stop() -> SandboxStop:
    """Stop the sandbox (SIGTERM, then SIGKILL) and remove its state. All its state is lost.
    Of a sandbox that died, only its state file is removed (`note` says it died)."""
    return SandboxStop(dict(sandbox_plugin().stop()))
