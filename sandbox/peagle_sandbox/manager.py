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
import os
import subprocess
import sys
import time
from collections.abc import Iterator, MutableMapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from peagle_sandbox.engine_choice import EngineMissing, engine_args, resolve_engine
from peagle_sandbox.procs import children_of, pid_alive, reap_recorded_engines, terminate
from sm_peagle import settings
from sm_peagle.errors import PeagleError

__all__ = [
    "SANDBOX_ACCOUNT",
    "SandboxError",
    "SandboxInfo",
    "activate",
    "ensure_running",
    "read_state",
    "start",
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
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


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


def _healthy(info: SandboxInfo) -> bool:
    if not pid_alive(info.pid):
        return False
    doc = health(info.url)
    return doc is not None and doc.get("pid") == info.pid


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
    """{"running": bool, "healthy": bool, ...state}; removes a state file left by a dead pid."""
    info = read_state()
    if info is None:
        return {"running": False, "healthy": False, "state_file": str(_state_path())}
    if not pid_alive(info.pid):
        with contextlib.suppress(OSError):
            Path(info.state_file).unlink()
        return {"running": False, "healthy": False, "state_file": info.state_file, "stale": True}
    return {"running": True, "healthy": _healthy(info), **info.to_dict()}


def start(
    port: int | None = None,
    upstream: str | None = None,
    *,
    creating_seconds: float | None = None,
    metrics_interval: float | None = None,
    time_scale: float | None = None,
    timeout: float = 10.0,
    engine: str | None = None,
) -> SandboxInfo:
    """Spawn a detached sandbox and wait until it answers; error if one is already running."""
    extra = engine_args(resolve_engine(engine))
    with _lock():
        current = read_state()
        if current is not None and pid_alive(current.pid) and _is_sandbox(current.pid):
            raise SandboxError(
                f"a sandbox is already running at {current.url} (pid {current.pid})",
                remedy="`peagle sandbox stop` first, or use it with `peagle --sandbox ...`",
            )
        return _spawn(
            port, upstream, creating_seconds, metrics_interval, time_scale, timeout, extra
        )


def _spawn(
    port: int | None,
    upstream: str | None,
    creating_seconds: float | None,
    metrics_interval: float | None,
    time_scale: float | None,
    timeout: float,
    extra: list[str] | None = None,
) -> SandboxInfo:
    directory = state_dir()
    path, log_path = directory / "sandbox.json", directory / "sandbox.log"
    with contextlib.suppress(OSError):
        path.unlink()
    cmd = [sys.executable, "-m", _SERVER_MODULE, "--port", str(port or 0)]
    cmd += ["--state-file", str(path), "--log-file", str(log_path), *(extra or [])]
    for flag, value in (
        ("--upstream", upstream),
        ("--creating-seconds", creating_seconds),
        ("--metrics-interval", metrics_interval),
        ("--time-scale", time_scale),
    ):
        if value is not None:
            cmd += [flag, str(value)]
    for region in {os.environ.get("AWS_REGION"), os.environ.get("AWS_DEFAULT_REGION")} - {None}:
        cmd += ["--region", str(region)]  # seed the JumpStart bucket of the region in use
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    package_root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
    with open(log_path, "ab") as log:
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
                remedy="is the sandbox extra installed? pip install 'sm-peagle[sandbox]' "
                "(from a clone: pip install -e '.[sandbox]')",
            )
        info = read_state()
        if info is not None and info.pid == proc.pid and _healthy(info):
            return info
        time.sleep(0.05)
    terminate(proc.pid, 2.0)
    raise SandboxError(f"the sandbox did not answer within {timeout:.0f}s: {_tail(log_path)}")


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
        if not pid_alive(info.pid):
            path.unlink(missing_ok=True)
            return {"stopped": False, "pid": info.pid, "note": "not running (stale state removed)"}
        if not _is_sandbox(info.pid):
            path.unlink(missing_ok=True)
            raise SandboxError(
                f"pid {info.pid} in {path} is not a peagle sandbox; not signalled, state removed"
            )
        gone = terminate(info.pid, timeout)
        reap_recorded_engines(directory_of_engines())  # a SIGKILLed server leaves its engines
        path.unlink(missing_ok=True)
        if not gone:
            raise SandboxError(f"sandbox pid {info.pid} survived SIGKILL")
        return {"stopped": True, "pid": info.pid, "url": info.url}


def ensure_running(**options: Any) -> SandboxInfo:
    """The running sandbox if it is healthy, else a newly started one."""
    engine = resolve_engine(options.get("engine"))
    with _lock():
        current = read_state()
        if current is not None and _healthy(current):
            if (options.get("engine") or settings.sandbox_engine()) and (
                current.engine != engine
            ):
                raise EngineMissing(
                    f"the running sandbox uses the {current.engine} engine, not {engine}",
                    remedy=f"`peagle sandbox stop`, then `peagle sandbox start --engine {engine}`",
                )
            return current
        if current is not None and pid_alive(current.pid) and _is_sandbox(current.pid):
            terminate(current.pid, 2.0)  # alive but not answering: replace it
        return _spawn(
            options.get("port"),
            options.get("upstream"),
            options.get("creating_seconds"),
            options.get("metrics_interval"),
            options.get("time_scale"),
            float(options.get("timeout", 10.0)),
            engine_args(engine),
        )


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
    )
    env.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    env.setdefault("PEAGLE_POLL_SECONDS", "0.5")
    # A role of a real account would fail preflight here: only keep one of the sandbox's.
    if f":{info.account}:" not in env.get("PEAGLE_ROLE_ARN", ""):
        env["PEAGLE_ROLE_ARN"] = info.role_arn


def use_sandbox(**options: Any) -> SandboxInfo:
    """SDK entry point: start the sandbox if needed and point this process at it.

    After this, `sm_peagle.deploy(...)` and every boto3 client talk to the local
    sandbox, never to AWS. Options are those of `peagle sandbox start`; `engine="vllm"`
    hosts endpoints on the real vLLM CPU engine (`peagle sandbox install-engine`).
    """
    info = ensure_running(**options)
    activate(info)
    return info
