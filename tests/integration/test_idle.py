"""`ls --idle` and `gc --idle` (issue 39, item 2): endpoints InService for the whole window
with no AWS/SageMaker Invocations in it, judged on AWS's clock (the harness's, frozen and
moved here), from one GetMetricData.

The fixtures, all older than the window unless said: a peagle endpoint without traffic, one
with an invocation inside the window, one whose only invocation is older than the window, a
component endpoint without traffic, one whose component took an invocation (dimension
InferenceComponentName: AWS's metrics page for components), an endpoint without the
peagle tag and without traffic, a peagle endpoint created inside the window, and one
updated (UpdateEndpoint) inside it.
"""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

import sm_peagle
from peagle_sandbox.sandbox_clock import SandboxClock
from tests.integration.lifecycle_env import REGION, World, record_requests, run
from tests.integration.test_spend import T0, in_service, make_component_endpoint, make_endpoint

HOUR = 3600.0
VARIANT = "AllTraffic"


def sm() -> Any:
    return boto3.client("sagemaker", region_name=REGION)


@pytest.fixture
def fleet(world: World, sagemaker_harness: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The fixtures above; the clock ends 3 AWS hours after they were made (the window
    is 2h)."""
    record_requests(world, monkeypatch, "cloudwatch")
    clock = sagemaker_harness.clock = SandboxClock(start=T0, frozen=True)
    role = world.role_arn
    for name in ("quiet", "busy", "long-ago", "updated"):
        make_endpoint(role, name)
    make_endpoint(role, "foreign", managed=False)
    quiet_ic = make_component_endpoint(role, "ic-quiet")
    busy_ic = make_component_endpoint(role, "ic-busy")

    def invoke(endpoint: str, at: float, component: str | None = None) -> None:
        sagemaker_harness.record_invocation(
            REGION, endpoint, VARIANT, f"{endpoint}-c", latency_us=1000.0, status_code=200,
            component=component, at=at,
        )  # fmt: skip

    invoke("long-ago", T0 + 0.5 * HOUR)  # before the window [T0+1h, T0+3h]
    invoke("busy", T0 + 2.5 * HOUR)
    invoke("ic-busy", T0 + 2.5 * HOUR, component=busy_ic)
    clock.advance(2.5 * HOUR)
    make_endpoint(role, "new")  # created inside the window: not InService for all of it
    # "updated", made with the others, changed inside the window (LastModifiedTime):
    # not InService for all of it either.
    sm().create_endpoint_config(
        EndpointConfigName="updated-c2",
        ProductionVariants=[
            {"VariantName": VARIANT, "ModelName": "updated-m",
             "InstanceType": "ml.g7e.2xlarge", "InitialInstanceCount": 1}
        ],
    )  # fmt: skip
    sm().update_endpoint(EndpointName="updated", EndpointConfigName="updated-c2")
    in_service("updated")
    clock.advance(0.5 * HOUR)
    world.requests.clear()
    return {"quiet_ic": quiet_ic, "busy_ic": busy_ic, "clock": clock}


IDLE_MANAGED = ["ic-quiet", "long-ago", "quiet"]


def test_ls_idle_lists_exactly_the_endpoints_without_traffic(
    world: World, fleet: Any, capsys: pytest.CaptureFixture
) -> None:
    client = sm_peagle.Client(region=REGION)
    assert sorted(r.endpoint for r in client.ls(idle="2h")) == IDLE_MANAGED
    assert sorted(r.endpoint for r in client.ls(idle="2h", include_unmanaged=True)) == sorted(
        [*IDLE_MANAGED, "foreign"]
    )
    # Without --idle: every peagle endpoint, busy or new.
    assert sorted(r.endpoint for r in client.ls()) == sorted(
        [*IDLE_MANAGED, "busy", "ic-busy", "new", "updated"]
    )
    # A 4 h window reaches back before "long-ago"'s invocation and before all of them
    # were made: none was InService for all of it.
    assert client.ls(idle="4h") == []

    code, out, err = run(capsys, "--json", "ls", "--idle", "2h")
    assert code == 0, err
    assert sorted(r["endpoint"] for r in json.loads(out)) == IDLE_MANAGED
    code, out, err = run(capsys, "ls", "--idle", "2h")
    assert code == 0, err
    assert all(n in out for n in IDLE_MANAGED) and "busy" not in out


def test_ls_idle_asks_cloudwatch_once_for_every_variant_and_component(
    world: World, fleet: Any
) -> None:
    """One GetMetricData: Sum of AWS/SageMaker Invocations over [now-2h, now] on AWS's
    clock, per variant (EndpointName + VariantName) and per component
    (InferenceComponentName), one 2 h period; the endpoint made inside the window is not
    asked about (it cannot be idle)."""
    sm_peagle.Client(region=REGION).ls(idle="2h")
    (sent,) = world.sent("GetMetricData")
    assert (sent["StartTime"], sent["EndTime"]) == (
        "2026-12-01 01:00:00+00:00",  # T0 + 1 h
        "2026-12-01 03:00:00+00:00",  # T0 + 3 h: AWS's now
    )
    dims = sorted(
        tuple((d["Name"], d["Value"]) for d in q["MetricStat"]["Metric"]["Dimensions"])
        for q in sent["MetricDataQueries"]
    )
    variant = [
        (("EndpointName", e), ("VariantName", VARIANT))
        for e in ("busy", "ic-busy", "ic-quiet", "long-ago", "quiet")
    ]
    components = [(("InferenceComponentName", fleet[k]),) for k in ("busy_ic", "quiet_ic")]
    assert dims == sorted(variant + components)
    for q in sent["MetricDataQueries"]:
        stat = q["MetricStat"]
        assert (stat["Metric"]["Namespace"], stat["Metric"]["MetricName"]) == (
            "AWS/SageMaker",
            "Invocations",
        )
        assert (stat["Stat"], stat["Period"]) == ("Sum", 7200)


def test_gc_idle_deletes_exactly_the_idle_endpoints_peagle_owns(
    world: World, fleet: Any, capsys: pytest.CaptureFixture
) -> None:
    """The idle peagle endpoints go (with their components, configs and models, as
    `delete` removes them); the idle endpoint without the peagle tag, the busy ones and
    the new one stay."""
    code, out, err = run(capsys, "--json", "gc", "--idle", "2h", "--dry-run")
    assert code == 0, err
    doc = json.loads(out)
    assert sorted(doc["endpoints"]) == IDLE_MANAGED and doc["deleted"] == []
    assert list(doc["idle_kept"]) == ["foreign"]
    assert "peagle:managed" in doc["idle_kept"]["foreign"]
    assert not world.sent("DeleteEndpoint")

    code, out, err = run(capsys, "gc", "--idle", "2h", "--yes")
    assert code == 0, err
    left = sorted(e["EndpointName"] for e in sm().list_endpoints()["Endpoints"])
    assert left == ["busy", "foreign", "ic-busy", "new", "updated"]
    assert sorted(p["EndpointName"] for p in world.sent("DeleteEndpoint")) == IDLE_MANAGED
    assert [p["InferenceComponentName"] for p in world.sent("DeleteInferenceComponent")] == [
        fleet["quiet_ic"]
    ]
    models = {m["ModelName"] for m in sm().list_models()["Models"]}
    assert models == {"busy-m", "foreign-m", "ic-busy-m", "new-m", "updated-m"}
    assert "left foreign" in err


def test_gc_idle_keeps_an_idle_endpoint_hosting_a_component_peagle_did_not_create(
    world: World, sagemaker_harness: Any
) -> None:
    """`delete` refuses it without `force`: so does `gc --idle`, saying why; `ls --idle`
    still lists it (it is idle)."""
    clock = sagemaker_harness.clock = SandboxClock(start=T0, frozen=True)
    theirs = make_component_endpoint(world.role_arn, "mixed", peagle_component=False)
    clock.advance(3 * HOUR)
    client = sm_peagle.Client(region=REGION)
    assert [r.endpoint for r in client.ls(idle="2h")] == ["mixed"]
    result = client.gc(idle="2h")
    assert (result.endpoints, result.deleted) == ({}, [])
    assert theirs in result.idle_kept["mixed"] and "did not create" in result.idle_kept["mixed"]
    assert [e["EndpointName"] for e in sm().list_endpoints()["Endpoints"]] == ["mixed"]
    assert not world.sent("DeleteEndpoint") and not world.sent("DeleteInferenceComponent")


def test_a_bad_idle_window_is_exit_2_before_any_request(
    world: World, sagemaker_harness: Any, capsys: pytest.CaptureFixture
) -> None:
    for argv in (
        ("ls", "--idle", "soon"),
        ("ls", "--idle", "30s"),
        ("gc", "--idle", "-1h", "--yes"),
        ("gc", "--idle", "2h", "--operation", "op-20261201T000000Z-0a1b2c", "--yes"),
    ):
        code, out, err = run(capsys, *argv)
        assert code == 2, (argv, out, err)
        assert err.startswith("error: ") and "idle" in err and "Traceback" not in err
    assert world.requests == []
    with pytest.raises(sm_peagle.SpecError) as e:
        sm_peagle.Client(region=REGION).ls(idle="30s")
    assert e.value.field == "idle"


def test_a_metric_read_that_did_not_complete_never_makes_an_endpoint_idle(
    world: World, fleet: Any, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CloudWatch answers a query it could not serve with StatusCode InternalError (or
    Forbidden) and no values (GetMetricData's API reference): that is not "no traffic",
    so gc --idle deletes nothing on it."""
    import botocore.client

    real = botocore.client.BaseClient._make_api_call

    def failing(self: Any, operation: str, params: dict[str, Any]) -> Any:
        answer = real(self, operation, params)
        if operation == "GetMetricData":
            for r in answer.get("MetricDataResults", []):
                r.update(StatusCode="InternalError", Values=[], Timestamps=[])
        return answer

    monkeypatch.setattr(botocore.client.BaseClient, "_make_api_call", failing)
    code, out, err = run(capsys, "--json", "ls", "--idle", "2h")
    assert code == 0, err
    assert json.loads(out) == []
    code, _, err = run(capsys, "gc", "--idle", "2h", "--yes")
    assert code == 0, err
    assert not world.sent("DeleteEndpoint")
