"""A realistic vLLM chat stream, and a local stand-in for the SageMaker runtime API.

The stream follows what vLLM really sends with
`stream_options={"include_usage": true, "continuous_usage_stats": true}`: a role-only
first chunk, `usage` on every chunk, content chunks that carry SEVERAL tokens (as under
speculative decoding), finish_reason on the last content chunk, a usage-only chunk with
empty `choices`, then `data: [DONE]`. JSON is compact with raw (unescaped) UTF-8, as
pydantic's model_dump_json writes it, so byte splits really do land inside characters.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from sm_peagle.runtime.eventstream_encode import STREAM_CONTENT_TYPE, payload_parts

# (text delta, tokens in that chunk): multi-token chunks, multi-byte UTF-8, an emoji.
PIECES: list[tuple[str, int]] = [("h", 1), ("éllo", 2), (" →", 1), (" 世界", 3), (" 🚀", 2)]
TEXT = "héllo → 世界 🚀"
PROMPT_TOKENS = 12
COMPLETION_TOKENS = sum(n for _, n in PIECES)  # 9
ALL_CHUNKS = len(PIECES) + 2  # role-only + content chunks + usage-only
ENDPOINT = "peagle-test-ep"


def _dump(doc: dict[str, Any]) -> str:
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":"))


def _usage(completion: int, prompt: int) -> dict[str, int]:
    return {
        "prompt_tokens": prompt,
        "total_tokens": prompt + completion,
        "completion_tokens": completion,
    }


def chat_events(
    pieces: list[tuple[str, int]] = PIECES,
    *,
    prompt_tokens: int = PROMPT_TOKENS,
    finish: str = "stop",
) -> list[dict[str, Any]]:
    head = {
        "id": "chatcmpl-8f3c",
        "object": "chat.completion.chunk",
        "created": 1732000000,
        "model": "/opt/ml/model",
    }

    def chunk(delta: dict[str, Any], finish_reason: str | None, done: int) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        return {**head, "choices": [choice], "usage": _usage(done, prompt_tokens)}

    events = [chunk({"role": "assistant", "content": ""}, None, 0)]
    done = 0
    for i, (text, tokens) in enumerate(pieces):
        done += tokens
        events.append(chunk({"content": text}, finish if i == len(pieces) - 1 else None, done))
    events.append({**head, "choices": [], "usage": _usage(done, prompt_tokens)})
    return events


def sse_bytes(
    events: list[dict[str, Any]], *, newline: str = "\n", keepalive_after: int | None = 1
) -> bytes:
    """`data: {...}` events, a `: keep-alive` comment after event `keepalive_after`,
    and the final `data: [DONE]`, with the given line ending."""
    out = []
    for i, event in enumerate(events):
        out.append(f"data: {_dump(event)}{newline}{newline}")
        if keepalive_after is not None and i == keepalive_after:
            out.append(f": keep-alive{newline}")
    out.append(f"data: [DONE]{newline}{newline}")
    return "".join(out).encode("utf-8")


def vllm_chat_stream(newline: str = "\n", pieces: list[tuple[str, int]] = PIECES) -> bytes:
    return sse_bytes(chat_events(pieces), newline=newline)


def split_at(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c for c in cuts if 0 < c < len(data)})
    bounds = [0, *points, len(data)]
    return [data[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]


def chat_completion(text: str = TEXT, tokens: int = COMPLETION_TOKENS) -> dict[str, Any]:
    message = {"role": "assistant", "content": text, "tool_calls": []}
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1732000000,
        "model": "/opt/ml/model",
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": "stop"}],
        "usage": _usage(tokens, PROMPT_TOKENS),
    }


def model_error_reply(status: int = 400, message: str = "max_tokens too large") -> tuple:
    """SageMaker's ModelError as the runtime API sends it: HTTP 424 + modeled fields."""
    original = _dump(
        {"object": "error", "message": message, "type": "BadRequestError", "code": status}
    )
    body = {
        "ErrorCode": "CLIENT_ERROR_FROM_MODEL",
        "LogStreamArn": f"arn:aws:logs:us-east-1:123456789012:log-group:/aws/sagemaker/"
        f"Endpoints/{ENDPOINT}",
        "Message": f'Received client error ({status}) from primary with message "{original}"',
        "OriginalMessage": original,
        "OriginalStatusCode": status,
    }
    headers = {
        "x-amzn-ErrorType": "ModelError:http://internal.amazon.com/coral/com.amazon.sagemaker/",
        "Content-Type": "application/json",
    }
    return 424, headers, json.dumps(body).encode()


@dataclass
class FakeRuntime:
    """Serves POST /endpoints/<name>/invocations[-response-stream] on 127.0.0.1.

    `stream_reply(request) -> list of HTTP chunks` (event-stream frame bytes, cut however
    the test likes) and `invoke_reply(request) -> (status, headers, body)` are settable
    per test; every request body is recorded in `requests`.
    """

    requests: list[dict[str, Any]] = field(default_factory=list)
    stream_reply: Callable[[dict[str, Any]], list[bytes]] | None = None
    invoke_reply: Callable[[dict[str, Any]], tuple[int, dict[str, str], bytes]] | None = None
    delay: float = 0.0  # seconds between HTTP chunks
    drop_connection: bool = False  # end streams without the final chunk (connection lost)
    url: str = ""

    def default_stream(self, request: dict[str, Any]) -> list[bytes]:
        data = vllm_chat_stream()
        # PayloadParts every 7 bytes: splits land mid-UTF-8 and mid-"data:".
        frames = payload_parts(data, list(range(7, len(data), 7)))
        return [b"".join(frames[i : i + 3]) for i in range(0, len(frames), 3)]

    def default_invoke(self, request: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
        return 200, {"Content-Type": "application/json"}, _dump(chat_completion()).encode()

    def handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # chunked responses, as the real API streams

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                request = {
                    "path": self.path,
                    "headers": dict(self.headers),
                    "body": json.loads(raw),
                }
                fake.requests.append(request)
                if self.path.endswith("/invocations-response-stream"):
                    self._stream((fake.stream_reply or fake.default_stream)(request))
                elif self.path.endswith("/invocations"):
                    self._reply(*(fake.invoke_reply or fake.default_invoke)(request))
                else:
                    self._reply(404, {}, b"{}")

            def _reply(self, status: int, headers: dict[str, str], body: bytes) -> None:
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _stream(self, chunks: list[bytes]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", STREAM_CONTENT_TYPE)
                self.send_header("X-Amzn-SageMaker-Content-Type", "text/event-stream")
                self.send_header("x-Amzn-Invoked-Production-Variant", "AllTraffic")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for chunk in chunks:
                    if fake.delay:
                        time.sleep(fake.delay)
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    self.wfile.flush()
                if fake.drop_connection:
                    self.close_connection = True
                    return
                self.wfile.write(b"0\r\n\r\n")

        return Handler


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients drop kept-alive connections when they close (or abandon a stream):
        # expected, not worth a traceback in the test output.
        pass


@contextmanager
def fake_runtime(monkeypatch: Any) -> Iterator[FakeRuntime]:
    """Start the fake and point botocore's sagemaker-runtime client at it. Use with the
    `aws_credentials` fixture (fake keys, no real AWS config)."""
    fake = FakeRuntime()
    server = _QuietServer(("127.0.0.1", 0), fake.handler())
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    monkeypatch.setenv("AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME", fake.url)
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
