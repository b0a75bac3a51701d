"""Bench data is never lost (against the SIMULATED sandbox):

- a result file that cannot be written (a full disk, simulated with ENOSPC) does not cost
  the run: the results are printed, the exit is 1 and the line names the path;
- `--requests-out` interrupted mid-run (SIGINT) leaves the previous file whole, and the
  requests measured so far in the partial file beside it.
"""

from __future__ import annotations

import errno
import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.test_sandbox import Sandbox, running_sandbox
from tests.sandbox_helpers import point_at_sandbox

pytestmark = pytest.mark.e2e

NAME = "peagle-gpt-oss-20b-p-eagle"


@pytest.fixture(scope="module")
def sb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    yield from running_sandbox(tmp_path_factory.mktemp("bench-files"), "gpt-oss-20b")


def test_a_result_file_that_cannot_be_written_still_prints_the_results(
    sb: Sandbox, monkeypatch, tmp_path: Path, capsys
) -> None:
    from sm_peagle.cli.app import main

    point_at_sandbox(sb.state, monkeypatch, tmp_path)
    csv = tmp_path / "r.csv"
    csv.write_text("previous\n")
    real = Path.write_text

    def full_disk(self: Path, data: str, *a, **k) -> int:
        if self.name.endswith(".csv.partial"):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(self, data, *a, **k)

    monkeypatch.setattr(Path, "write_text", full_disk)
    code = main(["bench", NAME, "-c", "1", "-n", "2", "--max-tokens", "8",
                 "--acceptance-wait", "0", "--csv", str(csv), "--json"])  # fmt: skip
    out, err = capsys.readouterr()
    monkeypatch.undo()
    assert code == 1, err
    doc = json.loads(out)  # the whole run, printed before the failure
    assert doc["schema"] == "peagle.bench/4" and doc["levels"][0]["requests"]["ok"] == 2
    (line,) = [ln for ln in err.splitlines() if ln.startswith("error: ")]
    assert f"cannot write {csv}: No space left on device" in line
    assert "internal error" not in err and csv.read_text() == "previous\n"


def test_an_interrupted_requests_out_keeps_the_previous_file(sb: Sandbox, tmp_path) -> None:
    target = tmp_path / "requests.jsonl"
    target.write_text('{"previous": true}\n')
    proc = subprocess.Popen(
        [sys.executable, "-m", "sm_peagle.cli", "--sandbox", "bench", NAME, "-c", "1,2",
         "-n", "60", "--max-tokens", "16", "--requests-out", str(target)],
        env=sb.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    partial = tmp_path / ".requests.jsonl.partial"
    try:
        deadline = time.monotonic() + 90
        while not (partial.exists() and partial.stat().st_size):  # the first level ended
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "no level finished"
            time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err[-2000:]
    assert target.read_text() == '{"previous": true}\n'
    measured = [json.loads(x) for x in partial.read_text().splitlines()]
    assert measured and {r["concurrency"] for r in measured} == {1}
