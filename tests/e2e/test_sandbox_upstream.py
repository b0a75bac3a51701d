"""`--upstream URL`: the sandbox relays a real OpenAI-compatible server's bytes through
SageMaker's framing (here a tiny stand-in server in this process), started through
``manager.start`` and created with plain boto3 calls."""

from __future__ import annotations

import json
import os
import threading
import time
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from peagle_sandbox import manager

pytestmark = pytest.mark.e2e

WORDS = ["Hello", " from", " the", " real", " server", " ✓"]


class FakeOpenAI(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:  # keep pytest output clean
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path != "/v1/chat/completions" or body.get("max_tokens") == 0:
            self._send(400, "application/json", b'{"message": "max_tokens must be at least 1"}')
            return
        if not body.get("stream"):
            doc = {"choices": [{"message": {"content": "".join(WORDS)}}], "usage": {}}
            self._send(200, "application/json", json.dumps(doc).encode())
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for i, word in enumerate(WORDS):
            chunk = {
                "choices": [{"delta": {"content": word}}],
                "usage": {"completion_tokens": i + 1},
            }
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.flush()
            time.sleep(0.01)
        self.wfile.write(b"data: [DONE]\n\n")

    def _send(self, status: int, content_type: str, data: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def upstream_sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeOpenAI)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("PEAGLE_STATE_DIR", str(tmp_path / "state"))
    info = manager.start(upstream=f"http://127.0.0.1:{server.server_port}", creating_seconds=0.2)
    try:
        yield info.url
    finally:
        manager.stop()
        server.shutdown()
    with pytest.raises(ProcessLookupError):
        os.kill(info.pid, 0)


def test_upstream_bytes_are_relayed(upstream_sandbox: str) -> None:
    kw: dict[str, Any] = {
        "endpoint_url": upstream_sandbox,
        "region_name": "us-east-1",
        "aws_access_key_id": "t",
        "aws_secret_access_key": "t",
    }
    sm = boto3.client("sagemaker", **kw)
    sm.create_model(
        ModelName="m",
        ExecutionRoleArn=manager.SANDBOX_ROLE,
        PrimaryContainer={"Image": "vllm:0.18.0", "Environment": {}},
    )
    sm.create_endpoint_config(
        EndpointConfigName="c",
        ProductionVariants=[
            {
                "VariantName": "AllTraffic",
                "ModelName": "m",
                "InstanceType": "ml.g6e.xlarge",
                "InitialInstanceCount": 1,
            }
        ],
    )
    sm.create_endpoint(EndpointName="up", EndpointConfigName="c")
    sm.get_waiter("endpoint_in_service").wait(
        EndpointName="up", WaiterConfig={"Delay": 0.2, "MaxAttempts": 50}
    )
    runtime = boto3.client("sagemaker-runtime", **kw)
    request = {"messages": [{"role": "user", "content": "hi"}], "stream": True}
    response = runtime.invoke_endpoint_with_response_stream(
        EndpointName="up", Body=json.dumps(request)
    )
    data = b"".join(e["PayloadPart"]["Bytes"] for e in response["Body"])
    assert data.decode().endswith("data: [DONE]\n\n")
    assert "".join(WORDS) == "".join(
        json.loads(line[6:])["choices"][0]["delta"]["content"]
        for line in data.decode().split("\n\n")
        if line.startswith("data: {")
    )
    answer = runtime.invoke_endpoint(
        EndpointName="up", Body=json.dumps({**request, "stream": False})
    )
    assert json.loads(answer["Body"].read())["choices"][0]["message"]["content"] == "".join(WORDS)
    with pytest.raises(ClientError) as bad:
        runtime.invoke_endpoint(EndpointName="up", Body=json.dumps({**request, "max_tokens": 0}))
    assert bad.value.response["Error"]["Code"] == "ModelError"
    assert bad.value.response["OriginalStatusCode"] == 400
    with urllib.request.urlopen(f"{upstream_sandbox}/_peagle/ground-truth?endpoint=up") as r:
        first = json.loads(r.read())["requests"][0]
    assert [s["tokens"] for s in first["steps"]] == [1] * len(WORDS)
