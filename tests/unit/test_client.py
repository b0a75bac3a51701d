"""`sm_peagle.Client` (issue 34): the session held once, the operations its methods, the
module functions its default instance's, and a target given as data (`endpoint_url=`,
an `AwsContext`) rather than through the process environment.

The endpoint-URL tests talk to a local HTTP server that records what reaches it: the
requests a client aimed at a URL sends must arrive there, with the keys it was given,
whatever AWS_ENDPOINT_URL and AWS_ACCESS_KEY_ID say."""

from __future__ import annotations

import http.server
import inspect
import json
import threading
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

import sm_peagle
from sm_peagle.aws import AwsContext
from sm_peagle.errors import SpecError

SESSION_KEYWORDS = {"region", "aws", "say", "on_connect", "progress"}
# The operations this client's mixins hold (EndpointOps, CatalogOps, IacOps, DrafterOps,
# DoctorOps); the others join with their own mixins.
OPERATIONS = (
    "status", "ls", "logs", "delete", "gc", "models", "instances", "schema", "recommend",
    "export", "iam_policy", "drafter_inspect", "drafter_check", "drafter_push", "doctor",
)  # fmt: skip


class _Recorder(http.server.BaseHTTPRequestHandler):
    seen: list[dict[str, str]] = []

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        _Recorder.seen.append(
            {
                "target": self.headers.get("X-Amz-Target", ""),
                "authorization": self.headers.get("Authorization", ""),
            }
        )
        body = json.dumps({"Endpoints": []}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-amz-json-1.1")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    _Recorder.seen = []
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def elsewhere(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    """The environment points somewhere else, with other keys: a client's own target
    must win over both."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "REALKEYFROMENV")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "real-secret")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.delenv("PEAGLE_SANDBOX_URL", raising=False)


def test_a_client_aimed_at_a_url_sends_there_with_its_own_keys(server, elsewhere) -> None:
    aws = AwsContext("us-east-1", endpoint_url=server, credentials=("SANDBOXKEY", "s"))
    said: list[Any] = []
    client = sm_peagle.Client(aws=aws, on_connect=said.append)
    assert client.ls() == []
    assert [r["target"] for r in _Recorder.seen] == ["SageMaker.ListEndpoints"]
    auth = _Recorder.seen[0]["authorization"]
    assert "Credential=SANDBOXKEY/" in auth and "REALKEYFROMENV" not in auth
    assert said == [aws]  # on_connect sees the context before the request
    assert repr(client) == f"Client(region='us-east-1', endpoint_url='{server}')"


def test_endpoint_url_on_the_client_itself(server, elsewhere) -> None:
    client = sm_peagle.Client(region="us-east-1", endpoint_url=server)
    assert client.ls() == []
    assert [r["target"] for r in _Recorder.seen] == ["SageMaker.ListEndpoints"]
    # No keys given: the environment's credentials, but the client's URL.
    assert "Credential=REALKEYFROMENV/" in _Recorder.seen[0]["authorization"]
    from sm_peagle.ops.target import talking_to_context

    line = talking_to_context(client.context())
    assert line == f"talking to: custom AWS endpoint {server} (region us-east-1)"


def test_every_operation_is_a_method_without_session_parameters() -> None:
    for op in OPERATIONS:
        method = getattr(sm_peagle.Client, op)
        params = set(inspect.signature(method).parameters)
        assert not params & SESSION_KEYWORDS, op
        assert "_cli" not in params, op
        assert not any(
            p.kind is inspect.Parameter.VAR_KEYWORD
            for p in inspect.signature(method).parameters.values()
        ), op
        # The module function is the default client's method, with its signature.
        function = getattr(sm_peagle, op)
        assert function is getattr(sm_peagle, op)
        assert [*inspect.signature(function).parameters] == [
            p for p in inspect.signature(method).parameters if p != "self"
        ], op


def test_the_old_session_keywords_still_work_with_a_future_warning() -> None:
    from sm_peagle.catalog.instances import INSTANCES
    from sm_peagle.catalog.regional_prices import for_region

    with pytest.warns(FutureWarning, match=r"sm_peagle.Client\(region=\)"):
        old = sm_peagle.instances(region="eu-west-1")
    assert old == sm_peagle.Client(region="eu-west-1").instances()
    assert old == for_region(list(INSTANCES.values()), "eu-west-1")
    # Without them, no warning.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sm_peagle.instances()


def test_a_bad_region_is_refused_when_the_client_is_made() -> None:
    with pytest.raises(SpecError) as e:
        sm_peagle.Client(region="mars-1")
    assert (e.value.field, e.value.value) == ("region", "mars-1")


def test_endpoint_handles_talk_through_the_client(elsewhere) -> None:
    client = sm_peagle.Client(region="us-east-1")
    ep = client.endpoint("my-ep")  # no request: nothing listens at AWS_ENDPOINT_URL
    assert ep.name == "my-ep" and "region='us-east-1'" in repr(ep)
    with pytest.raises(SpecError) as e:
        client.endpoint("not a name")
    assert e.value.field == "name"
    assert str(e.value.remedy) == "`sm_peagle.ls()` lists the endpoints peagle manages"


def test_attach_is_deprecated_for_client_endpoint(monkeypatch, elsewhere) -> None:
    from sm_peagle import endpoint

    monkeypatch.setattr(endpoint.Endpoint, "status", lambda self: None)
    with pytest.warns(FutureWarning, match=r"Client\(region=\.\.\.\)\.endpoint\(name\)"):
        ep = sm_peagle.Endpoint.attach("my-ep", region="us-west-2")
    assert ep.client.region == "us-west-2"
