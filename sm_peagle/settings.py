"""Every `PEAGLE_*` environment variable, the cache and state directories, and poll intervals.

This is the only module that reads a `PEAGLE_*` variable (a test holds that). Values are read
when asked for, not at import, so a test or the sandbox can change the environment between
calls. Pure code (planning/, vllm/) takes these values as arguments and writes nothing.

`VARIABLES` is the table the docs' settings reference is generated from.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

__all__ = [
    "AWS",
    "VARIABLES",
    "cache_dir",
    "debug",
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
