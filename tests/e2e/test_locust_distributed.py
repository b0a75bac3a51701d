"""`peagle bench --locust`: one Locust master and two workers on loopback against a private
sandbox, through the real CLI. The merged document must validate against the bench schema
and agree with the sandbox's ground truth: every request matched by its SageMaker request
id, output tokens exact (per request and in total), output tokens/s and TTFT on the right
side of the truth computed as in test_bench_accuracy.py (all tokens / (last token step
written - first request sent)). Afterwards nothing of this test may still run: no sandbox,
master or worker.

Locust is never imported here: importing it monkey-patches the whole process for gevent.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

pytestmark = [
    pytest.mark.e2e,
]

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_FILE = ROOT / "docs" / "peagle.bench-4.schema.json"
NAME = "peagle-gpt-oss-20b-p-eagle"
REQUESTS, USERS, WORKERS, MAX_TOKENS = 16, 4, 2, 48
CLOCK_SLACK = 0.005  # client perf_counter epoch vs server time.time()


class Sandbox:
    """Its own state, cache, HOME and TMPDIR under `root`: every process this test starts
    (sandbox, CLI, Locust master and workers) carries `root` in its command line or
    environment, which is how the final check recognises them."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "PEAGLE_"))}
        for sub in ("home", "tmp"):
            (root / sub).mkdir()
        self.env.update(
            HOME=str(root / "home"),
            TMPDIR=str(root / "tmp"),
            PEAGLE_STATE_DIR=str(root / "state"),
            PEAGLE_CACHE_DIR=str(root / "cache"),
            PEAGLE_POLL_SECONDS="0.2",
        )
        self.url = ""

    def cli(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [sys.executable, "-m", "sm_peagle.cli", *args],
            env=self.env,
            cwd=self.root,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        assert proc.returncode == 0, f"peagle {' '.join(args)}\n{proc.stderr}{proc.stdout}"
        return proc

    def truth(self, method: str = "GET") -> Any:
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        req = urllib.request.Request(
            f"{self.url}/_peagle/ground-truth?endpoint={NAME}", method=method
        )
        with opener.open(req, timeout=10) as resp:
            return json.loads(resp.read())


def processes_of(marker: str) -> list[str]:
    """Live processes (not this one) whose command line or environment mentions `marker`."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        if proc.name == str(os.getpid()):
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes()
            environ = (proc / "environ").read_bytes()
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue  # exited while we looked, or not ours to read
        if state != "Z" and (marker.encode() in cmdline or marker.encode() in environ):
            found.append(proc.name + ": " + cmdline.replace(b"\0", b" ").decode(errors="replace"))
    return found


def validator() -> Any:
    import jsonschema  # in the [test] extra

    return jsonschema.Draft202012Validator(json.loads(SCHEMA_FILE.read_text()))


def test_two_workers_on_loopback_match_ground_truth(tmp_path: Path) -> None:
    started = time.monotonic()
    sb = Sandbox(tmp_path)
    try:
        sb.cli("sandbox", "start", "--creating-seconds", "1", "--metrics-interval", "1")
        sb.url = json.loads(sb.cli("sandbox", "status", "--json").stdout)["url"]
        sb.cli("--sandbox", "deploy", "gpt-oss-20b", "--yes")
        sb.truth("DELETE")  # only this run's requests in the ground truth
        out = tmp_path / "results.json"
        run = sb.cli(
            "--sandbox", "bench", NAME, "--locust", "--locust-workers", str(WORKERS),
            "--requests", str(REQUESTS), "--concurrency", str(USERS),
            "--max-tokens", str(MAX_TOKENS), "--acceptance-wait", "10s", "--output", str(out),
            timeout=120,
        )  # fmt: skip
        doc = json.loads(out.read_text())
        truth = {r["request_id"]: r for r in sb.truth()["requests"]}
        sb.cli("--sandbox", "delete", NAME, "--yes")
    finally:
        subprocess.run(
            [sys.executable, "-m", "sm_peagle.cli", "sandbox", "stop"],
            env=sb.env, capture_output=True, timeout=60,
        )  # fmt: skip

    errors = sorted(validator().iter_errors(doc), key=lambda e: list(e.path))
    assert not errors, [f"{list(e.path)}: {e.message}" for e in errors[:5]]
    assert doc["simulated"] and doc["mode"] == "p-eagle" and doc["endpoint"] == NAME
    load = doc["load"]
    assert (load["tool"], load["workers"], load["users"]) == ("locust", WORKERS, USERS)
    (level,) = doc["levels"]
    assert level["requests"] == {"total": REQUESTS, "ok": REQUESTS, "failed": 0,
                                 "failure_reasons": {}}  # fmt: skip
    records = level["records"]
    assert sorted(r["index"] for r in records) == list(range(REQUESTS))  # no gap, no repeat
    assert {r["worker"] for r in records} == set(range(WORKERS))  # both workers sent

    # Every request matched to the sandbox's record by id; tokens exact, per request too.
    assert set(truth) == {r["request_id"] for r in records}
    for r in records:
        assert r["output_tokens"] == truth[r["request_id"]]["completion_tokens"], r
    tokens = sum(t["completion_tokens"] for t in truth.values())
    assert level["output_tokens"] == tokens

    # Timing accuracy is measured by benchmarks/bench_accuracy.py, not asserted here. What
    # load cannot change: each record's send time comes before the sandbox saw that request
    # (under gevent a send time taken by another Locust user would come whole requests
    # later), a client's TTFT is never below the true one and its tokens/s never above.
    last_step = max(s["t"] for t in truth.values() for s in t["steps"] if s["tokens"])
    true_otps = tokens / (last_step - min(r["sent_at"] for r in records))
    otps, took = level["output_tokens_per_s"], time.monotonic() - started
    print(f"\nlocust: {tokens} tokens, {otps:.1f}/{true_otps:.1f} tok/s, {took:.0f}s")
    assert otps <= true_otps * (1 + 1e-6) + CLOCK_SLACK
    for r in records:
        g = truth[r["request_id"]]
        assert r["sent_at"] <= g["arrival"] + CLOCK_SLACK, (r, g["arrival"])
    true_ttft = [next(s["t"] for s in truth[r["request_id"]]["steps"] if s["tokens"])
                 - r["sent_at"] for r in records]  # fmt: skip
    mean_true = sum(true_ttft) / len(true_ttft)
    assert level["ttft_s"]["mean"] >= mean_true - CLOCK_SLACK
    assert "16/16 ok" in run.stderr + run.stdout

    # Nothing of this test is left: sandbox, Locust master and workers all gone.
    deadline = time.monotonic() + 60  # a bounded wait for exits, not a timing claim
    while (left := processes_of(str(tmp_path))) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not left, left


def test_budget_split_and_printed_commands() -> None:
    from sm_peagle.benchmarking.distributed import commands_text, split_budget

    # In proportion to users; indices 0..n-1 in order, each exactly once.
    assert split_budget([2, 2], 16) == [(0, 8), (8, 8)]
    assert split_budget([3, 1, 0], 10) == [(0, 8), (8, 2), (10, 0)]
    text = commands_text("ep", workers=3, users=12, requests=96, region="us-west-2", out="r.json")
    master, worker = (ln for ln in text.splitlines() if ln.startswith("locust "))
    assert "--master" in master and "--expect-workers 3" in master and "-u 12" in master
    assert "--peagle-endpoint ep" in master and "--peagle-requests 96" in master
    assert worker.endswith('--worker --master-host "$MASTER_IP" --master-port 5557')
