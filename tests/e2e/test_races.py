"""Two identical deploys started together (two terminals, a retried CI job): one wins,
the other exits 1 on one line, and nothing of the winner is touched. SageMaker refuses a
second CreateModel or CreateEndpointConfig of an existing name; the harness refuses them
the same way (moto alone accepts and replaces them), so the loser's rollback, which
deletes only what it created, has nothing of the winner's to delete."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests.e2e.test_sandbox import Sandbox
from tests.sandbox_helpers import leftovers, sandbox_client

pytestmark = pytest.mark.e2e

NAME = "peagle-gpt-oss-20b-p-eagle"


@pytest.fixture(scope="module")
def sb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    sandbox = Sandbox(tmp_path_factory.mktemp("races"))
    sandbox.cli("sandbox", "start", "--creating-seconds", "2")
    sandbox.state = json.loads(sandbox.cli("sandbox", "status", "--json").stdout)
    yield sandbox
    sandbox.cli("sandbox", "stop", check=False)


def test_two_identical_deploys_at_once_leave_one_endpoint_whole(sb: Sandbox) -> None:
    argv = [sys.executable, "-m", "sm_peagle.cli", "--sandbox", "deploy", "gpt-oss-20b", "--yes"]
    procs = [
        subprocess.Popen(
            argv, env=sb.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )  # fmt: skip
        for _ in range(2)
    ]
    results = [(p, *p.communicate(timeout=180)) for p in procs]
    codes = sorted(p.returncode for p, _, _ in results)
    assert codes == [0, 1], [(p.returncode, err[-800:]) for p, _, err in results]
    (loser_err,) = [err for p, _, err in results if p.returncode == 1]
    last = loser_err.strip().splitlines()[-1]
    assert last.startswith("error: ") and "already exist" in last, loser_err[-1500:]
    assert "Traceback" not in loser_err
    # The winner's endpoint, config and model, all there and in use; nothing else.
    sm = sandbox_client(sb.url, "sagemaker")
    ep = sm.describe_endpoint(EndpointName=NAME)
    assert ep["EndpointStatus"] == "InService"
    cfg = sm.describe_endpoint_config(EndpointConfigName=ep["EndpointConfigName"])
    (model,) = {v["ModelName"] for v in cfg["ProductionVariants"]}
    left = leftovers(lambda s: sandbox_client(sb.url, s))
    assert [m["ModelName"] for m in left["models"]] == [model]
    assert [c["EndpointConfigName"] for c in left["configs"]] == [ep["EndpointConfigName"]]
    assert [e["EndpointName"] for e in left["endpoints"]] == [NAME]
    sm.delete_endpoint(EndpointName=NAME)
