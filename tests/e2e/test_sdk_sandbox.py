"""The sandbox's SDK, `peagle_sandbox.start`, `status`, `stop` (they were
`sm_peagle.sandbox_start|status|stop`): every bad option, and a state directory that is a
file, is one SpecError line (exit 2 in the CLI), the same from the SDK and from
`peagle sandbox start`, and nothing starts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import peagle_sandbox
from sm_peagle import SpecError
from tests.plan_helpers import run_cli

pytestmark = pytest.mark.e2e


@pytest.fixture(autouse=True)
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "state"
    monkeypatch.setenv("PEAGLE_STATE_DIR", str(directory))
    return directory


@pytest.fixture
def nothing_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    from peagle_sandbox import manager

    def spawned(*a, **k):
        raise AssertionError("the sandbox was started despite a bad option")

    monkeypatch.setattr(manager, "_spawn", spawned)
    monkeypatch.setattr(manager, "start", spawned)


BAD_OPTIONS = [
    ({"port": 99999}, ["--port", "99999"], "--port: 99999 is not a port (0..65535"),
    ({"port": -1}, ["--port", "-1"], "--port: -1 is not a port"),
    (
        {"step_time_factor": -1.0},
        ["--step-time-factor", "-1"],
        "--step-time-factor: must be a positive number",
    ),
    (
        {"step_time_factor": 0.0},
        ["--step-time-factor", "0"],
        "--step-time-factor: must be a positive number",
    ),
    ({"clock_rate": 0.0}, ["--clock-rate", "0"], "--clock-rate: must be a positive number"),
    ({"clock_rate": -60.0}, ["--clock-rate", "-60"], "--clock-rate: must be a positive number"),
    (
        {"metrics_interval": 0.0},
        ["--metrics-interval", "0"],
        "--metrics-interval: must be a positive number",
    ),
    ({"creating_seconds": -1.0}, ["--creating-seconds", "-1"], "--creating-seconds: must be"),
    ({"updating_seconds": -1.0}, ["--updating-seconds", "-1"], "--updating-seconds: must be"),
    ({"deleting_seconds": -5.0}, ["--deleting-seconds", "-5"], "--deleting-seconds: must be"),
    (
        {"upstream": "localhost-8000"},
        ["--upstream", "localhost-8000"],
        "--upstream: 'localhost-8000' is not an http(s) URL",
    ),
    (
        {"upstream": "localhost:8000"},
        ["--upstream", "localhost:8000"],
        "--upstream: 'localhost:8000' is not an http(s) URL",
    ),
    ({"engine": "tpu"}, ["--engine", "tpu"], "--engine: unknown sandbox engine 'tpu'"),
]


@pytest.mark.parametrize(("options", "argv", "message"), BAD_OPTIONS)
def test_bad_options_are_refused_before_anything_starts(
    capsys, state: Path, nothing_starts, options, argv, message
) -> None:
    with pytest.raises(SpecError) as e:
        peagle_sandbox.start(**options)
    assert e.value.message.startswith(message) and e.value.exit_code == 2
    code, out, err = run_cli(capsys, "sandbox", "start", *argv)
    assert code == 2 and out == ""
    assert err.startswith(f"error: {e.value.message}") and len(err.splitlines()) == 1
    assert not state.exists()  # no state, no log, no lock: nothing was started


def test_unknown_sdk_option_is_refused(nothing_starts) -> None:
    with pytest.raises(SpecError, match="unknown option"):
        peagle_sandbox.start(prot=8080)


def test_use_sandbox_checks_the_same_options(state: Path, nothing_starts) -> None:
    with pytest.raises(SpecError, match="--port: 70000 is not a port"):
        peagle_sandbox.use_sandbox(port=70000)
    assert not state.exists()


def test_state_dir_that_is_a_file_is_a_spec_error_with_a_fix(
    tmp_path: Path, capsys, monkeypatch, nothing_starts
) -> None:
    a_file = tmp_path / "state-file"
    a_file.write_text("")
    for path in (a_file, a_file / "below"):
        monkeypatch.setenv("PEAGLE_STATE_DIR", str(path))
        for call in (peagle_sandbox.start, peagle_sandbox.status, peagle_sandbox.stop):
            with pytest.raises(SpecError) as e:
                call()
            assert e.value.message.startswith(f"PEAGLE_STATE_DIR: {path} is not a directory")
            assert "PEAGLE_STATE_DIR" in (e.value.remedy or "")
        for command in ("start", "status", "stop"):
            code, out, err = run_cli(capsys, "sandbox", command)
            assert code == 2 and out == "", command
            assert err.startswith(f"error: {e.value.message}") and "internal error" not in err
    assert a_file.read_text() == ""


def test_status_and_stop_when_nothing_runs(state: Path, capsys) -> None:
    st = peagle_sandbox.status()
    assert isinstance(st, peagle_sandbox.SandboxState)
    assert not st.running and not st.healthy and st.to_dict()["running"] is False
    stopped = peagle_sandbox.stop()
    assert isinstance(stopped, peagle_sandbox.SandboxStop)
    assert not stopped.stopped and stopped.note == "no sandbox is running"
    code, out, _ = run_cli(capsys, "sandbox", "stop")
    assert code == 0 and out == "sandbox: no sandbox is running\n"


def test_the_sandbox_s_own_results_are_labelled_by_its_engine(state: Path, capsys) -> None:
    """`peagle sandbox status|stop --json` describe the sandbox, whatever this process talks
    to (no --sandbox here): labelled as the SIMULATED sandbox's, never as AWS's."""
    for command in ("status", "stop"):
        code, out, _ = run_cli(capsys, "sandbox", command, "--json")
        assert code == 0 and json.loads(out)["label"] == "SANDBOX (SIMULATED)", command


_USE_AND_STOP = """
import json, peagle_sandbox
from peagle_sandbox import manager

def running():
    return manager.status()["running"]

first = peagle_sandbox.use_sandbox()
second = peagle_sandbox.use_sandbox()  # joins the one that runs
seen = {"first_started": first.started, "second_started": second.started}
with second:
    pass
seen["after_the_joiners_with"] = running()
with first:
    seen["inside_the_starters_with"] = running()
seen["after_the_starters_with"] = running()
seen["stop_again"] = first.stop()["stopped"]
print(json.dumps(seen))
"""


def test_use_sandbox_stops_only_the_sandbox_it_started(state: Path) -> None:
    """`with peagle_sandbox.use_sandbox():` (the README's form) stops on exit the sandbox
    that call started, and leaves alone one it merely joined."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "PEAGLE_STATE_DIR": str(state)}
    try:
        proc = subprocess.run(
            [sys.executable, "-c", _USE_AND_STOP],
            env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout) == {
            "first_started": True,
            "second_started": False,
            "after_the_joiners_with": True,
            "inside_the_starters_with": True,
            "after_the_starters_with": False,
            "stop_again": False,
        }
    finally:
        subprocess.run(
            [sys.executable, "-m", "sm_peagle.cli", "sandbox", "stop"],
            env=env, capture_output=True, timeout=60,
        )  # fmt: skip
