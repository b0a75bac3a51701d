"""Build the CPU trainer environment for the sandbox's training jobs, idempotently.

Runs in the MAIN venv (stdlib only); the trainer venv it makes holds speculators 0.9.0 and
CPU torch, and the sandbox's CPU backend registered under `peagle_train.backends`.

Layout under ``home`` (the engine's home: ``$PEAGLE_ENGINE_HOME``, else
``~/.cache/peagle/engine``)::

    trainer-venv-<speculators version>/   its own virtualenv (transformers 5.x, CPU torch)
    trainer-src/peagle_sandbox            a link to this sandbox package (the CPU backend)
    state/trainer-<version>/*.done        one marker per finished step
    logs/install-trainer-<version>.log    full pip output

Steps: torch source -> venv -> torch (+cpu) -> trainer packages (``pip install --no-deps -r
requirements/speculators-<version>.txt``, every package pinned; so no CUDA torchvision or
torchaudio, which break `import transformers.modeling_utils` with CPU torch) -> the CPU
backend -> import check.

The backend is registered by a hand-written dist-info in the trainer venv (as the engine's
vLLM plugin is), not by the sandbox's pyproject: the main venv, the engine venv and the
SageMaker training image never see it, so the entrypoint there uses its GPU default.

CLI: ``python -m peagle_sandbox.trainer_cpu.install [--home H] [--torch-index-url U]
[--index-url U]``; ``peagle sandbox install-trainer`` calls `install_trainer`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from ..directories import not_a_directory, unwritable
from ..vllm_engine.install import TORCH_INDEX_HINT, TORCH_PIN, BadInput, InstallError, default_home

__all__ = [
    "SPECULATORS_VERSION",
    "BadInput",
    "InstallError",
    "TrainerEnv",
    "install_trainer",
    "main",
    "trainer_env",
]

SPECULATORS_VERSION = "0.9.0"  # the first release with P-EAGLE training (facts §14)
_PKG_DIR = Path(__file__).resolve().parent
_BACKEND_ENTRY = "cpu = peagle_sandbox.trainer_cpu.backend:BACKEND"


@dataclass(frozen=True)
class TrainerEnv:
    """An installed trainer environment: where it lives and how to run the entrypoint."""

    home: Path
    version: str
    python: Path

    def train_command(self, entrypoint: Path) -> list[str]:
        """argv running the training entrypoint (`peagle_train.py`) in the trainer venv."""
        return [str(self.python), str(entrypoint)]


def trainer_env(home: Path | str | None = None, version: str = SPECULATORS_VERSION) -> TrainerEnv:
    """The TrainerEnv for `home` (no install; `python` exists once it is installed)."""
    home = Path(home or default_home()).expanduser().resolve()
    return TrainerEnv(
        home=home, version=version, python=home / f"trainer-venv-{version}" / "bin" / "python"
    )


def requirements_file(version: str = SPECULATORS_VERSION) -> Path:
    return _PKG_DIR / "requirements" / f"speculators-{version}.txt"


def _sha(*paths: Path) -> str:
    h = hashlib.sha256()
    for p in paths:
        h.update(p.read_bytes())
    return h.hexdigest()[:16]


def _check(home: Path, urls: dict[str, str | None]) -> None:
    """BadInput before any step: an index URL that is not one, or a home that is a file or
    cannot be written."""
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
            f"--home: {problem}", fix="--home <a directory you can write> (or leave it out)"
        )


def _run(log: Path, argv: list[str], step: str) -> str:
    """Run with output appended to the log; InstallError naming pip's last error line."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("a") as fh:
        fh.write(f"\n$ {' '.join(argv)}\n")
        fh.flush()
        start = fh.tell()
        code = subprocess.run(
            argv, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        ).returncode
    with log.open() as fh:
        fh.seek(start)
        out = fh.read()
    if code != 0:
        lines = [x.strip() for x in out.splitlines() if x.strip()]
        errs = [x for x in lines if x.startswith("ERROR") or "Error" in x]
        last = (errs or lines or ["(no output)"])[-1]
        if step == "torch" and ("No matching distribution" in out or "from versions" in out):
            last = (
                f"pip cannot find {TORCH_PIN} (the default index only has the CUDA build); "
                f"pass --torch-index-url {TORCH_INDEX_HINT}"
            )
        raise InstallError(f"{step} failed: {last[:300]} (full log: {log})")
    return out


