"""The sandbox server on its clock (issue 36), started directly as `peagle sandbox start`
spawns it: `--clock-rate`, `--clock-frozen`, `GET/POST /_peagle/clock`, the `Date` header of
every answer, the log simulator's intervals and `--deleting-seconds`, all on sandbox time;
and the real engine's stamps (with the stand-in engine of test_sandbox_engine_host).

Nothing here sleeps for the control plane: a frozen clock is advanced, and the one running
clock (rate 600) makes 15 sandbox minutes last about 1.5 real seconds. The deadlines below
only bound a server that never answers; no assertion is about how long anything took.
"""

from __future__ import annotations

import email.utils
import http.client
import json
import os
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.sandbox_helpers import sandbox_client

pytestmark = pytest.mark.e2e

ROLE = "arn:aws:iam::123456789012:role/peagle-sandbox-role"
IMAGE = "763104351884.dkr.ecr.us-east-1.amazonaws.com/vllm:0.11.0-gpu-py312"
# A P-EAGLE endpoint's container setting, as peagle writes it (K=3): SpecDecoding lines.
SPEC = {"method": "eagle3", "model": "/opt/ml/drafter", "num_speculative_tokens": 3,
        "parallel_drafting": True}  # fmt: skip
CHAT = {"messages": [{"role": "user", "content": "hello"}], "max_tokens": 16}


