"""Process helpers shared by the sandbox manager and the real-engine host: is a pid alive
(zombies count as gone), terminate one pid or a whole process group and wait until it is
really gone. Standard library only, so `peagle --sandbox` stays cheap to start."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

__all__ = ["ZOMBIE_GRACE", "group_alive", "kill_group", "pid_alive"]

ZOMBIE_GRACE = 5.0
children_of: dict[int, subprocess.Popen[bytes]] = {}  # started by this process: reaped on stop


def pid_alive(pid: int) -> bool:
    """True if ``pid`` exists and is not a zombie (a zombie has already exited)."""
    _reap(pid)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True  # no /proc (macOS): kill(0) is all we can know


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)  # only succeeds for our own children


def terminate(pid: int, timeout: float) -> bool:
    """SIGTERM, wait, SIGKILL, wait; True once the pid is gone."""
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 2.0)):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)
        if _wait_gone(pid, wait):
            children_of.pop(pid, None)
            return True
    return False


def _wait_gone(pid: int, seconds: float) -> bool:
    """Wait until the pid no longer exists (exited and reaped by its parent, usually init).

    A zombie has exited but still answers kill(0) until its parent reaps it; some inits reap
    only every second or so. Wait for that too (up to ``ZOMBIE_GRACE``), so that a caller
    checking kill(0) right after stop() sees the pid gone."""
    deadline = time.monotonic() + seconds
    zombie_since: float | None = None
    while True:
        _reap(pid)
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            pass
        now = time.monotonic()
        if not pid_alive(pid):
            zombie_since = zombie_since or now
            if now - zombie_since > ZOMBIE_GRACE:
                return True
        elif now >= deadline:
            return False
        time.sleep(0.02)


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) pids whose process group is `pgid` (Linux /proc; else [pgid])."""
    if not Path("/proc/self").exists():
        return [pgid] if pid_alive(pgid) else []
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            out.append(int(d.name))
    return out


def group_alive(pgid: int) -> bool:
    return bool(group_members(pgid))


def kill_group(pgid: int, grace: float = 10.0) -> bool:
    """SIGTERM the whole group, wait up to `grace`, then SIGKILL it; True once every
    member is gone. A group (not a pid) because vLLM's API server spawns its engine core
    and workers: killing only the leader would orphan them with the memory they hold."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, sig)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            _reap(pgid)
            if not group_alive(pgid):
                return True
            time.sleep(0.1)
    return not group_alive(pgid)


def _is_engine_leader(pgid: int) -> bool:
    """Never signal a group whose leader pid was reused by something else: an engine runs
    peagle's container entrypoint (sm_peagle), a training job the trainer (peagle_train)."""
    try:
        cmdline = Path(f"/proc/{pgid}/cmdline").read_bytes()
        return b"sm_peagle" in cmdline or b"peagle_train" in cmdline
    except FileNotFoundError:
        return not Path("/proc/self").exists()
    except OSError:
        return False


def record_group(directory: Path, pgid: int, label: str, *, present: bool) -> None:
    """Write (`present`) or remove `<directory>/<pgid>.pgid`, the record
    `reap_recorded_engines` reads after a killed server; `label` says whose group it is."""
    path = directory / f"{pgid}.pgid"
    if present:
        directory.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{label}\n")
    else:
        path.unlink(missing_ok=True)


def reap_recorded_engines(directory: Path) -> list[int]:
    """Kill the engine process groups the real-engine host recorded in `directory` (one
    `<pgid>.pgid` file each; the trainer host records its jobs there too) and remove the
    records; the pgids killed. A host removes a record when it stops that process, so only
    those of a server that died are left."""
    killed = []
    for record in sorted(directory.glob("*.pgid")) if directory.is_dir() else []:
        try:
            pgid = int(record.stem)
        except ValueError:
            continue
        if group_alive(pgid) and _is_engine_leader(pgid):
            kill_group(pgid, grace=5.0)
            killed.append(pgid)
        record.unlink(missing_ok=True)
    return killed
