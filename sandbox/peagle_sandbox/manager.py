"""Start, find and stop the sandbox process, and point this process's AWS settings at it.

The sandbox runs detached (its own session, output in ``sandbox.log``) so it outlives the
`peagle` command that started it; the server itself writes ``sandbox.json`` (pid, port, url)
into the state directory once it answers, ``$PEAGLE_STATE_DIR`` or
``$XDG_STATE_HOME/peagle`` (default ``~/.local/state/peagle``). Only the standard library is
imported here, so ``peagle --sandbox <command>`` costs nothing until a server is needed.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, MutableMapping
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from peagle_sandbox.engine_choice import EngineMissing, engine_args, resolve_engine
from peagle_sandbox.procs import children_of, pid_alive, reap_recorded_engines, terminate
from sm_peagle.contract import PeagleError, SpecError

from . import settings

__all__ = [
    "SANDBOX_ACCOUNT",
    "Joined",
    "SandboxError",
    "SandboxInfo",
    "SandboxUse",
    "activate",
    "died_message",
    "ensure",
    "ensure_running",
    "read_state",
    "start",
    "start_or_join",
    "state_dir",
    "status",
    "stop",
]

SANDBOX_ACCOUNT = "123456789012"  # moto's default account
SANDBOX_ROLE = f"arn:aws:iam::{SANDBOX_ACCOUNT}:role/peagle-sandbox-role"
FAKE_KEY = "peagle-sandbox"
_SERVER_MODULE = "peagle_sandbox.server"
# Settings that could send a sandboxed command to real AWS or real credentials to the sandbox:
# a profile disables botocore's env-credential provider, a session token would ride along
# with the fake keys, and AWS_IGNORE_CONFIGURED_ENDPOINT_URLS would ignore the sandbox URL.
_DROP = (
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_SESSION_TOKEN",
    "AWS_SECURITY_TOKEN",
    "AWS_CREDENTIAL_EXPIRATION",
    "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS",
    "AWS_ROLE_ARN",
    "AWS_ROLE_SESSION_NAME",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN",
    "AWS_USE_FIPS_ENDPOINT",
    "AWS_USE_DUALSTACK_ENDPOINT",
)


# How long a new sandbox may take to answer: importing moto and binding is about 2 s, but
# on two CPUs busy with real engines (two conformance modules at once) it took over 10 s.
START_TIMEOUT_S = 30.0


class SandboxError(PeagleError):
    """The sandbox could not be started, reached or stopped."""


@dataclass(frozen=True)
class SandboxInfo:
    pid: int
    port: int
    url: str
    runtime_url: str
    started_at: str
    state_file: str
    log: str | None = None
    upstream: str | None = None
    role_arn: str = SANDBOX_ROLE
    account: str = SANDBOX_ACCOUNT
    engine: str = "simulated"
    engine_label: str = "SIMULATED"
    clock_rate: float = 1.0  # the rate it started with (`peagle sandbox clock` says the live one)

    @classmethod
    def from_state(cls, data: dict[str, Any], path: Path) -> SandboxInfo:
        return cls(
            pid=int(data["pid"]),
            port=int(data["port"]),
            url=str(data["url"]),
            runtime_url=str(data.get("runtime_url") or data["url"]),
            started_at=str(data.get("started_at", "")),
            state_file=str(path),
            log=data.get("log"),
            upstream=data.get("upstream"),
            role_arn=str(data.get("role_arn") or SANDBOX_ROLE),
            account=str(data.get("account") or SANDBOX_ACCOUNT),
            engine=str(data.get("engine_kind") or "simulated"),
            engine_label=str(data.get("engine_label") or "SIMULATED"),
            clock_rate=float(data.get("clock_rate") or 1.0),
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class SandboxUse(SandboxInfo):
    """What `use_sandbox()` returns: the sandbox (every SandboxInfo field) and whether this
    call `started` it. A context manager: `with peagle_sandbox.use_sandbox(): ...` stops,
    on exit (even on error), the sandbox it started, so a script leaves nothing running; a
    sandbox that was already running (another shell's) is left alone. `stop()` does the
    same explicitly. The process stays pointed at the stopped sandbox, never at AWS."""

    started: bool = False

    def stop(self) -> dict[str, Any]:
        """Stop the sandbox this call started (`manager.stop`); {"stopped": False, …}
        when it did not start one, or when the state file now names another sandbox."""
        if not self.started:
            return {"stopped": False, "note": "this sandbox was running before; left running"}
        current = read_state()
        if current is None or current.pid != self.pid:
            return {"stopped": False, "note": "the sandbox it started is no longer running"}
        return stop()

    def __enter__(self) -> SandboxUse:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


@dataclass(frozen=True)
class Joined:
    """The sandbox a start or an auto-start ended with: `info`; `already_running` when it
    was there before; `replaced`, the sandbox whose state it found and replaced, and `why`
    ("died", or "stopped answering" for one it had to stop), so the caller can say so;
    `notes`, what differs from what was asked of a sandbox it joined (its clock rate)."""

    info: SandboxInfo
    already_running: bool = False
    replaced: SandboxInfo | None = None
    why: str = "died"
    notes: tuple[str, ...] = ()

    def notice(self) -> str | None:
        """The one line that says a sandbox was replaced (None when none was)."""
        if self.replaced is None:
            return None
        gone = died_message(self.replaced.url, self.why)
        return f"{gone}; started a new one at {self.info.url}"


def died_message(url: str, why: str = "died") -> str:
    """What a dead sandbox means for the user: everything it held went with it."""
    return f"the sandbox at {url} {why}; its endpoints are gone"


def state_dir() -> Path:
    return settings.state_dir()


def directory_of_engines() -> Path:
    """Where the real-engine host records its engines' process groups."""
    return state_dir() / "engines"


def _state_path() -> Path:
    return state_dir() / "sandbox.json"


def read_state() -> SandboxInfo | None:
    """What the state file says, whether or not that process is still alive."""
    path = _state_path()
    try:
        return SandboxInfo.from_state(json.loads(path.read_text()), path)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _is_sandbox(pid: int) -> bool:
    """Never signal a process that merely reused the pid of an old sandbox."""
    try:
        return _SERVER_MODULE.encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
    except FileNotFoundError:
        return not Path("/proc/self").exists()  # no /proc at all: trust the state file
    except OSError:
        return False


def health(url: str, timeout: float = 1.0) -> dict[str, Any] | None:
    """The sandbox's /_peagle/health document, or None if nothing answers there."""
    import urllib.request

    # No proxies: an HTTP(S)_PROXY without 127.0.0.1 in NO_PROXY must not intercept loopback.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(f"{url}/_peagle/health", timeout=timeout) as resp:
            doc = json.loads(resp.read())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) and doc.get("ok") else None


