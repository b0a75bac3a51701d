"""The sandbox checks its own settings and never silently replaces itself (issue 24, item 5).

The real `peagle` CLI in subprocesses, each test with its own state directory:
- every bad `peagle sandbox start` setting (port, step time factor, clock rate, upstream
  URL, creating seconds, metrics interval, engine, a busy port, a state directory that is a
  file or cannot be written) exits 2 on one line `error: … (fix: …)`, leaves no sandbox
  process and writes no state file;
- two `peagle sandbox start` at once end with one sandbox, both exit 0 naming it;
- after `kill -9` of the sandbox, every next command says the sandbox at its URL died and
  its endpoints are gone: `sandbox status` and `stop` report it, `sandbox env` exits 1 with
  the fix `peagle sandbox start`, and `peagle --sandbox <command>` and `sandbox start` say
  they started a new one.
The SDK (`peagle_sandbox.start`) refuses the same settings with the same line.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import peagle_sandbox
from sm_peagle.errors import PeagleError, SpecError
from tests.plan_helpers import run_cli
from tests.sandbox_helpers import sandbox_client

pytestmark = pytest.mark.e2e

SERVER = b"peagle_sandbox.server"


class Cli:
    """`peagle` in subprocesses with its own HOME and state directory under `root`."""

    def __init__(self, root: Path, state: Path | None = None) -> None:
        self.state = state or root / "state"
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "PEAGLE_"))}
        home = root / "home"
        home.mkdir(exist_ok=True)
        self.env.update(
            HOME=str(home),
            PEAGLE_STATE_DIR=str(self.state),
            PEAGLE_CACHE_DIR=str(root / "cache"),
            PEAGLE_POLL_SECONDS="0.2",
            COLUMNS="250",
        )

    def argv(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "sm_peagle.cli", *args]

    def __call__(self, *args: str, code: int = 0) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            self.argv(*args), env=self.env, capture_output=True, text=True, timeout=120
        )
        assert proc.returncode == code, f"peagle {' '.join(args)}\n{proc.stderr}{proc.stdout}"
        assert "Traceback" not in proc.stderr, proc.stderr
        return proc

    def servers(self) -> list[int]:
        """Pids of live sandbox servers whose state file is in this state directory."""
        return servers_of(self.state)

    def stop_all(self) -> None:
        """Leave nothing behind, whatever a failed test left running."""
        subprocess.run(self.argv("sandbox", "stop"), env=self.env, capture_output=True)
        for pid in self.servers():
            os.kill(pid, signal.SIGKILL)


def servers_of(state: Path) -> list[int]:
    mine = str(state / "sandbox.json").encode()
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if SERVER in cmdline and mine in cmdline.split(b"\0") and stat[0] != "Z":
            pids.append(int(entry.name))
    return pids


def wait_gone(pid: int, seconds: float = 10.0) -> None:
    """Until `pid` is no longer a live process (a SIGKILLed sandbox is reaped by init)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return
        if stat[0] == "Z":
            return
        time.sleep(0.05)
    raise AssertionError(f"pid {pid} still alive after SIGKILL")


def one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    """The single stderr line of a refusal, which must be `error: … (fix: …)`."""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("error: ") and "(fix: " in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def cli(tmp_path: Path) -> Iterator[Cli]:
    c = Cli(tmp_path)
    yield c
    c.stop_all()


