"""A bench whose endpoint dies mid-level (against the SIMULATED sandbox, stopped under it)
stops and fails: exit 1, one error line naming the error rate and the limit, no
traceback; the results measured before the death are printed and written; and the number
of requests sent after the death is bounded by the rule in benchmarking/breaker.py:

    a level stops after max(10, 2 x concurrency) requests in a row could not connect,

so after the death at most that many, plus the `concurrency` already in flight, are sent;
and the later levels are not run. (Before, a bench whose sandbox died 2.5 s into a 20 s
level sent 33,340 more requests and exited 0.)

The sandbox of this module is stopped by its one test: it gets a sandbox of its own.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.test_sandbox import Sandbox, running_sandbox

pytestmark = pytest.mark.e2e

NAME = "peagle-gpt-oss-20b-p-eagle"
CONCURRENCY = 2
LIMIT = max(10, 2 * CONCURRENCY)  # the rule, for this concurrency
NO_ANSWER = {"AwsUnreachable", "NotFound", "ModelStreamError:StreamBroken",
             "ModelStreamError:ReadTimeout"}  # fmt: skip


@pytest.fixture(scope="module")
def sb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    yield from running_sandbox(tmp_path_factory.mktemp("bench-dies"), "gpt-oss-20b")


def wait_for_lines(proc: subprocess.Popen, path: Path, n: int, within: float = 90) -> int:
    """Until `path` holds at least `n` lines (requests measured); their count."""
    deadline = time.monotonic() + within
    while True:
        lines = path.read_bytes().count(b"\n") if path.exists() else 0
        if lines >= n:
            return lines
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, f"{lines} requests measured, waited for {n}"
        time.sleep(0.1)


def test_a_bench_whose_endpoint_dies_stops_and_fails_with_what_it_measured(
    sb: Sandbox, tmp_path: Path
) -> None:
    target = tmp_path / "requests.jsonl"
    out = tmp_path / "results.json"
    proc = subprocess.Popen(
        [sys.executable, "-m", "sm_peagle.cli", "--sandbox", "bench", NAME,
         "-c", f"{CONCURRENCY},8", "--duration", "120s", "--max-tokens", "16",
         "--acceptance-wait", "0", "--requests-out", str(target), "-o", str(out), "--json"],
        env=sb.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        before = wait_for_lines(proc, tmp_path / ".requests.jsonl.partial", 20)
        sb.cli("sandbox", "stop")  # returns once the sandbox process is gone
        dead_at = time.time()
        stdout, err = proc.communicate(timeout=120)  # well before the level's 120 s
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1, err[-3000:]
    assert "Traceback" not in err
    lines = err.splitlines()
    (line,) = [ln for ln in lines if ln.startswith("error: ")]
    assert line == lines[-1]
    assert f"{NAME} stopped answering" in line and "--max-error-rate 0.05" in line

    doc = json.loads(stdout)  # the results measured are printed
    assert doc == json.loads(out.read_text())  # and written
    (level,) = doc["levels"]  # the level at concurrency 8 was never run
    assert level["concurrency"] == CONCURRENCY
    records = level["records"]
    req = level["requests"]
    assert req["ok"] >= before  # every request measured before the death (all answered)
    assert req["total"] == len(records)
    failed = [r for r in records if not r["ok"]]
    error_rate = len(failed) / len(records)
    assert f"{len(failed)} of {len(records)} requests failed" in line
    assert f"(error rate {error_rate:.1%}," in line

    # The bound: after the death, the count of requests in a row with no answer reached
    # the limit, plus those in flight; in flight at the death, up to CONCURRENCY more.
    sent_after = [r for r in records if r["sent_at"] > dead_at]
    assert all(not r["ok"] and r["error_kind"] in NO_ANSWER for r in sent_after)
    assert len(sent_after) <= LIMIT + CONCURRENCY
    assert LIMIT <= len(failed) <= LIMIT + 2 * CONCURRENCY
    assert level["stopped"]["limit"] == LIMIT
    assert level["stopped"]["consecutive_failures"] == LIMIT

    # The run ended (stopped, not interrupted): its request file is in place, whole.
    exported = [json.loads(x) for x in target.read_text().splitlines()]
    assert sorted(x["index"] for x in exported) == sorted(r["index"] for r in records)
