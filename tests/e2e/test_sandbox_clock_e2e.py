"""The sandbox clock end to end (issue 36): the real `peagle` CLI in subprocesses against
the real sandbox server, with its own HOME and state directory.

`peagle sandbox start --clock-rate 60` runs the clock at a sandbox minute per real second;
`clock freeze` stops it; `clock advance 2d` moves it exactly two days; `clock` shows it;
a second `start` with another rate joins the sandbox as it is and says so; `clock resume
--rate 1` runs it again. The SDK's `peagle_sandbox.clock()` reads the same clock.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.e2e

TWO_DAYS = 2 * 86400.0


class Peagle:
    """`peagle` in subprocesses with its own HOME and state directory."""

    def __init__(self, root: Path) -> None:
        self.state = root / "state"
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "PEAGLE_"))}
        (root / "home").mkdir()
        self.env.update(HOME=str(root / "home"), PEAGLE_STATE_DIR=str(self.state), COLUMNS="250")

    def __call__(self, *args: str, code: int = 0) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [sys.executable, "-m", "sm_peagle.cli", *args],
            env=self.env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert proc.returncode == code, f"peagle {' '.join(args)}\n{proc.stderr}{proc.stdout}"
        assert "Traceback" not in proc.stderr, proc.stderr
        return proc

    def json(self, *args: str) -> dict[str, Any]:
        return json.loads(self(*args, "--json").stdout)


@pytest.fixture
def peagle(tmp_path: Path) -> Iterator[Peagle]:
    p = Peagle(tmp_path)
    yield p
    subprocess.run(
        [sys.executable, "-m", "sm_peagle.cli", "sandbox", "stop"],
        env=p.env, capture_output=True, timeout=60,
    )  # fmt: skip


def test_start_fast_freeze_advance_show_and_resume(
    peagle: Peagle, monkeypatch: pytest.MonkeyPatch
) -> None:
    started = peagle.json("sandbox", "start", "--clock-rate", "60", "--step-time-factor", "0.5")
    assert started["clock_rate"] == 60.0
    running = peagle.json("sandbox", "clock")
    assert running["rate"] == 60.0 and running["frozen"] is False

    frozen = peagle.json("sandbox", "clock", "freeze")
    assert frozen["frozen"] is True and frozen["rate"] == 60.0
    advanced = peagle.json("sandbox", "clock", "advance", "2d")
    # Frozen: sandbox time moved by the advance alone, to the millisecond it reports.
    assert advanced["frozen"] is True
    assert advanced["epoch"] == pytest.approx(frozen["epoch"] + TWO_DAYS, abs=0.002)

    line = peagle("sandbox", "clock").stdout
    assert line.startswith("sandbox clock: ") and ", rate 60x (frozen), 2d" in line, line
    assert line.endswith(" ahead of real time\n"), line

    # The SDK reads the same clock.
    monkeypatch.setenv("PEAGLE_STATE_DIR", str(peagle.state))
    import peagle_sandbox

    state = peagle_sandbox.clock().state()
    assert state.frozen and state.rate == 60.0
    assert state.now.timestamp() == pytest.approx(advanced["epoch"], abs=0.002)

    # Joining with another rate joins it as it is, and says how to change it.
    joined = peagle("sandbox", "start", "--clock-rate", "1")
    assert "already running" in joined.stderr
    assert "clock runs at 60x, not 1x" in joined.stderr, joined.stderr
    assert peagle.json("sandbox", "clock")["rate"] == 60.0

    resumed = peagle.json("sandbox", "clock", "resume", "--rate", "1")
    assert resumed["frozen"] is False and resumed["rate"] == 1.0
    # Sandbox time never goes back: still the two days (and a little) ahead.
    assert resumed["epoch"] >= advanced["epoch"]


def test_bad_input_against_a_running_sandbox_changes_nothing(peagle: Peagle) -> None:
    peagle("sandbox", "start")
    before = peagle.json("sandbox", "clock", "freeze")
    for args in (("advance", "2x"), ("advance", "--", "-1d"), ("resume", "--rate", "0")):
        proc = peagle("sandbox", "clock", *args, code=2)
        assert proc.stdout == "" and proc.stderr.startswith("error: "), proc.stderr
        assert len(proc.stderr.splitlines()) == 1
    after = peagle.json("sandbox", "clock")
    assert after["frozen"] is True and after["epoch"] == before["epoch"]
