"""Parity for the commands that send traffic: `peagle invoke/bench/race/tune-k` (run as a
user runs them, in a subprocess against the sandbox) send the same AWS requests as their
SDK calls, read from the sandbox's own record (`GET /_peagle/requests`). Concurrent
requests may arrive in any order, so each face's record is compared as a multiset; log
reads poll until a line arrives, so how often each is sent depends on timing and only
which ones are sent is compared."""

from __future__ import annotations

import json
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_sandbox import Sandbox, running_sandbox
from tests.sandbox_helpers import point_at_sandbox

pytestmark = pytest.mark.e2e

NAME = "peagle-gpt-oss-20b-p-eagle"
TIMES = ("startTime", "endTime")
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


@pytest.fixture(scope="module")
def sb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    yield from running_sandbox(tmp_path_factory.mktemp("sandbox-parity"), "gpt-oss-20b")


@pytest.fixture
def sdk_env(sb: Sandbox, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """This process pointed at the sandbox exactly as `--sandbox` points a command at it."""
    point_at_sandbox(sb.state, monkeypatch, tmp_path)


def _record(sb: Sandbox) -> Counter:
    with _OPENER.open(f"{sb.url}/_peagle/requests", timeout=10) as resp:
        items = json.loads(resp.read())["requests"]
    counts = Counter(
        (
            r["service"],
            r["operation"],
            json.dumps(
                {k: "<time>" if k in TIMES else v for k, v in r["params"].items()}, sort_keys=True
            ),
        )
        for r in items
    )
    return Counter({key: 1 if key[0] == "logs" else n for key, n in counts.items()})


def _clear(sb: Sandbox) -> None:
    req = urllib.request.Request(f"{sb.url}/_peagle/requests", method="DELETE")
    _OPENER.open(req, timeout=10).read()


CASES: dict[str, tuple[list[str], Callable[[], Any]]] = {
    "invoke stream": (
        ["invoke", NAME, "hi", "--max-tokens", "8"],
        lambda: __import__("sm_peagle").invoke(NAME, "hi", max_tokens=8),
    ),
    "invoke buffered": (
        ["invoke", NAME, "hi", "--max-tokens", "8", "--no-stream"],
        lambda: __import__("sm_peagle").invoke(NAME, "hi", max_tokens=8, stream=False),
    ),
    "bench": (
        ["bench", NAME, "-c", "1,2", "-n", "2", "--max-tokens", "8", "--acceptance-wait", "0"],
        lambda: __import__("sm_peagle").bench(
            NAME, concurrency="1,2", requests=2, max_tokens=8, acceptance_wait=0
        ),
    ),
    "tune-k": (
        # tune-k needs one SpecDecoding log line after its level (the sandbox writes one a
        # second here), and reads the logs until it has it.
        ["tune-k", NAME, "-n", "2", "--max-tokens", "8", "--acceptance-wait", "5s"],
        lambda: __import__("sm_peagle").tune_k(
            NAME, requests=2, max_tokens=8, acceptance_wait="5s"
        ),
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_traffic_commands_send_what_their_sdk_calls_send(
    case: str, sb: Sandbox, sdk_env: None
) -> None:
    argv, call = CASES[case]
    _clear(sb)
    sb.cli("--sandbox", *argv)
    cli = _record(sb)
    _clear(sb)
    call()
    sdk = _record(sb)
    assert any(op.startswith("InvokeEndpoint") for _, op, _ in cli), cli
    assert cli == sdk
