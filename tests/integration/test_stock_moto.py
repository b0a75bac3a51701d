"""peagle against plain moto: a `moto.server.ThreadedMotoServer` without peagle's harness
and without the sandbox, reached through AWS_ENDPOINT_URL with fake credentials, as a
"CI with moto" user runs it (issue 24, item 6).

What stock moto 5.2.5 is, as these tests find and assert (a moto that changes fails here
instead of passing for the wrong reason):
- it does not implement ListInferenceComponents or UpdateEndpoint: its server answers
  both with werkzeug's HTML "500 Internal Server Error" page (in process, `mock_aws`
  raises NotImplementedError);
- its CreateEndpointConfig accepts only ~70 old instance types (no GPU peagle deploys to),
  so a deploy there fails at that call and rolls back;
- a new endpoint is InService at once (there is no Creating phase).
Its AddTags of an existing key appends a duplicate (peagle reads the last one); no command
here re-tags a key (update fails at UpdateEndpoint, before its retag).

The lifecycle test widens moto's instance-type list by the one type it deploys (the only
change to moto, and it adds no operation); everything else is moto as shipped.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import boto3
import pytest
from moto.core.base_backend import BackendDict
from moto.sagemaker.models import FakeEndpointConfig
from moto.sagemaker.responses import SageMakerResponse
from moto.server import ThreadedMotoServer

from tests.integration.lifecycle_env import REGION, World, build_world, record_requests, run

NAME = "peagle-gpt-oss-20b-p-eagle"
INSTANCE = "ml.g7e.2xlarge"  # the catalog's default for gpt-oss-20b
MUTATING = ("Create", "Update", "Delete", "Add")
FIX = "(fix: stock moto lacks this call"


@pytest.fixture
def stock_moto(aws_credentials: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A ThreadedMotoServer as shipped, AWS_ENDPOINT_URL pointing at it; its URL."""
    # The facts about stock moto the tests below rest on (module docstring).
    assert not hasattr(SageMakerResponse, "list_inference_components")
    assert not hasattr(SageMakerResponse, "update_endpoint")
    # The server thread logs each failed request's traceback; the CLI's stderr is what
    # the tests read, so keep the server's own log out of it.
    monkeypatch.setattr(logging.getLogger("werkzeug"), "disabled", True)
    BackendDict.reset()  # the server shares this process's backends: start empty
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    url = f"http://{host}:{port}"
    monkeypatch.setenv("AWS_ENDPOINT_URL", url)
    monkeypatch.setenv("PEAGLE_POLL_SECONDS", "0.01")
    try:
        yield url
    finally:
        server.stop()
        BackendDict.reset()


@pytest.fixture
def world(stock_moto: str, monkeypatch: pytest.MonkeyPatch) -> World:
    """What a deploy reads (a role SageMaker trusts, JumpStart's objects), made on the
    server, and a recorder of every SageMaker request the CLI sends."""
    w = build_world()
    monkeypatch.setenv("PEAGLE_ROLE_ARN", w.role_arn)
    record_requests(w, monkeypatch, "sagemaker")
    return w


def inventory() -> dict[str, list[str]]:
    sm = boto3.client("sagemaker", region_name=REGION)
    return {
        "models": sorted(m["ModelName"] for m in sm.list_models()["Models"]),
        "endpoint_configs": sorted(
            c["EndpointConfigName"] for c in sm.list_endpoint_configs()["EndpointConfigs"]
        ),
        "endpoints": sorted(e["EndpointName"] for e in sm.list_endpoints()["Endpoints"]),
    }


NOTHING: dict[str, list[str]] = {"models": [], "endpoint_configs": [], "endpoints": []}


def cli(capsys: pytest.CaptureFixture, world: World, *argv: str) -> tuple[int, str, str, list]:
    """`peagle <argv>`: exit code, stdout, stderr, and the SageMaker operations it sent."""
    world.requests.clear()
    code, out, err = run(capsys, *argv)
    assert "Traceback" not in out + err and "<html" not in (out + err).lower()
    return code, out, err, [op for op, _ in world.requests]


