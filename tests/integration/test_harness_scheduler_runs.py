"""The sandbox runs EventBridge Scheduler's one-time schedules on its clock (issue 39): the
exact CreateSchedule peagle sends (`planning/expiry.schedule_request`) deletes the endpoint
at its minute with no peagle process, and a role Scheduler may not assume, or that may not
delete the endpoint, fails visibly and is retried while the endpoint stays.

In process (`mock_aws`), boto3 against the harness, a frozen clock the tests advance (an
advance runs what became due, as the sandbox server's tick does); nothing sleeps.
Expected behaviour, from AWS's documents (not from the harness): a one-time schedule
invokes its target within the minute of its `at()` time (schedule types page: 60 s
precision) and, with ActionAfterCompletion DELETE, is deleted "after the schedule has
invoked its target once"; Scheduler assumes the role as scheduler.amazonaws.com with
aws:SourceAccount and aws:SourceArn = the schedule group's ARN; the role's policies must
allow the target's action on the resource, an explicit Deny wins; a failed invocation is
retried per RetryPolicy. [INF] (the harness's choices, labelled in moto_scheduler): the
retry gaps 1, 2, 4 ... min; a past `at()` runs at the next tick.
"""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from peagle_sandbox.groundtruth import GroundTruth
from peagle_sandbox.logsim import LogSimulator
from peagle_sandbox.runtime import Runtime
from peagle_sandbox.sandbox_clock import SandboxClock
from peagle_sandbox.testing.moto_sagemaker import SageMakerHarness
from sm_peagle.planning import expiry

REGION = "us-east-1"
ACCOUNT = "123456789012"  # moto's default account
T0 = 1_800_000_000  # 2027-01-15 08:00:00 UTC, a minute boundary
START = datetime.fromtimestamp(T0, UTC)
EXPIRES = T0 + 900  # --ttl 15m from T0 (a whole minute already)
EXEC_ROLE = f"arn:aws:iam::{ACCOUNT}:role/exec"
MANAGED = [{"Key": "peagle:managed", "Value": "true"}]
SPEC = {"ModelName": "m", "ComputeResourceRequirements": {"MinMemoryRequiredInMb": 1024}}


@pytest.fixture
def harness(sagemaker_harness: SageMakerHarness) -> SageMakerHarness:
    sagemaker_harness.clock = SandboxClock(frozen=True, start=T0)
    return sagemaker_harness


def _sm() -> Any:
    return boto3.client("sagemaker", region_name=REGION)


def _scheduler() -> Any:
    return boto3.client("scheduler", region_name=REGION)


def _endpoint(name: str = "my-endpoint", tags: list[dict[str, str]] = MANAGED) -> None:
    sm = _sm()
    sm.create_model(ModelName="m", ExecutionRoleArn=EXEC_ROLE, PrimaryContainer={"Image": "i:1"})
    variant = {
        "VariantName": "AllTraffic",
        "InstanceType": "ml.g6e.xlarge",
        "InitialInstanceCount": 1,
        "ModelName": "m",
    }
    sm.create_endpoint_config(EndpointConfigName="c", ProductionVariants=[variant])
    sm.create_endpoint(EndpointName=name, EndpointConfigName="c", Tags=tags)


def _component_endpoint() -> None:
    sm = _sm()
    sm.create_model(ModelName="m", ExecutionRoleArn=EXEC_ROLE, PrimaryContainer={"Image": "i:1"})
    variant = {
        "VariantName": "AllTraffic",
        "InstanceType": "ml.g6e.xlarge",
        "InitialInstanceCount": 1,
        "ManagedInstanceScaling": {"Status": "ENABLED", "MinInstanceCount": 1,
                                   "MaxInstanceCount": 2},
        "RoutingConfig": {"RoutingStrategy": "LEAST_OUTSTANDING_REQUESTS"},
    }  # fmt: skip
    sm.create_endpoint_config(
        EndpointConfigName="c", ExecutionRoleArn=EXEC_ROLE, ProductionVariants=[variant]
    )
    sm.create_endpoint(EndpointName="e", EndpointConfigName="c", Tags=MANAGED)
    sm.create_inference_component(
        InferenceComponentName="ic",
        EndpointName="e",
        VariantName="AllTraffic",
        Specification=SPEC,
        RuntimeConfig={"CopyCount": 1},
        Tags=MANAGED,
    )


