"""Issue 33, item 4, on the moto harness: the request log of a deploy whose instance type
the region does not offer holds no Create/Update/Delete/AddTags (exit 2 before anything is
created), and the confirm prompt names the price's region and source.

moto implements no ListServiceQuotas, so the region's Service Quotas answer is stubbed
(botocore Stubber, the real response shape): us-east-1 listing an endpoint quota for
ml.g6e.12xlarge only, as a region that does not host ml.g7e.2xlarge would."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

import sm_peagle
from tests.integration.lifecycle_env import REGION, left_in_moto, run

MUTATING = ("Create", "Update", "Delete", "AddTags")


def _endpoint_quota(instance_type: str) -> dict[str, Any]:
    return {
        "ServiceCode": "sagemaker",
        "QuotaCode": "L-TEST0001",
        "QuotaName": f"{instance_type} for endpoint usage",
        "Value": 4.0,
    }


@pytest.fixture
def quotas_offering(monkeypatch: pytest.MonkeyPatch, world: Any) -> Any:
    """Service Quotas of REGION listing endpoint quotas for the given types only."""
    from sm_peagle.aws import AwsContext

    def install(*types: str) -> Stubber:
        client = boto3.client("service-quotas", region_name=REGION)
        stub = Stubber(client)
        stub.add_response(
            "list_service_quotas",
            {"Quotas": [_endpoint_quota(t) for t in types]},
            {"ServiceCode": "sagemaker"},
        )
        stub.activate()
        wrapped = AwsContext.client

        def client_for(self: AwsContext, service: str, region: str | None = None, **cfg: Any):
            return client if service == "service-quotas" else wrapped(self, service, region, **cfg)

        monkeypatch.setattr(AwsContext, "client", client_for)
        return stub

    return install


def test_a_type_the_region_does_not_offer_sends_nothing_that_creates(
    world: Any, quotas_offering: Any, capsys: pytest.CaptureFixture
) -> None:
    stub = quotas_offering("ml.g6e.12xlarge")
    code, _, err = run(capsys, "deploy", "gpt-oss-20b", "--yes")
    assert code == 2, err
    (line,) = [ln for ln in err.splitlines() if ln.startswith("error:")]
    assert f"ml.g7e.2xlarge is not offered for SageMaker endpoints in {REGION}" in line
    assert "(fix: " in line
    stub.assert_no_pending_responses()  # preflight asked Service Quotas, once
    sent = [op for op, _ in world.requests]
    assert "DescribeEndpoint" in sent  # preflight ran (names are free)
    assert [op for op in sent if op.startswith(MUTATING)] == []
    assert left_in_moto() == {}


def test_a_type_the_region_offers_deploys_and_the_prompt_names_the_price_region(
    world: Any, quotas_offering: Any
) -> None:
    quotas_offering("ml.g7e.2xlarge")
    asked: list[str] = []
    sm_peagle.deploy("gpt-oss-20b", confirm=asked.append)
    # us-east-1's price from the catalog's source (an AWS blog): $4.20/h.
    assert "$4.20/h on-demand (AWS blog, us-east-1)" in asked[0]
    assert [op for op, _ in world.requests].count("CreateEndpoint") == 1