def error_line(err: str) -> str:
    """The one error line: the last line of stderr, and the only one saying error:."""
    lines = [line for line in err.splitlines() if line.strip()]
    assert [line for line in lines if line.startswith("error:")] == lines[-1:], err
    return lines[-1]


def mutating(ops: list[str]) -> list[str]:
    return [op for op in ops if op.startswith(MUTATING)]


def test_deploy_on_stock_moto_fails_on_its_instance_types_and_leaves_nothing(world, capsys):
    code, _, err, ops = cli(capsys, world, "deploy", "gpt-oss-20b", "--yes")

    assert code == 1  # README: a failure in AWS
    line = error_line(err)
    assert "CreateEndpointConfig" in line and "ValidationException" in line
    assert f"'{INSTANCE}'" in line
    # One readable line (issue 33): moto's ~70-type list is not in it, and the fix names
    # the ways to a server that knows the type (the sandbox, the harness, widening moto).
    assert len(line) <= 300, (len(line), line)
    assert "ml.r5d.12xlarge" not in line  # the first of moto's list
    fix = line[line.index("(fix: ") :]
    assert "--sandbox" in fix and "docs/guides/ci-moto.md" in fix
    assert "validate_instance_type" in fix
    assert mutating(ops) == ["CreateModel", "CreateEndpointConfig", "DeleteModel"]
    assert inventory() == NOTHING


@pytest.fixture
def moto_knows_the_instance(monkeypatch: pytest.MonkeyPatch) -> None:
    """moto's CreateEndpointConfig also accepts INSTANCE (and, as shipped, nothing else
    new). moto's own check runs for every other type."""
    stock = FakeEndpointConfig.validate_instance_type

    def validate(self: Any, instance_type: str) -> None:
        if instance_type != INSTANCE:
            stock(self, instance_type)

    monkeypatch.setattr(FakeEndpointConfig, "validate_instance_type", validate)


def test_deploy_ls_status_update_delete_gc_on_stock_moto(world, capsys, moto_knows_the_instance):
    code, _, err, ops = cli(capsys, world, "deploy", "gpt-oss-20b", "--yes")
    assert code == 0, err
    deployed = inventory()
    assert deployed["endpoints"] == [NAME]
    assert len(deployed["models"]) == 1 and len(deployed["endpoint_configs"]) == 1
    # A standard endpoint cannot host components: deploy never asks about them.
    assert "ListInferenceComponents" not in ops

    code, out, err, _ = cli(capsys, world, "--json", "ls")
    assert code == 0, err
    rows = json.loads(out)
    rows = rows["endpoints"] if isinstance(rows, dict) else rows
    assert [(r["endpoint"], r["status"], r["components"]) for r in rows] == [
        (NAME, "InService", [])
    ]

    code, out, err, ops = cli(capsys, world, "--json", "status", NAME)
    assert code == 0, err
    status = json.loads(out)
    # InService at once (stock moto has no Creating phase); K=3, the README's default.
    assert (status["endpoint"], status["status"], status["k"]) == (NAME, "InService", 3)
    assert status["model"] == deployed["models"][0]
    assert "ListInferenceComponents" not in ops

    # stock moto has no UpdateEndpoint: the update is one line naming the call, and what
    # it created before it (the new model and config) is rolled back.
    code, _, err, ops = cli(capsys, world, "update", NAME, "-k", "5", "--yes")
    assert code == 1  # README: a failure in AWS
    line = error_line(err)
    assert "SageMaker UpdateEndpoint is not implemented by this endpoint (moto?)" in line, line
    assert FIX in line
    assert ops.count("UpdateEndpoint") == 1
    assert mutating(ops)[-2:] == ["DeleteEndpointConfig", "DeleteModel"]
    assert inventory() == deployed
    # The SDK call the CLI makes fails the same way, with the same line in the CLI's words.
    from sm_peagle import PeagleError, update
    from sm_peagle.cli.faces import CliFace

    with pytest.raises(PeagleError) as raised:
        update(NAME, k=5)
    assert f"error: {raised.value.one_line(CliFace('update'))}" == line
    assert "peagle_sandbox.client()" in raised.value.one_line()  # Python's words
    assert inventory() == deployed

    # The endpoint's only variant names its model, so delete does not ask for its
    # components. It still lists the account's (a component whose endpoint is gone may
    # name this model), once: stock moto answers that it has no such call, which means
    # it has none.
    code, _, err, ops = cli(capsys, world, "delete", NAME, "--yes")
    assert code == 0, err
    assert world.sent("ListInferenceComponents") == [{}]
    assert mutating(ops) == ["DeleteEndpoint", "DeleteEndpointConfig", "DeleteModel"]
    assert inventory() == NOTHING

    # gc lists every component (an orphan's endpoint is gone): asked once, not an error.
    code, out, err, ops = cli(capsys, world, "gc", "--yes")
    assert code == 0, err
    assert world.sent("ListInferenceComponents") == [{}]
    assert mutating(ops) == []
    assert inventory() == NOTHING


