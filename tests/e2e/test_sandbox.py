"""The sandbox end to end: the real `peagle` CLI in subprocesses against a sandbox it started.

deploy -> status -> logs -> invoke (CLI, and boto3 decoding the event stream with botocore's
own client) -> ground truth -> SpecDecoding log lines -> delete -> nothing left -> stop ->
no process left. Tests share one sandbox and run in file order; each depends only on the
module fixtures, which deploy what it needs.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.doc_blocks_run import TEST_CLOCK_RATE
from tests.sandbox_helpers import sandbox_client

pytestmark = pytest.mark.e2e

NAME = "peagle-gpt-oss-20b-p-eagle"
BASELINE = "peagle-sbx-baseline"
STREAM_OPTIONS = {"include_usage": True, "continuous_usage_stats": True}


class Sandbox:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "PEAGLE_"))}
        home = root / "home"
        home.mkdir()
        self.env.update(
            HOME=str(home),
            PEAGLE_STATE_DIR=str(root / "state"),
            PEAGLE_CACHE_DIR=str(root / "cache"),
            PEAGLE_POLL_SECONDS="0.2",
            # Control-plane waits on a 10x clock (3 s of Updating last 0.3 s); invocations
            # hold it at real time, so what the tests measure is unchanged.
            PEAGLE_SANDBOX_CLOCK_RATE=TEST_CLOCK_RATE,
            COLUMNS="250",
        )
        self.state: dict[str, Any] = {}

    def cli(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [sys.executable, "-m", "sm_peagle.cli", *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        if check:
            assert proc.returncode == 0, f"peagle {' '.join(args)}\n{proc.stderr}{proc.stdout}"
        return proc

    @property
    def url(self) -> str:
        return str(self.state["url"])

    def client(self, service: str) -> Any:
        return sandbox_client(self.url, service)

    def ground_truth(self, endpoint: str) -> list[dict[str, Any]]:
        with urllib.request.urlopen(f"{self.url}/_peagle/ground-truth?endpoint={endpoint}") as r:
            return json.loads(r.read())["requests"]


def running_sandbox(root: Path, *deploy: str) -> Iterator[Sandbox]:
    """A started SIMULATED sandbox in `root`, its state read; with `deploy` arguments,
    `peagle --sandbox deploy <deploy> --yes --json` first, InService. Stopped after (a
    no-op when a test already stopped it). For fixtures: `yield from running_sandbox(..)`."""
    sb = Sandbox(root)
    started = sb.cli("sandbox", "start", "--creating-seconds", "1", "--metrics-interval", "1")
    assert "SIMULATED" in started.stderr
    sb.state = json.loads(sb.cli("sandbox", "status", "--json").stdout)
    assert sb.state["running"] and sb.state["healthy"]
    if deploy:
        out = sb.cli("--sandbox", "deploy", *deploy, "--yes", "--json")
        assert json.loads(out.stdout)["status"] == "InService"
    yield sb
    sb.cli("sandbox", "stop", check=False)


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    yield from running_sandbox(tmp_path_factory.mktemp("sandbox"))


@pytest.fixture(scope="module")
def deployed(sandbox: Sandbox) -> str:
    out = sandbox.cli("--sandbox", "deploy", "gpt-oss-20b", "--yes")
    assert "talking to: SANDBOX (SIMULATED) at http://127.0.0.1:" in out.stderr
    assert "InService" in out.stdout + out.stderr
    return NAME


@pytest.fixture(scope="module")
def baseline(sandbox: Sandbox) -> str:
    sandbox.cli(
        "--sandbox", "deploy", "gpt-oss-20b", "--mode", "baseline", "--name", BASELINE, "--yes"
    )
    return BASELINE


def stream(sb: Sandbox, endpoint: str, body: dict[str, Any]) -> tuple[list[bytes], str]:
    """(PayloadPart bytes, request id), decoded by botocore's own EventStream."""
    response = sb.client("sagemaker-runtime").invoke_endpoint_with_response_stream(
        EndpointName=endpoint, Body=json.dumps(body), ContentType="application/json"
    )
    headers = response["ResponseMetadata"]["HTTPHeaders"]
    assert headers["x-peagle-simulated"] == "true"
    parts = [event["PayloadPart"]["Bytes"] for event in response["Body"]]
    return parts, headers["x-peagle-request-id"]


def sse_chunks(parts: list[bytes]) -> list[Any]:
    text = b"".join(parts).decode("utf-8")
    assert text.endswith("\n\n")
    events = [e for e in text.split("\n\n") if e]
    assert all(e.startswith("data: ") for e in events)
    return [e[6:] if e[6:] == "[DONE]" else json.loads(e[6:]) for e in events]


