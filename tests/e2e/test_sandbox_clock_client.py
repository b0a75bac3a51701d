"""The sandbox clock from the SDK and the CLI (issue 36): `peagle_sandbox.clock()`,
`SandboxClient.clock`, `peagle sandbox clock [show|advance|freeze|resume]`, against a fake
sandbox that speaks the clock's wire protocol and records every request it gets:

- `GET /_peagle/clock` answers the state; `POST` with exactly one action (`advance`
  seconds, `freeze`, `resume` with an optional `rate`) answers the new state;
- every duration form reaches the sandbox as the seconds it means (15m = 900 s, 2d =
  172800 s, 1h30m = 5400 s), and the state renders as one line;
- a bad duration or rate is a SpecError (exit 2, one line) and nothing is sent, even with
  no sandbox running; no sandbox is the SandboxError `peagle sandbox env` gives (exit 1);
- `peagle sandbox start`: `--clock-rate` and PEAGLE_SANDBOX_CLOCK_RATE (an explicit option
  wins; a bad setting is refused before anything starts) reach the server as
  `--clock-rate`, and the deprecated `--time-scale` / `time_scale=` warn and reach it as
  `--step-time-factor`.
The same against the real sandbox: tests/e2e/test_sandbox_clock_e2e.py.
"""

from __future__ import annotations

import json
import math
import os
import threading
import warnings
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

import peagle_sandbox
from peagle_sandbox import manager
from sm_peagle.errors import PeagleError, SpecError
from tests.plan_helpers import run_cli

pytestmark = pytest.mark.e2e

# The fake sandbox's clock starts here, frozen, two days ahead of a wall clock it pins.
START = datetime(2026, 12, 1, 18, 0, 0, tzinfo=UTC)
DAY = 86400.0


class FakeClock:
    """The server side of the protocol (design: issue 36), kept to what the client needs:
    a state document, and one action per POST. Records (method, path, body) of each
    request."""

    def __init__(self) -> None:
        self.epoch = START.timestamp()
        self.rate = 1.0
        self.frozen = True
        self.ahead = 2 * DAY
        self.requests: list[tuple[str, str, Any]] = []
        self.status = 200  # what every answer is (404: a server without a clock)
        self.lock = threading.Lock()

    def doc(self) -> dict[str, Any]:
        return {
            "now": datetime.fromtimestamp(self.epoch, tz=UTC).isoformat(timespec="seconds"),
            "epoch": self.epoch,
            "rate": self.rate,
            "frozen": self.frozen,
            "ahead_seconds": self.ahead,
            "real_time_holds": 0,
        }

    def act(self, body: Any) -> tuple[int, dict[str, Any]]:
        if not isinstance(body, dict) or len(set(body) - {"rate"}) > 1:
            return 400, {"error": "exactly one action: advance, freeze, resume or rate"}
        if "advance" in body:
            self.epoch += body["advance"]
            self.ahead += body["advance"]
        elif body.get("freeze") is True:
            self.frozen = True
        elif body.get("resume") is True:
            self.frozen = False
            self.rate = body.get("rate", self.rate)
        else:
            return 400, {"error": f"unknown action {sorted(body)}"}
        return 200, self.doc()


@pytest.fixture
def fake() -> Iterator[tuple[FakeClock, str]]:
    clock = FakeClock()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _answer(self, code: int, doc: dict[str, Any]) -> None:
            data = json.dumps(doc).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            with clock.lock:
                clock.requests.append(("GET", self.path, None))
                if clock.status != 200 or self.path != "/_peagle/clock":
                    return self._answer(404, {"error": "not found"})
                self._answer(200, clock.doc())

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            with clock.lock:
                body = json.loads(raw)
                clock.requests.append(("POST", self.path, body))
                if clock.status != 200 or self.path != "/_peagle/clock":
                    return self._answer(404, {"error": "not found"})
                self._answer(*clock.act(body))

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield clock, f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(autouse=True)
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    directory = tmp_path / "state"
    monkeypatch.setenv("PEAGLE_STATE_DIR", str(directory))
    monkeypatch.delenv("PEAGLE_SANDBOX_CLOCK_RATE", raising=False)
    # The CLI run in this process (`peagle --sandbox ls`) points the process environment at
    # the sandbox (PEAGLE_SANDBOX=1, ...), as a command's own process may: put it back, or
    # every later test in this worker would talk to a sandbox.
    before = dict(os.environ)
    yield directory
    os.environ.clear()
    os.environ.update(before)


