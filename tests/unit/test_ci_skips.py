"""Under CI a skip is a failure (tests/conftest.py): CI installs everything the suite and
the conformance tier use, so a skip there can only hide something missing. Locally a skip
stays a skip (e.g. the conformance tier without an engine, naming how to install one)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SKIPPING = """
import pytest

def test_needs_something():
    pytest.skip("needs the thing")

@pytest.mark.xfail(reason="known")
def test_known_failure():
    assert False
"""


def run(tmp_path: Path, ci: str | None) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_skipping.py").write_text(SKIPPING)
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    if ci is not None:
        env["CI"] = ci
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "tests.conftest", "-p", "no:cacheprovider",
         "--rootdir", str(tmp_path), str(tmp_path / "test_skipping.py")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


@pytest.mark.parametrize("ci", ["true", "1"])
def test_a_skip_fails_under_ci(tmp_path: Path, ci: str) -> None:
    proc = run(tmp_path, ci)
    assert proc.returncode == 1, proc.stdout
    assert "skipped in CI, where nothing may be: Skipped: needs the thing" in proc.stdout
    assert "1 failed, 1 xfailed" in proc.stdout  # an expected failure is not a skip


def test_a_skip_stays_a_skip_locally(tmp_path: Path) -> None:
    proc = run(tmp_path, None)
    assert proc.returncode == 0, proc.stdout
    assert "1 skipped, 1 xfailed" in proc.stdout