def _healthy(info: SandboxInfo, timeout: float = 1.0) -> bool:
    if not pid_alive(info.pid):
        return False
    doc = health(info.url, timeout)
    return doc is not None and doc.get("pid") == info.pid


def _answers(info: SandboxInfo) -> bool:
    """Healthy, asked twice: a sandbox busy on a loaded machine may miss one short probe,
    and the caller would otherwise replace it (and lose its endpoints)."""
    return _healthy(info) or _healthy(info, 5.0)


def _dead(info: SandboxInfo) -> bool:
    """The state file's process is gone (or its pid now belongs to something else)."""
    return not (pid_alive(info.pid) and _is_sandbox(info.pid))


def _forget(info: SandboxInfo) -> None:
    """Remove a dead sandbox's state file and the real engines it may have left running."""
    Path(info.state_file).unlink(missing_ok=True)
    reap_recorded_engines(directory_of_engines())


def _check_port(port: int | None) -> None:
    """SpecError naming `port` when another program listens on it (the server would exit)."""
    if not port:
        return
    with socket.socket() as probe:
        # As the server binds (SO_REUSEADDR): a port left in TIME_WAIT is free for it.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError as e:
            raise SpecError(
                f"--port: port {port} on 127.0.0.1 is in use ({e.strerror or e})",
                remedy="another --port, or leave --port out for any free port",
            ) from None