@pytest.fixture
def running(fake: tuple[FakeClock, str], monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    """The fake is the running sandbox, as `peagle sandbox status` would say."""
    clock, url = fake
    doc = {"running": True, "healthy": True, "url": url, "pid": 4242}
    monkeypatch.setattr(manager, "status", lambda: dict(doc, engine_label="SIMULATED"))
    return clock


# -- the SDK ----------------------------------------------------------------------------------
def test_state_reads_the_sandbox_clock(running: FakeClock) -> None:
    state = peagle_sandbox.clock().state()
    assert isinstance(state, peagle_sandbox.ClockState)
    assert state.now == START and state.rate == 1.0 and state.frozen
    assert state.ahead_seconds == 2 * DAY
    assert state.to_dict() == running.doc()
    assert running.requests == [("GET", "/_peagle/clock", None)]


@pytest.mark.parametrize(
    ("duration", "seconds"),
    [
        ("15m", 15 * 60),
        ("2d", 2 * DAY),
        ("1h30m", 90 * 60),
        ("45s", 45),
        ("90", 90),
        (45, 45),
        (2.5, 2.5),
        (timedelta(hours=1), 3600),
    ],
    ids=str,
)
def test_advance_sends_the_seconds_the_duration_means(
    running: FakeClock, duration: Any, seconds: float
) -> None:
    state = peagle_sandbox.clock().advance(duration)
    assert running.requests == [("POST", "/_peagle/clock", {"advance": seconds})]
    assert state.now == START + timedelta(seconds=seconds)


def test_freeze_and_resume_send_one_action_each(running: FakeClock) -> None:
    handle = peagle_sandbox.clock()
    assert not handle.resume().frozen
    assert handle.freeze().frozen
    resumed = handle.resume(rate=60)
    assert resumed.rate == 60.0 and not resumed.frozen
    assert [body for _, _, body in running.requests] == [
        {"resume": True},
        {"freeze": True},
        {"resume": True, "rate": 60.0},
    ]


BAD_DURATIONS = ["15x", "", "m", "-5m", -1, float("nan"), float("inf"), True, None, "3651d"]
BAD_DURATIONS += [timedelta(seconds=-1)]
BAD_RATES = [0, -1, float("nan"), float("inf"), "fast", True]


@pytest.mark.parametrize("duration", BAD_DURATIONS, ids=repr)
def test_a_bad_duration_is_a_spec_error_and_nothing_is_sent(
    running: FakeClock, duration: Any
) -> None:
    handle = peagle_sandbox.clock()
    with pytest.raises(SpecError) as e:
        handle.advance(duration)
    assert e.value.exit_code == 2 and e.value.field == "duration" and e.value.remedy
    assert repr(duration) in e.value.message
    assert running.requests == []


@pytest.mark.parametrize("rate", BAD_RATES, ids=repr)
def test_a_bad_rate_is_a_spec_error_and_nothing_is_sent(running: FakeClock, rate: Any) -> None:
    with pytest.raises(SpecError) as e:
        peagle_sandbox.clock().resume(rate=rate)
    assert e.value.exit_code == 2 and e.value.field == "rate" and e.value.remedy
    assert running.requests == []


def test_no_sandbox_running_is_the_error_every_sandbox_command_gives(capsys) -> None:
    with pytest.raises(PeagleError) as e:
        peagle_sandbox.clock()
    assert type(e.value).__name__ == "SandboxError" and e.value.exit_code == 1
    assert e.value.one_line() == "no sandbox is running (fix: `peagle sandbox start`)"
    for argv in (["clock"], ["clock", "advance", "2d"], ["clock", "freeze"]):
        code, out, err = run_cli(capsys, "sandbox", *argv)
        assert (code, out) == (1, ""), argv
        assert err == "error: no sandbox is running (fix: `peagle sandbox start`)\n"


def test_a_sandbox_without_a_clock_or_refusing_the_body_is_one_error(running: FakeClock) -> None:
    running.status = 404
    with pytest.raises(PeagleError) as e:
        peagle_sandbox.clock().state()
    assert e.value.exit_code == 1 and "has no clock" in e.value.message
    running.status = 200
    from peagle_sandbox.clock_client import SandboxClockHandle

    handle = SandboxClockHandle(peagle_sandbox.clock().url)
    with pytest.raises(SpecError) as bad:
        handle._call({"advance": 1, "freeze": True})  # a body the SDK never sends
    assert "exactly one action" in bad.value.message


def test_the_sandbox_client_has_its_sandbox_s_clock(running: FakeClock, fake) -> None:
    from peagle_sandbox.sandbox_client import SandboxClient

    class Use:  # what use_sandbox returns, as much as the client reads of it
        url = fake[1]
        engine_label = "SIMULATED"

    client = SandboxClient(sandbox=Use(), region="us-east-1")
    assert client.clock.advance("15m").now == START + timedelta(minutes=15)
    assert running.requests == [("POST", "/_peagle/clock", {"advance": 900.0})]


# -- the CLI ----------------------------------------------------------------------------------
LINE = "sandbox clock: 2026-12-01 18:00:00Z, rate 1x (frozen), 2d ahead of real time\n"


def test_clock_shows_one_line_or_the_state_document(running: FakeClock, capsys) -> None:
    for argv in (["clock"], ["clock", "show"]):
        code, out, err = run_cli(capsys, "sandbox", *argv)
        assert (code, out) == (0, LINE), err
    code, out, _ = run_cli(capsys, "sandbox", "clock", "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc.pop("label") == "SANDBOX (SIMULATED)"
    assert doc == running.doc()
    assert {r[0] for r in running.requests} == {"GET"}


def test_clock_advance_freeze_resume(running: FakeClock, capsys) -> None:
    code, out, err = run_cli(capsys, "sandbox", "clock", "advance", "1h30m")
    assert code == 0, err
    assert (
        out == "sandbox clock: 2026-12-01 19:30:00Z, rate 1x (frozen), 2d1h30m ahead of real time\n"
    )
    code, out, err = run_cli(capsys, "sandbox", "clock", "resume", "--rate", "60")
    assert code == 0, err
    assert (
        out
        == "sandbox clock: 2026-12-01 19:30:00Z, rate 60x (running), 2d1h30m ahead of real time\n"
    )
    code, out, err = run_cli(capsys, "sandbox", "clock", "freeze", "--json")
    assert code == 0 and json.loads(out)["frozen"] is True
    assert [body for _, _, body in running.requests] == [
        {"advance": 5400.0},
        {"resume": True, "rate": 60.0},
        {"freeze": True},
    ]


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["advance", "15x"], "duration '15x'"),
        (["advance", "--", "-5m"], "duration '-5m'"),
        (["advance", "3651d"], "3650d"),
        (["resume", "--rate", "0"], "--rate: must be a positive number"),
        (["resume", "--rate", "fast"], "--rate: must be a positive number"),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else v,
)
def test_bad_input_exits_2_on_one_line_and_sends_nothing(
    running: FakeClock, capsys, argv: list[str], says: str
) -> None:
    code, out, err = run_cli(capsys, "sandbox", "clock", *argv)
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1 and err.startswith("error: ") and "(fix: " in err
    assert says in err
    assert running.requests == []


