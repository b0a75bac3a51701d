"""Spend so far and 30 days at the current size on `status` and `ls` (issue 39, item 3),
checked by hand: an endpoint created at a fixed time on the harness's frozen clock, the
clock moved on, and the figure worked out here from the catalog's price as the catalog's
source publishes it (never computed by the code under test).

The price: ml.g7e.2xlarge, $4.20/h on-demand in us-east-1 (AWS's blog, which
sm_peagle/catalog/instances.py cites). peagle has no price for ml.g7e.4xlarge, and its
price of ml.g7e.2xlarge is for us-east-1 only: those give "unknown", never a figure.
"""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

import sm_peagle
from peagle_sandbox.sandbox_clock import SandboxClock
from tests.integration.lifecycle_env import REGION, World, record_requests, run

G7E_2XL_USD_PER_HOUR = 4.20  # AWS blog, us-east-1 (the catalog's source)
T0 = 1796083200.0  # 2026-12-01T00:00:00Z: a whole second, as the Date header has
MANAGED = [{"Key": "peagle:managed", "Value": "true"}]


def sm(region: str = REGION) -> Any:
    return boto3.client("sagemaker", region_name=region)


def make_endpoint(
    role: str,
    name: str,
    *,
    instance: str = "ml.g7e.2xlarge",
    count: int = 1,
    managed: bool = True,
    region: str = REGION,
    tags: list[dict[str, str]] | None = None,
) -> None:
    """A one-model endpoint of `count` x `instance`, tagged peagle:managed when `managed`,
    InService when this returns."""
    c = sm(region)
    c.create_model(
        ModelName=f"{name}-m", ExecutionRoleArn=role, PrimaryContainer={"Image": "x.dkr/img:1"}
    )
    c.create_endpoint_config(
        EndpointConfigName=f"{name}-c",
        ProductionVariants=[
            {
                "VariantName": "AllTraffic",
                "ModelName": f"{name}-m",
                "InstanceType": instance,
                "InitialInstanceCount": count,
            }
        ],
    )
    c.create_endpoint(
        EndpointName=name,
        EndpointConfigName=f"{name}-c",
        Tags=(MANAGED if managed else []) + (tags or []),
    )
    in_service(name, region)


def in_service(name: str, region: str = REGION) -> None:
    for _ in range(10):  # the harness moves a new endpoint on per describe
        if sm(region).describe_endpoint(EndpointName=name)["EndpointStatus"] == "InService":
            return
    raise AssertionError(f"{name} never InService")


def make_component_endpoint(
    role: str, name: str, instance: str = "ml.g7e.12xlarge", *, peagle_component: bool = True
) -> str:
    """A peagle endpoint hosting one inference component (peagle's, unless
    `peagle_component` is False); returns the component."""
    c = sm()
    c.create_model(
        ModelName=f"{name}-m", ExecutionRoleArn=role, PrimaryContainer={"Image": "x.dkr/img:1"}
    )
    c.create_endpoint_config(
        EndpointConfigName=f"{name}-c",
        ExecutionRoleArn=role,
        ProductionVariants=[
            {
                "VariantName": "AllTraffic",
                "InstanceType": instance,
                "InitialInstanceCount": 1,
                "ManagedInstanceScaling": {
                    "Status": "ENABLED",
                    "MinInstanceCount": 1,
                    "MaxInstanceCount": 2,
                },
                "RoutingConfig": {"RoutingStrategy": "LEAST_OUTSTANDING_REQUESTS"},
            }
        ],
    )
    c.create_endpoint(EndpointName=name, EndpointConfigName=f"{name}-c", Tags=MANAGED)
    in_service(name)
    ic = f"{name}-ic"
    c.create_inference_component(
        InferenceComponentName=ic,
        EndpointName=name,
        VariantName="AllTraffic",
        Specification={
            "ModelName": f"{name}-m",
            "ComputeResourceRequirements": {"MinMemoryRequiredInMb": 1024},
        },
        RuntimeConfig={"CopyCount": 1},
        Tags=MANAGED if peagle_component else [],
    )
    return ic


@pytest.fixture
def clock(sagemaker_harness: Any) -> SandboxClock:
    sagemaker_harness.clock = SandboxClock(start=T0, frozen=True)
    return sagemaker_harness.clock


