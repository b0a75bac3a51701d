"""Issue 33, item 4: an instance type the region does not offer is exit 2 before anything
is created. The sandbox is started offering only ml.g6e.12xlarge in us-west-2
(PEAGLE_SANDBOX_INSTANCE_TYPES, as a region that does not host a type); preflight learns it
from that region's Service Quotas, where no "ml.g7e.2xlarge for endpoint usage" quota
exists. The real `peagle` CLI in subprocesses; the request log is the sandbox's own."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator

import pytest

from tests.e2e.test_sandbox import Sandbox
from tests.sandbox_helpers import leftovers

pytestmark = pytest.mark.e2e

LIMITED = "us-west-2"  # seeded by the sandbox (role, JumpStart buckets), like us-east-1
OFFERED = "ml.g6e.12xlarge"  # gpt-oss-20b fits its 4x 48 GB
MUTATING = ("Create", "Update", "Delete", "AddTags", "Register", "Put")


@pytest.fixture(scope="module")
def sb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    sb = Sandbox(tmp_path_factory.mktemp("regions"))
    sb.env["PEAGLE_SANDBOX_INSTANCE_TYPES"] = f"{LIMITED}={OFFERED}"
    sb.cli("sandbox", "start", "--creating-seconds", "1", "--metrics-interval", "1")
    sb.state = json.loads(sb.cli("sandbox", "status", "--json").stdout)
    yield sb
    sb.cli("sandbox", "stop", check=False)


def _requests(sb: Sandbox, clear: bool = False) -> list[dict]:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    if clear:
        req = urllib.request.Request(f"{sb.url}/_peagle/requests", method="DELETE")
        opener.open(req, timeout=10)
        return []
    with opener.open(f"{sb.url}/_peagle/requests", timeout=10) as resp:
        return json.loads(resp.read())["requests"]


def _client(sb: Sandbox, region: str):  # noqa: ANN202
    import boto3

    return lambda service: boto3.client(
        service,
        endpoint_url=sb.url,
        region_name=region,
        aws_access_key_id="x",
        aws_secret_access_key="x",
    )


def test_a_type_the_region_does_not_offer_is_exit_2_and_nothing_is_sent(sb: Sandbox) -> None:
    _requests(sb, clear=True)
    out = sb.cli("--sandbox", "deploy", "gpt-oss-20b", "--region", LIMITED, "--yes", check=False)
    assert out.returncode == 2, out.stderr + out.stdout
    (line,) = [ln for ln in out.stderr.splitlines() if ln.startswith("error:")]
    assert f"ml.g7e.2xlarge is not offered for SageMaker endpoints in {LIMITED}" in line
    assert "nothing was created" in line and "(fix: " in line
    sent = [r["operation"] for r in _requests(sb)]
    assert "DescribeEndpoint" in sent  # preflight did run against the sandbox
    assert [op for op in sent if op.startswith(MUTATING)] == []
    assert leftovers(_client(sb, LIMITED)) == {}


def test_a_type_the_region_offers_deploys(sb: Sandbox) -> None:
    name = "regions-offered"
    args = ("--region", LIMITED)
    out = sb.cli(
        "--sandbox", "deploy", "gpt-oss-20b", "-t", OFFERED, "--name", name, *args, "--yes"
    )
    assert "InService" in out.stdout + out.stderr
    # peagle's only ml.g6e.12xlarge price is us-east-1's ($13.12/h, an AWS blog): status
    # in us-west-2 says the price is unknown there, naming why, never that figure.
    status = sb.cli("--sandbox", "status", name, *args).stdout
    (cost,) = [ln for ln in status.splitlines() if "cost" in ln]
    assert f"unknown in {LIMITED}" in cost and "13.12" not in cost
    doc = json.loads(sb.cli("--sandbox", "status", name, *args, "--json").stdout)
    assert doc["usd_per_hour"] is None and "us-east-1" in doc["price"]
    sb.cli("--sandbox", "delete", name, *args, "--yes")
    assert leftovers(_client(sb, LIMITED)) == {}