@pytest.fixture
def busy_port() -> Iterator[int]:
    """A port on 127.0.0.1 that another program listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


# (argv of `peagle sandbox start`, what the one error line must say): the option and the
# value it refused, each time with a fix.
BAD_SETTINGS = [
    (["--port", "99999"], ["--port", "99999"]),
    (["--port", "-1"], ["--port", "-1"]),
    (["--port", "8080x"], ["--port"]),
    (["--step-time-factor", "-1"], ["--step-time-factor", "-1"]),
    (["--step-time-factor", "0"], ["--step-time-factor", "0"]),
    (["--step-time-factor", "nan"], ["--step-time-factor", "nan"]),
    (["--step-time-factor", "inf"], ["--step-time-factor", "inf"]),
    (["--clock-rate", "0"], ["--clock-rate", "0"]),
    (["--clock-rate", "-60"], ["--clock-rate", "-60"]),
    (["--clock-rate", "inf"], ["--clock-rate", "inf"]),
    (["--upstream", "localhost-8000"], ["--upstream", "localhost-8000"]),
    (["--upstream", "localhost:8000"], ["--upstream", "localhost:8000"]),
    (["--upstream", "ftp://example.com"], ["--upstream", "ftp://example.com"]),
    (["--upstream", "http://:8000"], ["--upstream", "http://:8000"]),
    (["--upstream", "http://127.0.0.1:99999"], ["--upstream", "http://127.0.0.1:99999"]),
    (["--creating-seconds", "-1"], ["--creating-seconds", "-1"]),
    (["--creating-seconds", "inf"], ["--creating-seconds", "inf"]),
    (["--updating-seconds", "-1"], ["--updating-seconds", "-1"]),
    (["--deleting-seconds", "nan"], ["--deleting-seconds", "nan"]),
    (["--metrics-interval", "0"], ["--metrics-interval", "0"]),
    (["--metrics-interval", "-5"], ["--metrics-interval", "-5"]),
    (["--engine", "tpu"], ["--engine", "tpu"]),
    (["--no-such-option"], ["--no-such-option"]),
]


@pytest.mark.parametrize(("argv", "names"), BAD_SETTINGS, ids=lambda v: " ".join(v))
def test_a_bad_option_exits_2_with_a_fix_and_starts_nothing(
    cli: Cli, argv: list[str], names: list[str]
) -> None:
    proc = cli("sandbox", "start", *argv, code=2)
    line = one_error_line(proc)
    for name in names:
        assert name in line, line
    assert proc.stdout == ""
    assert cli.servers() == []
    assert not cli.state.exists()  # no state file, no log, no lock: nothing was started


def test_a_busy_port_is_named_and_nothing_starts(cli: Cli, busy_port: int) -> None:
    line = one_error_line(cli("sandbox", "start", "--port", str(busy_port), code=2))
    assert f"port {busy_port}" in line and "in use" in line, line
    assert cli.servers() == []
    assert not (cli.state / "sandbox.json").exists()
    assert not (cli.state / "sandbox.log").exists()  # the server was never spawned


def test_the_sdk_refuses_a_busy_port_with_the_same_line(
    cli: Cli, busy_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PEAGLE_STATE_DIR", str(cli.state))
    with pytest.raises(SpecError) as e:
        peagle_sandbox.start(port=busy_port)
    assert e.value.exit_code == 2
    line = one_error_line(cli("sandbox", "start", "--port", str(busy_port), code=2))
    assert line == f"error: {e.value.message} (fix: {e.value.remedy})"
    assert cli.servers() == []


def state_dirs(tmp_path: Path) -> list[tuple[Path, str]]:
    """(PEAGLE_STATE_DIR, what the error must say about it)."""
    a_file = tmp_path / "a-file"
    a_file.write_text("not a directory\n")
    return [
        (a_file, "is not a directory"),
        (a_file / "below", "is not a directory"),
        # /proc refuses new directories whoever runs the test (root ignores chmod)
        (Path("/proc/peagle-state"), "cannot be written"),
        (Path("/proc/self/peagle-state"), "cannot be written"),
    ]


def test_a_state_dir_that_is_a_file_or_unwritable_exits_2_with_a_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for state, says in state_dirs(tmp_path):
        cli = Cli(tmp_path, state)
        for args in (("sandbox", "start"), ("--sandbox", "ls")):
            line = one_error_line(cli(*args, code=2))
            assert f"PEAGLE_STATE_DIR: {state} {says}" in line, line
            assert "PEAGLE_STATE_DIR" in line.split("(fix: ", 1)[1], line
            assert servers_of(state) == []
        monkeypatch.setenv("PEAGLE_STATE_DIR", str(state))
        with pytest.raises(SpecError) as e:
            peagle_sandbox.start()
        assert line == f"error: {e.value.message} (fix: {e.value.remedy})"
    assert (tmp_path / "a-file").read_text() == "not a directory\n"


def started_url(proc: subprocess.CompletedProcess[str]) -> str:
    """The URL `peagle sandbox start` names on stdout (`pid N  url U  log L`)."""
    words = proc.stdout.split()
    return words[words.index("url") + 1]


def test_two_starts_at_once_end_with_one_sandbox_and_both_name_it(cli: Cli) -> None:
    for _ in range(3):  # a race: a few rounds, each from nothing
        procs = [
            subprocess.Popen(
                cli.argv("sandbox", "start", "--creating-seconds", "1"),
                env=cli.env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(2)
        ]
        done = [(p.wait(timeout=120), *p.communicate()) for p in procs]
        assert [code for code, _, _ in done] == [0, 0], done
        assert all("Traceback" not in err for _, _, err in done)
        runs = cli.servers()
        assert len(runs) == 1, runs
        status = json.loads(cli("sandbox", "status", "--json").stdout)
        assert status["running"] and status["healthy"] and status["pid"] == runs[0]
        urls = [started_url(subprocess.CompletedProcess([], c, o, e)) for c, o, e in done]
        assert urls == [status["url"]] * 2
        joined = [err for _, _, err in done if "already running" in err]
        assert len(joined) == 1, done
        assert f"already running at {status['url']}" in joined[0]
        assert "stopped sandbox" in cli("sandbox", "stop").stdout
        assert cli.servers() == []


def test_start_while_running_with_the_same_port_joins_it(cli: Cli) -> None:
    first = cli("sandbox", "start")
    port = started_url(first).rsplit(":", 1)[1]
    again = cli("sandbox", "start", "--port", port)  # its own port: not "in use"
    assert started_url(again) == started_url(first)
    assert f"already running at {started_url(first)}" in again.stderr
    assert len(cli.servers()) == 1


def kill_9(cli: Cli) -> dict[str, Any]:
    """SIGKILL the running sandbox (its state file stays behind); its status before."""
    status = json.loads(cli("sandbox", "status", "--json").stdout)
    os.kill(status["pid"], signal.SIGKILL)
    wait_gone(status["pid"])
    return status


def died(url: str) -> str:
    return f"the sandbox at {url} died; its endpoints are gone"


def test_after_kill_9_every_command_says_the_sandbox_died(cli: Cli) -> None:
    cli("sandbox", "start", "--creating-seconds", "0")
    old = json.loads(cli("sandbox", "status", "--json").stdout)
    sm = sandbox_client(old["url"], "sagemaker")
    sm.create_model(
        ModelName="kept-by-the-old-sandbox",
        ExecutionRoleArn="arn:aws:iam::123456789012:role/peagle-sandbox-role",
        PrimaryContainer={"Image": "x"},
    )
    kill_9(cli)

    # Status and env report it (and do not start one); asking twice says it twice.
    for _ in range(2):
        st = cli("sandbox", "status")
        assert st.stdout.strip() == f"sandbox: not running ({died(old['url'])})"
        doc = json.loads(cli("sandbox", "status", "--json").stdout)
        assert (doc["running"], doc["died"], doc["url"]) == (False, True, old["url"])
    line = one_error_line(cli("sandbox", "env", code=1))
    assert line == f"error: {died(old['url'])} (fix: `peagle sandbox start`)"
    assert cli.servers() == []

    # The next --sandbox command starts a new one and says so, on one line.
    ls = cli("--sandbox", "ls", "--json")
    new = json.loads(cli("sandbox", "status", "--json").stdout)
    assert new["running"] and new["pid"] != old["pid"]
    notices = [ln for ln in ls.stderr.splitlines() if "died" in ln]
    assert notices == [f"warning: {died(old['url'])}; started a new one at {new['url']}"]
    assert sandbox_client(new["url"], "sagemaker").list_models()["Models"] == []
    again = cli("--sandbox", "ls", "--json")  # that was said once: the new one just runs
    assert "died" not in again.stderr

    # `sandbox start` after a kill -9 says it too.
    kill_9(cli)
    started = cli("sandbox", "start")
    newest = json.loads(cli("sandbox", "status", "--json").stdout)
    assert f"warning: {died(new['url'])}; started a new one at {newest['url']}" in (
        started.stderr.splitlines()
    )
    assert started_url(started) == newest["url"]

    # And `sandbox stop` of a dead one removes its state and says what happened.
    kill_9(cli)
    stopped = cli("sandbox", "stop")
    assert stopped.stdout.strip() == f"sandbox: {died(newest['url'])}; state removed"
    assert cli("sandbox", "status").stdout.strip() == "sandbox: not running"
    assert not (cli.state / "sandbox.json").exists()
    assert cli.servers() == []


def test_the_sdk_reports_a_dead_sandbox_it_replaced(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PEAGLE_STATE_DIR", str(cli.state))
    first = peagle_sandbox.start()
    assert first.died_url is None and not first.already_running
    os.kill(first.pid, signal.SIGKILL)
    wait_gone(first.pid)
    state = peagle_sandbox.status()
    assert not state.running and state.died and state.url == first.url
    second = peagle_sandbox.start()
    assert second.died_url == first.url and second.pid != first.pid
    assert peagle_sandbox.start().already_running
    stopped = peagle_sandbox.stop()
    assert stopped.stopped and cli.servers() == []


def test_a_sandbox_that_cannot_come_up_is_exit_1_on_one_line_naming_its_log(
    cli: Cli, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A failure after the checks (here the server process dies at once) is a runtime
    failure: exit 1, one line naming the log, no process left, no state file; the same
    error from the SDK."""
    fake = cli.state.parent / "python"
    fake.write_text("#!/bin/sh\necho 'boom: the server cannot start' >&2\nexit 3\n")
    fake.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(fake))  # what the manager spawns
    monkeypatch.setenv("PEAGLE_STATE_DIR", str(cli.state))
    with pytest.raises(PeagleError) as e:
        peagle_sandbox.start()
    assert e.value.exit_code == 1
    assert "exited at start-up (code 3): boom: the server cannot start" in e.value.message
    assert str(cli.state / "sandbox.log") in (e.value.remedy or "")
    (cli.state / "sandbox.log").unlink()  # the CLI's run then shows the same tail
    code, out, err = run_cli(capsys, "sandbox", "start")
    assert (code, out) == (1, "")
    assert err == f"error: {e.value.message} (fix: {e.value.remedy})\n"
    assert cli.servers() == []
    assert not (cli.state / "sandbox.json").exists()


