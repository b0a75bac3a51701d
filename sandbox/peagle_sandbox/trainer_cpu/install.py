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
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..install_steps import (
    TORCH_INDEX_HINT,
    TORCH_PIN,
    BadInput,
    InstallError,
    Runner,
    Step,
    StepFailed,
    check_inputs,
    exit_code,
    link_dir,
    pip_install,
    register_in_venv,
    run_steps,
    sha,
    torch_not_found,
)
from ..vllm_engine.install import default_home

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


def _backend(env: TrainerEnv, run: Runner) -> str:
    """Link this sandbox package into the trainer venv and register the CPU backend there."""
    src = env.home / "trainer-src"
    src.mkdir(parents=True, exist_ok=True)
    link = src / "peagle_sandbox"
    target = _PKG_DIR.parent
    link_dir(link, target)
    register_in_venv(
        env.python,
        run,
        "backend",
        src,
        "peagle-trainer",
        "peagle-trainer-backend",
        f"[peagle_train.backends]\n{_BACKEND_ENTRY}\n",
    )
    return f"{link} -> {target}; backend `cpu` registered in the trainer venv only"


def _torch(run: Runner, pip: list[str]) -> str:
    try:
        run.run([*pip, "--no-deps", TORCH_PIN], "torch")
    except StepFailed as exc:
        if not torch_not_found(exc):
            raise
        raise InstallError(
            f"torch failed: pip cannot find {TORCH_PIN} (the default index only has the CUDA "
            f"build); pass --torch-index-url {TORCH_INDEX_HINT} (full log: {run.log})"
        ) from None
    return TORCH_PIN


def install_trainer(
    home: Path | None = None,
    python: str = sys.executable,
    progress: Callable[[str], None] = print,
    index_url: str | None = None,
    torch_index_url: str | None = None,
) -> TrainerEnv:
    """Build (or confirm) the trainer environment; one progress line per step."""
    env = trainer_env(home)
    check_inputs(env.home, {"--index-url": index_url, "--torch-index-url": torch_index_url})
    if not Path(python).exists():
        raise BadInput(f"--python {python} does not exist", fix="--python <an existing python>")
    req = requirements_file(env.version)
    stamp = {"version": env.version, "requirements_sha256": sha(req)}
    run = Runner(env.home / "logs" / f"install-trainer-{env.version}.log")
    venv_dir = env.python.parent.parent
    pip = pip_install(env.python, index_url, torch_index_url)

    def check() -> str:
        code = (
            "import importlib.metadata as m, torch, transformers, speculators.train.cli; "
            "print(m.version('speculators'), torch.__version__, transformers.__version__, "
            "[e.name for e in m.entry_points(group='peagle_train.backends')])"
        )
        out = run.run([str(env.python), "-c", code], "import check").strip().splitlines()[-1]
        if "'cpu'" not in out or "+cpu" not in out:
            raise InstallError(f"import check failed: {out[-200:]}")
        return out

    # The backend step's stamp also names the source it links: run from another checkout,
    # the link is redone, not reported "ok" while it points at the old one.
    backend_stamp = {"backend_src": str(_PKG_DIR.parent)}
    steps: list[Step] = [
        (
            "venv",
            lambda: (
                run.run([python, "-m", "venv", "--clear", str(venv_dir)], "venv"),
                str(venv_dir),
            )[1],
            {},
        ),
        ("torch", lambda: _torch(run, pip), {}),
        (
            "trainer packages",
            lambda: (run.run([*pip, "--no-deps", "-r", str(req)], "trainer packages"), req.name)[1],
            {},
        ),
        ("cpu backend", lambda: _backend(env, run), backend_stamp),
        ("import check", check, backend_stamp),
    ]
    progress(f"peagle trainer: speculators {env.version} in {env.home}")
    # A deleted venv invalidates its step (the first) and every step after it.
    redo_from = None if env.python.exists() else "venv"
    run_steps(steps, env.home / "state" / f"trainer-{env.version}", stamp, progress, redo_from)
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
    return exit_code(
        "peagle trainer",
        lambda: install_trainer(a.home, index_url=a.index_url, torch_index_url=a.torch_index_url),
        lambda env: str(env.python),
    )


if __name__ == "__main__":
    raise SystemExit(main())
