"""Issue 26, item 5, against a running SIMULATED sandbox through the real `peagle` CLI in
subprocesses: every line `peagle --sandbox logs NAME` prints carries the label
`SANDBOX (SIMULATED)`, while the events the sandbox stores keep vLLM's own format; and every
`--json` document (logs, invoke, chat, status, ls, the sandbox's own status) carries it
under "label". The expected strings are the issue's, written out."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.test_sandbox import NAME, Sandbox, running_sandbox

pytestmark = pytest.mark.e2e

LABEL = "SANDBOX (SIMULATED)"  # the label for the sandbox's SIMULATED engine
PREFIX = f"[{LABEL}] "
LINE = re.compile(r"^\[SANDBOX \(SIMULATED\)\] (?P<ts>\d\d:\d\d:\d\d) (?P<message>.*)$")


@pytest.fixture(scope="module")
def sb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    yield from running_sandbox(tmp_path_factory.mktemp("labels"), "gpt-oss-20b")


@pytest.fixture(scope="module")
def invoked(sb: Sandbox) -> dict:
    """One invoke --json, and the endpoint's log holding its SpecDecoding line: the engine
    writes that at its next metrics tick (1 s here), which a busy machine can delay past
    the invoke's return, so wait for it (a bound, not a timed assertion)."""
    out = sb.cli("--sandbox", "invoke", NAME, "Say hello", "--max-tokens", "16", "--json")
    deadline = time.monotonic() + 60
    while not any("SpecDecoding metrics:" in m for m in stored_messages(sb)):
        assert time.monotonic() < deadline, "no SpecDecoding metrics line in 60 s"
        time.sleep(0.5)
    return json.loads(out.stdout)


def stored_messages(sb: Sandbox) -> list[str]:
    """The endpoint's events as the sandbox stores them (CloudWatch, read with boto3),
    oldest first as `logs` shows them."""
    logs = sb.client("logs")
    pages = logs.get_paginator("filter_log_events").paginate(
        logGroupName=f"/aws/sagemaker/Endpoints/{NAME}"
    )
    events = sorted(
        (e for page in pages for e in page["events"]), key=lambda e: (e["timestamp"], e["eventId"])
    )
    return [e["message"] for e in events]


def test_every_line_of_logs_carries_the_label_and_the_stored_events_do_not(
    sb: Sandbox, invoked: dict
) -> None:
    proc = sb.cli("--sandbox", "logs", NAME, "--since", "1h")
    lines = proc.stdout.splitlines()
    stored = stored_messages(sb)
    # The issue counted 15 lines, of which 1 said SIMULATED: here every one carries it.
    assert lines and len(stored) >= len(lines)
    unlabelled = [line for line in lines if not line.startswith(PREFIX)]
    assert unlabelled == []
    # stderr has only the line saying where the command talks: the sandbox and its engine.
    assert all("SANDBOX" in line and "SIMULATED" in line for line in proc.stderr.splitlines())
    # After the label and the time, each line is an event exactly as stored (the events
    # printed are those stored when the command ran): parsers and metric filters read
    # vLLM's format, which the label is not part of.
    printed = [LINE.match(line).group("message") for line in lines]  # type: ignore[union-attr]
    assert printed == stored[: len(printed)]
    assert not any(message.startswith("[SANDBOX") for message in stored)
    assert any("Starting vLLM API server" in m for m in printed)
    assert any("SpecDecoding metrics:" in m for m in printed)


def test_logs_json_carries_the_label_on_every_event(sb: Sandbox, invoked: dict) -> None:
    events = json.loads(sb.cli("--sandbox", "logs", NAME, "--since", "1h", "--json").stdout)
    assert events and {e["label"] for e in events} == {LABEL}
    assert {e["message"] for e in events} <= set(stored_messages(sb))


def test_invoke_json_carries_the_label(invoked: dict) -> None:
    assert invoked["label"] == LABEL
    assert invoked["text"] and invoked["usage"]["completion_tokens"] > 0  # keys kept


def test_invoke_stats_line_carries_the_label(sb: Sandbox) -> None:
    """The sandbox's timings are made up: the stats line under the answer says so, as the
    `logs` lines do (issue 33, item 8)."""
    proc = sb.cli("--sandbox", "invoke", NAME, "Say hello", "--max-tokens", "16")
    (stats,) = [line for line in proc.stderr.splitlines() if "TTFT" in line]
    assert stats.startswith(f"{PREFIX}TTFT "), proc.stderr


def test_chat_json_carries_the_label(sb: Sandbox) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "sm_peagle.cli", "--sandbox", "chat", NAME, "--json",
         "--max-tokens", "8"],
        input="hello\n/exit\n", env=sb.env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["label"] == LABEL and len(doc["turns"]) == 1


def test_status_and_ls_show_the_label(sb: Sandbox) -> None:
    status = sb.cli("--sandbox", "status", NAME)
    assert re.search(r"source\s*│\s*SANDBOX \(SIMULATED\)", status.stdout), status.stdout
    assert json.loads(sb.cli("--sandbox", "status", NAME, "--json").stdout)["label"] == LABEL
    ls = sb.cli("--sandbox", "ls")
    assert ls.stdout.splitlines()[0].strip() == PREFIX.strip()
    (row,) = json.loads(sb.cli("--sandbox", "ls", "--json").stdout)
    assert (row["endpoint"], row["label"]) == (NAME, LABEL)


def test_the_sandbox_s_own_status_is_labelled_without_sandbox(sb: Sandbox) -> None:
    """`peagle sandbox status --json` talks about the sandbox even without --sandbox."""
    doc = json.loads(sb.cli("sandbox", "status", "--json").stdout)
    assert doc["running"] and doc["label"] == LABEL


def test_without_the_sandbox_the_same_documents_say_aws(sb: Sandbox, tmp_path: Path) -> None:
    """The contrast: a document made without --sandbox (plan is offline) says AWS."""
    doc = json.loads(sb.cli("plan", "gpt-oss-20b", "--json").stdout)
    assert doc["label"] == "AWS"
