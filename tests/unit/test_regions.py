"""Issue 33, item 4: a price names its region and source, and a region whose price peagle
does not know says so (never another region's figure unlabelled); plan reports whether the
instance type is offered in the region per peagle's shipped data, else "availability
unknown". Expected values are the rule's and the shipped sources': peagle's only prices
are us-east-1's (ml.g7e.2xlarge $4.20/h and ml.g6e.12xlarge $13.12/h, an AWS blog)."""

from __future__ import annotations

import json

import pytest

import sm_peagle
from sm_peagle.catalog.availability import availability
from tests.plan_helpers import run_cli

US_EAST_1_G7E = 4.20  # AWS blog, us-east-1 (the catalog's source)


@pytest.fixture(autouse=True)
def _wide(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "250")  # one line per value (wrapping is item 5's)


def test_plan_in_the_price_region_names_region_and_source(capsys) -> None:
    code, out, _ = run_cli(capsys, "plan", "gpt-oss-20b", "--region", "us-east-1")
    assert code == 0
    (line,) = [ln for ln in out.splitlines() if ln.strip().startswith("cost")]
    assert "$4.20/h" in line and "us-east-1" in line and "AWS blog" in line


@pytest.mark.parametrize("region", ["eu-west-1", "ap-southeast-2"])
def test_plan_in_a_region_without_a_known_price_says_so(capsys, region: str) -> None:
    code, out, _ = run_cli(capsys, "plan", "gpt-oss-20b", "--region", region)
    assert code == 0
    (line,) = [ln for ln in out.splitlines() if ln.strip().startswith("cost")]
    assert f"unknown in {region}" in line
    assert "4.20" not in line  # us-east-1's figure never appears for another region
    assert "us-east-1" in line  # ... but the note says which region peagle has a price for
    assert f"--live-prices --region {region}" in line  # and how to ask AWS


def test_plan_json_estimate_names_its_region_or_says_why_not(capsys) -> None:
    doc = json.loads(run_cli(capsys, "plan", "gpt-oss-20b", "--json")[1])
    assert doc["estimate"] == {
        "usd_per_hour": pytest.approx(US_EAST_1_G7E),
        "region": "us-east-1",
        "source": "AWS blog, us-east-1",
    }
    assert doc["price_note"] is None
    doc = json.loads(run_cli(capsys, "plan", "gpt-oss-20b", "--region", "eu-west-1", "--json")[1])
    assert doc["estimate"] is None
    assert "us-east-1" in doc["price_note"]


def test_sdk_plan_price_scales_with_count_only_in_its_region() -> None:
    p = sm_peagle.plan("gpt-oss-20b", instance_count=2)
    assert p.usd_per_hour == pytest.approx(2 * US_EAST_1_G7E)
    assert p.price.region == "us-east-1"
    assert sm_peagle.plan("gpt-oss-20b", instance_count=2, region="us-west-2").usd_per_hour is None


def test_instances_for_another_region_shows_no_us_east_1_price(capsys) -> None:
    items = {
        i["name"]: i
        for i in json.loads(run_cli(capsys, "instances", "--region", "eu-west-1", "--json")[1])
    }
    g7e = items["ml.g7e.2xlarge"]
    assert g7e["usd_per_hour"] is None and "us-east-1" in g7e["price_note"]
    items = {
        i["name"]: i
        for i in json.loads(run_cli(capsys, "instances", "--region", "us-east-1", "--json")[1])
    }
    assert items["ml.g7e.2xlarge"]["usd_per_hour"] == pytest.approx(US_EAST_1_G7E)


def test_shipped_availability_data_names_a_source_and_when_it_was_read() -> None:
    from importlib.resources import files

    doc = json.loads(
        files("sm_peagle.catalog").joinpath("data/regional_availability.json").read_text()
    )
    for table in (doc["offered"], doc["not_offered"]):
        for types in table.values():
            for key in types.values():
                assert doc["sources"][key]["what"] and doc["sources"][key]["read"]


def test_plan_reports_availability_known_and_unknown(capsys) -> None:
    # us-east-1 sells ml.g7e.2xlarge (AWS publishes its price there): offered, with source.
    code, out, _ = run_cli(capsys, "plan", "gpt-oss-20b")
    assert code == 0
    (line,) = [ln for ln in out.splitlines() if ln.strip().startswith("availability")]
    assert "offered in us-east-1" in line and "read 20" in line
    # Nothing shipped says anything about eu-west-1: unknown, said so, and not a failure.
    code, out, _ = run_cli(capsys, "plan", "gpt-oss-20b", "--region", "eu-west-1")
    assert code == 0
    (line,) = [ln for ln in out.splitlines() if ln.strip().startswith("availability")]
    assert "ml.g7e.2xlarge in eu-west-1: availability unknown" in line


def test_plan_refuses_a_type_the_data_says_is_not_offered(monkeypatch, capsys) -> None:
    # No shipped source says a type is missing anywhere yet; the rule still holds for the
    # day one does: a failed `region` check, exit 2, nothing sent (plan sends nothing).
    from sm_peagle.catalog import availability as av

    doc = json.loads(json.dumps(av._data()))
    doc["sources"]["test"] = {"what": "a test source", "read": "2026-11-29"}
    doc["not_offered"] = {"eu-west-1": {"ml.g7e.2xlarge": "test"}}
    monkeypatch.setattr(av, "_data", lambda: doc)
    assert availability("ml.g7e.2xlarge", "eu-west-1").status == "not offered"
    code, _, err = run_cli(capsys, "plan", "gpt-oss-20b", "--region", "eu-west-1")
    assert code == 2
    assert "ml.g7e.2xlarge not offered in eu-west-1" in err


def _quota(name: str) -> dict:
    return {"QuotaName": name, "Value": 4.0, "QuotaCode": "L-TEST"}


def test_preflight_reads_an_offer_only_from_a_list_of_endpoint_quotas() -> None:
    from sm_peagle.lifecycle.preflight import check_offered

    g7e = "ml.g7e.2xlarge"
    # No answer (denied, empty) or no endpoint quotas at all: nothing is concluded.
    assert check_offered([], g7e, "eu-west-1") is None
    assert check_offered([_quota("Number of endpoints")], g7e, "eu-west-1") is None
    # The region lists endpoint quotas, and one for this type: offered.
    listed = [_quota("ml.g6e.xlarge for endpoint usage"), _quota(f"{g7e} for endpoint usage")]
    assert check_offered(listed, g7e, "eu-west-1").status == "pass"
    # ... and none for this type: not offered there, named with the region.
    got = check_offered(listed[:1], g7e, "eu-west-1")
    assert got.status == "fail" and got.name == "region"
    assert f"{g7e} is not offered for SageMaker endpoints in eu-west-1" in got.message


def test_an_unavailable_type_is_exit_2_a_low_quota_stays_exit_1() -> None:
    import sm_peagle

    assert sm_peagle.InstanceTypeUnavailable.exit_code == 2  # bad input: type or region
    assert issubclass(sm_peagle.InstanceTypeUnavailable, sm_peagle.PreflightFailed)
    assert sm_peagle.QuotaExceeded.exit_code == 1


def test_instances_table_names_the_region_of_each_price(capsys) -> None:
    def g7e_row(*args: str) -> str:
        code, out, _ = run_cli(capsys, "instances", *args)
        assert code == 0
        (row,) = [ln for ln in out.splitlines() if "ml.g7e.2xlarge " in ln]
        return row

    assert "4.20 (us-east-1)" in g7e_row()
    row = g7e_row("--region", "eu-west-1")
    assert "4.20" not in row and "unknown" in row
