"""Every `PEAGLE_*` environment variable, the cache and state directories, and poll intervals.

This is the only module that reads a `PEAGLE_*` variable (a test holds that). Values are read
when asked for, not at import, so a test or the sandbox can change the environment between
calls. Pure code (planning/, vllm/) takes these values as arguments and writes nothing.

`VARIABLES` is the table the docs' settings reference is generated from.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = [
    "AWS",
    "VARIABLES",
    "cache_dir",
    "debug",
    "env_flag",
    "export",
    "foreign_variables",
    "get",
    "is_own",
    "poll_seconds",
    "plugin_value",
    "pypi_url",
    "role_arn",
    "state_dir",
    "target_name",
    "truthy",
]

# name -> what it does: peagle's own variables. A plugin declares its own
# (`contract.Setting`), and the settings reference lists both.
VARIABLES: dict[str, str] = {
    "PEAGLE_CACHE_DIR": "where JumpStart specs and botocore shape data are cached "
    "(default $XDG_CACHE_HOME/peagle, else ~/.cache/peagle)",
    "PEAGLE_STATE_DIR": "where peagle and its plugins keep state and logs "
    "(default $XDG_STATE_HOME/peagle, else ~/.local/state/peagle)",
    "PEAGLE_DEBUG": "1: an unexpected error prints its traceback instead of one line",
    "PEAGLE_POLL_SECONDS": "seconds between status polls while waiting (default 5, growing "
    "to 30; a local target may set less)",
    "PEAGLE_ROLE_ARN": "the SageMaker execution role when the spec names none",
    "PEAGLE_PYPI_URL": "the package index doctor asks for the newest vLLM (its JSON "
    "API, <url>/pypi/vllm/json; default https://pypi.org)",
    "PEAGLE_TARGET": "set by a target plugin when it points this process at itself (instead "
    "of AWS): the target's name; peagle asks that plugin what it talks to",
    "PEAGLE_LOCUST_ENDPOINT": "internal: bench's locust driver passes its run to the locustfile "
    "(also _REGION, _DATASET, _MAX_TOKENS, _TEMPERATURE, _REQUESTS, _OUT, _ACCEPTANCE_WAIT)",
    "PEAGLE_VLLM_VERSION": "container entrypoint: the vLLM version the image runs",
    "PEAGLE_OPT_ML_ROOT": "container entrypoint: the directory standing for /opt/ml",
}


def get(name: str, default: str | None = None) -> str | None:
    """The raw value of a declared variable (KeyError for an undeclared name: declare it
    in VARIABLES first, so the settings reference stays complete)."""
    if not is_own(name):
        raise KeyError(f"{name} is not a declared peagle setting")
    return os.environ.get(name, default)


def truthy(value: str | None) -> bool:
    """A switch variable's value read as on/off (1, true, yes, on)."""
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def env_flag(name: str) -> bool:
    return truthy(get(name))


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


def role_arn() -> str | None:
    return get("PEAGLE_ROLE_ARN") or None


def target_name() -> str | None:
    """The plugin target this process talks to instead of AWS (its name), or None."""
    return get("PEAGLE_TARGET") or None


def is_own(name: str) -> bool:
    """Whether `name` is one of peagle's variables (the declared ones, and the locust
    driver's internal PEAGLE_LOCUST_* family)."""
    return name in VARIABLES or name.startswith("PEAGLE_LOCUST_")


def foreign_variables() -> list[str]:
    """The `PEAGLE_*` variables set that are not peagle's own: a plugin's, or a typo."""
    return sorted(k for k in os.environ if k.startswith("PEAGLE_") and not is_own(k))


def plugin_value(name: str, default: str | None = None) -> str | None:
    """The value of a variable a plugin declared (`plugins.setting` checks that it did)."""
    return os.environ.get(name, default)


def export(name: str, value: str) -> None:
    """Set a variable for the rest of this process and its children: a plugin target's
    option given on the command line (`peagle --local-engine real …`), so the plugin
    reads one source."""
    os.environ[name] = value


# What a result says produced it when that was AWS (SageMaker itself, or an endpoint set
# through AWS_ENDPOINT_URL, which peagle cannot tell from AWS: the "talking to:" line names
# it). A plugin target's results carry the plugin's own labels (`contract.ResultLabel`).
AWS = "AWS"
