"""The JumpStart spec reader against moto S3: manifest -> spec, the disk cache and its TTL,
live resolution of non-catalog ids, and the public-hub search for catalog models whose
JumpStart id is not known (Stubber: moto does not implement the hub APIs)."""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from sm_peagle.catalog.jumpstart import resolve
from sm_peagle.errors import SpecError
from sm_peagle.lifecycle import jumpstart_live
from sm_peagle.lifecycle.jumpstart_live import fetch_spec
from sm_peagle.lifecycle.resolve import resolve_inputs
from sm_peagle.planning.build import plan
from sm_peagle.planning.spec.loading import spec_from_data
from tests.plan_helpers import assert_matches_lmi_optimized, lmi_optimized, load_fixture

REGION = "us-east-1"
BUCKET = f"jumpstart-cache-prod-{REGION}"
GPT = "openai-reasoning-gpt-oss-20b"
SPEC_KEY = f"community_models/{GPT}/specs_v3.38.0.json"
# Ids below are test data (the fixture re-labelled), not real JumpStart models.
OTHER = "huggingface-llm-peagle-test-model"
QWEN = "huggingface-llm-qwen3-coder-30b-a3b-instruct-peagle-test"


def _relabelled(model_id: str) -> dict[str, Any]:
    spec = load_fixture()
    spec["model_id"] = model_id
    return spec


@pytest.fixture
def s3(aws: None, monkeypatch: pytest.MonkeyPatch, tmp_path) -> Iterator[Any]:
    """moto S3 with JumpStart's layout: models_manifest.json plus the specs it points at.
    The manifest also lists an older version whose spec differs, to prove the newest wins.
    Each test gets an empty peagle cache (the session-wide one would leak between tests)."""
    monkeypatch.setenv("PEAGLE_CACHE_DIR", str(tmp_path / "peagle-cache"))
    client = boto3.client("s3", region_name=REGION)
    client.create_bucket(Bucket=BUCKET)
    older = load_fixture()
    older["version"] = "3.37.0"
    older["hosting_prepacked_artifact_key"] = "old/prepack/"
    specs = {
        SPEC_KEY: load_fixture(),
        f"community_models/{GPT}/specs_v3.37.0.json": older,
        f"community_models/{OTHER}/specs_v1.0.0.json": _relabelled(OTHER),
        f"community_models/{QWEN}/specs_v1.2.0.json": _relabelled(QWEN),
    }
    manifest = [
        {"model_id": GPT, "version": "3.38.0", "min_version": "2.0.0", "spec_key": SPEC_KEY},
        {
            "model_id": GPT,
            "version": "3.37.0",
            "min_version": "2.0.0",
            "spec_key": f"community_models/{GPT}/specs_v3.37.0.json",
        },
        {
            "model_id": OTHER,
            "version": "1.0.0",
            "min_version": "2.0.0",
            "spec_key": f"community_models/{OTHER}/specs_v1.0.0.json",
        },
        {
            "model_id": QWEN,
            "version": "1.2.0",
            "min_version": "2.0.0",
            "spec_key": f"community_models/{QWEN}/specs_v1.2.0.json",
        },
    ]
    client.put_object(Bucket=BUCKET, Key="models_manifest.json", Body=json.dumps(manifest))
    for key, body in specs.items():
        client.put_object(Bucket=BUCKET, Key=key, Body=json.dumps(body))
    yield client


def count_calls(client: Any) -> Counter:
    """Operations this client sends, counted by a botocore event hook."""
    calls: Counter = Counter()

    def hook(model: Any, **kwargs: Any) -> None:
        calls[model.name] += 1

    client.meta.events.register("before-call.s3", hook)
    return calls