def test_bad_input_is_refused_before_looking_for_a_sandbox(capsys) -> None:
    """Nothing runs: a bad duration is still exit 2 (bad input), not 'no sandbox'."""
    code, _, err = run_cli(capsys, "sandbox", "clock", "advance", "soon")
    assert code == 2 and "duration 'soon'" in err


def test_the_line_says_behind_when_the_sandbox_is_behind(running: FakeClock, capsys) -> None:
    running.ahead = -300.0
    _, out, _ = run_cli(capsys, "sandbox", "clock")
    assert out.endswith(", rate 1x (frozen), 5m behind real time\n")
    running.ahead = 0.2
    _, out, _ = run_cli(capsys, "sandbox", "clock")
    assert out.endswith(", rate 1x (frozen), on real time\n")


# -- start: --clock-rate, the setting, the deprecated --time-scale ---------------------------
class Spawned(Exception):
    """Raised in place of starting the server: the test has the command line it got."""


@pytest.fixture
def argv_of_server(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The command line each start would run the server with (nothing is run)."""
    seen: list[list[str]] = []

    def popen(cmd: list[str], **_: Any) -> Any:
        seen.append([str(c) for c in cmd])
        raise Spawned()

    monkeypatch.setattr(manager.subprocess, "Popen", popen)
    return seen


def _after(argv: list[str], flag: str) -> str | None:
    return argv[argv.index(flag) + 1] if flag in argv else None


def test_clock_rate_reaches_the_server(argv_of_server, capsys) -> None:
    with pytest.raises(Spawned):
        peagle_sandbox.start(clock_rate=60)
    code, _, _ = run_cli(capsys, "sandbox", "start", "--clock-rate", "60")
    assert code != 0  # the fake Popen refused to run it
    assert [float(_after(a, "--clock-rate") or "nan") for a in argv_of_server] == [60.0, 60.0]


def test_the_setting_is_the_default_and_an_option_wins(
    argv_of_server, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    monkeypatch.setenv("PEAGLE_SANDBOX_CLOCK_RATE", "600")
    with pytest.raises(Spawned):
        peagle_sandbox.start()
    with pytest.raises(Spawned):
        peagle_sandbox.start(clock_rate=2)
    with pytest.raises(Spawned):
        peagle_sandbox.use_sandbox()
    with pytest.raises(Spawned):  # `peagle --sandbox <command>` starting one
        from peagle_sandbox.sdk import cli_activate

        cli_activate()
    rates = [float(_after(a, "--clock-rate") or "nan") for a in argv_of_server]
    assert rates == [600.0, 2.0, 600.0, 600.0]


@pytest.mark.parametrize("value", ["fast", "0", "-60", "nan"])
def test_a_bad_setting_is_refused_before_anything_starts(
    argv_of_server, monkeypatch: pytest.MonkeyPatch, state: Path, capsys, value: str
) -> None:
    monkeypatch.setenv("PEAGLE_SANDBOX_CLOCK_RATE", value)
    with pytest.raises(SpecError) as e:
        peagle_sandbox.start()
    assert e.value.message.startswith("PEAGLE_SANDBOX_CLOCK_RATE: must be a positive number")
    for argv in (["sandbox", "start"], ["--sandbox", "ls"]):
        code, out, err = run_cli(capsys, *argv)
        assert code == 2 and out == "" and err == f"error: {e.value.one_line()}\n", argv
    assert argv_of_server == [] and not state.exists()


def test_the_old_time_scale_warns_and_reaches_the_server_as_step_time_factor(
    argv_of_server, capsys
) -> None:
    code, _, err = run_cli(capsys, "sandbox", "start", "--time-scale", "0.5")
    assert err.splitlines()[0] == (
        "warning: --time-scale is deprecated, use --step-time-factor (removed in the next release)"
    )
    deprecated = r"time_scale=\) is deprecated: use step_time_factor="
    with pytest.warns(FutureWarning, match=deprecated) as record, pytest.raises(Spawned):
        peagle_sandbox.start(time_scale=0.5)
    assert record[0].filename == __file__  # it points at the caller's line
    with pytest.raises(Spawned):
        peagle_sandbox.start(step_time_factor=0.5)
    for argv in argv_of_server:
        assert _after(argv, "--step-time-factor") == "0.5" and "--time-scale" not in argv
    assert len(argv_of_server) == 3


def test_old_and_new_spelling_together_are_refused(argv_of_server, capsys) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        with pytest.raises(TypeError, match="give step_time_factor= only"):
            peagle_sandbox.start(time_scale=1.0, step_time_factor=2.0)
    code, _, err = run_cli(
        capsys, "sandbox", "start", "--time-scale", "1", "--step-time-factor", "2"
    )
    assert code == 2 and "give --step-time-factor only" in err
    assert argv_of_server == []


def test_rate_and_duration_rules_are_the_documented_ones() -> None:
    """The parsing the SDK relies on: days, hours, minutes, seconds."""
    from peagle_sandbox.clock_client import check_duration, check_rate

    assert check_duration("2d12h") == 2.5 * DAY
    assert check_duration("0") == 0.0
    assert check_rate("60") == 60.0 and math.isclose(check_rate(0.5), 0.5)


def test_results_record_the_clock_rate_and_step_time_factor(
    state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A result made on the sandbox records how the sandbox ran (its target's `extra`, from
    the state file the server writes, which names the step-time factor twice for a
    release): the clock rate, and the step-time factor once, by its new name."""
    from peagle_sandbox.peagle_plugin import PLUGIN

    url = "http://127.0.0.1:9"
    state.mkdir()
    (state / "sandbox.json").write_text(
        json.dumps(
            {
                "url": url,
                "started_at": "2026-12-01T18:00:00+00:00",
                "creating_seconds": 900.0,
                "metrics_interval": 10.0,
                "step_time_factor": 0.5,
                "time_scale": 0.5,
                "clock_rate": 60.0,
            }
        )
    )
    monkeypatch.setenv("PEAGLE_SANDBOX_URL", url)
    current = PLUGIN.target().current()
    assert current is not None
    assert current.extra == {
        "started_at": "2026-12-01T18:00:00+00:00",
        "creating_seconds": 900.0,
        "metrics_interval": 10.0,
        "step_time_factor": 0.5,
        "clock_rate": 60.0,
    }


def test_updating_and_deleting_seconds_reach_the_server(argv_of_server, capsys) -> None:
    """How long endpoints stay Updating and Deleting, in sandbox seconds: the server's own
    flags, from the SDK and the CLI alike."""
    with pytest.raises(Spawned):
        peagle_sandbox.start(updating_seconds=600, deleting_seconds=90)
    code, _, _ = run_cli(
        capsys, "sandbox", "start", "--updating-seconds", "600", "--deleting-seconds", "90"
    )
    assert code != 0  # the fake Popen refused to run it
    for argv in argv_of_server:
        assert float(_after(argv, "--updating-seconds") or "nan") == 600.0
        assert float(_after(argv, "--deleting-seconds") or "nan") == 90.0
    assert len(argv_of_server) == 2
