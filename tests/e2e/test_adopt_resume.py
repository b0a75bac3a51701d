"""`peagle adopt` stopped by a real signal, end to end on the sandbox (issue 23, item 4):
the CLI in a subprocess adopts the JumpStart-shaped endpoint of test_sandbox_adopt.py.

- SIGKILL once the model and config are tagged (nothing can run after it): the endpoint
  is untagged, the model and config carry peagle's tags; `peagle adopt NAME --yes` again
  ends exactly as one uninterrupted adopt does, and sends only the endpoint's AddTags.
- SIGINT, SIGTERM or SIGHUP at the same point: every tag is put back as it was, one line
  names the signal, the exit code is the shell's for it.

The signal is sent by the adopting process to itself, from a botocore hook run when
SageMaker answered the config's AddTags (a wrapper installs it, then runs the `peagle`
console script's entry point), so it lands at that exact request boundary. What the
sandbox holds and received is read through its own API (ListTags, /_peagle/requests).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_sandbox import Sandbox
from tests.integration.test_adopt import CONFIG, MODEL, NAME, create_jumpstart_endpoint

pytestmark = pytest.mark.e2e

Raw = dict[str, list[tuple[str, str]]]

# Runs `peagle` with a hook: when SageMaker has answered the AddTags numbered
# PEAGLE_TEST_AT (1: the model's, 2: the config's), send this process PEAGLE_TEST_SIGNAL.
WRAPPER = """
import os, signal, sys
from botocore.client import BaseClient

real = BaseClient._make_api_call
at, sig = int(os.environ["PEAGLE_TEST_AT"]), signal.Signals[os.environ["PEAGLE_TEST_SIGNAL"]]
seen = 0

def hooked(self, operation, params):
    global seen
    answer = real(self, operation, params)
    if operation == "AddTags":
        seen += 1
        if seen == at:
            os.kill(os.getpid(), sig)
    return answer

BaseClient._make_api_call = hooked
from sm_peagle.cli.app import run
sys.argv[0] = "peagle"
run()
"""


@pytest.fixture(scope="module")
def sb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    sb = Sandbox(tmp_path_factory.mktemp("sandbox-adopt-resume"))
    sb.cli("sandbox", "start", "--creating-seconds", "1", "--metrics-interval", "1")
    sb.state = json.loads(sb.cli("sandbox", "status", "--json").stdout)
    env = {
        "AWS_ENDPOINT_URL": sb.url,
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_CONFIG_FILE": "/dev/null",
        "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
    }
    with pytest.MonkeyPatch.context() as mp:  # the helper's boto3 clients reach the sandbox
        for key, value in env.items():
            mp.setenv(key, value)
        create_jumpstart_endpoint(sb.state["role_arn"])
    sm = sb.client("sagemaker")
    deadline = time.monotonic() + 60  # a bound on a stuck endpoint, not a timing claim
    while sm.describe_endpoint(EndpointName=NAME)["EndpointStatus"] != "InService":
        assert time.monotonic() < deadline
        time.sleep(0.2)
    yield sb
    sb.cli("sandbox", "stop", check=False)


def arns(sb: Sandbox) -> dict[str, str]:
    sm = sb.client("sagemaker")
    return {
        NAME: sm.describe_endpoint(EndpointName=NAME)["EndpointArn"],
        CONFIG: sm.describe_endpoint_config(EndpointConfigName=CONFIG)["EndpointConfigArn"],
        MODEL: sm.describe_model(ModelName=MODEL)["ModelArn"],
    }


def raw(sb: Sandbox) -> Raw:
    """Each resource's tags as ListTags gives them (duplicates and all), sorted."""
    sm = sb.client("sagemaker")
    return {
        n: sorted((t["Key"], t["Value"]) for t in sm.list_tags(ResourceArn=a)["Tags"])
        for n, a in arns(sb).items()
    }


def reset(sb: Sandbox, to: Raw) -> None:
    """Give each resource exactly the tags `to` lists (by hand, as its owner could)."""
    sm = sb.client("sagemaker")
    for n, a in arns(sb).items():
        keys = sorted({t["Key"] for t in sm.list_tags(ResourceArn=a)["Tags"]})
        if keys:
            sm.delete_tags(ResourceArn=a, TagKeys=keys)
        if to[n]:
            sm.add_tags(ResourceArn=a, Tags=[{"Key": k, "Value": v} for k, v in to[n]])
    assert raw(sb) == to


def received(sb: Sandbox, clear: bool = False) -> list[dict[str, Any]]:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    url = f"{sb.url}/_peagle/requests"
    if clear:
        opener.open(urllib.request.Request(url, method="DELETE"), timeout=10)
        return []
    with opener.open(url, timeout=10) as resp:
        return json.loads(resp.read())["requests"]


def adopt_signalled(sb: Sandbox, at: int, sig: str) -> subprocess.CompletedProcess[str]:
    wrapper = sb.root / "adopt_signalled.py"
    wrapper.write_text(WRAPPER)
    return subprocess.run(
        [sys.executable, str(wrapper), "--sandbox", "adopt", NAME, "--yes"],
        env={**sb.env, "PEAGLE_TEST_AT": str(at), "PEAGLE_TEST_SIGNAL": sig},
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


@pytest.fixture(scope="module")
def before(sb: Sandbox) -> Raw:
    return raw(sb)


@pytest.fixture(scope="module")
def whole(sb: Sandbox, before: Raw) -> Raw:
    """The tags one uninterrupted `adopt --yes` leaves; the endpoint is then put back."""
    sb.cli("--sandbox", "adopt", NAME, "--yes")
    after = raw(sb)
    assert after != before
    reset(sb, before)
    return after


def test_sigkill_after_the_config_then_adopt_again_ends_as_one_whole_adopt(
    sb: Sandbox, before: Raw, whole: Raw
) -> None:
    proc = adopt_signalled(sb, at=2, sig="SIGKILL")
    assert proc.returncode == -9, proc.stderr
    now = raw(sb)
    assert (now[MODEL], now[CONFIG], now[NAME]) == (whole[MODEL], whole[CONFIG], before[NAME])
    received(sb, clear=True)

    again = sb.cli("--sandbox", "adopt", NAME, "--yes")

    assert f"adopted {NAME}: 3 resources tagged peagle:managed" in again.stdout
    assert raw(sb) == whole
    tagging = [
        (r["operation"], r["params"]["ResourceArn"].rsplit("/", 1)[-1])
        for r in received(sb)
        if r["operation"] in ("AddTags", "DeleteTags")
    ]
    assert tagging == [("AddTags", NAME)]
    reset(sb, before)


@pytest.mark.parametrize(
    ("sig", "code", "line"),
    [
        ("SIGINT", 130, "error: interrupted"),
        ("SIGTERM", 143, "error: terminated by SIGTERM"),
        ("SIGHUP", 129, "error: terminated by SIGHUP"),
    ],
)
def test_a_signal_after_the_config_puts_every_tag_back(
    sb: Sandbox, before: Raw, sig: str, code: int, line: str
) -> None:
    assert raw(sb) == before
    proc = adopt_signalled(sb, at=2, sig=sig)
    assert proc.returncode == code, proc.stderr
    assert proc.stderr.splitlines()[-1] == line, proc.stderr
    assert "Traceback" not in proc.stderr
    assert f"put the tags of endpoint-config/{CONFIG}, model/{MODEL} back as they were" in (
        proc.stderr
    )
    assert raw(sb) == before