def test_in_process_stock_moto_deletes_a_standard_endpoint_and_gc_finds_nothing(
    aws: None, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`mock_aws` as shipped (no harness): moto raises NotImplementedError in process for
    ListInferenceComponents, which delete and gc read as "no components"."""
    assert not hasattr(SageMakerResponse, "list_inference_components")
    w = World(role_arn="arn:aws:iam::123456789012:role/r")
    record_requests(w, monkeypatch, "sagemaker")
    sm = boto3.client("sagemaker", region_name=REGION)
    managed = [{"Key": "peagle:managed", "Value": "true"}]
    sm.create_model(
        ModelName="m", ExecutionRoleArn=w.role_arn, PrimaryContainer={"Image": "i"}, Tags=managed
    )
    variant = {"VariantName": "AllTraffic", "ModelName": "m", "InstanceType": "ml.g4dn.xlarge",
               "InitialInstanceCount": 1}  # fmt: skip
    sm.create_endpoint_config(EndpointConfigName="c", ProductionVariants=[variant], Tags=managed)
    sm.create_endpoint(EndpointName="e", EndpointConfigName="c", Tags=managed)

    code, _, err, ops = cli(capsys, w, "delete", "e", "--yes")
    assert code == 0, err
    assert [p for p in w.sent("ListInferenceComponents") if p] == []  # none for "e"
    assert mutating(ops) == ["DeleteEndpoint", "DeleteEndpointConfig", "DeleteModel"]
    assert inventory() == NOTHING

    code, _, err, ops = cli(capsys, w, "gc", "--yes")
    assert code == 0, err
    assert mutating(ops) == []


def test_in_process_stock_moto_names_the_call_it_lacks(aws: None) -> None:
    from sm_peagle.aws import AwsContext, as_peagle_error

    sm = AwsContext(REGION).client("sagemaker")
    with pytest.raises(NotImplementedError) as raised:
        sm.update_endpoint(EndpointName="e", EndpointConfigName="c")
    err = as_peagle_error(raised.value)
    assert err is not None and err.exit_code == 1  # type: ignore[attr-defined]
    assert err.one_line().startswith(  # type: ignore[attr-defined]
        "SageMaker UpdateEndpoint is not implemented by this endpoint (moto?) " + FIX
    )


class _Answer(BaseHTTPRequestHandler):
    """One canned answer to every POST: (status, content type, body) from the server."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        status, ctype, body = self.server.answer  # type: ignore[attr-defined]
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: Any) -> None:
        pass


HTML_500 = (
    b"<!doctype html>\n<html lang=en>\n<title>500 Internal Server Error</title>\n"
    b"<h1>Internal Server Error</h1>\n<p>The server encountered an internal error</p>\n"
)


