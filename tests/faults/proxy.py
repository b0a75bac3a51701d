"""A loopback lag proxy in front of the sandbox: it forwards every request unchanged and,
at one chosen moment, fires a hook and holds the response.

The moment a fault suite needs is "the resource now exists on AWS, the client has not
heard": the proxy forwards the TARGET request (the n-th response of one operation that
matches a predicate), and when the upstream response comes back it fires the hook (the
test sends a signal to the CLI process), then holds that response for `hold` seconds
before passing it on, so the signal lands while the client still waits for it.

After the first hook, `then` (optional) fires once on the response of the next mutating
request: the first step of a rollback, where a double Ctrl-C lands.

The proxy also keeps its own log of every exchange (operation, parameters, status, the
endpoint status in the response, and whether a hook fired on it), so a test can tell
what the CLI sent after a signal. Standard library only.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

__all__ = ["Exchange", "LagProxy", "Trigger", "is_mutating", "operation_of"]

# Operations that change an account (SageMaker, Application Auto Scaling, CloudWatch).
_MUTATING_PREFIXES = ("Create", "Update", "Delete", "Put", "Register", "Deregister", "Stop")
_MUTATING = {"AddTags"}
# Hop-by-hop headers: the proxy re-frames every body with a Content-Length.
_HOP = {"connection", "keep-alive", "transfer-encoding", "proxy-connection", "te", "upgrade"}
# Headers the proxy's own server writes (a second copy would confuse a strict client).
_OWN = {"server", "date", "content-length"}


def is_mutating(operation: str) -> bool:
    return operation in _MUTATING or operation.startswith(_MUTATING_PREFIXES)


def operation_of(method: str, path: str, headers: Any, body: bytes) -> str:
    """The AWS operation of a request: the X-Amz-Target suffix (JSON protocols:
    `SageMaker.CreateEndpoint` -> CreateEndpoint), the form's Action (query protocols:
    IAM, STS), `_peagle` for the sandbox's own routes, else `HTTP <METHOD>` (S3's REST)."""
    target = headers.get("X-Amz-Target")
    if target:
        return str(target).rsplit(".", 1)[-1]
    if path.startswith("/_peagle/"):
        return "_peagle"
    if method == "POST" and body:
        action = parse_qs(body.decode("utf-8", "replace")).get("Action")
        if action:
            return action[0]
    return f"HTTP {method}"


def _json(body: bytes) -> dict[str, Any]:
    try:
        doc = json.loads(body) if body else {}
    except ValueError:
        return {}
    return doc if isinstance(doc, dict) else {}


@dataclass(frozen=True)
class Exchange:
    """One request the proxy forwarded and the response it got back."""

    seq: int
    operation: str
    params: dict[str, Any]
    status: int
    endpoint_status: str | None  # EndpointStatus in the response (DescribeEndpoint)
    hooked: str | None  # "first" / "then" when a hook fired on this response
    time: float


Hook = Callable[[], None]


@dataclass
class Trigger:
    """Fire `hook` on the `nth` upstream response of `operation` that `matches`
    (parameters, endpoint status); then `then` on the next mutating response, once."""

    operation: str
    hook: Hook
    nth: int = 1
    matches: Callable[[dict[str, Any], str | None], bool] | None = None
    then: Hook | None = None
    seen: int = 0
    fired_at: int | None = None  # seq of the exchange the first hook fired on
    then_at: int | None = None
    errors: list[BaseException] = field(default_factory=list)


class LagProxy:
    """`with LagProxy(upstream) as proxy:` serves on 127.0.0.1:<free port> (`proxy.url`)."""

    def __init__(self, upstream: str, hold: float = 0.6) -> None:
        parts = urlsplit(upstream)
        self.upstream = (parts.hostname or "127.0.0.1", parts.port or 80)
        self.hold = hold
        self._lock = threading.Lock()
        self._log: list[Exchange] = []
        self._trigger: Trigger | None = None
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        # A short poll: shutdown() waits up to one interval, once per world and self-test.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> LagProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    # ----------------------------------------------------------------- control

    def arm(self, trigger: Trigger | None) -> None:
        """Use `trigger` from the next response on (None: forward only); clears the log."""
        with self._lock:
            self._trigger = trigger
            self._log.clear()

    def disarm(self) -> None:
        """Forward only from now on; the log of the armed run stays readable."""
        with self._lock:
            self._trigger = None

    def log(self) -> list[Exchange]:
        with self._lock:
            return list(self._log)

    # ----------------------------------------------------------------- forwarding

    def _decide(self, operation: str, params: dict[str, Any], state: str | None) -> str | None:
        """Which hook (if any) this response fires; counted under the lock so two
        concurrent responses cannot both be the n-th."""
        t = self._trigger
        if t is None:
            return None
        if t.fired_at is None:
            if operation == t.operation and (t.matches is None or t.matches(params, state)):
                t.seen += 1
                if t.seen == t.nth:
                    return "first"
        elif t.then is not None and t.then_at is None and is_mutating(operation):
            return "then"
        return None

    def _exchange(
        self, method: str, path: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, str, list[tuple[str, str]], bytes]:
        operation = operation_of(method, path, headers, body)
        conn = http.client.HTTPConnection(*self.upstream, timeout=120)
        try:
            conn.request(method, path, body=body or None, headers=headers)
            resp = conn.getresponse()
            data = resp.read()
            status, reason, out_headers = resp.status, resp.reason, resp.getheaders()
        finally:
            conn.close()
        params = _json(body)
        state = _json(data).get("EndpointStatus") if data[:1] == b"{" else None
        with self._lock:
            fired = self._decide(operation, params, state)
            seq = len(self._log)
            t = self._trigger
            if t is not None and fired == "first":
                t.fired_at = seq
            elif t is not None and fired == "then":
                t.then_at = seq
            self._log.append(Exchange(seq, operation, params, status, state, fired, time.time()))
        if fired and t is not None:
            try:
                hook = t.hook if fired == "first" else t.then
                if hook is not None:
                    hook()
            except BaseException as e:  # noqa: BLE001 - reported by the test, not here
                t.errors.append(e)
            time.sleep(self.hold)  # the client has not heard: the signal lands first
        return status, reason, out_headers, data

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet: the test reads proxy.log()
                pass

            def _any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
                try:
                    status, reason, out, data = proxy._exchange(
                        self.command, self.path, headers, body
                    )
                except OSError as e:  # the sandbox went away: say so, as a gateway would
                    status, reason, out = 502, "Bad Gateway", []
                    data = f"proxy: upstream failed: {e}".encode()
                # The client may have died on its signal: a closed socket is expected.
                with contextlib.suppress(OSError):
                    self.send_response(status, reason)
                    length = str(len(data))
                    for key, value in out:
                        if key.lower() == "content-length" and self.command == "HEAD":
                            length = value  # a HEAD answers with the length of a GET
                        elif key.lower() not in _HOP | _OWN:
                            self.send_header(key, value)
                    self.send_header("Content-Length", length)
                    self.end_headers()
                    if self.command != "HEAD":
                        self.wfile.write(data)
                    self.wfile.flush()

            do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_PATCH = _any

        return Handler
