"""Forward invocations to a real OpenAI-compatible server (``--upstream URL``, e.g. a local
vLLM), so real tokens flow through the sandbox's SageMaker framing.

The body is sent unchanged to ``URL/v1/chat/completions`` (payload has ``messages``) or
``URL/v1/completions``; the answer's bytes are relayed unchanged, SSE events re-cut into
irregular PayloadParts like the simulated engine's.
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import urlsplit

__all__ = ["UpstreamEvent", "UpstreamError", "open_upstream", "sse_events"]


class UpstreamError(Exception):
    """The upstream could not be reached or answered with an error status."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True)
class UpstreamEvent:
    """One SSE event from upstream: its bytes, and what it says about tokens."""

    data: bytes
    has_content: bool
    completion_tokens: int | None  # cumulative, when the server sends usage on this chunk


def open_upstream(
    base_url: str, raw: bytes, timeout: float = 600, *, route: str | None = None
) -> http.client.HTTPResponse:
    """POST the body to the right OpenAI route (or `route`, e.g. vLLM's own
    `/invocations`, which SageMaker calls); raise UpstreamError unless HTTP 200."""
    try:
        is_chat = "messages" in (json.loads(raw or b"{}") or {})
    except (ValueError, TypeError):
        is_chat = True  # let upstream reject it with its own error message
    url = urlsplit(base_url)
    openai = "/v1/chat/completions" if is_chat else "/v1/completions"
    path = url.path.rstrip("/") + (route or openai)
    conn_cls = http.client.HTTPSConnection if url.scheme == "https" else http.client.HTTPConnection
    conn = conn_cls(url.hostname or "127.0.0.1", url.port, timeout=timeout)
    try:
        conn.request("POST", path, body=raw, headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
    except OSError as e:
        conn.close()
        raise UpstreamError(502, f"upstream {base_url} unreachable: {e}") from None
    if resp.status != 200:
        text = resp.read().decode("utf-8", "replace")
        conn.close()
        raise UpstreamError(resp.status, text)
    return resp


def _describe(event: bytes) -> UpstreamEvent:
    payload = event.strip()
    if not payload.startswith(b"data:"):
        return UpstreamEvent(event, False, None)
    body = payload[5:].strip()
    try:
        chunk = json.loads(body)
    except ValueError:  # [DONE] and anything non-JSON
        return UpstreamEvent(event, False, None)
    content = any(
        (c.get("delta") or {}).get("content") or c.get("text") for c in chunk.get("choices") or []
    )
    usage = chunk.get("usage") or {}
    return UpstreamEvent(event, bool(content), usage.get("completion_tokens"))


def _event_end(buf: bytes) -> int:
    """Offset just past the first complete event (LF or CRLF line endings), or -1."""
    ends = [i + len(sep) for sep in (b"\n\n", b"\r\n\r\n") if (i := buf.find(sep)) != -1]
    return min(ends) if ends else -1


def sse_events(resp: http.client.HTTPResponse) -> Iterator[UpstreamEvent]:
    """Complete SSE events (``...\\n\\n``) as they arrive, however the bytes were chunked."""
    buf = b""
    while True:
        data = resp.read1(65536)
        if not data:
            break
        buf += data
        while (cut := _event_end(buf)) != -1:
            event, buf = buf[:cut], buf[cut:]
            yield _describe(event)
    if buf.strip():
        yield _describe(buf)