def test_fetched_spec_resolves_to_the_lmi_optimized_wiring(s3) -> None:
    spec = fetch_spec(GPT, REGION, s3_client=s3)
    assert spec["version"] == "3.38.0"  # the newest manifest entry, not 3.37.0
    assert spec == load_fixture()

    expected = lmi_optimized(load_fixture())
    res = resolve(spec, region=REGION, instance_type="ml.g7e.2xlarge", source="live")
    assert res.config_name == expected["config"]
    assert res.image_uri == expected["image"]
    assert res.model_data_source == expected["model_data"]
    assert res.additional_sources == [
        {
            "ChannelName": expected["channel"],
            "S3DataSource": {
                "S3Uri": expected["head_uri"],
                "S3DataType": expected["head_data_type"],
                "CompressionType": expected["head_compression"],
            },
        }
    ]
    assert json.loads(res.env["SM_VLLM_SPECULATIVE_CONFIG"]) == expected["speculative_config"]
    for name in ("SM_VLLM_MAX_MODEL_LEN", "SM_VLLM_TENSOR_PARALLEL_SIZE", "HF_MODEL_ID"):
        assert res.env[name] == expected["env"][name]
    assert res.network_isolation is expected["network_isolation"]
    assert res.startup_health_check_timeout == expected["startup_timeout"]
    assert res.model_data_download_timeout == expected["download_timeout"]
    assert res.vllm_version == expected["vllm_version"]

    # And the plan built from the live spec matches too.
    p = plan(
        spec_from_data({"model": GPT, "region": REGION}),
        jumpstart_spec=spec,
        jumpstart_source="live",
    )
    assert_matches_lmi_optimized(
        p.create_model, p.create_endpoint_config["ProductionVariants"][0], expected
    )
    assert p.jumpstart.source == "live" and p.ok


def test_second_fetch_is_served_from_the_disk_cache(s3) -> None:
    calls = count_calls(s3)
    first = fetch_spec(GPT, REGION, s3_client=s3)
    assert calls == Counter(GetObject=2)  # manifest + spec
    again = fetch_spec(GPT, REGION, s3_client=s3)
    assert again == first
    assert calls == Counter(GetObject=2)  # no S3 call at all
    assert jumpstart_live.read_cached_spec(GPT, REGION) == first


def test_expired_ttl_refetches(s3, monkeypatch) -> None:
    calls = count_calls(s3)
    fetch_spec(GPT, REGION, s3_client=s3)
    fetch_spec(GPT, REGION, s3_client=s3, ttl=0)
    assert calls["GetObject"] == 4

    # A day and a bit later the default TTL has run out as well.
    real_time = time.time
    now = real_time()
    monkeypatch.setattr(
        jumpstart_live.time, "time", lambda: now + jumpstart_live.DEFAULT_TTL_SECONDS + 60
    )
    assert jumpstart_live.read_cached_spec(GPT, REGION) is None
    fetch_spec(GPT, REGION, s3_client=s3)
    assert calls["GetObject"] == 6
    # Back to the present: what was just stored is fresh again.
    monkeypatch.setattr(jumpstart_live.time, "time", real_time)
    fetch_spec(GPT, REGION, s3_client=s3)
    assert calls["GetObject"] == 6


def test_refresh_bypasses_a_fresh_cache(s3) -> None:
    calls = count_calls(s3)
    fetch_spec(GPT, REGION, s3_client=s3)
    fetch_spec(GPT, REGION, s3_client=s3, refresh=True)
    assert calls["GetObject"] == 4


def test_unknown_model_id_names_the_model_field(s3) -> None:
    with pytest.raises(SpecError, match=r"^model: 'no-such-model' is not in JumpStart's manifest"):
        fetch_spec("no-such-model", REGION, s3_client=s3)


# -- resolve_inputs: when plan goes live ---------------------------------------------


def test_non_catalog_jumpstart_id_is_fetched_live_then_cached(s3) -> None:
    spec = spec_from_data({"model": OTHER})
    inputs = resolve_inputs(spec)
    assert inputs.jumpstart_source == "live"
    assert inputs.jumpstart_spec["model_id"] == OTHER
    assert inputs.spec.region == REGION  # filled from AWS_REGION

    again = resolve_inputs(spec)
    assert again.jumpstart_source == "cache"
    assert again.jumpstart_spec == inputs.jumpstart_spec

    p = plan(inputs.spec, jumpstart_spec=inputs.jumpstart_spec, jumpstart_source="live")
    expected = lmi_optimized(load_fixture())
    assert_matches_lmi_optimized(
        p.create_model, p.create_endpoint_config["ProductionVariants"][0], expected
    )
    assert p.ok


def test_cli_plans_a_non_catalog_id_live(s3, capsys) -> None:
    from tests.plan_helpers import run_cli

    code, out, err = run_cli(capsys, "plan", OTHER, "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["jumpstart"] == {
        "model_id": OTHER,
        "version": "3.38.0",
        "config": "lmi-optimized",
        "source": "live",
    }


def test_catalog_model_with_a_snapshot_never_goes_live(s3) -> None:
    class NoAws:
        def client(self, *args: Any, **kwargs: Any) -> Any:
            raise AssertionError("the bundled snapshot must be used")

    inputs = resolve_inputs(spec_from_data({"model": "gpt-oss-20b"}), aws=NoAws())
    assert (inputs.jumpstart_spec, inputs.jumpstart_source) == (None, "snapshot")