def _role(
    trust: dict[str, Any] | None = None, permissions: dict[str, Any] | None | str = "peagle"
) -> str:
    iam = boto3.client("iam", region_name=REGION)
    arn = iam.create_role(
        RoleName=expiry.ROLE_NAME,
        AssumeRolePolicyDocument=json.dumps(trust or expiry.trust_policy(ACCOUNT)),
    )["Role"]["Arn"]
    if permissions == "peagle":
        permissions = expiry.permission_policy(ACCOUNT)
    if permissions:
        iam.put_role_policy(
            RoleName=expiry.ROLE_NAME, PolicyName="p", PolicyDocument=json.dumps(permissions)
        )
    return str(arn)


def _schedule(role: str, endpoint: str = "my-endpoint", **kw: Any) -> dict[str, Any]:
    """peagle's exact CreateSchedule, sent as is (groups made first)."""
    client = _scheduler()
    have = {g["Name"] for g in client.list_schedule_groups()["ScheduleGroups"]}
    for group in {expiry.GROUP, expiry.COMPONENT_GROUP} - have:
        client.create_schedule_group(Name=group)
    req = expiry.schedule_request(
        endpoint, datetime.fromtimestamp(EXPIRES, UTC), role, "op-1", **kw
    )
    client.create_schedule(**req)
    return req


def _schedule_exists(name: str = "my-endpoint", group: str = expiry.GROUP) -> bool:
    try:
        _scheduler().get_schedule(Name=name, GroupName=group)
    except ClientError as e:
        assert e.response["Error"]["Code"] == "ResourceNotFoundException"
        return False
    return True


def _endpoint_exists(name: str = "my-endpoint") -> bool:
    return name in [e["EndpointName"] for e in _sm().list_endpoints()["Endpoints"]]


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_the_expiry_schedule_deletes_the_endpoint_at_its_minute(harness: Any) -> None:
    _endpoint()
    role = _role()
    _schedule(role)
    harness.clock.advance(EXPIRES - T0 - 1)  # 08:14:59: not yet
    assert _endpoint_exists() and _schedule_exists()
    assert harness.schedule_runs == []
    harness.requests.clear()
    harness.clock.advance(1)  # 08:15:00: the schedule's minute
    assert not _endpoint_exists()
    assert not _schedule_exists()  # ActionAfterCompletion DELETE
    (run,) = harness.schedule_runs
    assert run["schedule"] == "peagle/my-endpoint"
    assert run["outcome"] == "succeeded" and run["error"] is None
    assert run["at"] == _iso(EXPIRES) == "2027-01-15T08:15:00Z"
    assert run["role"] == role
    # The scheduled call reached SageMaker as AWS's own DeleteEndpoint request.
    sent = [r for r in harness.requests.all() if r.operation == "DeleteEndpoint"]
    assert [(r.service, r.params) for r in sent] == [("sagemaker", {"EndpointName": "my-endpoint"})]
    harness.clock.advance(3600)
    assert len(harness.schedule_runs) == 1  # ran once


def test_a_role_scheduler_may_not_assume_fails_visibly_and_is_retried(harness: Any) -> None:
    _endpoint()
    trust = expiry.trust_policy(ACCOUNT)
    trust["Statement"][0]["Principal"] = {"Service": "lambda.amazonaws.com"}
    role = _role(trust=trust)
    _schedule(role)
    harness.clock.advance(900)
    (run,) = harness.schedule_runs
    assert run["outcome"] == "failed"
    assert "must allow AWS EventBridge Scheduler to assume the role" in run["error"]
    assert run["next_attempt_at"] == _iso(EXPIRES + 60)
    assert _endpoint_exists() and _schedule_exists()
    assert "DeleteEndpoint" not in harness.requests.operations("sagemaker")
    harness.clock.advance(59)
    assert len(harness.schedule_runs) == 1  # not before the retry's time
    harness.clock.advance(1)
    assert [r["attempt"] for r in harness.schedule_runs] == [1, 2]
    assert harness.schedule_runs[1]["next_attempt_at"] == _iso(EXPIRES + 60 + 120)
    # The trust is fixed: the next retry deletes the endpoint.
    boto3.client("iam", region_name=REGION).update_assume_role_policy(
        RoleName=expiry.ROLE_NAME, PolicyDocument=json.dumps(expiry.trust_policy(ACCOUNT))
    )
    harness.clock.advance(120)
    assert harness.schedule_runs[-1]["outcome"] == "succeeded"
    assert not _endpoint_exists() and not _schedule_exists()