def _backend(env: TrainerEnv, log: Path) -> str:
    """Link this sandbox package into the trainer venv and register the CPU backend there."""
    src = env.home / "trainer-src"
    src.mkdir(parents=True, exist_ok=True)
    link = src / "peagle_sandbox"
    target = _PKG_DIR.parent
    if link.is_symlink() and link.resolve() != target:
        link.unlink()
    if not link.exists():
        link.symlink_to(target, target_is_directory=True)
    argv = [str(env.python), "-c", "import sysconfig;print(sysconfig.get_path('purelib'))"]
    site = Path(_run(log, argv, "backend").strip().splitlines()[-1])
    (site / "peagle-trainer.pth").write_text(str(src) + "\n")
    dist = site / "peagle_trainer_backend-0.dist-info"
    dist.mkdir(exist_ok=True)
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: peagle-trainer-backend\nVersion: 0\n"
    )
    (dist / "entry_points.txt").write_text(f"[peagle_train.backends]\n{_BACKEND_ENTRY}\n")
    return f"{link} -> {target}; backend `cpu` registered in the trainer venv only"


def _marker_ok(marker: Path, want: dict[str, str]) -> bool:
    try:
        return json.loads(marker.read_text()).get("stamp") == want
    except (OSError, ValueError, AttributeError):
        return False


def install_trainer(
    home: Path | None = None,
    python: str = sys.executable,
    progress: Callable[[str], None] = print,
    index_url: str | None = None,
    torch_index_url: str | None = None,
) -> TrainerEnv:
    """Build (or confirm) the trainer environment; one progress line per step."""
    env = trainer_env(home)
    _check(env.home, {"--index-url": index_url, "--torch-index-url": torch_index_url})
    if not Path(python).exists():
        raise BadInput(f"--python {python} does not exist", fix="--python <an existing python>")
    req = requirements_file(env.version)
    stamp = {"version": env.version, "requirements_sha256": _sha(req)}
    state = env.home / "state" / f"trainer-{env.version}"
    log = env.home / "logs" / f"install-trainer-{env.version}.log"
    venv_dir = env.python.parent.parent
    pip = [str(env.python), "-m", "pip", "install", "--disable-pip-version-check", "--no-input"]
    if index_url:
        pip += ["--index-url", index_url]
    if torch_index_url:
        pip += ["--extra-index-url", torch_index_url]

    def check() -> str:
        code = (
            "import importlib.metadata as m, torch, transformers, speculators.train.cli; "
            "print(m.version('speculators'), torch.__version__, transformers.__version__, "
            "[e.name for e in m.entry_points(group='peagle_train.backends')])"
        )
        out = _run(log, [str(env.python), "-c", code], "import check").strip().splitlines()[-1]
        if "'cpu'" not in out or "+cpu" not in out:
            raise InstallError(f"import check failed: {out[-200:]}")
        return out

    # The backend step's stamp also names the source it links: run from another checkout,
    # the link is redone, not reported "ok" while it points at the old one.
    backend_stamp = {"backend_src": str(_PKG_DIR.parent)}
    steps: list[tuple[str, Callable[[], str], dict[str, str]]] = [
        (
            "venv",
            lambda: (
                _run(log, [python, "-m", "venv", "--clear", str(venv_dir)], "venv"),
                str(venv_dir),
            )[1],
            {},
        ),
        ("torch", lambda: (_run(log, [*pip, "--no-deps", TORCH_PIN], "torch"), TORCH_PIN)[1], {}),
        (
            "trainer packages",
            lambda: (_run(log, [*pip, "--no-deps", "-r", str(req)], "trainer packages"), req.name)[
                1
            ],
            {},
        ),
        ("cpu backend", lambda: _backend(env, log), backend_stamp),
        ("import check", check, backend_stamp),
    ]
    progress(f"peagle trainer: speculators {env.version} in {env.home}")
    redo = not env.python.exists()  # a deleted venv invalidates every step after "venv"
    for i, (name, fn, extra) in enumerate(steps, 1):
        marker = state / (name.replace(" ", "-") + ".done")
        want = {**stamp, **extra}
        if _marker_ok(marker, want) and not (redo and i > 1):
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
    return env


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m peagle_sandbox.trainer_cpu.install",
        description="Install the CPU trainer environment (speculators) for the sandbox.",
    )
    p.add_argument("--home", type=Path, default=None, help="home (default: the engine's)")
    p.add_argument("--torch-index-url", default=None, help=f"e.g. {TORCH_INDEX_HINT}")
    p.add_argument("--index-url", default=None, help="pip --index-url for every step")
    try:
        a = p.parse_args(argv)
    except SystemExit as exc:
        return 2 if exc.code else 0
    try:
        env = install_trainer(a.home, index_url=a.index_url, torch_index_url=a.torch_index_url)
    except BadInput as exc:
        fix = f" (fix: {exc.fix})" if exc.fix else ""
        print(f"peagle trainer: {exc}{fix}", file=sys.stderr)
        return 2
    except (InstallError, OSError) as exc:
        print(f"peagle trainer: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("peagle trainer: interrupted", file=sys.stderr)
        return 1
    print(f"peagle trainer: ready: {env.python}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