def test_status_and_startup_logs(sandbox: Sandbox, deployed: str) -> None:
    status = json.loads(sandbox.cli("--sandbox", "status", deployed, "--json").stdout)
    assert (status["status"], status["mode"], status["k"]) == ("InService", "p-eagle", 3)
    logs = sandbox.cli("--sandbox", "logs", deployed).stdout
    assert "SIMULATED container" in logs
    assert "Loading drafter model /opt/ml/additional-model-data-sources/eagle" in logs
    assert "Starting vLLM API server on http://0.0.0.0:8080" in logs
    assert "num_speculative_tokens" in logs


def test_invoke_cli_stream_and_no_stream(sandbox: Sandbox, deployed: str) -> None:
    for flag in ("--stream", "--no-stream"):
        out = sandbox.cli("--sandbox", "invoke", deployed, "hello", flag)
        assert out.stdout.strip(), flag
        assert "tok/s" in out.stderr and "output tokens" in out.stderr, out.stderr


def test_stream_matches_buffered_and_ground_truth(sandbox: Sandbox, deployed: str) -> None:
    messages = [{"role": "user", "content": "Explain speculative decoding."}]
    parts, request_id = stream(
        sandbox, deployed, {"messages": messages, "stream": True, "stream_options": STREAM_OPTIONS}
    )
    chunks = sse_chunks(parts)
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert chunks[0]["usage"]["completion_tokens"] == 0
    assert chunks[-1] == "[DONE]" and chunks[-2]["choices"] == []
    content = chunks[1:-2]
    assert content[-1]["choices"][0]["finish_reason"] in ("stop", "length")
    assert all(c["model"] == "peagle-sandbox-SIMULATED" for c in content)
    text = "".join(c["choices"][0]["delta"]["content"] for c in content)
    usage = chunks[-2]["usage"]

    answer = sandbox.client("sagemaker-runtime").invoke_endpoint(
        EndpointName=deployed,
        Body=json.dumps({"messages": messages}),
        ContentType="application/json",
    )
    body = json.loads(answer["Body"].read())
    assert body["choices"][0]["message"]["content"] == text
    assert body["usage"] == {**usage, "prompt_tokens_details": None}

    (truth,) = [r for r in sandbox.ground_truth(deployed) if r["request_id"] == request_id]
    assert truth["completion_tokens"] == usage["completion_tokens"]
    assert sum(s["tokens"] for s in truth["steps"]) == usage["completion_tokens"]
    # One chunk per engine step; continuous usage says how many tokens each step carried.
    cumulative = [c["usage"]["completion_tokens"] for c in content]
    per_chunk = [b - a for a, b in zip([0, *cumulative], cumulative, strict=False)]
    assert per_chunk == [s["tokens"] for s in truth["steps"]]
    assert usage["completion_tokens"] / len(content) > 1.5  # p-eagle K=3: ~2.9 expected
    assert truth["ttft_s"] > 0 and truth["status"] == "ok"  # no upper bound: load stretches it
    times = [s["t"] for s in truth["steps"]]
    assert times == sorted(times) and times[-1] - times[0] > 0.1  # really paced


def test_payload_parts_are_irregular_but_decode(sandbox: Sandbox, deployed: str) -> None:
    def one(i: int) -> list[bytes]:
        body = {
            "messages": [{"role": "user", "content": f"prompt {i}"}],
            "max_tokens": 200,
            "ignore_eos": True,
            "stream": True,
        }
        parts, _ = stream(sandbox, deployed, body)
        chunks = sse_chunks(parts)  # reassembled, every event parses
        assert chunks[-1] == "[DONE]"
        return parts

    with ThreadPoolExecutor(8) as pool:
        parts = [p for ps in pool.map(one, range(8)) for p in ps]

    def utf8_ok(p: bytes) -> bool:
        try:
            p.decode("utf-8")
        except UnicodeDecodeError:
            return False
        return True

    assert any(not p.startswith(b"data:") for p in parts)  # cut mid-event
    assert any(p.count(b"data:") >= 2 for p in parts)  # several events in one part
    assert any(not utf8_ok(p) for p in parts)  # a multi-byte character split across parts


def test_spec_decoding_log_lines_match_ground_truth(sandbox: Sandbox, deployed: str) -> None:
    truth = sandbox.ground_truth(deployed)
    accepted = sum(s["accepted"] or 0 for r in truth for s in r["steps"])
    drafted = sum(s["drafted"] or 0 for r in truth for s in r["steps"])
    assert accepted and drafted
    logs = sandbox.client("logs")
    # A bounded wait, not a timing claim: the last interval's line appears after
    # metrics-interval + a tick on a quiet machine, later on a busy one.
    deadline = time.monotonic() + 120
    while True:
        events = logs.filter_log_events(logGroupName=f"/aws/sagemaker/Endpoints/{deployed}")
        lines = [e["message"] for e in events["events"] if "SpecDecoding metrics:" in e["message"]]
        seen = [
            tuple(int(x) for x in re.search(r"Accepted: (\d+) tokens, Drafted: (\d+)", ln).groups())
            for ln in lines
        ]
        if (sum(a for a, _ in seen), sum(d for _, d in seen)) == (accepted, drafted):
            break
        assert time.monotonic() < deadline, (seen, accepted, drafted)
        time.sleep(0.25)
    mean = re.search(r"Mean acceptance length: ([0-9.]+)", lines[-1])
    assert mean and 1.0 <= float(mean.group(1)) <= 4.0