@contextlib.contextmanager
def _lock() -> Iterator[None]:
    """Serialise start-ups: two `peagle --sandbox` commands at once must share one server."""
    directory = state_dir()
    directory.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # Windows: no flock; a race there just starts a second server
        yield
        return
    with open(directory / "sandbox.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def status() -> dict[str, Any]:
    """{"running": bool, "healthy": bool, ...state}. A state file whose process is gone is
    {"running": False, "died": True, url, pid, ...}: kept, so the next command that starts a
    sandbox says the old one died instead of replacing it silently."""
    info = read_state()
    if info is None:
        return {"running": False, "healthy": False, "state_file": str(_state_path())}
    if _dead(info):
        return {**info.to_dict(), "running": False, "healthy": False, "died": True}
    doc = health(info.url)  # the real engines' list rides on it (`engines`)
    healthy = doc is not None and doc.get("pid") == info.pid
    engines = {"engines": doc["engines"]} if healthy and doc and "engines" in doc else {}
    return {"running": True, "healthy": healthy, **info.to_dict(), **engines}


def start(
    port: int | None = None,
    upstream: str | None = None,
    *,
    timeout: float = START_TIMEOUT_S,
    engine: str | None = None,
    **timings: float | None,
) -> SandboxInfo:
    """Spawn a detached sandbox and wait until it answers; error if one is already running.
    `timings`: the server's time options (`Timings`' fields)."""
    return start_or_join(port, upstream, timeout=timeout, engine=engine, join=False, **timings).info


def start_or_join(
    port: int | None = None,
    upstream: str | None = None,
    *,
    timeout: float = START_TIMEOUT_S,
    engine: str | None = None,
    join: bool = True,
    **timings: float | None,
) -> Joined:
    """Start a sandbox, or (with `join`) take the one running with the same port, upstream
    and engine; SandboxError when one runs with others, or runs and does not answer.

    Check and start happen under the state directory's lock, so two starts at once end with
    one sandbox, the second joining it. A state file whose process died is replaced, and the
    result names it (`replaced`). A busy `port` is a SpecError before anything is spawned.
    A sandbox whose clock runs at another rate than `clock_rate` is joined all the same (the
    rate changes live: `peagle sandbox clock resume --rate R`), and `notes` says so."""
    wanted = resolve_engine(engine)
    extra = engine_args(wanted)
    times = Timings(**timings)  # TypeError for a name that is not one of its fields
    with _lock():
        current = read_state()
        replaced = None
        if current is not None and not _dead(current):
            if not join:
                raise SandboxError(
                    f"a sandbox is already running at {current.url} (pid {current.pid})",
                    remedy="`peagle sandbox stop` first, or use it with `peagle --sandbox ...`",
                )
            if not _answers(current):
                raise SandboxError(
                    f"the sandbox at {current.url} (pid {current.pid}) does not answer",
                    remedy="`peagle sandbox stop`, then `peagle sandbox start`",
                )
            if (
                (port and port != current.port)
                or (upstream is not None and upstream != current.upstream)
                or wanted != current.engine
            ):
                raise SandboxError(
                    f"a sandbox is already running at {current.url} with other options",
                    remedy="`peagle sandbox stop` first",
                )
            notes = _clock_notes(current, times.clock_rate)
            return Joined(current, already_running=True, notes=notes)
        if current is not None:
            replaced = current
        _check_port(port)
        if replaced is not None:  # only now: a refused start leaves the report in place
            _forget(replaced)
        info = _spawn(port, upstream, times, timeout, extra)
        return Joined(info, replaced=replaced)


@dataclass(frozen=True)
class Timings:
    """The server's time options: Creating, Updating and Deleting and the log lines'
    interval in sandbox seconds, the SIMULATED engine's step-time factor, and the clock's
    rate (None: the server's default). Each field is the server's flag of that name."""

    creating_seconds: float | None = None
    updating_seconds: float | None = None
    deleting_seconds: float | None = None
    metrics_interval: float | None = None
    step_time_factor: float | None = None
    clock_rate: float | None = None

    @classmethod
    def of(cls, options: dict[str, Any]) -> Timings:
        """The fields found in `options` (an SDK call's options: others are ignored)."""
        return cls(**{f.name: options.get(f.name) for f in fields(cls)})

    def args(self) -> list[str]:
        out: list[str] = []
        for f in fields(self):
            value = getattr(self, f.name)
            if value is not None:
                out += ["--" + f.name.replace("_", "-"), str(value)]
        return out


def _clock_notes(current: SandboxInfo, wanted: float | None) -> tuple[str, ...]:
    """One line when the joined sandbox's clock runs at another rate than `wanted` (asked
    of the sandbox itself: the rate may have changed since it started)."""
    if wanted is None:
        return ()
    from .clock_client import SandboxClockHandle

    try:
        rate = SandboxClockHandle(current.url, timeout=5.0).state().rate
    except PeagleError:  # an older server without a clock: nothing to compare
        return ()
    if math.isclose(rate, wanted):
        return ()
    return (
        f"the sandbox's clock runs at {rate:g}x, not {wanted:g}x (joined it as it is; "
        f"`peagle sandbox clock resume --rate {wanted:g}` changes it)",
    )


def _spawn(
    port: int | None,
    upstream: str | None,
    timings: Timings,
    timeout: float,
    extra: list[str] | None = None,
) -> SandboxInfo:
    directory = state_dir()
    path, log_path = directory / "sandbox.json", directory / "sandbox.log"
    with contextlib.suppress(OSError):
        path.unlink()
    cmd = [sys.executable, "-m", _SERVER_MODULE, "--port", str(port or 0)]
    cmd += ["--state-file", str(path), "--log-file", str(log_path), *(extra or [])]
    if upstream is not None:
        cmd += ["--upstream", upstream]
    cmd += timings.args()
    for region in {os.environ.get("AWS_REGION"), os.environ.get("AWS_DEFAULT_REGION")} - {None}:
        cmd += ["--region", str(region)]  # seed the JumpStart bucket of the region in use
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    package_root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
    with open(log_path, "ab") as log:  # the state directory was checked to be writable
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=str(directory),
            env=env,
            start_new_session=True,  # no SIGINT from the terminal's Ctrl-C, survives the CLI
            close_fds=True,
        )
    children_of[proc.pid] = proc
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SandboxError(
                f"the sandbox exited at start-up (code {proc.returncode}): {_tail(log_path)}",
                remedy=f"see {log_path}",
            )
        info = read_state()
        if info is not None and info.pid == proc.pid and _healthy(info):
            return info
        time.sleep(0.05)
    terminate(proc.pid, 2.0)
    raise SandboxError(
        f"the sandbox did not answer within {timeout:.0f}s: {_tail(log_path)}",
        remedy=f"see {log_path}",
    )


