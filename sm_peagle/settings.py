"""Every `PEAGLE_*` environment variable, the cache and state directories, and poll intervals.

This is the only module that reads a `PEAGLE_*` variable (a test holds that). Values are read
when asked for, not at import, so a test or the sandbox can change the environment between
calls. Pure code (planning/, vllm/) takes these values as arguments and writes nothing.

`VARIABLES` is the table the docs' settings reference is generated from.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

__all__ = [
    "AWS",
    "SANDBOX_SIMULATED",
    "VARIABLES",
    "cache_dir",
    "debug",
    "label_for_engine",
    "engine_home",
    "env_flag",
    "poll_seconds",
    "pypi_url",
    "role_arn",
    "sandbox_engine",
    "sandbox_engine_label",
    "sandbox_requested",
    "sandbox_url",
    "sandbox_vllm",
    "source_label",
    "state_dir",
]

# name -> what it does. The product's settings first, then those only the sandbox (the
# `peagle-sandbox` distribution) and the engine container read.
VARIABLES: dict[str, str] = {
    "PEAGLE_CACHE_DIR": "where JumpStart specs and botocore shape data are cached "
    "(default $XDG_CACHE_HOME/peagle, else ~/.cache/peagle)",
    "PEAGLE_STATE_DIR": "where the sandbox keeps its state and log "
    "(default $XDG_STATE_HOME/peagle, else ~/.local/state/peagle)",
    "PEAGLE_DEBUG": "1: an unexpected error prints its traceback instead of one line",
    "PEAGLE_POLL_SECONDS": "seconds between status polls while waiting (default 5, growing "
    "to 30; the sandbox sets 0.5)",
    "PEAGLE_ROLE_ARN": "the SageMaker execution role when the spec names none",
    "PEAGLE_PYPI_URL": "the package index doctor asks for the newest vLLM (its JSON "
    "API, <url>/pypi/vllm/json; default https://pypi.org)",
    "PEAGLE_SANDBOX": "1: every command runs against the local sandbox, as --sandbox",
    "PEAGLE_SANDBOX_ENGINE": "the sandbox's engine, simulated or vllm, as --sandbox-engine",
    "PEAGLE_SANDBOX_URL": "set by the sandbox: its control-plane URL (commands say they talk "
    "to the sandbox)",
    "PEAGLE_SANDBOX_ENGINE_LABEL": "set by the sandbox: what produced the tokens (SIMULATED "
    "or the real vLLM engine)",
    "PEAGLE_LOCUST_ENDPOINT": "internal: bench's locust driver passes its run to the locustfile "
    "(also _REGION, _DATASET, _MAX_TOKENS, _TEMPERATURE, _REQUESTS, _OUT, _ACCEPTANCE_WAIT)",
    "PEAGLE_VLLM_VERSION": "container entrypoint: the vLLM version the image runs",
    "PEAGLE_OPT_ML_ROOT": "container entrypoint and sandbox engines: the directory standing "
    "for /opt/ml",
    "PEAGLE_ENGINE_HOME": "sandbox: where `peagle sandbox install-engine` builds the real vLLM "
    "CPU engine (default ~/.cache/peagle/engine)",
    "PEAGLE_ENGINE_VERSION": "sandbox: the real engine's vLLM version",
    "PEAGLE_SIMULATED_ENGINE": "sandbox: settings of the SIMULATED engine (JSON)",
    "PEAGLE_SANDBOX_INSTANCE_TYPES": "sandbox: the only instance types a region offers, "
    "'us-west-2=ml.g6e.12xlarge,ml.g6e.2xlarge;eu-west-1=...' (other regions: all)",
    "PEAGLE_LAUNCHER_DEBUG": "sandbox: 1 keeps the real engine launcher's debug output",
    "PEAGLE_DISABLE_CPU_SAMPLING_FIX": "sandbox engine: 1 turns the vLLM CPU sampling-fix "
    "plugin off (to reproduce the bug it fixes)",
}


def get(name: str, default: str | None = None) -> str | None:
    """The raw value of a declared variable (KeyError for an undeclared name: declare it
    in VARIABLES first, so the settings reference stays complete)."""
    if name not in VARIABLES and not name.startswith("PEAGLE_LOCUST_"):
        raise KeyError(f"{name} is not a declared peagle setting")
    return os.environ.get(name, default)


def env_flag(name: str) -> bool:
    return (get(name) or "").strip().lower() in ("1", "true", "yes", "on")


def cache_dir() -> Path:
    base = get("PEAGLE_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "peagle"
    )
    return Path(base)


def state_dir() -> Path:
    explicit = get("PEAGLE_STATE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_STATE_HOME") or os.path.expanduser("~/.local/state")
    return Path(base) / "peagle"


def debug() -> bool:
    return bool(get("PEAGLE_DEBUG"))


def poll_seconds() -> float | None:
    """The fixed poll interval the sandbox and tests ask for, or None for the default."""
    value = get("PEAGLE_POLL_SECONDS")
    return float(value) if value else None


# Where `peagle doctor` asks for the newest vLLM release.
DEFAULT_PYPI_URL = "https://pypi.org"


def pypi_url() -> str:
    """The package index base URL (its JSON API is <url>/pypi/<package>/json)."""
    return (get("PEAGLE_PYPI_URL") or DEFAULT_PYPI_URL).rstrip("/")


def engine_home() -> Path:
    """Where `peagle sandbox install-engine` builds the real vLLM CPU engine (its venvs are
    `venv-<version>/`): read by `peagle doctor`, which must not import the sandbox."""
    explicit = get("PEAGLE_ENGINE_HOME")
    return Path(explicit).expanduser() if explicit else Path.home() / ".cache" / "peagle" / "engine"


def role_arn() -> str | None:
    return get("PEAGLE_ROLE_ARN") or None


def sandbox_requested() -> bool:
    return env_flag("PEAGLE_SANDBOX")


def sandbox_engine() -> str | None:
    return get("PEAGLE_SANDBOX_ENGINE") or None


def sandbox_url() -> str | None:
    """The sandbox this process talks to, or None when it talks to AWS."""
    return get("PEAGLE_SANDBOX_URL") or None


def sandbox_engine_label() -> str:
    return get("PEAGLE_SANDBOX_ENGINE_LABEL") or "SIMULATED"


# -- where an output came from: one set of labels for the whole product -----------------
#
# Every printed result, log line and `--json` document says which of these produced it,
# so nobody mistakes the sandbox (or a CPU engine's figures) for AWS:
# - `AWS`: SageMaker itself (or an endpoint set through AWS_ENDPOINT_URL, which peagle
#   cannot tell from AWS; the "talking to:" line names it);
# - `SANDBOX (SIMULATED)`: the sandbox's SIMULATED engine (no model ran);
# - `SANDBOX (vllm X.Y.Z, CPU, tiny model)`: the sandbox's real vLLM engine on this CPU.

AWS = "AWS"
SANDBOX_SIMULATED = "SANDBOX (SIMULATED)"

# The sandbox's own engine label (peagle_sandbox.engine_host: "vllm 0.31.0 (CPU, tiny
# model)"), as PEAGLE_SANDBOX_ENGINE_LABEL and the sandbox's state carry it.
_REAL_ENGINE = re.compile(r"vllm (?P<version>[0-9][^\s()]*) \(CPU, tiny model\)")


def sandbox_vllm(version: str) -> str:
    """The label of the sandbox's real vLLM engine of `version`."""
    return f"SANDBOX (vllm {version}, CPU, tiny model)"


def label_for_engine(engine: str | None) -> str:
    """The label for a sandbox whose engine label is `engine` ("SIMULATED", or the real
    engine's "vllm X.Y.Z (CPU, tiny model)"). Anything else is SIMULATED: the sandbox
    never serves real tokens without saying which vLLM produced them."""
    m = _REAL_ENGINE.fullmatch((engine or "").strip())
    return sandbox_vllm(m.group("version")) if m else SANDBOX_SIMULATED


def source_label() -> str:
    """The label of what this process talks to now: the sandbox (by its engine) or AWS."""
    if sandbox_url():
        return label_for_engine(sandbox_engine_label())
    return AWS