def test_spend_of_90_minutes_on_one_instance(
    world: World, clock: SandboxClock, capsys: pytest.CaptureFixture
) -> None:
    """Created at T0, read 90 AWS minutes later: 1.5 h x 1 x $4.20 = $6.30 so far, and
    720 h x 1 x $4.20 = $3,024.00 over 30 days; the same in `status`, `ls` and their
    --json, labelled an estimate."""
    make_endpoint(world.role_arn, "ep")
    clock.advance(90 * 60)
    client = sm_peagle.Client(region=REGION)

    st = client.status("ep")
    assert (st.spend_usd, st.projected_30d_usd) == (6.30, 3024.00)
    assert st.spend_note.startswith("estimate: ")
    (row,) = client.ls()
    assert (row.spend_usd, row.projected_30d_usd) == (6.30, 3024.00)

    code, out, err = run(capsys, "--json", "status", "ep")
    assert code == 0, err
    doc = json.loads(out)
    assert (doc["spend_usd"], doc["projected_30d_usd"]) == (6.30, 3024.00)
    code, out, err = run(capsys, "--json", "ls")
    assert code == 0, err
    (listed,) = json.loads(out)
    assert (listed["spend_usd"], listed["projected_30d_usd"]) == (6.30, 3024.00)
    assert listed["spend_note"].startswith("estimate: ")

    code, out, err = run(capsys, "status", "ep")
    assert code == 0, err
    assert "spend so far (estimate)" in out and "$6.30" in out and "$3,024.00" in out
    code, out, err = run(capsys, "ls")
    assert code == 0, err
    assert "$6.30" in out and "$3,024.00" in out and "estimate" in out + err


def test_an_expiring_endpoint_is_projected_only_until_its_expiry(
    world: World, clock: SandboxClock, capsys: pytest.CaptureFixture
) -> None:
    """`--ttl` made it expire at T0 + 5 h (its `peagle:expires` tag): read 90 AWS minutes in,
    3.5 h are left, so the projection is 3.5 h x 1 x $4.20 = $14.70, not 30 days' $3,024,
    in `status` and `ls` alike; the note says why."""
    expires = [{"Key": "peagle:expires", "Value": "2026-12-01T05:00:00Z"}]  # T0 + 5 h
    make_endpoint(world.role_arn, "ttl", tags=expires)
    clock.advance(90 * 60)
    client = sm_peagle.Client(region=REGION)
    st = client.status("ttl")
    assert (st.spend_usd, st.projected_30d_usd) == (6.30, 14.70)
    assert "projected until its expiry, 3.5 h from now" in st.spend_note
    (row,) = client.ls()
    assert (row.spend_usd, row.projected_30d_usd) == (6.30, 14.70)
    # Overdue (two minutes past it and still there: its deletion failed), it bills on:
    # 8 h in, the full 30 days again, 720 h x $4.20.
    clock.advance(6.5 * 3600)
    st = client.status("ttl")
    assert st.expiry == "overdue" and st.projected_30d_usd == 3024.00
    (row,) = client.ls()
    assert row.projected_30d_usd == 3024.00


def test_spend_counts_every_instance_on_aws_s_clock(world: World, clock: SandboxClock) -> None:
    """Two instances for 3 AWS hours: 2 x 3 h x $4.20 = $25.20; 30 days: 2 x 720 x $4.20.
    The local clock has not moved: the hours are AWS's."""
    make_endpoint(world.role_arn, "two", count=2)
    clock.advance(3 * 3600)
    st = sm_peagle.Client(region=REGION).status("two")
    assert (st.spend_usd, st.projected_30d_usd) == (25.20, 6048.00)


def test_unknown_type_is_unknown_never_another_type_s_price(
    world: World, clock: SandboxClock, capsys: pytest.CaptureFixture
) -> None:
    """ml.g7e.4xlarge has no catalog price: spend and projection are None ("unknown"),
    and the note says why; ml.g7e.2xlarge's $4.20 is not borrowed."""
    make_endpoint(world.role_arn, "big", instance="ml.g7e.4xlarge")
    clock.advance(3600)
    st = sm_peagle.Client(region=REGION).status("big")
    assert (st.spend_usd, st.projected_30d_usd) == (None, None)
    assert st.spend_note.startswith("unknown: ") and "ml.g7e.4xlarge" in st.spend_note
    code, out, err = run(capsys, "ls")
    assert code == 0, err
    assert "unknown" in out and "$" not in out