def _tail(path: Path, lines: int = 3) -> str:
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return "(no log)"
    return " | ".join(text[-lines:]) or "(empty log)"


def stop(timeout: float = 30.0) -> dict[str, Any]:
    """Stop the sandbox in the state file; verify its pid is gone; remove the state file."""
    with _lock():
        info = read_state()
        if info is None:
            return {"stopped": False, "note": "no sandbox is running"}
        path = Path(info.state_file)
        if _dead(info):  # never signal a pid that now belongs to something else
            _forget(info)
            return {
                "stopped": False,
                "died": True,
                "pid": info.pid,
                "url": info.url,
                "engine_label": info.engine_label,  # the label of what it ran
                "note": f"{died_message(info.url)}; state removed",
            }
        gone = terminate(info.pid, timeout)
        reap_recorded_engines(directory_of_engines())  # a SIGKILLed server leaves its engines
        path.unlink(missing_ok=True)
        if not gone:
            raise SandboxError(f"sandbox pid {info.pid} survived SIGKILL")
        return {
            "stopped": True,
            "pid": info.pid,
            "url": info.url,
            "engine_label": info.engine_label,
        }


def ensure_running(**options: Any) -> SandboxInfo:
    """The running sandbox if it is healthy, else a newly started one."""
    return ensure(**options).info