@pytest.mark.parametrize(
    "condition",
    [
        {"StringEquals": {"aws:SourceAccount": "999999999999"}},
        {"ArnLike": {"aws:SourceArn": f"arn:aws:scheduler:*:{ACCOUNT}:schedule-group/other"}},
        # AWS: SourceArn is the GROUP's ARN, never the schedule's.
        {"ArnEquals": {"aws:SourceArn": f"arn:aws:scheduler:{REGION}:{ACCOUNT}"
                                        ":schedule/peagle/my-endpoint"}},
    ],
)  # fmt: skip
def test_the_trust_conditions_are_checked(harness: Any, condition: dict[str, Any]) -> None:
    _endpoint()
    trust = expiry.trust_policy(ACCOUNT)
    trust["Statement"][0]["Condition"] = condition
    _schedule(_role(trust=trust))
    harness.clock.advance(900)
    (run,) = harness.schedule_runs
    assert "assume the role" in run["error"]
    assert _endpoint_exists()


def test_a_missing_role_fails_visibly(harness: Any) -> None:
    _endpoint()
    _schedule(f"arn:aws:iam::{ACCOUNT}:role/nobody")
    harness.clock.advance(900)
    (run,) = harness.schedule_runs
    assert run["outcome"] == "failed" and "does not exist" in run["error"]
    assert _endpoint_exists()


def _deny(statement_action: str) -> dict[str, Any]:
    policy = expiry.permission_policy(ACCOUNT)
    policy["Statement"].append({"Effect": "Deny", "Action": statement_action, "Resource": "*"})
    return policy


@pytest.mark.parametrize(
    ("permissions", "tags", "why"),
    [
        (None, MANAGED, "because no identity-based policy allows"),
        # peagle's policy deletes only what carries peagle:managed=true.
        ("peagle", [{"Key": "team", "Value": "x"}], "because no identity-based policy allows"),
        ("peagle", [{"Key": "peagle:managed", "Value": "false"}], "no identity-based policy"),
        (_deny("sagemaker:Delete*"), MANAGED, "with an explicit deny"),
        (
            {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action":
             "sagemaker:DeleteInferenceComponent", "Resource": "*"}]},
            MANAGED,
            "because no identity-based policy allows",
        ),
    ],
)  # fmt: skip
def test_a_role_without_the_permission_fails_visibly_and_is_retried(
    harness: Any, permissions: Any, tags: list[dict[str, str]], why: str
) -> None:
    _endpoint(tags=tags)
    role = _role(permissions=permissions)
    _schedule(role)
    harness.clock.advance(900)
    harness.clock.advance(60)
    runs = harness.schedule_runs
    assert [r["outcome"] for r in runs] == ["failed", "failed"]
    error = runs[0]["error"]
    assert error.startswith(
        "AccessDeniedException: User: arn:aws:sts::123456789012:assumed-role/"
        "peagle-ttl-deleter/my-endpoint is not authorized to perform: sagemaker:DeleteEndpoint "
        f"on resource: arn:aws:sagemaker:{REGION}:{ACCOUNT}:endpoint/my-endpoint"
    )
    assert why in error
    assert _endpoint_exists() and _schedule_exists()


def test_an_attached_managed_policy_counts(harness: Any) -> None:
    _endpoint()
    role = _role(permissions=None)
    iam = boto3.client("iam", region_name=REGION)
    arn = iam.create_policy(
        PolicyName="ttl", PolicyDocument=json.dumps(expiry.permission_policy(ACCOUNT))
    )["Policy"]["Arn"]
    iam.attach_role_policy(RoleName=expiry.ROLE_NAME, PolicyArn=arn)
    _schedule(role)
    harness.clock.advance(900)
    assert [r["outcome"] for r in harness.schedule_runs] == ["succeeded"]
    assert not _endpoint_exists()


