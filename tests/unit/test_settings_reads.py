"""Every environment read of the product goes through a settings module, and one function
says which endpoint URL an AWS service talks to.

- By AST over sm_peagle/: `os.environ`, `os.environb`, `os.getenv`, `os.putenv`,
  `os.unsetenv` (under any alias of `os`) and `from os import environ`/`getenv` appear only
  in `sm_peagle/settings.py` and the serving container's `sm_peagle/container/settings.py`
  (the training job's own script, `sm_peagle/training/source/`, runs where peagle is not
  installed, and is not the product).
- `settings.aws_endpoint_url(service)` follows botocore's order (AWS_ENDPOINT_URL_<SERVICE>
  over AWS_ENDPOINT_URL, neither under AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true), with the
  variable named as the installed botocore names it; "only the runtime API is redirected"
  is decided once, by `settings.runtime_only_redirected()`.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sm_peagle import settings

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "sm_peagle"
SETTINGS_MODULES = frozenset({"sm_peagle/settings.py", "sm_peagle/container/settings.py"})
# A program of its own, not the product: the training job's script, shipped as the job's
# `code` channel and run in the training image, where peagle is not installed (it reads
# the job's environment the way a SageMaker container does; it cannot import settings).
OWN_PROGRAMS = ("sm_peagle/training/source/",)
ENV_NAMES = frozenset({"environ", "environb", "getenv", "getenvb", "putenv", "unsetenv"})
# Uses outside the settings modules that another change removes, each with the reason. A
# stale entry fails (test_allowed_uses_still_exist), so each goes when its use goes.
ALLOWED: dict[tuple[str, str], str] = {}


def environment_uses(source: str) -> list[str]:
    """Each statement (as written) that touches the process environment: an attribute of
    the `os` module (under any alias) named in ENV_NAMES, or such a name imported from
    `os`."""
    tree = ast.parse(source)
    os_names = {"os"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            os_names |= {a.asname or a.name for a in node.names if a.name == "os"}
    out: list[str] = []
    statements = sorted(
        (n for n in ast.walk(tree) if isinstance(n, ast.stmt)),
        key=lambda n: (n.lineno, n.col_offset),
    )
    for stmt in statements:
        hit = False
        if isinstance(stmt, ast.ImportFrom) and stmt.module == "os":
            hit = any(a.name in ENV_NAMES for a in stmt.names)
        else:
            for node in _own_nodes(stmt):
                if (
                    isinstance(node, ast.Attribute)
                    and node.attr in ENV_NAMES
                    and isinstance(node.value, ast.Name)
                    and node.value.id in os_names
                ):
                    hit = True
        if hit:
            out.append(ast.unparse(stmt).splitlines()[0])
    return out


def _own_nodes(stmt: ast.stmt) -> list[ast.AST]:
    """The nodes of `stmt` that are not inside a nested statement (each statement is
    reported once, by itself, not by every block around it)."""
    out: list[ast.AST] = []
    todo: list[ast.AST] = [stmt]
    while todo:
        node = todo.pop()
        out.append(node)
        todo.extend(c for c in ast.iter_child_nodes(node) if not isinstance(c, ast.stmt))
    return out


def _uses() -> dict[tuple[str, str], str]:
    found = {}
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel in SETTINGS_MODULES or rel.startswith(OWN_PROGRAMS):
            continue
        for stmt in environment_uses(path.read_text()):
            found[(rel, stmt)] = rel
    return found


def test_no_environment_read_outside_the_settings_modules() -> None:
    assert {k for k in _uses() if k not in ALLOWED} == set()


def test_allowed_uses_still_exist() -> None:
    assert set(ALLOWED) <= set(_uses()), set(ALLOWED) - set(_uses())


def test_the_settings_modules_are_where_the_reads_are() -> None:
    for rel in SETTINGS_MODULES:
        assert environment_uses((ROOT / rel).read_text()), rel


def test_the_scanner_sees_every_spelling() -> None:
    src = (
        "import os\nimport os as o\nfrom os import environ, getenv as g\nfrom os import path\n"
        "a = os.environ.get('HOME')\n"
        "b = o.getenv('X')\n"
        "if 'Y' in os.environ:\n    pass\n"
        "def f(env=None):\n    return (os.environ if env is None else env).get('K')\n"
        "os.environ['Z'] = '1'\n"
        "env = dict(os.environ)\n"
        "os.putenv('Q', '1')\n"
        "p = os.path.join('a', 'b')\n"
        "e = env.get('NOT_THE_ENVIRONMENT')\n"
    )
    assert environment_uses(src) == [
        "from os import environ, getenv as g",
        "a = os.environ.get('HOME')",
        "b = o.getenv('X')",
        "if 'Y' in os.environ:",
        "return (os.environ if env is None else env).get('K')",
        "os.environ['Z'] = '1'",
        "env = dict(os.environ)",
        "os.putenv('Q', '1')",
    ]


# -- which endpoint a service talks to ---------------------------------------------------


@pytest.fixture
def clean(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in list(os.environ):
        if name.startswith("AWS_ENDPOINT_URL") or name == "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS":
            monkeypatch.delenv(name)
    return monkeypatch


# The client names peagle makes clients for (grep `client("…"` in sm_peagle), and the
# sagemaker runtime's.
SERVICES = (
    "application-autoscaling",
    "cloudwatch",
    "ecr",
    "iam",
    "logs",
    "pricing",
    "s3",
    "sagemaker",
    "sagemaker-runtime",
    "service-quotas",
    "sts",
)


@pytest.mark.parametrize("service", SERVICES)
def test_the_variable_is_named_as_botocore_names_it(service: str) -> None:
    from botocore.configprovider import ConfiguredEndpointProvider

    provider = ConfiguredEndpointProvider({}, {}, service, environ={})
    expected = provider._get_service_env_var_name()  # botocore's own naming, no public API
    assert settings.endpoint_variable(service) == expected


def test_other_spellings_of_a_service_name_the_same_variable() -> None:
    for spelling in ("sagemaker-runtime", "SageMaker Runtime", "SAGEMAKER_RUNTIME"):
        assert settings.endpoint_variable(spelling) == "AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME"
    assert settings.endpoint_variable("runtime.sagemaker") == "AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME"
    assert settings.endpoint_variable("CLOUDWATCH_LOGS") == "AWS_ENDPOINT_URL_CLOUDWATCH_LOGS"


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, None),
        ({"AWS_ENDPOINT_URL": "http://all"}, "http://all"),
        ({"AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME": "http://rt"}, "http://rt"),
        ({"AWS_ENDPOINT_URL": "http://all", "AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME": "http://rt"},
         "http://rt"),
        ({"AWS_ENDPOINT_URL": "http://all", "AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME": ""},
         "http://all"),
        ({"AWS_ENDPOINT_URL_SAGEMAKER": "http://cp"}, None),
        ({"AWS_ENDPOINT_URL": "http://all", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "TRUE"}, None),
        ({"AWS_ENDPOINT_URL": "http://all", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "1"},
         "http://all"),
    ],
)  # fmt: skip
def test_the_runtime_endpoint_is_the_one_botocore_uses(clean, env, expected) -> None:
    """The expected URL is what a real botocore client resolves for the same environment."""
    import boto3

    for name, value in env.items():
        clean.setenv(name, value)
    assert settings.aws_endpoint_url("sagemaker-runtime") == expected
    session = boto3.session.Session(
        region_name="us-east-1", aws_access_key_id="a", aws_secret_access_key="b"
    )
    resolved = session.client("sagemaker-runtime").meta.endpoint_url
    assert resolved == (expected or "https://runtime.sagemaker.us-east-1.amazonaws.com")


@pytest.mark.parametrize(
    ("env", "only_runtime"),
    [
        ({}, False),
        ({"AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME": "http://rt"}, True),
        ({"AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME": "http://rt", "AWS_ENDPOINT_URL": "http://a"},
         False),
        ({"AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME": "http://rt",
          "AWS_ENDPOINT_URL_SAGEMAKER": "http://cp"}, False),
        ({"AWS_ENDPOINT_URL": "http://a"}, False),
        ({"AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME": "http://rt",
          "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "true"}, False),
    ],
)  # fmt: skip
def test_only_the_runtime_redirected_is_decided_once(clean, env, only_runtime) -> None:
    for name, value in env.items():
        clean.setenv(name, value)
    assert settings.runtime_only_redirected() is only_runtime


def test_the_components_check_and_bench_ask_the_same_function(clean) -> None:
    """With only the runtime redirected, neither the component check nor bench's endpoint
    check sends a control-plane request; otherwise both do."""
    from sm_peagle.lifecycle.component_targets import components_of
    from sm_peagle.ops.measure_traffic import require_endpoint

    asked: list[str] = []

    class ControlPlane:
        """Records what is asked of it; every call fails like an unreachable server."""

        def __getattr__(self, name: str):
            asked.append(name)
            raise RuntimeError("no server here")

        def client(self, service: str):
            asked.append(f"client({service})")
            return self

    clean.setenv("AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME", "http://127.0.0.1:9")
    assert components_of(ControlPlane(), "ep") is None
    require_endpoint(ControlPlane(), "ep", serving=True)
    assert asked == []
    clean.setenv("AWS_ENDPOINT_URL_SAGEMAKER", "http://127.0.0.1:9")  # the control plane too
    assert components_of(ControlPlane(), "ep") is None
    with pytest.raises(RuntimeError):
        require_endpoint(ControlPlane(), "ep", serving=True)
    assert asked == ["get_paginator", "client(sagemaker)", "describe_endpoint"]


# -- values are read when asked; a child's environment is a new dict ---------------------


def test_standard_variables_are_read_when_asked(clean, tmp_path) -> None:
    clean.delenv("AWS_REGION", raising=False)
    clean.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    assert settings.aws_region() == "eu-west-1"
    clean.setenv("AWS_REGION", "us-west-2")  # AWS_REGION wins, as in botocore
    assert settings.aws_region() == "us-west-2"
    clean.setenv("NO_COLOR", "")
    assert not settings.no_color()
    clean.setenv("NO_COLOR", "1")
    assert settings.no_color()
    for name in (
        "AWS_ACCESS_KEY_ID",
        "AWS_PROFILE",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    ):
        clean.delenv(name, raising=False)  # fmt: skip
    clean.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    clean.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    assert not settings.aws_credentials_hint()
    (tmp_path / "config").write_text("[default]\n")
    clean.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    assert settings.aws_credentials_hint()


def test_a_child_environment_leaves_this_process_alone(monkeypatch) -> None:
    monkeypatch.setenv("PYTHONPATH", "/already")
    monkeypatch.setenv("PEAGLE_DEBUG", "1")
    before = dict(os.environ)
    env = settings.child_environ(
        {"PEAGLE_DEBUG": None, "X_NEW": "1"}, prepend={"PYTHONPATH": "/first"}
    )
    assert env["PYTHONPATH"] == os.pathsep.join(["/first", "/already"])
    assert "PEAGLE_DEBUG" not in env and env["X_NEW"] == "1"
    assert dict(os.environ) == before


def test_locust_workers_get_this_checkout_first_on_their_path(monkeypatch, tmp_path) -> None:
    """bench's locust processes import the same sm_peagle as the CLI that starts them."""
    from sm_peagle.benchmarking import distributed

    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    log = tmp_path / "log"
    proc = distributed._spawn(
        [sys.executable, "-c", "import os, sys; sys.stdout.write(os.environ['PYTHONPATH'])"],
        log,
        tmp_path,
    )
    assert proc.wait(timeout=30) == 0
    assert log.read_text() == os.pathsep.join([str(ROOT), "/elsewhere"])