def ensure(**options: Any) -> Joined:
    """The running sandbox if it answers, else a newly started one (`peagle --sandbox`).

    What it replaced is in the result (`replaced`, `why`): a state file whose process died,
    or a sandbox that no longer answers (stopped first). Its endpoints went with it; the
    caller says so (`Joined.notice`)."""
    engine = resolve_engine(options.get("engine"))
    with _lock():
        current = read_state()
        replaced, why = None, "died"
        if current is not None and not _dead(current):
            if _answers(current):
                if (options.get("engine") or settings.get("PEAGLE_SANDBOX_ENGINE")) and (
                    current.engine != engine
                ):
                    raise EngineMissing(
                        f"the running sandbox uses the {current.engine} engine, not {engine}",
                        remedy=f"`peagle sandbox stop`, then `peagle sandbox start --engine "
                        f"{engine}`",
                    )
                notes = _clock_notes(current, options.get("clock_rate"))
                return Joined(current, already_running=True, notes=notes)
            terminate(current.pid, 2.0)  # alive but not answering: replace it, and say so
            replaced, why = current, "stopped answering and was stopped"
        elif current is not None:
            replaced = current
        _check_port(options.get("port"))
        if replaced is not None:
            _forget(replaced)
        info = _spawn(
            options.get("port"),
            options.get("upstream"),
            Timings.of(options),
            float(options.get("timeout") or START_TIMEOUT_S),
            engine_args(engine),
        )
        return Joined(info, replaced=replaced, why=why)


def activate(info: SandboxInfo, environ: MutableMapping[str, str] | None = None) -> None:
    """Point every boto3 client at the sandbox through standard settings, with fake keys.

    Always the sandbox's fake credentials, and no config/credentials files, so a sandboxed
    command can neither reach AWS nor send real credentials to the sandbox.
    """
    env = os.environ if environ is None else environ
    for name in [n for n in env if n.startswith("AWS_ENDPOINT_URL_") or n in _DROP]:
        del env[name]
    env.update(
        AWS_ENDPOINT_URL=info.url,
        AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME=info.runtime_url,
        AWS_ACCESS_KEY_ID=FAKE_KEY,
        AWS_SECRET_ACCESS_KEY=FAKE_KEY,
        AWS_CONFIG_FILE=os.devnull,
        AWS_SHARED_CREDENTIALS_FILE=os.devnull,
        PEAGLE_SANDBOX_URL=info.url,
        PEAGLE_SANDBOX_ENGINE_LABEL=info.engine_label,  # what produced the tokens
        PEAGLE_TARGET="sandbox",  # peagle asks this plugin's target what it talks to
    )
    env.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    env.setdefault("PEAGLE_POLL_SECONDS", "0.5")
    # A role of a real account would fail preflight here: only keep one of the sandbox's.
    if f":{info.account}:" not in env.get("PEAGLE_ROLE_ARN", ""):
        env["PEAGLE_ROLE_ARN"] = info.role_arn


def use_sandbox(**options: Any) -> SandboxUse:
    """SDK entry point: start the sandbox if needed and point this process at it.

    After this, `sm_peagle.deploy(...)` and every boto3 client talk to the local
    sandbox, never to AWS. Options are those of `peagle sandbox start`; `engine="vllm"`
    hosts endpoints on the real vLLM CPU engine (`peagle sandbox install-engine`).
    Used as a context manager (or with `.stop()`), it stops the sandbox it started.
    """
    joined = ensure(**options)
    notice = joined.notice()
    import warnings

    if notice:  # never a silent replacement: the caller's endpoints are gone
        warnings.warn(notice, RuntimeWarning, stacklevel=2)
    for line in joined.notes:  # a clock rate other than the one asked for
        warnings.warn(line, RuntimeWarning, stacklevel=2)
    activate(joined.info)
    return SandboxUse(**asdict(joined.info), started=not joined.already_running)
