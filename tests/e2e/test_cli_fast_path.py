"""The installed CLI in fresh processes: `peagle plan` and `--help` import neither boto3
nor rich (nor what else they do not need), and plan works with no AWS configuration at
all (no env, empty HOME)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.plan_helpers import assert_matches_lmi_optimized, lmi_optimized, load_fixture

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]


def clean_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """A process environment with nothing AWS in it and a HOME with no ~/.aws."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "PEAGLE_"))}
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env.update(HOME=str(home), PEAGLE_CACHE_DIR=str(tmp_path / "cache"), **extra)
    env.pop("XDG_CACHE_HOME", None)
    return env


def peagle_script() -> Path:
    """The console script installed next to this interpreter (not a pyenv shim)."""
    name = "peagle.exe" if os.name == "nt" else "peagle"
    for d in (sysconfig.get_path("scripts"), str(Path(sys.executable).parent)):
        candidate = Path(d) / name
        if candidate.exists():
            return candidate
    pytest.fail(
        "the peagle console script is not installed next to this interpreter: "
        'pip install -e ".[test]"'
    )


# Heavy libraries, and the emulator (the product loads it only when a sandbox command runs).
# An installed plugin's declarations (the module its entry point names, and its package's
# __init__) are read when peagle asks what the plugins contribute: `--help` lists their
# groups and options, so that module (declarations only, on sm_peagle.contract) is the one
# part of a plugin it may load. `plan` asks no plugin anything: it loads none.
HEAVY = ("boto3", "botocore", "rich", "peagle_sandbox", "moto")
DECLARATIONS = ("peagle_sandbox", "peagle_sandbox.peagle_plugin")
NO_HEAVY_IMPORTS = (
    "import sys; from sm_peagle.cli.app import main; code = main({argv!r}); "
    "heavy = [m for m in sys.modules if (m.split('.')[0] in {heavy!r} "
    "and m not in {declarations!r}) or m in {modules!r}]; "
    "assert not heavy, heavy; sys.exit(code)"
)
# What each fast path does not need (issue 35's cold start; benchmarks/cold_start.py
# measures the time): typer's pydantic adapters (built only for a value that needs
# coercing, cli/lazy_commands.py), the K-schedule rules (no --k-schedule given) and
# doctor's network clients (the Client's doctor mixin loads them when doctor runs).
PLAN_SKIPS = ("typer._adapters", "sm_peagle.vllm.dynamic_k", "urllib.request", "ssl")
# `--help` lists the commands without building them: no pydantic, no SDK.
HELP_SKIPS = ("typer._adapters", "pydantic", "sm_peagle.client", "sm_peagle.planning")


@pytest.mark.parametrize(
    ("argv", "modules"),
    [
        (["plan", "gpt-oss-20b", "--json"], (*PLAN_SKIPS, *DECLARATIONS)),
        (["plan", "gpt-oss-20b", "--region", "us-west-2", "--json"], (*PLAN_SKIPS, *DECLARATIONS)),
        (["--help"], HELP_SKIPS),
        (["plan", "--help"], (*HELP_SKIPS, *DECLARATIONS)),
    ],
    ids=["plan", "plan-region", "help", "plan-help"],
)
def test_fast_path_imports_only_what_it_needs(argv, modules, tmp_path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            NO_HEAVY_IMPORTS.format(
                argv=argv, heavy=HEAVY, declarations=DECLARATIONS, modules=modules
            ),
        ],
        cwd=tmp_path,
        env=clean_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout  # something was printed: the plan or the help


def test_plan_with_no_aws_configuration_at_all(tmp_path) -> None:
    result = subprocess.run(
        [str(peagle_script()), "plan", "gpt-oss-20b", "--region", "us-east-1", "--json"],
        cwd=tmp_path,
        env=clean_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    expected = lmi_optimized(load_fixture())
    (variant,) = doc["create_endpoint_config"]["ProductionVariants"]
    assert_matches_lmi_optimized(doc["create_model"], variant, expected)
    assert doc["jumpstart"]["source"] == "snapshot"
    assert not (tmp_path / "home" / ".aws").exists()


def test_plan_output_is_identical_across_processes(tmp_path) -> None:
    """No set or hash ordering leaks into names, hashes or JSON."""
    outputs = []
    for seed in ("1", "2"):
        result = subprocess.run(
            [str(peagle_script()), "plan", "gpt-oss-20b", "-k", "5", "--json"],
            cwd=tmp_path,
            env=clean_env(tmp_path, PYTHONHASHSEED=seed),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 0, result.stderr
        outputs.append(result.stdout)
    assert outputs[0] == outputs[1]


def test_bad_input_from_the_real_script_is_one_line_exit_2(tmp_path) -> None:
    result = subprocess.run(
        [str(peagle_script()), "plan", "gpt-oss-20b", "-k", "abc"],
        cwd=tmp_path,
        env=clean_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stderr.startswith("error: Invalid value for '-k'")
    assert len(result.stderr.splitlines()) == 1 and "Traceback" not in result.stderr