def test_unknown_region_is_unknown_never_another_region_s_price(
    world: World, clock: SandboxClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The catalog's $4.20 is us-east-1's: the same type in eu-west-1 is unknown."""
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    make_endpoint(world.role_arn, "eu", region="eu-west-1")
    clock.advance(3600)
    client = sm_peagle.Client(region="eu-west-1")
    st = client.status("eu")
    assert (st.spend_usd, st.projected_30d_usd) == (None, None)
    assert "us-east-1" in st.spend_note  # says whose price peagle has
    (row,) = client.ls()
    assert (row.spend_usd, row.projected_30d_usd) == (None, None)


def test_a_scaled_endpoint_s_spend_follows_its_instance_count_history(
    world: World, sagemaker_harness: Any, clock: SandboxClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """1 instance for 60 min, scaled to 3 (an Application Auto Scaling activity at T0+60m),
    read 30 min later: $4.20 x (1 x 1 h + 3 x 0.5 h) = $4.20 x 2.5 = $10.50; 30 days at 3
    instances: 3 x 720 x $4.20 = $9,072.00. Then scaled in to 2 at T0+120m and read at
    T0+180m: $4.20 x (1 + 3 x 1 + 2 x 1) = $25.20. A Failed activity changes nothing."""
    record_requests(world, monkeypatch, "application-autoscaling")
    make_endpoint(world.role_arn, "scaled")
    client = sm_peagle.Client(region=REGION)
    clock.advance(60 * 60)
    sagemaker_harness.record_scaling("scaled", "AllTraffic", 3)
    sagemaker_harness.record_scaling("scaled", "AllTraffic", 9, status="Failed")
    clock.advance(30 * 60)
    st = client.status("scaled")
    assert (st.instance_count, st.spend_usd, st.projected_30d_usd) == (3, 10.50, 9072.00)
    assert "not read" not in st.spend_note  # the history was read
    # status asks for this variant's history; ls for the region's in one call
    assert {
        (p.get("ResourceId"), p.get("ScalableDimension"))
        for p in world.sent("DescribeScalingActivities")
    } == {("endpoint/scaled/variant/AllTraffic", "sagemaker:variant:DesiredInstanceCount")}
    (row,) = client.ls()
    assert (row.spend_usd, row.projected_30d_usd) == (10.50, 9072.00)

    clock.advance(30 * 60)
    sagemaker_harness.record_scaling("scaled", "AllTraffic", 2)
    clock.advance(60 * 60)
    st = client.status("scaled")
    assert (st.spend_usd, st.projected_30d_usd) == (25.20, 6048.00)


def test_a_component_endpoint_counts_its_current_instances_over_its_uptime(
    world: World, clock: SandboxClock
) -> None:
    """Managed instance scaling leaves no Application Auto Scaling activity: 1 instance
    now x 2 h x $4.20 = $8.40, and the note says how it was counted."""
    make_component_endpoint(world.role_arn, "ic-ep", instance="ml.g7e.2xlarge")
    clock.advance(2 * 3600)
    st = sm_peagle.Client(region=REGION).status("ic-ep")
    assert (st.instance_count, st.spend_usd, st.projected_30d_usd) == (1, 8.40, 3024.00)
    assert "managed instance scaling" in st.spend_note


def test_a_failed_endpoint_s_spend_is_unknown(
    world: World, sagemaker_harness: Any, clock: SandboxClock
) -> None:
    """A Failed endpoint's instances stopped at a time SageMaker does not report: no
    figure (which would keep growing with the clock), and the note says why."""
    sagemaker_harness.schedule("broken", ["Creating", "Failed"], failure_reason="no start")
    c = sm()
    c.create_model(
        ModelName="broken-m", ExecutionRoleArn=world.role_arn,
        PrimaryContainer={"Image": "x.dkr/img:1"},
    )  # fmt: skip
    c.create_endpoint_config(
        EndpointConfigName="broken-c",
        ProductionVariants=[
            {"VariantName": "AllTraffic", "ModelName": "broken-m",
             "InstanceType": "ml.g7e.2xlarge", "InitialInstanceCount": 1}
        ],
    )  # fmt: skip
    c.create_endpoint(EndpointName="broken", EndpointConfigName="broken-c", Tags=MANAGED)
    clock.advance(3600)
    client = sm_peagle.Client(region=REGION)
    for _ in range(5):  # the harness moves it on per describe
        if (st := client.status("broken")).status == "Failed":
            break
    assert st.status == "Failed"
    assert (st.spend_usd, st.projected_30d_usd) == (None, None)
    assert st.spend_note.startswith("unknown: ") and "Failed" in st.spend_note
