"""Every `PEAGLE_*` environment variable, the cache and state directories, and poll intervals.

This is the only module that reads a `PEAGLE_*` variable (a test holds that). Values are read
when asked for, not at import, so a test or the sandbox can change the environment between
calls. Pure code (planning/, vllm/) takes these values as arguments and writes nothing.

`VARIABLES` is the table the docs' settings reference is generated from.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
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


# -- the rest of the environment: AWS's, no-color.org's, a child process's --------------
#
# Every environment read of the product goes through this module (tests/unit/
# test_settings_reads.py holds that; the serving container has its own,
# sm_peagle/container/settings.py). Standard variables are read here when asked, as the
# PEAGLE_* ones are, so aws.py, the CLI and the operations never touch os.environ.

__all__ += [
    "aws_credentials_hint",
    "aws_endpoint_url",
    "aws_region",
    "child_environ",
    "configured_endpoint_urls",
    "endpoint_variable",
    "no_color",
    "runtime_only_redirected",
    "runtime_redirected",
]

# botocore's client names whose service id is not the name itself
# (botocore.utils.SERVICE_NAME_ALIASES and CLIENT_NAME_TO_HYPHENIZED_SERVICE_ID_OVERRIDES),
# for the clients peagle makes; a test compares them with the installed botocore.
_SERVICE_IDS = {
    "runtime.sagemaker": "sagemaker-runtime",
    "application-autoscaling": "application-auto-scaling",
    "logs": "cloudwatch-logs",
}


def endpoint_variable(service: str) -> str:
    """`AWS_ENDPOINT_URL_<SERVICE>` for `service`, named as botocore names it: the service
    id, upper case, `_` for `-` and spaces (`sagemaker-runtime`, `SageMaker Runtime` and
    `SAGEMAKER_RUNTIME` are all AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME; `logs` is
    AWS_ENDPOINT_URL_CLOUDWATCH_LOGS)."""
    key = service.strip().lower().replace(" ", "-").replace("_", "-")
    key = _SERVICE_IDS.get(key, key)
    return "AWS_ENDPOINT_URL_" + key.replace("-", "_").upper()


def aws_endpoint_url(service: str) -> str | None:
    """The endpoint URL the environment sends `service`'s requests to; None: AWS's own.

    botocore's order (ConfiguredEndpointProvider): AWS_ENDPOINT_URL_<SERVICE>, then
    AWS_ENDPOINT_URL (an empty value counts as unset); neither when
    AWS_IGNORE_CONFIGURED_ENDPOINT_URLS is `true`. A client given an `endpoint_url`
    (`AwsContext(endpoint_url=…)`) ignores both: `AwsContext.endpoint_url_for` says that.
    The shared config file's `endpoint_url` (botocore's last resort) is not read here."""
    if (os.environ.get("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS") or "").lower() == "true":
        return None
    return os.environ.get(endpoint_variable(service)) or os.environ.get("AWS_ENDPOINT_URL") or None


def configured_endpoint_urls() -> dict[str, str]:
    """Every AWS_ENDPOINT_URL* variable that is set and counts, name -> URL (to name the
    one to check when its server does not answer)."""
    if (os.environ.get("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS") or "").lower() == "true":
        return {}
    return {
        name: value
        for name, value in sorted(os.environ.items())
        if value and (name == "AWS_ENDPOINT_URL" or name.startswith("AWS_ENDPOINT_URL_"))
    }


def runtime_redirected() -> str | None:
    """The URL the SageMaker runtime API (invocations) is sent to when it is not where the
    control plane's requests go (AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME on its own); None
    when both go to the same place."""
    runtime = aws_endpoint_url("sagemaker-runtime")
    return runtime if runtime != aws_endpoint_url("sagemaker") else None


def runtime_only_redirected() -> bool:
    """Only the runtime API is redirected (a local server answering invocations): the
    control plane is still AWS's, which has nothing to say about that server's endpoints."""
    return runtime_redirected() is not None and aws_endpoint_url("sagemaker") is None


def aws_region() -> str | None:
    """The region the environment names: AWS_REGION, else AWS_DEFAULT_REGION (botocore's
    order for the two variables; a profile's region is boto3's to read)."""
    return os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or None


def aws_credentials_hint() -> bool:
    """Cheap guess (no boto3) whether any AWS credentials could be found: a credential
    variable, or a shared credentials or config file."""
    env = os.environ
    if (
        env.get("AWS_ACCESS_KEY_ID")
        or env.get("AWS_PROFILE")
        or env.get("AWS_WEB_IDENTITY_TOKEN_FILE")
        or env.get("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")
        or env.get("AWS_CONTAINER_CREDENTIALS_FULL_URI")
    ):
        return True
    creds = Path(env.get("AWS_SHARED_CREDENTIALS_FILE") or "~/.aws/credentials").expanduser()
    conf = Path(env.get("AWS_CONFIG_FILE") or "~/.aws/config").expanduser()
    return creds.exists() or conf.exists()


def no_color() -> bool:
    """no-color.org: `NO_COLOR` present and not empty turns colour off."""
    return bool(os.environ.get("NO_COLOR"))


def child_environ(
    set_: Mapping[str, str | None] | None = None, *, prepend: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment for a child process: this one's, with `set_` applied (None removes
    a variable) and each `prepend` path put first in its os.pathsep list (PYTHONPATH).
    Built as a new dict: this process's environment is never changed."""
    env = dict(os.environ)
    for name, first in (prepend or {}).items():
        env[name] = os.pathsep.join(filter(None, [first, env.get(name)]))
    for name, value in (set_ or {}).items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env
