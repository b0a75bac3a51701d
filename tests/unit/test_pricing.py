"""Live prices from the AWS Price List API (botocore Stubber: exact requests, real-shaped
PriceList documents), and the rule that a price is never invented."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from sm_peagle.catalog.instances import INSTANCES
from sm_peagle.catalog.pricing import hourly_usd, usage_type
from sm_peagle.lifecycle.live_prices import with_live_prices
from tests.plan_helpers import run_cli

G7E = INSTANCES["ml.g7e.2xlarge"]  # catalog: 4.20 (AWS blog, us-east-1)
G6E = INSTANCES["ml.g6e.2xlarge"]  # catalog: unknown
P5 = INSTANCES["ml.p5.48xlarge"]


def price_item(usage: str, usd: str, *, unit: str = "Hrs", sku: str = "TESTSKU0001") -> str:
    """One PriceList entry shaped like the API returns it (a JSON string)."""
    instance = usage.split(":", 1)[1]
    term = f"{sku}.JRTCKXETXF"
    return json.dumps(
        {
            "product": {
                "productFamily": "ML Instance",
                "attributes": {
                    "servicecode": "AmazonSageMaker",
                    "usagetype": usage,
                    "instanceName": instance,
                    "operation": "RunInstance",
                    "component": "Hosting",
                    "locationType": "AWS Region",
                    "servicename": "Amazon SageMaker",
                },
                "sku": sku,
            },
            "serviceCode": "AmazonSageMaker",
            "terms": {
                "OnDemand": {
                    term: {
                        "priceDimensions": {
                            f"{term}.6YS6EN2CT7": {
                                "unit": unit,
                                "endRange": "Inf",
                                "description": f"${usd} per On Demand {instance} hosting hour",
                                "appliesTo": [],
                                "rateCode": f"{term}.6YS6EN2CT7",
                                "beginRange": "0",
                                "pricePerUnit": {"USD": usd},
                            }
                        },
                        "sku": sku,
                        "effectiveDate": "2026-01-01T00:00:00Z",
                        "offerTermCode": "JRTCKXETXF",
                        "termAttributes": {},
                    }
                }
            },
            "version": "20260101000000",
            "publicationDate": "2026-01-01T00:00:00Z",
        }
    )


def request(usage: str, **extra: Any) -> dict[str, Any]:
    return {
        "ServiceCode": "AmazonSageMaker",
        "Filters": [{"Type": "TERM_MATCH", "Field": "usagetype", "Value": usage}],
        "FormatVersion": "aws_v1",
        "MaxResults": 100,
        **extra,
    }


def response(*items: str, **extra: Any) -> dict[str, Any]:
    return {"FormatVersion": "aws_v1", "PriceList": list(items), **extra}


class FakeAws:
    def __init__(self, client: Any) -> None:
        self._client = client
        self.asked: list[tuple[str, str | None]] = []

    def client(self, service: str, region: str | None = None, **config: Any) -> Any:
        self.asked.append((service, region))
        if self._client is None:
            raise AssertionError("no AWS call expected")
        return self._client


@pytest.fixture
def pricing() -> Iterator[tuple[Any, Stubber]]:
    client = boto3.client(
        "pricing",
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    with Stubber(client) as stub:
        yield client, stub
        stub.assert_no_pending_responses()


def test_usage_types() -> None:
    assert usage_type("us-east-1", "ml.g6e.2xlarge") == "USE1-Host:ml.g6e.2xlarge"
    assert usage_type("eu-west-1", "ml.p5.48xlarge") == "EU-Host:ml.p5.48xlarge"
    assert usage_type("ap-south-1", "ml.g7e.2xlarge") == "APS3-Host:ml.g7e.2xlarge"
    assert usage_type("mars-north-1", "ml.g7e.2xlarge") is None


def test_live_prices_replace_and_fill_catalog_prices(pricing) -> None:
    client, stub = pricing
    stub.add_response(
        "get_products",
        response(price_item("USE1-Host:ml.g7e.2xlarge", "4.4100000000")),
        request("USE1-Host:ml.g7e.2xlarge"),
    )
    stub.add_response(
        "get_products",
        response(price_item("USE1-Host:ml.g6e.2xlarge", "2.8026000000")),
        request("USE1-Host:ml.g6e.2xlarge"),
    )
    aws = FakeAws(client)
    g7e, g6e = with_live_prices([G7E, G6E], "us-east-1", aws)

    assert g7e.usd_per_hour == pytest.approx(4.41)  # the live figure wins over the catalog's
    assert g6e.usd_per_hour == pytest.approx(2.8026)  # and fills an unknown one
    assert g6e.price_source == "AWS Price List API, USE1-Host:ml.g6e.2xlarge"
    assert g7e.price_note is None and g6e.price_note is None
    assert (g7e.name, g7e.gpus, g7e.gpu_memory_gb) == (G7E.name, G7E.gpus, G7E.gpu_memory_gb)
    assert aws.asked == [("pricing", "us-east-1")]  # one client, made once, in us-east-1


def test_other_regions_use_their_usage_type_prefix(pricing) -> None:
    client, stub = pricing
    stub.add_response(
        "get_products",
        response(price_item("EU-Host:ml.p5.48xlarge", "70.5000000000")),
        request("EU-Host:ml.p5.48xlarge"),
    )
    (p5,) = with_live_prices([P5], "eu-west-1", FakeAws(client))
    assert p5.usd_per_hour == pytest.approx(70.5)


def test_pages_are_followed(pricing) -> None:
    client, stub = pricing
    usage = "USE1-Host:ml.g6e.2xlarge"
    stub.add_response("get_products", response(NextToken="t2"), request(usage))
    stub.add_response(
        "get_products", response(price_item(usage, "2.8026000000")), request(usage, NextToken="t2")
    )
    (g6e,) = with_live_prices([G6E], "us-east-1", FakeAws(client))
    assert g6e.usd_per_hour == pytest.approx(2.8026)


def test_access_denied_keeps_catalog_prices_with_a_note_and_stops(pricing) -> None:
    client, stub = pricing
    stub.add_client_error(
        "get_products",
        "AccessDeniedException",
        "User is not authorized to perform: pricing:GetProducts",
        expected_params=request("USE1-Host:ml.g7e.2xlarge"),
    )
    out = with_live_prices([G7E, G6E, P5], "us-east-1", FakeAws(client))  # one call only
    assert [i.usd_per_hour for i in out] == [G7E.usd_per_hour, None, None]
    assert [i.price_source for i in out] == [G7E.price_source, None, None]
    for i in out:
        assert "AccessDeniedException" in i.price_note
    assert out[0].price_note.startswith("catalog price kept")
    assert out[1].price_note.startswith("price unknown")


def test_no_single_published_price_is_never_guessed(pricing) -> None:
    client, stub = pricing
    g7e_usage, g6e_usage = "USE1-Host:ml.g7e.2xlarge", "USE1-Host:ml.g6e.2xlarge"
    stub.add_response("get_products", response(), request(g7e_usage))  # nothing published
    stub.add_response(
        "get_products",
        response(
            price_item(g6e_usage, "2.8026000000", sku="SKUA"),
            price_item(g6e_usage, "3.1000000000", sku="SKUB"),
        ),
        request(g6e_usage),
    )
    g7e, g6e = with_live_prices([G7E, G6E], "us-east-1", FakeAws(client))
    assert g7e.usd_per_hour == G7E.usd_per_hour and "no on-demand price" in g7e.price_note
    assert g6e.usd_per_hour is None and "2 different prices" in g6e.price_note


def test_unknown_region_code_makes_no_call() -> None:
    aws = FakeAws(None)
    (g7e,) = with_live_prices([G7E], "eu-south-2", aws)
    assert aws.asked == []
    # The catalog's figure is us-east-1's: in eu-south-2 the price is unknown, never that
    # figure unlabelled (issue 33, item 4), and the note says both regions.
    assert g7e.usd_per_hour is None and g7e.price_source is None
    assert "eu-south-2" in g7e.price_note and "us-east-1" in g7e.price_note


def test_hourly_usd_reads_only_non_zero_hourly_on_demand_rates() -> None:
    usage = "USE1-Host:ml.g6e.2xlarge"
    assert hourly_usd([price_item(usage, "2.8026000000")]) == {2.8026}
    assert hourly_usd([price_item(usage, "0.0000000000")]) == set()
    assert hourly_usd([price_item(usage, "0.10", unit="GB-Mo")]) == set()
    assert hourly_usd(["not json", json.dumps({"terms": {}})]) == set()
    # The same rate under two SKUs is one price, not an ambiguity.
    same = [price_item(usage, "2.80", sku="A"), price_item(usage, "2.8000000000", sku="B")]
    assert hourly_usd(same) == {2.8}


@pytest.fixture
def no_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    for name in list(os.environ):
        if name.startswith("AWS_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # no IMDS probe


def test_no_credentials_through_the_real_aws_context(no_credentials) -> None:
    from sm_peagle.aws import AwsContext

    out = with_live_prices([G7E, G6E], "us-east-1", AwsContext("us-east-1"))
    assert [i.usd_per_hour for i in out] == [G7E.usd_per_hour, None]
    assert all("credentials" in i.price_note for i in out)


def test_cli_live_prices_without_credentials_still_lists_instances(no_credentials, capsys):
    code, out, err = run_cli(
        capsys, "instances", "--live-prices", "--json", "--region", "us-east-1"
    )
    assert code == 0, err
    items = {i["name"]: i for i in json.loads(out)}
    assert items["ml.g7e.2xlarge"]["usd_per_hour"] == G7E.usd_per_hour
    assert "credentials" in items["ml.g7e.2xlarge"]["price_note"]
    assert items["ml.p5.48xlarge"]["usd_per_hour"] is None


def test_a_training_price_is_the_train_usage_types_live_figure(pricing) -> None:
    """A training job's instance is priced under `<code>-Train:<type>` (a hosting price is
    another product): the exact request, and the single published rate."""
    from sm_peagle.lifecycle.live_prices import training_price

    client, stub = pricing
    usage = "USE1-Train:ml.g5.2xlarge"
    stub.add_response("get_products", response(price_item(usage, "1.5150000000")), request(usage))
    usd, source = training_price("us-east-1", "ml.g5.2xlarge", FakeAws(client))
    assert usd == pytest.approx(1.515)
    assert source == f"AWS Price List API, {usage}"


def test_a_training_price_is_unknown_rather_than_guessed(pricing) -> None:
    from sm_peagle.lifecycle.live_prices import training_price

    client, stub = pricing
    usage = "EU-Train:ml.g6e.2xlarge"
    stub.add_client_error("get_products", "AccessDeniedException", "not allowed", 400,
                          expected_params=request(usage))  # fmt: skip
    usd, why = training_price("eu-west-1", "ml.g6e.2xlarge", FakeAws(client))
    assert usd is None and "AccessDeniedException" in why
    two = [price_item(usage, "2.1"), price_item(usage, "2.3", sku="TESTSKU0002")]
    stub.add_response("get_products", response(*two), request(usage))
    usd, why = training_price("eu-west-1", "ml.g6e.2xlarge", FakeAws(client))
    assert usd is None and why == f"2 different prices for {usage} (2.1, 2.3)"
    assert training_price("mars-north-1", "ml.g5.2xlarge", FakeAws(None))[0] is None


def test_a_training_jobs_cost_is_its_price_times_the_stopping_condition() -> None:
    """The most a job bills is its instance's training rate for MaxRuntimeInSeconds (a job
    is billed by run time and stopped at the limit); unknown stays unknown, with why."""
    from sm_peagle.ops.training_results import training_cost

    cost = training_cost("ml.g5.2xlarge", 6 * 3600, (1.515, "AWS Price List API, x"))
    assert (cost["usd_per_hour"], cost["max_usd"]) == (1.515, 9.09)  # 1.515 * 6
    assert cost["note"].startswith("at most $9.09: ml.g5.2xlarge at $1.515/h for training")
    unknown = training_cost("ml.g5.2xlarge", 3600, (None, "live price lookup failed (x)"))
    assert unknown["max_usd"] is None and "live price lookup failed (x)" in unknown["note"]
    assert training_cost("ml.g5.2xlarge", 3600)["usd_per_hour"] is None  # a dry run: no call
