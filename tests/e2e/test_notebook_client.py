"""The SDK as a notebook reads it (issue 34): one client, aimed at the local sandbox by
`peagle_sandbox.client()`, and every step a method of it: deploy with a typed `k=`,
status, a tiny bench, delete. A bad `k` is a SpecError naming the keyword (`k=`, and
`.field == "k"`); the same input through the CLI names the flag (`-k`).

Runs in a subprocess, as a notebook would: `peagle_sandbox.client()` points its process
at the sandbox (the labels are read from the environment), which must not leak into the
test process. The sandbox runs the SIMULATED engine; it is stopped at the end.

The k that is bad here is 16: gpt-oss-20b's published head was trained for K=10, and
deploying it with a larger K is refused by the plan's check (the catalog's numbers).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

NOTEBOOK = """
import json, sys
import peagle_sandbox, sm_peagle
from sm_peagle.errors import SpecError
from sm_peagle.ops.target import talking_to_context

seen = {}
said = []
client = peagle_sandbox.client(creating_seconds=1.0, metrics_interval=1.0,
                               on_connect=lambda aws: said.append(talking_to_context(aws)))
seen["client"] = repr(client)
seen["talks_to_sandbox"] = client.aws.endpoint_url
ep = client.deploy("gpt-oss-20b", k=5)
seen["deployed"] = [ep.name, ep.deployment.status]
st = client.status(ep.name)
seen["status"] = [st.status, st.k]
result = client.bench(ep.name, concurrency=1, requests=2, max_tokens=16)
seen["bench"] = result.to_dict()["levels"][0]["requests"]
try:
    client.deploy("gpt-oss-20b", k=16)
except SpecError as e:
    seen["bad_k"] = {"type": type(e).__name__, "field": e.field, "text": str(e)}
seen["deleted"] = client.delete(ep.name).deleted
seen["left"] = [r.endpoint for r in client.ls()]
seen["said_first"] = said[:1]
print(json.dumps(seen))
"""


# The client holds its target: pointing the environment elsewhere afterwards changes nothing.
HOLDS_ITS_TARGET = """
import json, os
import peagle_sandbox
client = peagle_sandbox.client()
os.environ["AWS_ENDPOINT_URL"] = "http://127.0.0.1:9"  # nothing listens there
os.environ["AWS_ACCESS_KEY_ID"] = "REALKEY"
print(json.dumps({"repr": repr(client), "url": client.aws.endpoint_url,
                  "ls": [r.endpoint for r in client.ls()]}))
"""


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "PEAGLE_SANDBOX"))}
    env |= {"PEAGLE_STATE_DIR": str(tmp_path / "state"), "PEAGLE_POLL_SECONDS": "0.2"}
    env |= {"AWS_CONFIG_FILE": os.devnull, "AWS_SHARED_CREDENTIALS_FILE": os.devnull}
    return env


def test_a_sandbox_client_talks_to_the_sandbox_whatever_the_environment_says(
    tmp_path: Path,
) -> None:
    env = _env(tmp_path)
    try:
        proc = subprocess.run(
            [sys.executable, "-c", HOLDS_ITS_TARGET],
            env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        seen = json.loads(proc.stdout.strip().splitlines()[-1])
        assert seen["url"].startswith("http://127.0.0.1:") and seen["ls"] == []
        assert seen["repr"] == f"SandboxClient(region='us-east-1', endpoint_url='{seen['url']}')"
    finally:
        _peagle(env, "sandbox", "stop")


def _peagle(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sm_peagle.cli", *argv],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def test_a_notebook_deploys_measures_and_deletes_through_one_sandbox_client(
    tmp_path: Path,
) -> None:
    env = _env(tmp_path)
    try:
        proc = subprocess.run(
            [sys.executable, "-c", NOTEBOOK],
            env=env, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        seen = json.loads(proc.stdout.strip().splitlines()[-1])
        url = seen["talks_to_sandbox"]
        assert url.startswith("http://127.0.0.1:") and f"endpoint_url={url!r}" in seen["client"]
        name, status = seen["deployed"]
        assert status == "InService" and seen["status"] == ["InService", 5]
        assert seen["bench"]["total"] == seen["bench"]["ok"] == 2
        # A bad k: the keyword in Python, the field as data.
        bad = seen["bad_k"]
        assert bad["field"] == "k" and "k=" in bad["text"] and "-k" not in bad["text"]
        assert seen["deleted"] and name in seen["deleted"] and seen["left"] == []
        # The client says where it talks to, as the CLI does: the sandbox, not AWS.
        assert seen["said_first"] == [
            f"talking to: SANDBOX (SIMULATED) at {url} (peagle's local sandbox; not AWS)"
        ]
        # The same bad k through the CLI names the flag.
        code = _peagle(env, "--sandbox", "deploy", "gpt-oss-20b", "-k", "16", "--yes")
        assert code.returncode == 2 and code.stdout == ""
        line = code.stderr.strip().splitlines()[-1]
        assert line.startswith("error: ") and "-k " in line and "k=" not in line
    finally:
        _peagle(env, "sandbox", "stop")
