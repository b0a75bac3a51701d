"""Every environment variable the sandbox reads, declared to peagle through the plugin
contract (`PLUGIN.settings()`), so peagle's settings reference lists them with its own.

Values are read when asked for (`get`), through `sm_peagle.contract.setting`, which refuses
an undeclared name: a variable read here is always one the reference documents.
"""

from __future__ import annotations

import os
from pathlib import Path

from sm_peagle.contract import Setting, setting

__all__ = ["SETTINGS", "engine_home", "flag", "get", "state_dir"]

SETTINGS: tuple[Setting, ...] = (
    Setting("PEAGLE_SANDBOX", "1: every command runs against the local sandbox, as --sandbox"),
    Setting(
        "PEAGLE_SANDBOX_ENGINE", "the sandbox's engine, simulated or vllm, as --sandbox-engine"
    ),
    Setting(
        "PEAGLE_SANDBOX_CLOCK_RATE",
        "the clock rate of a sandbox peagle starts, sandbox seconds per real second "
        "(default 1), as `peagle sandbox start --clock-rate`",
    ),
    Setting(
        "PEAGLE_SANDBOX_URL",
        "set by the sandbox: its control-plane URL (commands say they talk to the sandbox)",
    ),
    Setting(
        "PEAGLE_SANDBOX_ENGINE_LABEL",
        "set by the sandbox: what produced the tokens (SIMULATED or the real vLLM engine)",
    ),
    Setting(
        "PEAGLE_ENGINE_HOME",
        "where `peagle sandbox install-engine` builds the real vLLM CPU engine "
        "(default ~/.cache/peagle/engine)",
    ),
    Setting("PEAGLE_ENGINE_VERSION", "the real engine's vLLM version"),
    Setting(
        "PEAGLE_TRAINER_HOME",
        "a trainer home (`peagle sandbox install-trainer`): the sandbox runs training jobs' "
        "entrypoints in its trainer venv instead of the SIMULATED trainer",
    ),
    Setting("PEAGLE_SIMULATED_ENGINE", "settings of the SIMULATED engine (JSON)"),
    Setting(
        "PEAGLE_SANDBOX_INSTANCE_TYPES",
        "the only instance types a region offers, "
        "'us-west-2=ml.g6e.12xlarge,ml.g6e.2xlarge;eu-west-1=...' (other regions: all)",
    ),
    Setting("PEAGLE_LAUNCHER_DEBUG", "1 keeps the real engine launcher's debug output"),
    Setting(
        "PEAGLE_DISABLE_CPU_SAMPLING_FIX",
        "the engine: 1 turns the vLLM CPU sampling-fix plugin off (to reproduce the bug it fixes)",
    ),
)


_OWN = frozenset(s.name for s in SETTINGS)


def get(name: str, default: str | None = None) -> str | None:
    """A declared variable's value: the sandbox's own (`SETTINGS`) read here, its one
    reader, with no plugin discovery (the engine's virtualenv, where the launcher and the
    sampling fix read theirs, has the sandbox's code but no installed distribution to
    discover); peagle's (e.g. PEAGLE_STATE_DIR) through the contract."""
    if name in _OWN:
        return os.environ.get(name, default)
    return setting(name, default)


def flag(name: str) -> bool:
    return (get(name) or "").strip().lower() in ("1", "true", "yes", "on")


def engine_home() -> Path:
    """Where `peagle sandbox install-engine` builds the real vLLM CPU engine (its venvs are
    `venv-<version>/`)."""
    explicit = get("PEAGLE_ENGINE_HOME")
    return Path(explicit).expanduser() if explicit else Path.home() / ".cache" / "peagle" / "engine"


def state_dir() -> Path:
    """peagle's state directory (PEAGLE_STATE_DIR), where the sandbox keeps its state."""
    from sm_peagle.contract import state_dir as peagle_state_dir

    return peagle_state_dir()