def test_a_component_endpoint_goes_component_first(harness: Any) -> None:
    _component_endpoint()
    role = _role()
    _schedule(role, endpoint="e", component="ic")  # at expiry - 5 min
    _schedule(role, endpoint="e")
    harness.clock.advance(900 - expiry.COMPONENT_LEAD_S)
    (first,) = harness.schedule_runs
    assert (first["schedule"], first["outcome"]) == ("peagle-components/ic", "succeeded")
    assert first["at"] == _iso(EXPIRES - 300)
    assert _endpoint_exists("e") and _schedule_exists("e")
    harness.clock.advance(expiry.COMPONENT_LEAD_S)
    second = harness.schedule_runs[1]
    assert (second["schedule"], second["outcome"]) == ("peagle/e", "succeeded")
    assert not _endpoint_exists("e")
    assert not _schedule_exists("ic", expiry.COMPONENT_GROUP) and not _schedule_exists("e")


def test_an_endpoint_whose_component_remains_fails_and_is_retried(harness: Any) -> None:
    _component_endpoint()
    role = _role()
    _schedule(role, endpoint="e")  # no component schedule: the component stays
    harness.clock.advance(900)
    (run,) = harness.schedule_runs
    assert run["outcome"] == "failed"
    assert run["error"].startswith("ValidationException: Cannot delete endpoint")
    assert "inference components (ic)" in run["error"]
    assert _endpoint_exists("e") and _schedule_exists("e")
    _sm().delete_inference_component(InferenceComponentName="ic")
    harness.clock.advance(60)
    assert [r["outcome"] for r in harness.schedule_runs] == ["failed", "succeeded"]
    assert not _endpoint_exists("e")


def test_a_past_time_runs_on_the_next_tick(harness: Any) -> None:
    """[INF] AWS's behaviour for a past at() is undocumented; the sandbox runs it."""
    _endpoint()
    role = _role()
    client = _scheduler()
    client.create_schedule_group(Name=expiry.GROUP)
    req = expiry.schedule_request(
        "my-endpoint", datetime.fromtimestamp(T0 - 3600, UTC), role, "op-1"
    )
    client.create_schedule(**req)  # accepted
    assert harness.run_schedules() == 1
    assert [r["outcome"] for r in harness.schedule_runs] == ["succeeded"]
    assert harness.schedule_runs[0]["at"] == _iso(T0)
    assert not _endpoint_exists()


def test_retries_stop_when_the_policy_is_spent(harness: Any) -> None:
    _endpoint()
    _schedule(f"arn:aws:iam::{ACCOUNT}:role/nobody")
    client = _scheduler()
    req = client.get_schedule(Name="my-endpoint", GroupName=expiry.GROUP)
    target = dict(req["Target"], RetryPolicy={"MaximumEventAgeInSeconds": 86400,
                                              "MaximumRetryAttempts": 2})  # fmt: skip
    client.update_schedule(
        Name="my-endpoint",
        GroupName=expiry.GROUP,
        ScheduleExpression=req["ScheduleExpression"],
        FlexibleTimeWindow=req["FlexibleTimeWindow"],
        ActionAfterCompletion="DELETE",
        Target=target,
    )
    for _ in range(20):
        harness.clock.advance(60)
    runs = harness.schedule_runs
    assert [r["attempt"] for r in runs] == [1, 2, 3]  # the first try and two retries
    assert runs[-1].get("final") is True and "next_attempt_at" not in runs[-1]
    assert _schedule_exists()  # [INF] kept after its last failure
    assert _endpoint_exists()


def test_a_disabled_schedule_does_not_run_and_an_update_moves_the_time(harness: Any) -> None:
    _endpoint()
    role = _role()
    req = _schedule(role)
    client = _scheduler()
    client.update_schedule(**{**req, "State": "DISABLED"})
    harness.clock.advance(900)
    assert harness.schedule_runs == [] and _endpoint_exists()
    later = {**req, "ScheduleExpression": "at(2027-01-15T08:30:00)"}
    client.update_schedule(**later)
    harness.clock.advance(14 * 60)
    assert harness.schedule_runs == []
    harness.clock.advance(60)
    assert [r["at"] for r in harness.schedule_runs] == ["2027-01-15T08:30:00Z"]
    assert not _endpoint_exists()