def test_the_container_reads_through_its_own_settings(monkeypatch) -> None:
    """The entrypoint's defaults come from container/settings.environ(), which imports
    only the standard library (nothing of the product is loaded in the image for it)."""
    from sm_peagle.container import settings as container_settings

    monkeypatch.setenv("SM_VLLM_PORT", "9000")
    assert container_settings.environ()["SM_VLLM_PORT"] == "9000"
    code = (
        "import sys; import sm_peagle.container; before = set(sys.modules); "
        "import sm_peagle.container.settings; print(sorted(set(sys.modules) - before))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == str(["sm_peagle.container.settings"])


@pytest.mark.parametrize(
    ("env", "fix"),
    [
        ({"AWS_ENDPOINT_URL": "http://127.0.0.1:9"},
         "check AWS_ENDPOINT_URL and that its server is running"),
        ({"AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME": "http://127.0.0.1:9/"},
         "check AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME and that its server is running"),
        ({}, "check the endpoint URL and that its server is running"),  # endpoint_url=
    ],
)  # fmt: skip
def test_an_unreachable_endpoint_names_the_variable_that_set_it(clean, env, fix) -> None:
    from botocore.exceptions import EndpointConnectionError

    from sm_peagle.aws import as_peagle_error

    clean.delenv("PEAGLE_SANDBOX_URL", raising=False)
    for name, value in env.items():
        clean.setenv(name, value)
    err = as_peagle_error(EndpointConnectionError(endpoint_url="http://127.0.0.1:9/"))
    assert err is not None and err.remedy == fix
    aws = as_peagle_error(EndpointConnectionError(endpoint_url="https://sts.amazonaws.com/"))
    assert aws is not None and str(aws.remedy).startswith("check the network")
