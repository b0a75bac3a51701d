"""The sandbox's SDK: `peagle_sandbox.start()`, `status()`, `stop()`, `use_sandbox()`,
`client()`, `clock()`, and what `peagle --sandbox <command>` runs first (`cli_activate`).

They were `sm_peagle.sandbox_start|status|stop` and `sm_peagle.use_sandbox` (the plugin
forwards those names for one release, `PLUGIN.moved()`). Every option is checked
(`check_options`) and the state directory too (`check_state_dir`) before anything starts:
a bad or busy port, URL, step time factor, clock rate, interval or state directory is a
SpecError, one line. `peagle sandbox start|status|stop|clock` call these and render their
typed results.

`time_scale=` is the old name of `step_time_factor=` (the SIMULATED engine's step times,
not the sandbox clock): it works for one release with a FutureWarning.
"""

from __future__ import annotations

import math
import os
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from sm_peagle.contract import SpecError

from . import settings
from .clock_client import ClockState, SandboxClockHandle, check_rate
from .directories import not_a_directory, unwritable
from .manager import SandboxInfo, SandboxUse

__all__ = [
    "OPTIONS",
    "ClockState",
    "SandboxClockHandle",
    "SandboxStart",
    "SandboxState",
    "SandboxStop",
    "check_options",
    "check_state_dir",
    "cli_activate",
    "client",
    "clock",
    "start",
    "status",
    "stop",
    "use_sandbox",
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
        notes: What differs from what was asked of a sandbox it joined (its clock rate),
            one line each.
    """

    info: dict[str, Any]
    already_running: bool = False
    died_url: str | None = None
    notes: tuple[str, ...] = ()

    @property
    def url(self) -> str:
        """Its control-plane URL (boto3's endpoint_url)."""
        return str(self.info["url"])

    @property
    def pid(self) -> int:
        """Its server's process id."""
        return int(self.info["pid"])

    @property
    def engine_label(self) -> str:
        """What produces its tokens: `SIMULATED` or `vllm X.Y.Z (CPU, tiny model)`."""
        return str(self.info.get("engine_label") or "SIMULATED")

    def to_dict(self) -> dict[str, Any]:
        """The `peagle sandbox start --json` document: the sandbox's state."""
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
        """Whether a sandbox process runs."""
        return bool(self.doc.get("running"))

    @property
    def died(self) -> bool:
        """Whether the state names a sandbox whose process is gone."""
        return bool(self.doc.get("died"))

    @property
    def url(self) -> str | None:
        """Where it runs (or ran), else None."""
        return self.doc.get("url")

    @property
    def healthy(self) -> bool:
        """Whether it answers."""
        return bool(self.doc.get("healthy"))

    @property
    def engine_label(self) -> str:
        """What produces its tokens: `SIMULATED` or `vllm X.Y.Z (CPU, tiny model)`."""
        return str(self.doc.get("engine_label") or "SIMULATED")

    def to_dict(self) -> dict[str, Any]:
        """The `peagle sandbox status --json` document."""
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
        """Whether a sandbox was stopped."""
        return bool(self.doc.get("stopped"))

    @property
    def note(self) -> str | None:
        """Why none was, else None."""
        return self.doc.get("note")

    @property
    def engine_label(self) -> str:
        """What produced the stopped sandbox's tokens."""
        return str(self.doc.get("engine_label") or "SIMULATED")

    def to_dict(self) -> dict[str, Any]:
        """The `peagle sandbox stop --json` document."""
        return dict(self.doc)


# The options `start`/`use_sandbox` take, as `peagle sandbox start` spells them.
OPTIONS = {
    "port": "--port",
    "upstream": "--upstream",
    "creating_seconds": "--creating-seconds",
    "updating_seconds": "--updating-seconds",
    "deleting_seconds": "--deleting-seconds",
    "metrics_interval": "--metrics-interval",
    "step_time_factor": "--step-time-factor",
    "clock_rate": "--clock-rate",
    "engine": "--engine",
    "timeout": "--timeout",
    "time_scale": "--time-scale",  # deprecated: step_time_factor (removed in the next release)
}
_EXAMPLES = {"step_time_factor": "1.0", "time_scale": "1.0", "creating_seconds": "3"}
_EXAMPLES |= {"updating_seconds": "3", "deleting_seconds": "60"}
_EXAMPLES["clock_rate"] = "60"


def check_state_dir(*, writable: bool = False) -> Path:
    """The state directory, or SpecError when it cannot be one (PEAGLE_STATE_DIR naming a
    file, or a file where a parent directory should be); with `writable` (a start), also
    when it cannot be created or written, which is tried: os.access says yes to root."""
    path = settings.state_dir()
    what = "PEAGLE_STATE_DIR" if settings.get("PEAGLE_STATE_DIR") else "the state directory"
    fix = "point PEAGLE_STATE_DIR at a directory (or unset it for the default)"
    problem = not_a_directory(path)
    if problem:
        raise SpecError(f"{what}: {problem}", remedy=fix)
    if writable and (problem := unwritable(path)):
        raise SpecError(
            f"{what}: {problem}",
            remedy="point PEAGLE_STATE_DIR at a directory you can write "
            "(or unset it for the default)",
        )
    return path


def check_options(options: dict[str, Any]) -> dict[str, Any]:
    """`options` checked as `peagle sandbox start` takes them: SpecError naming the option
    for an unknown name or a bad value, before anything starts. Returns them unchanged."""
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise SpecError(
            f"sandbox: unknown option(s) {', '.join(unknown)}",
            remedy=f"use {', '.join(OPTIONS)}",
        )
    port = options.get("port")
    if port is not None and (
        isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535
    ):
        raise SpecError(
            f"--port: {port!r} is not a port (0..65535; 0 picks a free one)",
            remedy="--port 8080, or leave it out for any free port",
        )
    upstream = options.get("upstream")
    if upstream is not None:
        url = urlparse(str(upstream))
        if url.scheme not in ("http", "https") or not url.hostname:
            raise SpecError(
                f"--upstream: {upstream!r} is not an http(s) URL",
                remedy="--upstream http://localhost:8000 (an OpenAI-compatible server)",
            )
        try:
            url.port  # noqa: B018 - raises ValueError for a port out of range
        except ValueError:
            raise SpecError(
                f"--upstream: {upstream!r} has a bad port",
                remedy="--upstream http://localhost:8000",
            ) from None
    for name, positive in (
        ("step_time_factor", True),
        ("time_scale", True),
        ("clock_rate", True),
        ("metrics_interval", True),
        ("timeout", True),
        ("creating_seconds", False),
        ("updating_seconds", False),
        ("deleting_seconds", False),
    ):
        value = options.get(name)
        if value is None:
            continue
        flag = OPTIONS[name]
        bad = isinstance(value, bool) or not isinstance(value, (int, float))
        if not bad:
            bad = not math.isfinite(value) or value < 0 or (positive and value == 0)
        if bad:
            need = "a positive number" if positive else "a number of seconds >= 0"
            example = _EXAMPLES.get(name, "10")
            raise SpecError(
                f"{flag}: must be {need} (got {value!r})",
                remedy=f"{flag} {example}, or leave it out for the default",
            )
    engine = options.get("engine")
    if engine is not None:
        from .engine_choice import ENGINES

        if str(engine).lower() not in ENGINES:
            raise SpecError(
                f"--engine: unknown sandbox engine {engine!r}",
                remedy=f"use one of: {', '.join(ENGINES)}",
            )
    return options


def _check_engine(engine: str | None) -> None:
    """The engine asked for (option or PEAGLE_SANDBOX_ENGINE) exists and, for vllm, is
    installed: checked before the state directory is touched, as every other setting."""
    from .engine_choice import engine_args, resolve_engine

    engine_args(resolve_engine(engine))


def _package_level() -> int:
    """The `stacklevel` of the first frame outside peagle_sandbox: a warning points at the
    user's line whichever of the package's entry points they called."""
    import inspect

    package = os.path.dirname(__file__) + os.sep
    here = inspect.currentframe()  # this function's frame; level 1 is its caller's
    frame, level = (here.f_back if here else None), 1
    while frame is not None and frame.f_code.co_filename.startswith(package):
        frame, level = frame.f_back, level + 1
    return level


def _settled(call: str, options: dict[str, Any]) -> dict[str, Any]:
    """`options` checked, with the deprecated `time_scale=` turned into `step_time_factor=`
    (a FutureWarning) and `clock_rate` from PEAGLE_SANDBOX_CLOCK_RATE when not given (an
    explicit option wins). SpecError for a bad option or setting, before anything starts."""
    check_options(options)
    options = dict(options)
    if options.get("time_scale") is not None:
        if options.get("step_time_factor") is not None:
            raise TypeError(f"{call}(): give step_time_factor= only (time_scale= is its old name)")
        warnings.warn(
            f"{call}(time_scale=) is deprecated: use step_time_factor= "
            "(removed in the next release)",
            FutureWarning,
            stacklevel=_package_level(),
        )
        options["step_time_factor"] = options["time_scale"]
    options.pop("time_scale", None)
    if options.get("clock_rate") is None:
        options["clock_rate"] = clock_rate_setting()
    return options


def clock_rate_setting() -> float | None:
    """PEAGLE_SANDBOX_CLOCK_RATE as a number, None when unset; SpecError naming it when it
    is not a positive number."""
    raw = (settings.get("PEAGLE_SANDBOX_CLOCK_RATE") or "").strip()
    if not raw:
        return None
    try:
        return check_rate(raw)
    except SpecError:
        raise SpecError(
            f"PEAGLE_SANDBOX_CLOCK_RATE: must be a positive number (got {raw!r})",
            remedy="PEAGLE_SANDBOX_CLOCK_RATE=60 (a sandbox minute per real second), "
            "or unset it for real time",
        ) from None


def start(**options: Any) -> SandboxStart:
    """Start the local sandbox in the background, or join the one that runs with the same
    port, upstream and engine (also when two starts race: one sandbox, both return it).
    Options, as `peagle sandbox start`: port (0..65535, 0 or None: any free one), upstream
    (an http(s) URL with a host, of an OpenAI-compatible server), creating_seconds,
    updating_seconds, deleting_seconds (>= 0, sandbox seconds; how long endpoints stay
    Creating, Updating and Deleting: 3, 3 and 0), metrics_interval (> 0, sandbox seconds),
    step_time_factor (> 0: the SIMULATED engine's step times; larger is slower; `time_scale`
    is its deprecated name), clock_rate (> 0: sandbox seconds per real second; default
    PEAGLE_SANDBOX_CLOCK_RATE, else 1), engine ("simulated" or "vllm").

    A sandbox that runs already is joined whatever its clock rate: `notes` says when its
    rate is not the one asked for (`clock().resume(rate=...)` changes it live).

    SpecError, before anything starts, for a bad option, a port another program listens on,
    or a state directory (PEAGLE_STATE_DIR) that is not a directory or cannot be written;
    SandboxError when one runs with other options. A sandbox found dead is replaced and
    named in `died_url`."""
    from . import manager

    options = _settled("start", options)
    _check_engine(options.get("engine"))
    check_state_dir(writable=True)
    others = {k: v for k, v in options.items() if k not in ("port", "upstream")}
    joined = manager.start_or_join(options.get("port"), options.get("upstream"), **others)
    died = joined.replaced.url if joined.replaced is not None else None
    return SandboxStart(joined.info.to_dict(), joined.already_running, died, joined.notes)


def status() -> SandboxState:
    """Whether the sandbox runs, where, and whether it answers."""
    from . import manager

    check_state_dir()
    return SandboxState(dict(manager.status()))


def stop() -> SandboxStop:
    """Stop the sandbox (SIGTERM, then SIGKILL) and remove its state. All its state is lost.
    Of a sandbox that died, only its state file is removed (`note` says it died)."""
    from . import manager

    check_state_dir()
    return SandboxStop(dict(manager.stop()))


def use_sandbox(**options: Any) -> SandboxUse:
    """Start the sandbox if needed (options as `start`) and point this process at it; a
    context manager that stops, on exit, the sandbox it started (`manager.SandboxUse`)."""
    from . import manager

    options = _settled("use_sandbox", options)
    _check_engine(options.get("engine"))
    check_state_dir(writable=True)
    return manager.use_sandbox(**options)


def client(
    *,
    region: str | None = None,
    progress: Any = None,
    on_connect: Any = None,
    on_poll: Any = None,
    **options: Any,
) -> Any:
    """A ready `sm_peagle.Client` aimed at the sandbox, started if needed (`options` as
    `start`; the session keywords are the client's). Its AWS context holds the sandbox's
    URL and fake keys itself, so its requests go to the sandbox whatever the environment
    says later, and never carry real credentials. The process environment is pointed at
    the sandbox too (`activate`, as `use_sandbox` does): the labels, sandbox-only models,
    default role and poll interval are still read from it. A context manager: the
    sandbox this call started stops when the block ends (`SandboxClient`)."""
    from sm_peagle.contract import AwsContext, resolve_region

    from .manager import FAKE_KEY
    from .sandbox_client import SandboxClient

    use = use_sandbox(**_settled("client", options))
    region = region or resolve_region() or "us-east-1"
    aws = AwsContext(region, endpoint_url=use.url, credentials=(FAKE_KEY, FAKE_KEY))
    return SandboxClient(
        sandbox=use,
        region=region,
        aws=aws,
        progress=progress,
        on_connect=on_connect,
        on_poll=on_poll,
    )


def cli_activate() -> SandboxInfo:
    """`peagle --sandbox <command>`: start the sandbox if needed and point this process at it.

    A sandbox found dead (or not answering) is replaced, and one line on stderr says so:
    its endpoints are gone. Written directly: the CLI's output is not set up yet, and even
    --quiet must not hide it."""
    from .manager import activate, ensure

    _check_engine(None)  # PEAGLE_SANDBOX_ENGINE / --sandbox-engine
    rate = clock_rate_setting()  # PEAGLE_SANDBOX_CLOCK_RATE, for a sandbox it starts
    check_state_dir(writable=True)
    joined = ensure(clock_rate=rate)
    notice = joined.notice()
    if notice:
        sys.stderr.write(f"warning: {notice}\n")
        sys.stderr.flush()
    activate(joined.info)
    return joined.info


def clock() -> SandboxClockHandle:
    """The clock of the running sandbox: `.state()`, `.advance("15m")`, `.freeze()`,
    `.resume(rate=60)`, each one request returning a `ClockState`.

        peagle_sandbox.clock().freeze()
        peagle_sandbox.clock().advance("2d")  # every resource is two days older

    SandboxError when no sandbox runs (or the one in the state file died or does not
    answer): the same line as `peagle sandbox env`."""
    from .manager import SandboxError, died_message, status

    check_state_dir()
    st = status()
    if st.get("died"):
        raise SandboxError(died_message(st["url"]), remedy="`peagle sandbox start`")
    if not st.get("running"):
        raise SandboxError("no sandbox is running", remedy="`peagle sandbox start`")
    if not st.get("healthy"):
        raise SandboxError(
            f"the sandbox at {st['url']} (pid {st['pid']}) does not answer",
            remedy="`peagle sandbox stop`, then `peagle sandbox start`",
        )
    return SandboxClockHandle(st["url"], engine_label=str(st.get("engine_label") or "SIMULATED"))
