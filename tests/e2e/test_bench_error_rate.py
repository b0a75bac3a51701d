"""A bench is judged by its error rate, and an interrupted one loses nothing it measured
(against the SIMULATED sandbox).

- `--max-error-rate` (default 0.05): a run whose failed / total is over it prints and
  writes its results, then exits 1 with one line naming the error rate and the limit; at
  or under it, exit 0. The SDK raises `BenchmarkFailed` carrying the result.
- Error answers from a live model (the sandbox's 400 ModelError for a prompt longer than
  the model's context, as vLLM answers) never stop a level: only requests that get no
  answer do (tests/e2e/test_bench_dies.py).
- `--requests-out` interrupted with SIGINT mid-level: the previous file is byte for byte
  as it was, the partial file beside it holds a whole JSON line for every request that
  finished (each one the sandbox really served), and one line says where it is.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

import sm_peagle
from sm_peagle.errors import BenchmarkFailed
from tests.e2e.test_bench_dies import wait_for_lines
from tests.e2e.test_sandbox import Sandbox, running_sandbox
from tests.sandbox_helpers import point_at_sandbox

pytestmark = pytest.mark.e2e

NAME = "peagle-gpt-oss-20b-p-eagle"
# The sandbox's context is 8192 tokens (words): this prompt is refused with a 400.
TOO_LONG = "word " * 9000


@pytest.fixture(scope="module")
def sb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    yield from running_sandbox(tmp_path_factory.mktemp("bench-error-rate"), "gpt-oss-20b")


@pytest.fixture
def one_in_four(tmp_path: Path) -> Path:
    """Requests cycle through the items: with -c 1 -n 8, requests 0 and 4 are refused,
    so the error rate is 2 / 8 = 0.25."""
    path = tmp_path / "one-in-four.jsonl"
    prompts = [TOO_LONG, "short prompt one", "short prompt two", "short prompt three"]
    path.write_text("".join(json.dumps({"prompt": p}) + "\n" for p in prompts))
    return path


def bench(sb: Sandbox, *args: str) -> subprocess.CompletedProcess[str]:
    return sb.cli("--sandbox", "bench", NAME, "-c", "1", "--max-tokens", "8",
                  "--acceptance-wait", "0", *args, check=False)  # fmt: skip


def error_lines(err: str) -> list[str]:
    assert "Traceback" not in err
    return [ln for ln in err.splitlines() if ln.startswith("error: ")]


def test_over_the_limit_prints_and_writes_the_results_then_exits_1(
    sb: Sandbox, one_in_four: Path, tmp_path: Path
) -> None:
    out = tmp_path / "r.json"
    proc = bench(sb, "-n", "8", "--dataset", str(one_in_four), "-o", str(out), "--json")
    assert proc.returncode == 1, proc.stderr
    (line,) = error_lines(proc.stderr)
    assert "2 of 8 requests failed: error rate 25.0% is over --max-error-rate 0.05" in line
    doc = json.loads(proc.stdout)
    assert doc["levels"][0]["requests"]["ok"] == 6
    assert doc["levels"][0]["requests"]["failure_reasons"] == {"ModelInvocationError:400": 2}
    assert json.loads(out.read_text()) == doc


def test_the_table_is_printed_for_people_too(sb: Sandbox, one_in_four: Path) -> None:
    proc = bench(sb, "-n", "8", "--dataset", str(one_in_four), "--max-error-rate", "0.2")
    assert proc.returncode == 1, proc.stderr
    assert "6/2" in proc.stdout  # the level's ok/failed column
    (line,) = error_lines(proc.stderr)
    assert "error rate 25.0% is over --max-error-rate 0.2" in line


def test_at_the_limit_the_run_passes(sb: Sandbox, one_in_four: Path) -> None:
    proc = bench(sb, "-n", "8", "--dataset", str(one_in_four), "--max-error-rate", "0.25")
    assert proc.returncode == 0, proc.stderr
    assert error_lines(proc.stderr) == []


def test_a_clean_run_passes_the_default(sb: Sandbox) -> None:
    proc = bench(sb, "-n", "8", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["levels"][0]["requests"]["failed"] == 0


def test_error_answers_from_a_live_model_never_stop_a_level(sb: Sandbox, tmp_path: Path) -> None:
    dataset = tmp_path / "all-too-long.jsonl"
    dataset.write_text(json.dumps({"prompt": TOO_LONG}) + "\n")
    proc = bench(sb, "-n", "30", "--dataset", str(dataset), "--json")  # 30 > 10 in a row
    assert proc.returncode == 1, proc.stderr
    level = json.loads(proc.stdout)["levels"][0]
    assert level["requests"]["total"] == 30 and "stopped" not in level
    (line,) = error_lines(proc.stderr)
    assert "30 of 30 requests failed: error rate 100.0% is over --max-error-rate 0.05" in line


def test_the_sdk_raises_benchmark_failed_with_the_result(
    sb: Sandbox, one_in_four: Path, monkeypatch, tmp_path: Path
) -> None:
    point_at_sandbox(sb.state, monkeypatch, tmp_path)
    out = tmp_path / "r.json"
    with pytest.raises(BenchmarkFailed) as info:
        sm_peagle.bench(NAME, concurrency=1, requests=8, max_tokens=8, acceptance_wait=0,
                        dataset=str(one_in_four), out=out)  # fmt: skip
    e = info.value
    assert e.exit_code == 1 and e.error_rate == 0.25 and e.max_error_rate == 0.05
    assert e.result.levels[0]["requests"]["failed"] == 2
    assert e.result.written == [out] and json.loads(out.read_text()) == e.result.to_dict()
    result = sm_peagle.bench(NAME, concurrency=1, requests=8, max_tokens=8, acceptance_wait=0,
                             dataset=str(one_in_four), max_error_rate=0.25)  # fmt: skip
    assert result.levels[0]["requests"]["failed"] == 2


def test_sigint_mid_level_keeps_the_previous_file_and_every_finished_request(
    sb: Sandbox, tmp_path: Path
) -> None:
    target = tmp_path / "requests.jsonl"
    previous = b'{"previous": true}\n\xe2\x9c\x93 not even JSON\n'
    target.write_bytes(previous)
    partial = tmp_path / ".requests.jsonl.partial"
    proc = subprocess.Popen(
        [sys.executable, "-m", "sm_peagle.cli", "--sandbox", "bench", NAME, "-c", "2",
         "-n", "2000", "--max-tokens", "16", "--requests-out", str(target)],
        env=sb.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        before = wait_for_lines(proc, partial, 5)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err[-2000:]
    assert target.read_bytes() == previous
    text = partial.read_text()
    assert text.endswith("\n")  # whole lines only
    lines = [json.loads(x) for x in text.splitlines()]
    assert before <= len(lines) < 2000  # interrupted mid-level, nothing measured lost
    assert {ln["concurrency"] for ln in lines} == {2}
    said = f"{target} was not changed; the {len(lines)} requests measured are in {partial}"
    assert said in err.splitlines()
    assert err.splitlines()[-1] == "error: interrupted" and "Traceback" not in err
    # Each line is a request the sandbox really served, as it served it.
    url = f"{sb.url}/_peagle/ground-truth?endpoint={NAME}"
    with urllib.request.urlopen(url) as r:
        truth = {t["request_id"]: t for t in json.loads(r.read())["requests"]}
    for ln in lines:
        assert ln["status"] == "ok", ln
        assert truth[ln["request_id"]]["completion_tokens"] == ln["output_tokens"]
