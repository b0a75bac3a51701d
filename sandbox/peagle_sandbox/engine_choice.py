"""Which engine a sandbox hosts endpoints on: `simulated` (default) or `vllm`, the real
vLLM CPU engine from `peagle sandbox install-engine`. Standard library only (the manager
imports it on every `peagle --sandbox` command)."""

from __future__ import annotations

from sm_peagle.errors import PeagleError

from . import settings

__all__ = ["ENGINES", "EngineMissing", "engine_args", "resolve_engine"]


class EngineMissing(PeagleError):
    """`--engine vllm` without an installed engine environment: bad input (exit 2)."""

    exit_code = 2


ENGINES = ("simulated", "vllm")


def resolve_engine(explicit: str | None = None) -> str:
    """The engine asked for: the option, else $PEAGLE_SANDBOX_ENGINE, else simulated."""
    engine = (explicit or settings.get("PEAGLE_SANDBOX_ENGINE") or "simulated").lower()
    if engine not in ENGINES:
        raise EngineMissing(
            f"unknown sandbox engine {engine!r}", remedy=f"use one of: {', '.join(ENGINES)}"
        )
    return engine


def engine_args(engine: str) -> list[str]:
    """Server arguments for `engine`; for vllm, checks the engine env exists first, so a
    missing install is one line naming the command, not a sandbox that fails later."""
    if engine != "vllm":
        return []
    from peagle_sandbox.vllm_engine.install import (
        DEFAULT_VLLM_VERSION,
        SUPPORTED_VERSIONS,
        engine_env,
    )

    wanted = settings.get("PEAGLE_ENGINE_VERSION")
    for version in [wanted] if wanted else [DEFAULT_VLLM_VERSION, *SUPPORTED_VERSIONS]:
        env = engine_env(None, version)
        if env.python.exists() and (env.models / "manifest.json").exists():
            return ["--engine", "vllm", "--engine-home", str(env.home), "--vllm-version", version]
    raise EngineMissing(
        f"no real vLLM engine installed in {engine_env(None).home}"
        + (f" (vLLM {wanted})" if wanted else ""),
        remedy="run `peagle sandbox install-engine` (about 1.5 min), or set PEAGLE_ENGINE_HOME",
    )