def test_baseline_is_one_token_per_step_and_logs_no_spec_lines(
    sandbox: Sandbox, baseline: str
) -> None:
    body = {"prompt": "Once upon a time", "max_tokens": 30, "stream": True}
    parts, request_id = stream(sandbox, baseline, body)
    chunks = sse_chunks(parts)
    assert chunks[0]["object"] == "text_completion" and chunks[-1] == "[DONE]"
    (truth,) = [r for r in sandbox.ground_truth(baseline) if r["request_id"] == request_id]
    assert truth["mode"] == "baseline" and {s["tokens"] for s in truth["steps"]} == {1}
    # One metrics interval (1 s) of the sandbox clock: the POST answers once the log
    # simulator has written what became due, so no sleeping for it.
    advance = urllib.request.Request(
        f"{sandbox.url}/_peagle/clock", data=json.dumps({"advance": 1.0}).encode(), method="POST"
    )
    with urllib.request.urlopen(advance) as r:
        assert r.status == 200
    events = sandbox.client("logs").filter_log_events(
        logGroupName=f"/aws/sagemaker/Endpoints/{baseline}"
    )["events"]
    messages = [e["message"] for e in events]
    assert any("Engine 000: Avg prompt throughput" in m for m in messages)
    assert not any("SpecDecoding" in m for m in messages)


def test_aws_shaped_errors(sandbox: Sandbox, deployed: str) -> None:
    runtime = sandbox.client("sagemaker-runtime")
    with pytest.raises(ClientError) as missing:
        runtime.invoke_endpoint(EndpointName="no-such-endpoint", Body=b"{}")
    assert missing.value.response["Error"]["Code"] == "ValidationError"
    assert missing.value.response["Error"]["Message"] == (
        "Endpoint no-such-endpoint of account 123456789012 not found."
    )
    assert missing.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    with pytest.raises(ClientError) as bad:
        runtime.invoke_endpoint(EndpointName=deployed, Body=b'{"max_tokens": 3}')
    assert bad.value.response["Error"]["Code"] == "ModelError"
    assert bad.value.response["OriginalStatusCode"] == 400


def test_delete_leaves_nothing(sandbox: Sandbox, deployed: str, baseline: str) -> None:
    for name in (deployed, baseline):
        sandbox.cli("--sandbox", "delete", name, "--yes")
    assert json.loads(sandbox.cli("--sandbox", "ls", "--json").stdout) == []
    sm = sandbox.client("sagemaker")
    assert sm.list_models()["Models"] == []
    assert sm.list_endpoint_configs()["EndpointConfigs"] == []
    assert sm.list_endpoints()["Endpoints"] == []


def test_the_sandbox_serves_its_request_record_for_cli_runs(sandbox: Sandbox) -> None:
    """`GET /_peagle/requests`: what a CLI run in another process sent, as the sandbox
    received it (the record tests of CLI runs assert against); DELETE clears it."""
    import urllib.request

    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    base = sandbox.url

    def record() -> list[dict]:
        with opener.open(f"{base}/_peagle/requests", timeout=10) as resp:
            return json.loads(resp.read())["requests"]

    opener.open(urllib.request.Request(f"{base}/_peagle/requests", method="DELETE"), timeout=10)
    assert record() == []
    sandbox.cli("--sandbox", "status", "no-such-endpoint", check=False)
    ops = [(r["service"], r["operation"]) for r in record()]
    assert ("sagemaker", "DescribeEndpoint") in ops
    described = [r["params"] for r in record() if r["operation"] == "DescribeEndpoint"]
    assert {"EndpointName": "no-such-endpoint"} in described


def test_stop_leaves_no_process(sandbox: Sandbox) -> None:
    pid = int(sandbox.state["pid"])
    out = json.loads(sandbox.cli("sandbox", "stop", "--json").stdout)
    # The sandbox's own result says it is the sandbox's (issue 26: "label" in every --json).
    assert out == {
        "label": "SANDBOX (SIMULATED)",
        "stopped": True,
        "pid": pid,
        "url": sandbox.url,
        "engine_label": "SIMULATED",
    }
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    marker = str(sandbox.root).encode()
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            assert marker not in (proc / "cmdline").read_bytes(), proc.name
        except OSError:
            continue  # exited while we looked
    assert not (sandbox.root / "state" / "sandbox.json").exists()
    assert json.loads(sandbox.cli("sandbox", "status", "--json").stdout)["running"] is False
