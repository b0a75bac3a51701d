"""The lag proxy itself, against a tiny upstream (no sandbox): it forwards bytes
unchanged, fires the hook on exactly the n-th matching response (after the upstream
answered, before the client hears), holds that response, fires `then` on the next
mutating response only; and the case matrix's CI subset names only real cases."""

from __future__ import annotations

import json
import threading
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.faults.cases import COMMANDS, DEFAULT, STOPS, case_id, cases
from tests.faults.proxy import LagProxy, Trigger, is_mutating, operation_of


class _Upstream(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    received: list[tuple[str, str, bytes]] = []

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        target = self.headers.get("X-Amz-Target", "")
        _Upstream.received.append((target, self.path, body))
        doc = json.dumps({"echo": body.decode(), "EndpointStatus": "Creating"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-amz-json-1.1")
        self.send_header("Content-Length", str(len(doc)))
        self.end_headers()
        self.wfile.write(doc)


@pytest.fixture
def upstream() -> Iterator[str]:
    _Upstream.received = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Upstream)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _call(url: str, operation: str, body: dict[str, Any]) -> dict[str, Any]:
    req = urllib.request.Request(
        url + "/", data=json.dumps(body).encode(), method="POST",
        headers={"X-Amz-Target": f"SageMaker.{operation}",
                 "Content-Type": "application/x-amz-json-1.1"},
    )  # fmt: skip
    with urllib.request.urlopen(req, timeout=10) as resp:
        return dict(json.loads(resp.read()))


def test_it_forwards_unchanged_and_logs_each_exchange(upstream: str) -> None:
    with LagProxy(upstream, hold=0.0) as proxy:
        answer = _call(proxy.url, "CreateModel", {"ModelName": "m"})
        assert answer == {"echo": '{"ModelName": "m"}', "EndpointStatus": "Creating"}
        assert _Upstream.received == [("SageMaker.CreateModel", "/", b'{"ModelName": "m"}')]
        (exchange,) = proxy.log()
        assert (exchange.operation, exchange.params, exchange.status) == (
            "CreateModel",
            {"ModelName": "m"},
            200,
        )
        assert exchange.endpoint_status == "Creating" and exchange.hooked is None


def test_the_hook_fires_on_the_nth_response_after_upstream_has_it(upstream: str) -> None:
    heard: list[int] = []  # AddTags calls whose answer the client has read
    at_hook: list[tuple[int, list[int]]] = []

    def hook() -> None:  # what upstream had served, and what the client had heard, then
        at_hook.append((len(_Upstream.received), list(heard)))

    with LagProxy(upstream, hold=0.2) as proxy:
        proxy.arm(Trigger("AddTags", hook, nth=2))
        _call(proxy.url, "AddTags", {"n": 1})
        heard.append(1)
        _call(proxy.url, "ListTags", {})
        assert at_hook == []
        _call(proxy.url, "AddTags", {"n": 2})
        heard.append(2)
        _call(proxy.url, "AddTags", {"n": 3})
        # Upstream had served the 2nd AddTags (3 requests in), the client had not heard it.
        assert at_hook == [(3, [1])]
        assert [e.hooked for e in proxy.log()] == [None, None, "first", None]


def test_then_fires_once_on_the_next_mutating_response(upstream: str) -> None:
    calls: list[str] = []
    trigger = Trigger(
        "CreateEndpoint",
        lambda: calls.append("first"),
        matches=lambda params, state: params.get("EndpointName") == "e" and state == "Creating",
        then=lambda: calls.append("then"),
    )
    with LagProxy(upstream, hold=0.0) as proxy:
        proxy.arm(trigger)
        _call(proxy.url, "CreateEndpoint", {"EndpointName": "other"})  # does not match
        _call(proxy.url, "CreateEndpoint", {"EndpointName": "e"})
        _call(proxy.url, "DescribeEndpoint", {"EndpointName": "e"})  # not mutating
        _call(proxy.url, "DeleteEndpoint", {"EndpointName": "e"})
        _call(proxy.url, "DeleteModel", {"ModelName": "m"})
        assert calls == ["first", "then"]
        assert (trigger.fired_at, trigger.then_at) == (1, 3)
        proxy.disarm()
        _call(proxy.url, "DeleteEndpoint", {"EndpointName": "e"})
        assert calls == ["first", "then"]  # disarmed: forwarded, logged, no hook
        assert [e.hooked for e in proxy.log()] == [None, "first", None, "then", None, None]


def test_operations_are_named_as_aws_names_them() -> None:
    assert operation_of("POST", "/", {"X-Amz-Target": "SageMaker.CreateEndpoint"}, b"") == (
        "CreateEndpoint"
    )
    assert operation_of("POST", "/", {}, b"Action=GetRole&RoleName=r") == "GetRole"
    assert operation_of("GET", "/_peagle/health", {}, b"") == "_peagle"
    assert operation_of("GET", "/bucket?list-type=2", {}, b"") == "HTTP GET"
    assert [is_mutating(op) for op in ("AddTags", "DeleteTags", "UpdateEndpoint")] == [True] * 3
    assert [is_mutating(op) for op in ("ListTags", "DescribeEndpoint", "_peagle")] == [False] * 3


def test_the_ci_subset_names_real_cases_and_every_command_and_stop() -> None:
    every = {case_id(*c): c for c in cases(*COMMANDS)}
    assert set(DEFAULT) <= set(every), sorted(set(DEFAULT) - set(every))
    assert {every[i][0].key for i in DEFAULT} == set(COMMANDS)
    assert {every[i][2] for i in DEFAULT} == set(STOPS)