def test_deleting_an_autoscaled_endpoint_needs_deregister_permission(harness: Any) -> None:
    _endpoint()
    aas = boto3.client("application-autoscaling", region_name=REGION)
    resource = "endpoint/my-endpoint/variant/AllTraffic"
    aas.register_scalable_target(
        ServiceNamespace="sagemaker",
        ResourceId=resource,
        ScalableDimension="sagemaker:variant:DesiredInstanceCount",
        MinCapacity=1,
        MaxCapacity=2,
    )
    policy = expiry.permission_policy(ACCOUNT)
    policy["Statement"] = policy["Statement"][:1]  # no DeregisterScalableTarget
    _schedule(_role(permissions=policy))
    harness.clock.advance(900)
    (run,) = harness.schedule_runs
    assert "application-autoscaling:DeregisterScalableTarget" in run["error"]
    assert _endpoint_exists()
    boto3.client("iam", region_name=REGION).put_role_policy(
        RoleName=expiry.ROLE_NAME,
        PolicyName="p",
        PolicyDocument=json.dumps(expiry.permission_policy(ACCOUNT)),
    )
    harness.clock.advance(60)
    assert harness.schedule_runs[-1]["outcome"] == "succeeded"
    assert not _endpoint_exists()
    assert aas.describe_scalable_targets(ServiceNamespace="sagemaker")["ScalableTargets"] == []


def test_the_admin_route_lists_the_attempts(harness: Any) -> None:
    _endpoint()
    _schedule(f"arn:aws:iam::{ACCOUNT}:role/nobody")
    harness.clock.advance(900)
    runtime = Runtime(harness, ACCOUNT, None, GroundTruth())  # type: ignore[arg-type]
    app = runtime.wrap(lambda environ, start: [])
    status: list[str] = []
    body = b"".join(
        app({"PATH_INFO": "/_peagle/schedules", "REQUEST_METHOD": "GET"},
            lambda s, h: status.append(s))
    )  # fmt: skip
    assert status[0].startswith("200")
    (run,) = json.loads(body)["runs"]
    assert (run["schedule"], run["outcome"], run["at"]) == (
        "peagle/my-endpoint",
        "failed",
        "2027-01-15T08:15:00Z",
    )
    assert "does not exist" in run["error"]


def test_a_component_invocation_in_the_sandbox_counts_for_the_component(harness: Any) -> None:
    """The sandbox's runtime publishes AWS/SageMaker Invocations for a component's
    invocation with {InferenceComponentName} (what `ls --idle` reads per component), and
    none with the endpoint's variant dimensions."""
    _component_endpoint()
    sm = _sm()
    for _ in range(4):  # the component's Creating steps (one per describe)
        sm.describe_inference_component(InferenceComponentName="ic")
    runtime = Runtime(
        harness, ACCOUNT, LogSimulator(harness, ACCOUNT, creating_seconds=0), GroundTruth()
    )
    app = runtime.wrap(lambda environ, start: [])
    raw = json.dumps({"prompt": "hello", "max_tokens": 4}).encode()
    status: list[str] = []
    environ = {
        "PATH_INFO": "/endpoints/e/invocations",
        "REQUEST_METHOD": "POST",
        "CONTENT_LENGTH": str(len(raw)),
        "CONTENT_TYPE": "application/json",
        "HTTP_X_AMZN_SAGEMAKER_INFERENCE_COMPONENT": "ic",
        "wsgi.input": io.BytesIO(raw),
    }
    body = app(environ, lambda s, h: status.append(s))
    b"".join(body)
    getattr(body, "close", lambda: None)()
    assert status[0].startswith("200"), status
    cw = boto3.client("cloudwatch", region_name=REGION)

    def invocations(dims: list[dict[str, str]]) -> float:
        points = cw.get_metric_statistics(
            Namespace="AWS/SageMaker", MetricName="Invocations", Dimensions=dims,
            StartTime=datetime.fromtimestamp(T0 - 60, UTC),
            EndTime=datetime.fromtimestamp(T0 + 120, UTC), Period=60, Statistics=["Sum"],
        )["Datapoints"]  # fmt: skip
        return sum(p["Sum"] for p in points)

    assert invocations([{"Name": "InferenceComponentName", "Value": "ic"}]) == 1.0
    variant = [
        {"Name": "EndpointName", "Value": "e"},
        {"Name": "VariantName", "Value": "AllTraffic"},
    ]
    assert invocations(variant) == 0.0
