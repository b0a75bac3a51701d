"""A plugin written only against `sm_peagle.contract` works: the fixture in
tests/fixtures/example_plugin adds one command group (`peagle hello`) and one model
(`example-tiny`), and declares one setting. peagle finds it by its entry point alone.

Each case runs the installed `peagle` in a fresh process with the fixture's directory on
PYTHONPATH (its dist-info carries the entry point), as a user's pip install would.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.e2e.test_cli_fast_path import peagle_script

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "example_plugin"


def run(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "PEAGLE_"))}
    path = os.pathsep.join(p for p in (str(FIXTURE), os.environ.get("PYTHONPATH", "")) if p)
    base.update(
        PYTHONPATH=path,
        HOME=str(tmp_path),
        PEAGLE_CACHE_DIR=str(tmp_path / "cache"),
        PEAGLE_STATE_DIR=str(tmp_path / "state"),
        **env,
    )
    return subprocess.run(
        [str(peagle_script()), *args], capture_output=True, text=True, env=base, timeout=120
    )


def test_the_fixture_imports_only_the_contract() -> None:
    # The premise of every case below: the plugin knows nothing of peagle but the contract.
    for path in (FIXTURE / "peagle_example").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("sm_peagle"):
                assert node.module == "sm_peagle.contract", (path.name, node.module)
            if isinstance(node, ast.Import):
                assert not any(a.name.startswith("sm_peagle") for a in node.names), path.name


def test_help_lists_the_plugin_command_without_importing_it(tmp_path: Path) -> None:
    log = tmp_path / "imports.log"
    done = run(tmp_path, "--help", EXAMPLE_IMPORT_LOG=str(log))
    assert done.returncode == 0, done.stderr
    line = next(x for x in done.stdout.splitlines() if x.strip().startswith("hello "))
    assert "Greet someone (the example plugin)." in line
    assert not log.exists()  # listed from its declaration: its code was not imported


def test_the_plugin_command_runs_in_both_output_modes(tmp_path: Path) -> None:
    log = tmp_path / "imports.log"
    done = run(tmp_path, "hello", "say", "ada", EXAMPLE_IMPORT_LOG=str(log))
    assert (done.returncode, done.stdout, done.stderr) == (0, "hello ada\n", "")
    assert log.read_text() == "peagle_example.cli imported\n"
    as_json = run(tmp_path, "--json", "hello", "say", "ada")
    assert as_json.returncode == 0, as_json.stderr
    doc = json.loads(as_json.stdout)
    assert doc["greeting"] == "hello ada"
    assert doc["label"] == "AWS"  # no target: the plugin's command talks to nothing else


def test_the_plugin_reads_its_declared_setting(tmp_path: Path) -> None:
    done = run(tmp_path, "hello", "say", "ada", PEAGLE_EXAMPLE_GREETING="ahoy")
    assert (done.returncode, done.stdout) == (0, "ahoy ada\n"), done.stderr


def test_the_plugin_model_plans_like_a_catalog_model(tmp_path: Path) -> None:
    done = run(tmp_path, "plan", "example-tiny", "--json")
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    # The plan's requests carry what the plugin declared: its S3 weights and its head.
    text = json.dumps(plan)
    assert "s3://example-bucket/tiny-llama/" in text
    assert "s3://example-bucket/tiny-head/" in text


def test_a_plugin_for_another_contract_is_left_out_with_a_warning(tmp_path: Path) -> None:
    done = run(tmp_path, "hello", "say", "ada", EXAMPLE_CONTRACT="99")
    assert done.returncode == 2
    assert done.stderr.splitlines()[0] == (
        "warning: plugin 'example' was written for plugin contract 99, this peagle speaks 1: "
        "left out (upgrade the plugin)"
    )
    assert "No such command 'hello'" in done.stderr
    assert "Traceback" not in done.stderr