def test_a_sandbox_that_stopped_answering_is_replaced_and_said_so(cli: Cli) -> None:
    """Alive but frozen (SIGSTOP): asked twice, then stopped and replaced, on one line."""
    cli("sandbox", "start")
    old = json.loads(cli("sandbox", "status", "--json").stdout)
    os.kill(old["pid"], signal.SIGSTOP)
    try:
        ls = cli("--sandbox", "ls")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(old["pid"], signal.SIGCONT)
    new = json.loads(cli("sandbox", "status", "--json").stdout)
    assert new["pid"] != old["pid"] and cli.servers() == [new["pid"]]
    notices = [ln for ln in ls.stderr.splitlines() if old["url"] in ln]
    assert notices == [
        f"warning: the sandbox at {old['url']} stopped answering and was stopped; "
        f"its endpoints are gone; started a new one at {new['url']}"
    ]


def test_use_sandbox_warns_when_it_replaces_a_dead_sandbox(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    import peagle_sandbox

    monkeypatch.setenv("PEAGLE_STATE_DIR", str(cli.state))
    first = peagle_sandbox.start()
    os.kill(first.pid, signal.SIGKILL)
    wait_gone(first.pid)
    # activate() points this very process at the sandbox (os.environ): put the whole
    # environment back after, variables it added included (monkeypatch.delenv of a
    # variable that was not set records nothing to undo, so PEAGLE_SANDBOX_URL and
    # AWS_ENDPOINT_URL leaked into later tests on this worker).
    saved = dict(os.environ)
    try:
        for name in [n for n in os.environ if n.startswith("AWS_")]:
            del os.environ[name]
        for name in ("PEAGLE_SANDBOX_URL", "PEAGLE_SANDBOX_ENGINE_LABEL", "PEAGLE_ROLE_ARN"):
            os.environ.pop(name, None)
        with pytest.warns(RuntimeWarning) as caught:
            info = peagle_sandbox.use_sandbox()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    assert [str(w.message) for w in caught] == [
        f"the sandbox at {first.url} died; its endpoints are gone; started a new one at {info.url}"
    ]
    assert cli.servers() == [info.pid]


def test_install_engine_refuses_bad_inputs_before_any_step(tmp_path: Path) -> None:
    """`peagle sandbox install-engine` (the other sandbox command that takes settings):
    a bad version, home or index URL is exit 2 on one line with a fix, and no step runs:
    no home, no log, no virtualenv is made."""
    cli = Cli(tmp_path)
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    home = tmp_path / "engine-home"
    cases = [
        (["--vllm-version", "0.1.0", "--home", str(home)], "--vllm-version"),
        (["--home", str(a_file)], f"--home: {a_file} is not a directory"),
        (["--home", str(a_file / "below")], f"--home: {a_file / 'below'} is not a directory"),
        (["--home", "/proc/peagle-engine"], "--home: /proc/peagle-engine cannot be written"),
        (["--home", str(home), "--torch-index-url", "localhost-8000"], "localhost-8000"),
        (["--home", str(home), "--torch-index-url", "http://:8000/simple"], "--torch-index"),
    ]
    for argv, says in cases:
        proc = cli("sandbox", "install-engine", *argv, code=2)
        line = one_error_line(proc)
        assert line.startswith("error: install-engine: ") and says in line, line
        assert proc.stdout == ""
        assert not home.exists(), argv  # checked before the home is even created
    assert a_file.read_text() == ""


def test_an_unknown_engine_from_the_environment_is_refused_before_the_state_dir(
    cli: Cli,
) -> None:
    cli.env["PEAGLE_SANDBOX_ENGINE"] = "tpu"
    for args in (("sandbox", "start"), ("--sandbox", "ls")):
        line = one_error_line(cli(*args, code=2))
        assert "unknown sandbox engine 'tpu'" in line, line
        assert not cli.state.exists(), args
    assert cli.servers() == []