@pytest.mark.parametrize(
    ("status", "ctype", "body", "expected"),
    [
        # moto's server: its NotImplementedError is werkzeug's HTML page
        (500, "text/html", HTML_500, "SageMaker ListInferenceComponents is not implemented"),
        # LocalStack's way: 501 Not Implemented
        (501, "application/json", b'{"__type": "InternalFailure", "message": "not yet"}',
         "SageMaker ListInferenceComponents is not implemented"),
        # a server error that says what it is: reported as AWS's error, as before
        (500, "application/json", b'{"__type": "InternalFailure", "message": "boom"}',
         "ListInferenceComponents failed: InternalFailure: boom"),
    ],
)  # fmt: skip
def test_a_custom_endpoint_that_lacks_the_call_is_named_in_one_line(
    aws_credentials: None,
    monkeypatch: pytest.MonkeyPatch,
    status: int,
    ctype: str,
    body: bytes,
    expected: str,
) -> None:
    from sm_peagle.aws import AwsContext, as_peagle_error

    server = ThreadingHTTPServer(("127.0.0.1", 0), _Answer)
    server.answer = (status, ctype, body)  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{server.server_address[1]}")
    try:
        sm = AwsContext(REGION, max_attempts=0).client("sagemaker")  # one attempt: no backoff
        with pytest.raises(Exception) as raised:
            sm.list_inference_components()
    finally:
        server.shutdown()
        server.server_close()
    err = as_peagle_error(raised.value)
    assert err is not None and err.exit_code == 1  # type: ignore[attr-defined]
    line = err.one_line()  # type: ignore[attr-defined]
    assert line.startswith(expected) and "<" not in line and "\n" not in line
    assert (FIX in line) == ("not implemented" in expected)


def test_an_enum_refusal_is_one_short_line_without_the_list() -> None:
    """AWS's wording for a value outside an enum ends with the whole value set; the line
    keeps the value and the field. Only an instance type the SageMaker API itself lists
    (botocore's model has ml.g7e.2xlarge, stock moto does not) gets the moto fix."""
    from botocore.exceptions import ClientError

    from sm_peagle.aws import as_peagle_error

    values = ", ".join(f"ml.old{i}.xlarge" for i in range(70))
    message = (
        "1 validation error detected: Value '{}' at 'productionVariants.1.member.instanceType' "
        f"failed to satisfy constraint: Member must satisfy enum value set: [{values}]"
    )
    for value, moto_fix in ((INSTANCE, True), ("ml.nope.xlarge", False)):
        body = {"Error": {"Code": "ValidationException", "Message": message.format(value)}}
        err = as_peagle_error(ClientError(body, "CreateEndpointConfig"))
        line = err.one_line()  # type: ignore[union-attr]
        assert line.startswith(
            f"CreateEndpointConfig failed: ValidationException: instance type '{value}' is "
            "not among this server's 70 (fix: "
            if moto_fix
            else f"CreateEndpointConfig failed: ValidationException: '{value}' at "
            "'productionVariants.1.member.instanceType' is not among this server's 70 values"
        ), line
        assert "ml.old0" not in line and len(line) <= 300 and "(fix: " in line
        assert ("stock moto" in line) == moto_fix


def test_monitor_on_stock_moto_names_the_transformer_call_and_leaves_nothing(
    world, capsys, moto_knows_the_instance
):
    """Speculation health needs CloudWatch Logs' PutTransformer, which stock moto 5.2.5
    lacks: `deploy --monitor` there is one line naming the call (exit 1, a failure in AWS),
    and rolls back what it made before it: the log group it created, the config, the
    model. The endpoint was never created (the monitoring requests go before it)."""
    from moto.logs.responses import LogsResponse

    assert not hasattr(LogsResponse, "put_transformer")  # the fact this rests on
    code, _, err, ops = cli(capsys, world, "deploy", "gpt-oss-20b", "--monitor", "--yes")
    assert code == 1, err
    line = error_line(err)
    assert "PutTransformer" in line, line
    assert "CreateEndpoint" not in ops
    assert inventory() == NOTHING
    logs = boto3.client("logs", region_name=REGION)
    assert logs.describe_log_groups()["logGroups"] == []
    cloudwatch = boto3.client("cloudwatch", region_name=REGION)
    assert cloudwatch.describe_alarms()["MetricAlarms"] == []
