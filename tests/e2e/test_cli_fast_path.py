"""The installed CLI in fresh processes: `peagle plan` and `--help` import neither boto3
nor rich, and plan works with no AWS configuration at all (no env, empty HOME)."""

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
NO_HEAVY_IMPORTS = (
    "import sys; from sm_peagle.cli.app import main; code = main({argv!r}); "
    "heavy = [m for m in sys.modules if m.split('.')[0] in "
    "('boto3', 'botocore', 'rich', 'peagle_sandbox', 'moto')]; "
    "assert not heavy, heavy; sys.exit(code)"
)


@pytest.mark.parametrize(
    "argv",
    [["plan", "gpt-oss-20b", "--json"], ["--help"], ["plan", "--help"]],
    ids=["plan", "help", "plan-help"],
)
def test_fast_path_imports_neither_boto3_nor_rich(argv, tmp_path) -> None:
    result = subprocess.run(
        [sys.executable, "-c", NO_HEAVY_IMPORTS.format(argv=argv)],
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