class Server:
    """One `python -m peagle_sandbox.server` with `args`, until `stop()`."""

    def __init__(self, root: Path, *args: str) -> None:
        root.mkdir(parents=True, exist_ok=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "PEAGLE_"))}
        state, log = root / "sandbox.json", root / "sandbox.log"
        cmd = [sys.executable, "-m", "peagle_sandbox.server", "--port", "0",
               "--state-file", str(state), *args]  # fmt: skip
        with open(log, "ab") as out:
            self.proc = subprocess.Popen(
                cmd, env=env, cwd=root, stdin=subprocess.DEVNULL, stdout=out,
                stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        deadline = time.monotonic() + 60  # a bound on a server that never answers
        while not state.exists():
            assert self.proc.poll() is None, log.read_text()[-2000:]
            assert time.monotonic() < deadline, "the sandbox never answered"
            time.sleep(0.05)
        self.state: dict[str, Any] = json.loads(state.read_text())
        self.url = str(self.state["url"])
        self.sm = sandbox_client(self.url, "sagemaker")
        self.runtime = sandbox_client(self.url, "sagemaker-runtime")
        self.logs = sandbox_client(self.url, "logs")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    # ------------------------------------------------------------------ raw HTTP

    def request(
        self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        """(status, every header as sent, body): raw, so a doubled header shows."""
        url = urllib.parse.urlsplit(self.url)
        conn = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
        data = body if isinstance(body, bytes | None) else json.dumps(body).encode()
        conn.request(method, path, body=data, headers=headers or {})
        resp = conn.getresponse()
        out = (resp.status, resp.getheaders(), resp.read())
        conn.close()
        return out

    def clock(self, body: Any = None) -> dict[str, Any]:
        status, _, data = self.request(
            "POST" if body is not None else "GET", "/_peagle/clock", body
        )
        assert status == 200, data
        return dict(json.loads(data))

    def advance(self, duration: timedelta) -> dict[str, Any]:
        return self.clock({"advance": duration.total_seconds()})

    # ------------------------------------------------------------------ the account

    def create(self, name: str, *, spec: dict[str, Any] | None = None) -> None:
        env = {"SM_VLLM_SPECULATIVE_CONFIG": json.dumps(spec)} if spec else {}
        self.sm.create_model(
            ModelName=name,
            ExecutionRoleArn=ROLE,
            PrimaryContainer={"Image": IMAGE, "Environment": env},
        )
        self.sm.create_endpoint_config(
            EndpointConfigName=name,
            ProductionVariants=[
                {
                    "VariantName": "AllTraffic",
                    "ModelName": name,
                    "InstanceType": "ml.g6e.xlarge",
                    "InitialInstanceCount": 1,
                }
            ],
        )
        self.sm.create_endpoint(EndpointName=name, EndpointConfigName=name)

    def status(self, name: str) -> str:
        return str(self.sm.describe_endpoint(EndpointName=name)["EndpointStatus"])

    def invoke(self, name: str) -> dict[str, Any]:
        out = self.runtime.invoke_endpoint(
            EndpointName=name, ContentType="application/json", Body=json.dumps(CHAT)
        )
        return dict(json.loads(out["Body"].read()))

    def log_messages(self, name: str) -> list[str]:
        group = f"/aws/sagemaker/Endpoints/{name}"
        events = self.logs.filter_log_events(logGroupName=group)["events"]
        return [e["message"] for e in events]


def dates(headers: list[tuple[str, str]]) -> list[float]:
    """Every Date header, as epoch seconds."""
    return [
        email.utils.parsedate_to_datetime(v).timestamp() for k, v in headers if k.lower() == "date"
    ]


def moto_call(
    server: Server, operation: str, params: dict[str, Any]
) -> tuple[int, list[tuple[str, str]], bytes]:
    """A SageMaker call as a raw request: moto answers it (a success with its own Date)."""
    credential = "Credential=x/20260101/us-east-1/sagemaker/aws4_request"
    return server.request(
        "POST",
        "/",
        params,
        {
            "X-Amz-Target": f"SageMaker.{operation}",
            "Content-Type": "application/x-amz-json-1.1",
            "Authorization": f"AWS4-HMAC-SHA256 {credential}, SignedHeaders=host, Signature=x",
        },
    )


@pytest.fixture(scope="module")
def frozen(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A sandbox whose clock starts frozen: Creating 15 sandbox minutes, a stats line
    every sandbox minute, Deleting 10 sandbox minutes."""
    server = Server(
        tmp_path_factory.mktemp("frozen"),
        "--clock-frozen", "--creating-seconds", "900", "--metrics-interval", "60",
        "--deleting-seconds", "600",
    )  # fmt: skip
    yield server
    server.stop()


@pytest.fixture(scope="module")
def fast(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A sandbox whose clock runs at 600 sandbox seconds per real second; slow simulated
    steps (x50: about a second each) keep a stream in flight long enough to look at."""
    server = Server(
        tmp_path_factory.mktemp("fast"),
        "--clock-rate", "600", "--creating-seconds", "900", "--step-time-factor", "50",
    )  # fmt: skip
    yield server
    server.stop()


# ---------------------------------------------------------------------- a running clock


def test_at_rate_600_fifteen_sandbox_minutes_of_creating_pass_and_are_recorded(
    fast: Server,
) -> None:
    assert fast.state["clock_rate"] == 600.0
    assert fast.clock()["rate"] == 600.0
    fast.create("clock-fast")
    assert fast.status("clock-fast") == "Creating"
    deadline = time.monotonic() + 60  # 900 / 600 = 1.5 real seconds expected
    while (described := fast.sm.describe_endpoint(EndpointName="clock-fast"))[
        "EndpointStatus"
    ] != "InService":
        assert described["EndpointStatus"] == "Creating"
        assert time.monotonic() < deadline, "never InService"
        time.sleep(0.1)
    took = described["LastModifiedTime"] - described["CreationTime"]
    # The transition is stamped when it was due, not when a describe saw it; the two
    # stamps are a few real milliseconds apart at creation (x600), and moto keeps ms.
    assert abs(took.total_seconds() - 900) < 5, took


def test_an_invocation_holds_the_clock_at_real_time_until_its_stream_ends(
    fast: Server,
) -> None:
    name = "clock-fast-stream"
    fast.create(name)
    fast.advance(timedelta(minutes=15))
    assert fast.status(name) == "InService"
    assert fast.clock()["real_time_holds"] == 0
    stream = fast.runtime.invoke_endpoint_with_response_stream(
        EndpointName=name,
        ContentType="application/json",
        # A few tokens: on the slowed engine each step takes about a second.
        Body=json.dumps({**CHAT, "stream": True, "max_tokens": 4}),
    )["Body"]
    events = iter(stream)
    next(events)  # the first part: the request is in flight, more steps to come
    assert fast.clock()["real_time_holds"] == 1
    for _ in events:
        pass
    deadline = time.monotonic() + 30  # the server closes the body just after its last byte
    while fast.clock()["real_time_holds"] != 0:
        assert time.monotonic() < deadline, "the hold outlived the stream"
        time.sleep(0.05)


# ---------------------------------------------------------------------- a frozen clock


def test_a_frozen_clock_keeps_creating_until_advanced(frozen: Server) -> None:
    frozen.create("clock-frozen")
    for _ in range(5):
        assert frozen.status("clock-frozen") == "Creating"
    with pytest.raises(ClientError) as e:  # SageMaker refuses while Creating
        frozen.invoke("clock-frozen")
    assert e.value.response["Error"]["Code"] == "ValidationError"
    frozen.advance(timedelta(minutes=15))
    described = frozen.sm.describe_endpoint(EndpointName="clock-frozen")
    assert described["EndpointStatus"] == "InService"
    took = described["LastModifiedTime"] - described["CreationTime"]
    assert took == timedelta(minutes=15)  # frozen: nothing else moved the clock
    answer = frozen.invoke("clock-frozen")
    assert answer["choices"]
    # The container's `created` is its own time: the sandbox clock's (frozen: exact).
    assert answer["created"] == int(frozen.clock()["epoch"])


def test_the_date_header_of_moto_and_of_the_runtime_follows_the_clock(
    frozen: Server,
) -> None:
    before = frozen.clock()["epoch"]
    now = frozen.advance(timedelta(days=2))["epoch"]
    assert now - before == pytest.approx(2 * 86400)  # frozen: exactly the advance
    answers = {
        "moto (ListEndpoints)": moto_call(frozen, "ListEndpoints", {}),
        "moto (DescribeEndpoint of nothing)": moto_call(
            frozen, "DescribeEndpoint", {"EndpointName": "no-such-endpoint"}
        ),
        "the runtime (InvokeEndpoint of nothing)": frozen.request(
            "POST", "/endpoints/no-such-endpoint/invocations", CHAT
        ),
        "the runtime (/_peagle/health)": frozen.request("GET", "/_peagle/health"),
    }
    for who, (status, headers, body) in answers.items():
        assert status in (200, 400), (who, status, body)
        # One Date per answer (http.server adds the wall clock's unless told otherwise),
        # in sandbox time (HTTP dates have whole seconds).
        assert dates(headers) == [float(int(now))], (who, headers)


def test_a_stats_line_is_written_as_soon_as_the_clock_passes_the_interval(
    frozen: Server,
) -> None:
    name = "clock-frozen-logs"
    frozen.create(name, spec=SPEC)
    frozen.advance(timedelta(minutes=15))
    assert frozen.status(name) == "InService"
    frozen.advance(timedelta(minutes=1))  # the start-up lines' interval, without traffic
    frozen.invoke(name)
    assert not [m for m in frozen.log_messages(name) if "SpecDecoding metrics" in m]
    frozen.advance(timedelta(minutes=1))  # the POST answers once the tick has written
    lines = [m for m in frozen.log_messages(name) if "SpecDecoding metrics" in m]
    assert len(lines) == 1, lines
    assert "Drafted:" in lines[0]


def test_deleting_lasts_its_sandbox_seconds(frozen: Server) -> None:
    name = "clock-frozen-delete"
    frozen.create(name)
    frozen.advance(timedelta(minutes=15))
    assert frozen.status(name) == "InService"
    frozen.sm.delete_endpoint(EndpointName=name)
    for _ in range(3):
        assert frozen.status(name) == "Deleting"
    listed = frozen.sm.list_endpoints(NameContains=name)["Endpoints"]
    assert [(e["EndpointName"], e["EndpointStatus"]) for e in listed] == [(name, "Deleting")]
    with pytest.raises(ClientError) as e:  # a Deleting endpoint serves nothing
        frozen.invoke(name)
    assert e.value.response["Error"]["Code"] == "ValidationError"
    frozen.advance(timedelta(minutes=9))
    assert frozen.status(name) == "Deleting"
    frozen.advance(timedelta(minutes=1))
    with pytest.raises(ClientError) as e:
        frozen.sm.describe_endpoint(EndpointName=name)
    assert "Could not find endpoint" in e.value.response["Error"]["Message"]
    assert frozen.sm.list_endpoints(NameContains=name)["Endpoints"] == []


# ---------------------------------------------------------------------- the protocol

BAD_BODIES = [
    (b"not json", "not JSON"),
    (b"[]", "one action"),
    (b"{}", "one action"),
    (b'{"advance": 60, "freeze": true}', "one action"),
    (b'{"advance": -1}', "forward"),
    (b'{"advance": "15m"}', "must be a number"),
    (b'{"advance": true}', "must be a number"),
    (b'{"advance": 1e20}', "year 9998"),  # past what a timestamp can hold
    (b'{"freeze": false}', "must be true"),
    (b'{"resume": true, "rate": 0}', "> 0"),
    (b'{"rate": -60}', "> 0"),
    (b'{"jump": 60}', "one action"),
]


@pytest.mark.parametrize(("body", "says"), BAD_BODIES, ids=[b.decode() for b, _ in BAD_BODIES])
def test_a_bad_clock_body_is_400_with_one_line_and_changes_nothing(
    frozen: Server, body: bytes, says: str
) -> None:
    before = frozen.clock()
    status, _, data = frozen.request("POST", "/_peagle/clock", body)
    assert status == 400
    error = json.loads(data)["error"]
    assert says in error and "\n" not in error
    after = frozen.clock()
    assert (after["epoch"], after["rate"], after["frozen"]) == (
        before["epoch"],
        before["rate"],
        before["frozen"],
    )


def test_rate_freeze_and_resume_answer_the_new_state(frozen: Server) -> None:
    assert frozen.state["clock_rate"] == 1.0
    assert frozen.clock()["frozen"] is True
    assert frozen.clock({"rate": 60})["rate"] == 60.0  # a frozen clock stays frozen
    assert frozen.clock()["frozen"] is True
    resumed = frozen.clock({"resume": True, "rate": 120})
    assert (resumed["frozen"], resumed["rate"]) == (False, 120.0)
    assert frozen.clock({"freeze": True})["frozen"] is True


def test_the_old_time_scale_flag_still_sets_the_step_time_factor(tmp_path: Path) -> None:
    server = Server(tmp_path, "--time-scale", "2.5")
    try:
        status, _, data = server.request("GET", "/_peagle/engine")
        assert status == 200
        assert json.loads(data)["constants"]["step_time_factor"] == 2.5
        assert server.state["step_time_factor"] == 2.5
    finally:
        server.stop()


# ---------------------------------------------------------------------- the real engine


def test_the_real_engine_is_on_the_clock_too(tmp_path: Path) -> None:
    """`--engine vllm` (the stand-in engine): its Creating ends on /ping, not on the clock,
    and what the sandbox stamps (CreationTime, LastModifiedTime, the engine's log events)
    is sandbox time, two days ahead here."""
    from tests.e2e.test_sandbox_engine_host import NAME, fake_engine_home

    home = fake_engine_home(tmp_path)
    state = tmp_path / "state"
    server = Server(state, "--clock-frozen", "--engine", "vllm", "--engine-home", str(home))
    try:
        now = server.advance(timedelta(days=2))["epoch"]
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "PEAGLE_"))}
        env.update(
            HOME=str(tmp_path),
            PEAGLE_STATE_DIR=str(state),
            PEAGLE_CACHE_DIR=str(tmp_path / "cache"),
            PEAGLE_POLL_SECONDS="0.2",
            PEAGLE_ENGINE_HOME=str(home),
        )
        deploy = [sys.executable, "-m", "sm_peagle.cli", "--sandbox", "deploy", "tiny-llama",
                  "--mode", "p-eagle", "-k", "3", "--yes"]  # fmt: skip
        out = subprocess.run(deploy, env=env, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        described = server.sm.describe_endpoint(EndpointName=NAME)
        assert described["EndpointStatus"] == "InService"  # the clock never moved: /ping did
        for stamp in ("CreationTime", "LastModifiedTime"):
            # (the state's epoch is rounded to the ms, moto's stamps are cut to it)
            assert described[stamp].timestamp() == pytest.approx(now, abs=0.002), stamp
        events = server.logs.filter_log_events(logGroupName=f"/aws/sagemaker/Endpoints/{NAME}")
        (stamp,) = {e["timestamp"] for e in events["events"]}  # frozen: all at one instant
        assert stamp / 1000 == pytest.approx(now, abs=0.002)
    finally:
        server.stop()