class FakeAws:
    """The AwsContext surface resolve_inputs uses: client(service, region)."""

    def __init__(self, clients: dict[str, Any]) -> None:
        self.clients = clients
        self.asked: list[tuple[str, str | None]] = []

    def client(self, service: str, region: str | None = None, **config: Any) -> Any:
        self.asked.append((service, region))
        return self.clients[service]


def _summary(name: str) -> dict[str, Any]:
    return {
        "HubContentName": name,
        "HubContentArn": (
            f"arn:aws:sagemaker:{REGION}:aws:hub-content/SageMakerPublicHub/Model/{name}"
        ),
        "HubContentVersion": "1.2.0",
        "HubContentType": "Model",
        "DocumentSchemaVersion": "2.3.0",
        "HubContentStatus": "Available",
        "CreationTime": datetime(2026, 1, 1, tzinfo=UTC),
    }


SEARCH = {
    "HubName": "SageMakerPublicHub",
    "HubContentType": "Model",
    "NameContains": "qwen3-coder-30b-a3b",
    "MaxResults": 100,
}


@pytest.fixture
def sagemaker(aws: None) -> Iterator[tuple[Any, Stubber]]:
    client = boto3.client("sagemaker", region_name=REGION)
    with Stubber(client) as stub:
        yield client, stub
        stub.assert_no_pending_responses()


def test_qwen_is_found_in_the_public_hub_then_fetched(s3, sagemaker) -> None:
    sm, stub = sagemaker
    # Two pages: the search follows NextToken with the same filters.
    stub.add_response(
        "list_hub_contents", {"HubContentSummaries": [], "NextToken": "page-2"}, dict(SEARCH)
    )
    stub.add_response(
        "list_hub_contents",
        {"HubContentSummaries": [_summary(QWEN)]},
        {**SEARCH, "NextToken": "page-2"},
    )
    aws = FakeAws({"sagemaker": sm, "s3": s3})
    inputs = resolve_inputs(spec_from_data({"model": "qwen3-coder-30b-a3b-instruct"}), aws=aws)
    assert inputs.jumpstart_source == "live"
    assert inputs.jumpstart_spec["model_id"] == QWEN
    assert aws.asked == [("sagemaker", REGION), ("s3", REGION)]


def test_ambiguous_hub_search_goes_offline_with_a_note(s3, sagemaker) -> None:
    sm, stub = sagemaker
    stub.add_response(
        "list_hub_contents",
        {"HubContentSummaries": [_summary(QWEN), _summary(QWEN + "-fp8")]},
        dict(SEARCH),
    )
    inputs = resolve_inputs(
        spec_from_data({"model": "qwen3-coder-30b-a3b-instruct"}),
        aws=FakeAws({"sagemaker": sm, "s3": s3}),
    )
    assert (inputs.jumpstart_spec, inputs.jumpstart_source) == (None, "none")
    assert inputs.notes and "qwen3-coder-30b-a3b" in inputs.notes[0]


def test_hub_access_denied_is_a_note_not_a_crash(s3, sagemaker) -> None:
    sm, stub = sagemaker
    stub.add_client_error(
        "list_hub_contents", "AccessDeniedException", "not allowed", expected_params=dict(SEARCH)
    )
    inputs = resolve_inputs(
        spec_from_data({"model": "qwen3-coder-30b-a3b-instruct"}),
        aws=FakeAws({"sagemaker": sm, "s3": s3}),
    )
    assert inputs.jumpstart_source == "none"
    assert "JumpStart lookup failed" in inputs.notes[0] and "not allowed" in inputs.notes[0]


def test_unknown_id_with_credentials_is_a_one_line_model_error(s3) -> None:
    with pytest.raises(SpecError, match=r"^model: "):
        resolve_inputs(spec_from_data({"model": "no-such-jumpstart-model"}))


def test_s3_access_denied_for_a_non_catalog_id_names_the_model(s3) -> None:
    stub_s3 = boto3.client("s3", region_name=REGION)
    with Stubber(stub_s3) as stub:
        stub.add_client_error(
            "get_object",
            "AccessDenied",
            "denied",
            expected_params={"Bucket": BUCKET, "Key": "models_manifest.json"},
        )
        with pytest.raises(SpecError, match=r"^model: cannot resolve JumpStart model .*denied"):
            resolve_inputs(spec_from_data({"model": OTHER}), aws=FakeAws({"s3": stub_s3}))
