"""Offline with fake credentials: every command that reaches AWS exits 1 with one line and
no traceback, after a bounded number of connection attempts.

AWS_ENDPOINT_URL points at a local TCP listener that accepts each connection and closes it
at once (as a dead proxy or a firewall would), counting the connections. botocore's retry
budget is explicit in `sm_peagle/aws.py` (3 retries: 4 attempts per call), so the count is
exact: 4 for a command whose first call fails. The count is asserted, never the time.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from peagle_sandbox.synthetic_head import synthetic_head
from sm_peagle.aws import MAX_RETRIES
from sm_peagle.cli.app import main

ATTEMPTS = MAX_RETRIES + 1  # botocore: the first call plus the retries
ROLE = "arn:aws:iam::123456789012:role/sm-exec"


class Listener:
    """Accepts and immediately closes connections on 127.0.0.1, counting them."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.accepted = 0
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            conn.close()

    def take(self) -> int:
        n, self.accepted = self.accepted, 0
        return n


@pytest.fixture(scope="module")
def listener() -> Iterator[Listener]:
    lst = Listener()
    yield lst
    lst.sock.close()


@pytest.fixture
def offline(listener: Listener, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Listener:
    for var in [v for v in os.environ if v.startswith(("AWS_", "PEAGLE_"))]:
        monkeypatch.delenv(var)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "fake")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "fake")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
    monkeypatch.setenv("AWS_ENDPOINT_URL", listener.url)
    monkeypatch.setenv("PEAGLE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PEAGLE_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "d.yaml").write_text("model: gpt-oss-20b\nregion: us-east-1\n")
    # A head push would accept (it checks the head before the first upload), so the push
    # reaches S3 and meets the unreachable endpoint.
    head = tmp_path / "head"
    head.mkdir()
    for rel, data in synthetic_head(target_hidden=2880, target_vocab=201088).items():
        (head / rel).write_bytes(data)
    listener.take()
    return listener


COMMANDS = [
    ["ls"],
    ["ls", "--all", "--json"],
    ["status", "x"],
    ["logs", "x"],
    ["logs", "x", "--follow"],
    ["delete", "x", "--yes"],
    ["gc", "--yes"],
    ["update", "x", "-k", "3", "--yes"],
    ["deploy", "gpt-oss-20b", "--role", ROLE, "--yes"],
    ["invoke", "x", "hi"],
    ["invoke", "x", "hi", "--no-stream"],
    ["chat", "x"],
    ["bench", "x", "-c", "1", "--requests", "1"],
    ["diff", "-f", "d.yaml"],
    ["apply", "-f", "d.yaml", "--yes"],
    ["drafter", "inspect", "s3://bucket/head/"],
    ["drafter", "check", "s3://bucket/head/", "--model", "gpt-oss-20b"],
    ["drafter", "push", "head", "s3://bucket/head/"],
]


@pytest.mark.parametrize("argv", COMMANDS, ids=lambda a: " ".join(a[:3]))
def test_unreachable_aws_is_exit_1_one_line_after_bounded_attempts(argv, offline, capsys):
    code = main(list(argv))
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert code == 1, err
    # One error line, last; before it only the target and progress lines.
    assert lines[-1].startswith("error: ") and err.count("error") == 1, err
    assert "Traceback" not in err
    assert offline.take() == ATTEMPTS, f"{argv}: {err}"
    if "--json" in argv:
        assert '"exit_code": 1' in out


def test_live_prices_warn_after_bounded_attempts(offline, capsys):
    code = main(["instances", "--live-prices"])
    _, err = capsys.readouterr()
    assert code == 0 and "warning: live prices:" in err
    assert offline.take() == ATTEMPTS


def test_no_traceback_in_a_real_process(offline):
    """The same boundary, seen from a shell: stderr is the target line and one error."""
    proc = subprocess.run(
        [sys.executable, "-m", "sm_peagle.cli", "ls"],
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1
    assert proc.stderr.splitlines()[-1].startswith("error: cannot reach ")
    assert len(proc.stderr.splitlines()) == 2 and "Traceback" not in proc.stderr
    assert offline.take() == ATTEMPTS
