"""`update --rollout` against the moto harness (issue 38): the exact UpdateEndpoint and
PutMetricAlarm requests, refusals before any change, a rollback named from the alarm
history, the idle-bake check, an interrupt, and what is left (nothing of the rollout).

Every wait runs on a frozen sandbox clock that each poll's sleep moves by STEP seconds;
nothing sleeps. Expected values come from AWS's rules (botocore 1.44.8's model and the
deployment-guardrails guides), written out here, not from peagle's planning code."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import boto3
import botocore.session
import pytest
from botocore.validate import ParamValidator

import sm_peagle
from peagle_sandbox.sandbox_clock import SandboxClock
from sm_peagle.errors import InterruptedAfterChange
from sm_peagle.planning.steps.aws_shapes import validate_request
from tests.integration.lifecycle_env import REGION, World, build_world, record_requests, run
from tests.plan_helpers import TWO_COMPONENTS

NAME = "peagle-gpt-oss-20b-p-eagle"
ERRORS = f"{NAME}-rollout-errors"
T0 = 1_800_000_000  # 2027-01-15 08:00:00 UTC, a minute boundary
STEP = 20.0  # sandbox seconds each poll's sleep moves the clock
MUTATING = ("Create", "Update", "Delete", "AddTags", "Register", "Put", "Deregister", "Set")


@pytest.fixture
def rw(sagemaker_harness: Any, monkeypatch: pytest.MonkeyPatch) -> World:
    """A world whose SageMaker and CloudWatch requests are recorded, on a frozen clock that
    each poll of the lifecycle moves by STEP seconds."""
    from sm_peagle.lifecycle.manager import Lifecycle

    clock = sagemaker_harness.clock = SandboxClock(frozen=True, start=T0)
    monkeypatch.setenv("PEAGLE_POLL_SECONDS", "0.01")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    w = build_world()
    monkeypatch.setenv("PEAGLE_ROLE_ARN", w.role_arn)
    record_requests(w, monkeypatch, "sagemaker", "cloudwatch")
    init = Lifecycle.__init__

    def patched(self: Any, *a: Any, **kw: Any) -> None:
        init(self, *a, **kw)
        self.sleep = lambda _s: clock.advance(STEP)

    monkeypatch.setattr(Lifecycle, "__init__", patched)
    return w


def deploy(rw: World, capsys: Any, count: int = 2) -> str:
    """Deploy gpt-oss-20b on `count` instances; the config it runs."""
    code, _, err = run(capsys, "deploy", "gpt-oss-20b", "--instance-count", str(count), "--yes")
    assert code == 0, err
    rw.requests.clear()
    return str(boto3.client("sagemaker").describe_endpoint(EndpointName=NAME)["EndpointConfigName"])


def traffic(harness: Any) -> None:
    """While a rollout runs, one invocation per clock move on the new fleet, recorded by
    the harness as SageMaker publishes it (AWS/SageMaker Invocations, ModelLatency, 5xx,
    with and without the fleet's EndpointConfigName dimension)."""

    def tick() -> None:
        state = harness.rollout_of(NAME)
        if state is None or state.share <= 0:
            return
        harness.record_invocation(
            REGION, NAME, "AllTraffic", state.new_config, latency_us=300_000, status_code=200
        )

    harness.clock.on_advance(tick)


def trip_in_canary_bake(harness: Any, alarm: str) -> None:
    """Set `alarm` to ALARM once the canary (step 1) bakes: what a tripped alarm does."""
    cw = boto3.client("cloudwatch")
    done: list[bool] = []

    def tick() -> None:
        state = harness.rollout_of(NAME)
        if done or state is None or state.phase != "baking" or state.step != 1:
            return
        done.append(True)
        cw.set_alarm_state(
            AlarmName=alarm, StateValue="ALARM", StateReason="Threshold Crossed: test datapoint"
        )

    harness.clock.on_advance(tick)


def mutating(rw: World) -> list[str]:
    return [op for op, _ in rw.requests if op.startswith(MUTATING)]


def alarms_left() -> list[str]:
    found = boto3.client("cloudwatch").describe_alarms(AlarmNamePrefix=f"{NAME}-rollout")
    return [a["AlarmName"] for a in found["MetricAlarms"]]


def inventory() -> tuple[list[str], list[str]]:
    sm = boto3.client("sagemaker")
    return (
        sorted(c["EndpointConfigName"] for c in sm.list_endpoint_configs()["EndpointConfigs"]),
        sorted(m["ModelName"] for m in sm.list_models()["Models"]),
    )


def botocore_valid(operation: str, params: dict[str, Any]) -> None:
    service = "sagemaker" if operation.startswith("Update") else "cloudwatch"
    model = botocore.session.get_session().get_service_model(service)
    report = ParamValidator().validate(params, model.operation_model(operation).input_shape)
    assert not report.has_errors(), report.generate_report()
    assert validate_request(service, operation, params) == []


# The errors alarm AWS's guide describes for the new fleet (Invocation5XXErrors, Average,
# the EndpointConfigName dimension, TreatMissingData notBreaching), with the default 5%
# and a 5-minute bake: 5 periods of 60 s, 3 of them breaching.
def errors_alarm(new_config: str) -> dict[str, Any]:
    return {
        "AlarmName": ERRORS,
        "ActionsEnabled": False,
        "Namespace": "AWS/SageMaker",
        "MetricName": "Invocation5XXErrors",
        "Dimensions": [
            {"Name": "EndpointName", "Value": NAME},
            {"Name": "VariantName", "Value": "AllTraffic"},
            {"Name": "EndpointConfigName", "Value": new_config},
        ],
        "Statistic": "Average",
        "Period": 60,
        "EvaluationPeriods": 5,
        "DatapointsToAlarm": 3,
        "Threshold": 0.05,
        "ComparisonOperator": "GreaterThanThreshold",
        "TreatMissingData": "notBreaching",
    }


def test_update_without_rollout_sends_todays_plain_request(rw, capsys):
    old = deploy(rw, capsys)
    code, _, err = run(capsys, "update", NAME, "-k", "5", "--yes")
    assert code == 0, err
    (sent,) = rw.sent("UpdateEndpoint")
    assert set(sent) == {"EndpointName", "EndpointConfigName"}  # no DeploymentConfig
    assert sent["EndpointName"] == NAME and sent["EndpointConfigName"] != old
    assert not rw.sent("PutMetricAlarm") and alarms_left() == []


def test_canary_sends_its_deployment_config_and_alarm_and_leaves_only_the_new_set(
    rw, capsys, sagemaker_harness
):
    old = deploy(rw, capsys)
    traffic(sagemaker_harness)
    code, out, err = run(
        capsys, "update", NAME, "-k", "5", "--rollout", "canary", "--bake", "5m", "--yes",
        "--json",
    )  # fmt: skip
    assert code == 0, err
    (sent,) = rw.sent("UpdateEndpoint")
    new = sent["EndpointConfigName"]
    assert sent["EndpointName"] == NAME and new != old
    # Canary of 1 of 2 instances (<= 50%, AWS's rule), a 300 s bake, a 300 s final bake
    # (the default: the bake), and no autoscaling: no RetainAllVariantProperties.
    dc = sent["DeploymentConfig"]
    assert set(sent) == {"EndpointName", "EndpointConfigName", "DeploymentConfig"}
    assert dc["BlueGreenUpdatePolicy"]["TrafficRoutingConfiguration"] == {
        "Type": "CANARY",
        "WaitIntervalInSeconds": 300,
        "CanarySize": {"Type": "INSTANCE_COUNT", "Value": 1},
    }
    assert dc["BlueGreenUpdatePolicy"]["TerminationWaitInSeconds"] == 300
    timeout = dc["BlueGreenUpdatePolicy"]["MaximumExecutionTimeoutInSeconds"]
    assert 600 <= timeout <= 28800 and timeout > 300 + 300  # longer than every wait
    assert dc["AutoRollbackConfiguration"] == {"Alarms": [{"AlarmName": ERRORS}]}
    botocore_valid("UpdateEndpoint", sent)
    (put,) = rw.sent("PutMetricAlarm")
    tags = {t["Key"]: t["Value"] for t in put.pop("Tags")}
    put.pop("AlarmDescription")
    assert put == errors_alarm(new)
    assert tags["peagle:managed"] == "true" and tags["peagle:deployment"] == NAME
    assert tags["peagle:rollout"] == new
    # The alarm exists before the update it guards.
    ops = [op for op, _ in rw.requests]
    assert ops.index("PutMetricAlarm") < ops.index("UpdateEndpoint")
    doc = json.loads(out)
    assert doc["rollout"]["outcome"] == "completed"
    assert doc["rollout"]["unverified_bakes"] == []
    assert doc["rollout"]["phases"] == ["canary bake", "final bake"]
    assert "canary: 1 of 2 instances on" in err and "(50%)" in err
    # The signals left out are said: no monitoring, no live latency to set a threshold from.
    assert "rollout note: no speculation rollback alarm: the endpoint has no speculation" in err
    assert "rollout note: no latency rollback alarm: no ModelLatency on the live" in err
    configs, models = inventory()
    assert configs == [new] and len(models) == 1  # the old config and model are gone
    assert alarms_left() == []


def test_linear_and_rolling_send_their_policies(rw, capsys, sagemaker_harness):
    deploy(rw, capsys, count=4)
    traffic(sagemaker_harness)
    code, _, err = run(capsys, "update", NAME, "-k", "5", "--rollout", "linear:25%",
                       "--bake", "5m", "--yes")  # fmt: skip
    assert code == 0, err
    sent = rw.sent("UpdateEndpoint")[-1]
    bg = sent["DeploymentConfig"]["BlueGreenUpdatePolicy"]
    # LinearStepSize 10-50% of the fleet: 25% of 4 is one instance per step.
    assert bg["TrafficRoutingConfiguration"] == {
        "Type": "LINEAR",
        "WaitIntervalInSeconds": 300,
        "LinearStepSize": {"Type": "CAPACITY_PERCENT", "Value": 25},
    }
    assert bg["TerminationWaitInSeconds"] == 300
    botocore_valid("UpdateEndpoint", sent)
    assert "step 1 of 3: 1 of 4 instances" in err
    code, _, err = run(capsys, "update", NAME, "-k", "6", "--rollout", "rolling:2",
                       "--bake", "5m", "--yes")  # fmt: skip
    assert code == 0, err
    sent = rw.sent("UpdateEndpoint")[-1]
    policy = sent["DeploymentConfig"]["RollingUpdatePolicy"]
    assert "BlueGreenUpdatePolicy" not in sent["DeploymentConfig"]  # one policy only
    assert policy["MaximumBatchSize"] == {"Type": "INSTANCE_COUNT", "Value": 2}
    assert policy["WaitIntervalInSeconds"] == 300
    assert "RollbackMaximumBatchSize" not in policy  # AWS's default: all at once
    botocore_valid("UpdateEndpoint", sent)
    assert alarms_left() == []


def test_a_canary_whose_alarm_trips_rolls_back_exit_1_naming_it(rw, capsys, sagemaker_harness):
    old = deploy(rw, capsys)
    before = inventory()
    trip_in_canary_bake(sagemaker_harness, ERRORS)
    code, _, err = run(capsys, "update", NAME, "-k", "5", "--rollout", "canary", "--bake",
                       "5m", "--yes")  # fmt: skip
    assert code == 1
    last = err.strip().splitlines()[-1]
    assert last.startswith(
        f"error: update of {NAME} rolled back by SageMaker during the canary bake: alarm "
        f"{ERRORS} (Threshold Crossed: test datapoint); still serving {old}"
    )
    desc = boto3.client("sagemaker").describe_endpoint(EndpointName=NAME)
    assert desc["EndpointConfigName"] == old and desc["EndpointStatus"] == "InService"
    assert inventory() == before  # the new config and model are gone
    assert alarms_left() == []


def test_the_sdk_raises_rollout_rolled_back_with_the_alarm(rw, capsys, sagemaker_harness):
    old = deploy(rw, capsys)
    trip_in_canary_bake(sagemaker_harness, ERRORS)
    with pytest.raises(sm_peagle.RolloutRolledBack) as e:
        sm_peagle.Client(region=REGION).update(NAME, k=5, rollout="canary", bake="5m")
    assert isinstance(e.value, sm_peagle.DeploymentFailed)
    assert e.value.alarm == ERRORS
    assert e.value.alarm_reason == "Threshold Crossed: test datapoint"
    assert e.value.phase == "canary bake" and e.value.still_serving == old
    assert e.value.exit_code == 1
    assert alarms_left() == []


def test_an_idle_bake_is_unverified_exit_1_and_the_new_config_serves(rw, capsys):
    deploy(rw, capsys)
    code, _, err = run(capsys, "update", NAME, "-k", "5", "--rollout", "canary", "--bake",
                       "5m", "--yes")  # fmt: skip
    assert code == 1
    new = rw.sent("UpdateEndpoint")[0]["EndpointConfigName"]
    assert (
        err.strip()
        .splitlines()[-1]
        .startswith(
            f"error: rollout of {NAME} completed but not verified: bakes 1, 2 of 2 saw no "
            f"invocations on the new fleet; {NAME} serves {new}"
        )
    )
    assert "warning: bake 1 of 2 saw no invocations on the new fleet: not verified" in err
    desc = boto3.client("sagemaker").describe_endpoint(EndpointName=NAME)
    assert desc["EndpointConfigName"] == new
    assert inventory()[0] == [new] and alarms_left() == []  # switched over all the same


def test_an_idle_bake_with_require_traffic_false_is_a_warning(rw, capsys, tmp_path):
    deploy(rw, capsys)
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "model: gpt-oss-20b\n"
        "speculative: {num_speculative_tokens: 5}\n"
        "endpoint:\n"
        "  instance_count: 2\n"
        "  rollout: {strategy: canary, bake: 300, require_traffic: false}\n"
    )
    code, out, err = run(capsys, "apply", "-f", str(spec), "--yes", "--json")
    assert code == 0, err
    assert "warning: bake 1 of 2 saw no invocations on the new fleet: not verified" in err
    assert alarms_left() == []


def test_a_one_instance_canary_is_exit_2_naming_all_at_once_before_any_change(rw, capsys):
    deploy(rw, capsys, count=1)
    code, _, err = run(capsys, "update", NAME, "-k", "5", "--rollout", "canary", "--yes")
    assert code == 2
    last = err.strip().splitlines()[-1]
    assert "a canary needs at least 2 instances" in last and "--rollout all-at-once" in last
    assert mutating(rw) == []  # reads only: nothing created, nothing sent to change


def test_a_canary_on_a_component_is_exit_2_naming_rolling_before_any_change(rw, capsys):
    code, _, err = run(capsys, "deploy", *TWO_COMPONENTS, "--yes")
    assert code == 0, err
    rw.requests.clear()
    code, _, err = run(capsys, "update", NAME, "--component", "p-eagle", "-k", "5",
                       "--rollout", "canary", "--yes")  # fmt: skip
    assert code == 2, err
    last = err.strip().splitlines()[-1]
    assert "inference components do not take" in last
    assert "--rollout rolling" in last or "--rollout all-at-once" in last
    assert mutating(rw) == []


def test_an_interrupt_during_the_canary_bake_lets_it_commit_then_cleans_up(
    rw, capsys, sagemaker_harness
):
    old = deploy(rw, capsys)
    traffic(sagemaker_harness)

    def stop(state: Any) -> None:
        now = sagemaker_harness.rollout_of(NAME)
        if now is not None and now.phase == "baking":
            raise KeyboardInterrupt

    with pytest.raises(InterruptedAfterChange):
        sm_peagle.Client(region=REGION, on_poll=stop).update(NAME, k=5, rollout="canary", bake="5m")
    desc = boto3.client("sagemaker").describe_endpoint(EndpointName=NAME)
    assert desc["EndpointConfigName"] != old
    assert inventory()[0] == [desc["EndpointConfigName"]]
    assert alarms_left() == []


def test_status_shows_a_rollout_in_progress(rw, capsys, sagemaker_harness):
    deploy(rw, capsys)
    traffic(sagemaker_harness)
    seen: list[Any] = []

    def look(state: Any) -> None:
        now = sagemaker_harness.rollout_of(NAME)
        if seen or now is None or now.phase != "baking" or now.step != 1:
            return
        sagemaker_harness.clock.advance(60)  # a minute into the canary's 300 s bake
        seen.append(sm_peagle.Client(region=REGION).status(NAME))
        seen.append(run(capsys, "status", NAME, "--json"))
        seen.append(run(capsys, "status", NAME))

    sm_peagle.Client(region=REGION, on_poll=look).update(NAME, k=5, rollout="canary", bake="5m")
    st, (code, out, _), (_, text, _) = seen
    r = st.rollout
    assert code == 0 and json.loads(out)["rollout"] == r
    assert r["strategy"] == "canary" and r["phase"] == "baking"
    assert r["new_share"] == 0.5  # 1 of 2 instances
    assert 0 < r["bake_left_s"] <= 300 - 60
    assert r["alarms"] == [{"name": ERRORS, "state": r["alarms"][0]["state"]}]
    assert sagemaker_harness.rollout_of(NAME) is None  # settled since
    assert "canary baking, 50% on" in text


def test_a_component_rolls_with_update_inference_components_rolling_policy(rw, capsys):
    code, _, err = run(capsys, "deploy", *TWO_COMPONENTS, "--yes")
    assert code == 0, err
    code, _, err = run(capsys, "update", NAME, "--component", "p-eagle", "--copies", "2", "--yes")
    assert code == 0, err
    rw.requests.clear()
    code, _, err = run(capsys, "update", NAME, "--component", "p-eagle", "-k", "5",
                       "--rollout", "rolling:1", "--bake", "5m", "--yes")  # fmt: skip
    assert code == 0, err
    (sent,) = rw.sent("UpdateInferenceComponent")
    # UpdateInferenceComponent's only policy: 1 copy of 2 per batch (5-50% of the copies).
    # A component's metrics carry InferenceComponentName, not a config: no peagle alarm,
    # and with no user alarm no AutoRollbackConfiguration (1..10 alarms when present).
    assert sent["DeploymentConfig"] == {
        "RollingUpdatePolicy": {
            "MaximumBatchSize": {"Type": "COPY_COUNT", "Value": 1},
            "WaitIntervalInSeconds": 300,
            "MaximumExecutionTimeoutInSeconds": sent["DeploymentConfig"]["RollingUpdatePolicy"][
                "MaximumExecutionTimeoutInSeconds"
            ],
        }
    }
    assert (
        600
        <= sent["DeploymentConfig"]["RollingUpdatePolicy"]["MaximumExecutionTimeoutInSeconds"]
        <= 28800
    )
    botocore_valid("UpdateInferenceComponent", sent)
    assert not rw.sent("UpdateEndpoint") and not rw.sent("PutMetricAlarm")


def seed_live(harness: Any, acceptance: float) -> None:
    """The live fleet's last half hour: one SpecDecoding datapoint a minute in peagle's
    metric (what the monitoring's filters write), before the update."""
    cw = boto3.client("cloudwatch")
    now = harness.clock.now()
    for i in range(30):
        cw.put_metric_data(
            Namespace="Peagle/SpeculativeDecoding",
            MetricData=[
                {
                    "MetricName": "AcceptanceLength",
                    "Dimensions": [{"Name": "EndpointName", "Value": NAME}],
                    "Timestamp": datetime.fromtimestamp(now - 60 * i - 30, UTC),
                    "Value": acceptance,
                }
            ],
        )


def test_a_monitored_canary_watches_speculation_latency_and_errors(
    rw, capsys, sagemaker_harness, tmp_path
):
    code, _, err = run(capsys, "deploy", "gpt-oss-20b", "--instance-count", "2", "--monitor",
                       "--yes")  # fmt: skip
    assert code == 0, err
    seed_live(sagemaker_harness, 2.4)
    traffic(sagemaker_harness)
    rw.requests.clear()
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "model: gpt-oss-20b\n"
        "speculative: {num_speculative_tokens: 5}\n"
        "monitoring: {enabled: true}\n"
        "endpoint:\n"
        "  instance_count: 2\n"
        "  rollout: {strategy: canary, bake: 300, latency_ms: 800}\n"
    )
    code, _, err = run(capsys, "apply", "-f", str(spec), "--yes")
    assert code == 0, err
    new = rw.sent("UpdateEndpoint")[0]["EndpointConfigName"]
    puts = {p["AlarmName"]: p for p in rw.sent("PutMetricAlarm") if "-rollout-" in p["AlarmName"]}
    for p in puts.values():
        p.pop("Tags"), p.pop("AlarmDescription")
        botocore_valid("PutMetricAlarm", p)
    # Speculation: both fleets write one log group, so the alarm sees the mean of their
    # lines. The new fleet fails below the higher of K=5's monitoring threshold
    # 1 + 0.05 x (1 + 5) = 1.3 and half the live fleet's gain, 1 + 0.5 x (2.4 - 1) = 1.7
    # (the gain capped at 1 + K = 6, not reached): 1.7. With the canary's share s = 1/2 and
    # the live fleet's 2.4: s x 1.7 + (1 - s) x 2.4 = 2.05.
    assert puts[f"{NAME}-rollout-speculation"] == {
        "AlarmName": f"{NAME}-rollout-speculation",
        "ActionsEnabled": False,
        "Namespace": "Peagle/SpeculativeDecoding",
        "MetricName": "AcceptanceLength",
        "Dimensions": [{"Name": "EndpointName", "Value": NAME}],
        "Statistic": "Average",
        "Period": 60,
        "EvaluationPeriods": 5,
        "DatapointsToAlarm": 3,
        "Threshold": 2.05,
        "ComparisonOperator": "LessThanThreshold",
        "TreatMissingData": "missing",  # an idle bake is INSUFFICIENT_DATA, never ALARM
    }
    # Latency: the new fleet's p90 ModelLatency (microseconds) over 800 ms.
    latency = dict(
        errors_alarm(new),
        AlarmName=f"{NAME}-rollout-latency",
        MetricName="ModelLatency",
        Threshold=800000,
        ExtendedStatistic="p90",
    )
    latency.pop("Statistic")
    assert puts[f"{NAME}-rollout-latency"] == latency
    assert puts[ERRORS] == errors_alarm(new)
    (sent,) = rw.sent("UpdateEndpoint")
    assert sent["DeploymentConfig"]["AutoRollbackConfiguration"]["Alarms"] == [
        {"AlarmName": f"{NAME}-rollout-speculation"},
        {"AlarmName": f"{NAME}-rollout-latency"},
        {"AlarmName": ERRORS},
    ]
    assert alarms_left() == []


def test_all_at_once_and_an_autoscaled_endpoint_keep_their_fleet(rw, capsys, sagemaker_harness):
    code, _, err = run(capsys, "deploy", "gpt-oss-20b", "--instance-count", "2",
                       "--autoscale", "2:4", "--yes")  # fmt: skip
    assert code == 0, err
    traffic(sagemaker_harness)
    rw.requests.clear()
    code, _, err = run(capsys, "update", NAME, "-k", "5", "--rollout", "all-at-once",
                       "--bake", "5m", "--yes")  # fmt: skip
    assert code == 0, err
    (sent,) = rw.sent("UpdateEndpoint")
    # All at once: no wait between shifts, the final bake is the bake; an autoscaled
    # endpoint keeps its scaled instance count (RetainAllVariantProperties).
    assert sent["DeploymentConfig"]["BlueGreenUpdatePolicy"]["TrafficRoutingConfiguration"] == {
        "Type": "ALL_AT_ONCE",
        "WaitIntervalInSeconds": 0,
    }
    assert sent["DeploymentConfig"]["BlueGreenUpdatePolicy"]["TerminationWaitInSeconds"] == 300
    assert sent["RetainAllVariantProperties"] is True
    assert "RetainDeploymentConfig" not in sent
    botocore_valid("UpdateEndpoint", sent)


def interrupt_twice(rw: World, capsys: Any, harness: Any, monkeypatch: Any) -> str:
    """An update with a canary, Ctrl-C in its bake and again while it settles: the
    rollout's errors alarm is left behind (and named). The config served before."""
    from sm_peagle.errors import Interrupted
    from sm_peagle.lifecycle.manager import Lifecycle

    old = deploy(rw, capsys)
    armed: list[bool] = []
    init = Lifecycle.__init__

    def patched(self: Any, *a: Any, **kw: Any) -> None:
        init(self, *a, **kw)
        advance = self.sleep

        def sleep(s: float) -> None:
            if armed:  # the second Ctrl-C: while the update settles after the first
                armed.clear()
                raise KeyboardInterrupt
            advance(s)

        self.sleep = sleep

    monkeypatch.setattr(Lifecycle, "__init__", patched)

    def stop(state: Any) -> None:
        now = harness.rollout_of(NAME)
        if now is not None and now.phase == "baking" and not armed:
            armed.append(True)
            raise KeyboardInterrupt

    with pytest.raises(Interrupted) as e:
        sm_peagle.Client(region=REGION, on_poll=stop).update(NAME, k=5, rollout="canary", bake="5m")
    assert ("rollout_alarm", ERRORS) in e.value.left
    assert "rollout alarm " + ERRORS in str(e.value)
    assert alarms_left() == [ERRORS]
    return old


def test_a_second_interrupt_names_the_rollout_alarm_and_update_finishes_it(
    rw, capsys, sagemaker_harness, monkeypatch
):
    old = interrupt_twice(rw, capsys, sagemaker_harness, monkeypatch)
    # The command it names finishes the update, the rollout's alarm included.
    code, _, err = run(capsys, "update", NAME, "--yes")
    assert code == 0, err
    assert f"removed rollout alarm {ERRORS}" in err
    assert alarms_left() == []
    desc = boto3.client("sagemaker").describe_endpoint(EndpointName=NAME)
    assert desc["EndpointConfigName"] != old
    assert inventory()[0] == [desc["EndpointConfigName"]]


def test_the_latency_threshold_defaults_to_twice_the_live_p90(rw, capsys, sagemaker_harness):
    old = deploy(rw, capsys)
    now = sagemaker_harness.clock.now()
    # The live fleet's last half hour: 10 invocations a minute, 600..1500 ms; the p90 of
    # those 300 (nearest rank) is 1400 ms, so the threshold is 2 x 1400 = 2800 ms.
    for minute in range(30):
        for i in range(10):
            sagemaker_harness.record_invocation(
                REGION, NAME, "AllTraffic", old, latency_us=(600 + 100 * i) * 1000,
                status_code=200, at=now - 60 * minute - 30,
            )  # fmt: skip
    traffic(sagemaker_harness)
    rw.requests.clear()
    code, _, err = run(capsys, "update", NAME, "-k", "5", "--rollout", "canary", "--bake",
                       "5m", "--yes")  # fmt: skip
    assert code == 0, err
    (latency,) = [p for p in rw.sent("PutMetricAlarm") if p["AlarmName"].endswith("-latency")]
    assert latency["Threshold"] == 2_800_000 and latency["ExtendedStatistic"] == "p90"
    (read,) = [p for op, p in rw.requests if op == "GetMetricStatistics"
               and p["MetricName"] == "ModelLatency"]  # fmt: skip
    assert read["Dimensions"] == [
        {"Name": "EndpointName", "Value": NAME},
        {"Name": "VariantName", "Value": "AllTraffic"},
    ]
    assert read["ExtendedStatistics"] == ["p90"]


def test_apply_rolls_a_component_endpoint_by_its_spec_and_refuses_a_canary(rw, capsys):
    code, _, err = run(capsys, "deploy", *TWO_COMPONENTS, "--yes")
    assert code == 0, err
    code, _, err = run(capsys, "update", NAME, "--component", "p-eagle", "--copies", "2", "--yes")
    assert code == 0, err
    doc = (
        sm_peagle.Client(region=REGION)
        .endpoint(NAME)
        .spec()
        .model_dump(mode="json", exclude_unset=True)
    )
    for c in doc["inference_components"]["components"]:
        if c["name"] == "p-eagle":
            c["k"] = 5
    rw.requests.clear()
    doc["endpoint"]["rollout"] = {"strategy": "canary", "bake": 300}
    with pytest.raises(sm_peagle.SpecError) as e:
        sm_peagle.Client(region=REGION).apply(doc)
    assert e.value.exit_code == 2 and "rolling" in str(e.value.remedy)
    assert mutating(rw) == []
    doc["endpoint"]["rollout"] = {"strategy": "rolling", "size": 1, "bake": 300}
    sm_peagle.Client(region=REGION).apply(doc)
    (sent,) = rw.sent("UpdateInferenceComponent")
    assert sent["DeploymentConfig"]["RollingUpdatePolicy"]["MaximumBatchSize"] == {
        "Type": "COPY_COUNT",
        "Value": 1,
    }
    botocore_valid("UpdateInferenceComponent", sent)


def speculation_lines(harness: Any, new_fleet: float, old_fleet: float = 2.4) -> None:
    """While the canary bakes, each clock move writes one SpecDecoding datapoint per fleet
    into peagle's metric (both fleets' lines land in one log group, so one metric): the
    old fleet's `old_fleet`, the new fleet's `new_fleet`."""
    cw = boto3.client("cloudwatch")

    def tick() -> None:
        state = harness.rollout_of(NAME)
        if state is None or state.phase not in ("baking", "final-bake"):
            return
        at = datetime.fromtimestamp(harness.clock.now(), UTC)
        data = [
            {
                "MetricName": "AcceptanceLength",
                "Dimensions": [{"Name": "EndpointName", "Value": NAME}],
                "Timestamp": at,
                "Value": value,
            }
            for value in ((old_fleet, new_fleet) if state.share < 1 else (new_fleet,))
        ]
        cw.put_metric_data(Namespace="Peagle/SpeculativeDecoding", MetricData=data)

    harness.clock.on_advance(tick)


@pytest.mark.parametrize(
    ("new_fleet", "rolled_back"),
    [
        # A collapsed new fleet (nothing accepted: 1.0) next to the old one's 2.4 averages
        # 1.7 while the canary holds half the instances: under the mixed threshold
        # 0.5 x 1.7 + 0.5 x 2.4 = 2.05 (1.7: half the live gain; see the test above).
        (1.0, True),
        # A healthy one (2.3) averages 2.35: over it, and over K=5's 1.3 after the shift.
        (2.3, False),
    ],
)
def test_the_speculation_alarm_sees_the_new_fleet_through_the_mix(
    rw, capsys, sagemaker_harness, new_fleet, rolled_back
):
    code, _, err = run(capsys, "deploy", "gpt-oss-20b", "--instance-count", "2", "--monitor",
                       "--yes")  # fmt: skip
    assert code == 0, err
    old = boto3.client("sagemaker").describe_endpoint(EndpointName=NAME)["EndpointConfigName"]
    seed_live(sagemaker_harness, 2.4)
    traffic(sagemaker_harness)
    speculation_lines(sagemaker_harness, new_fleet)
    code, _, err = run(capsys, "update", NAME, "-k", "5", "--rollout", "canary", "--bake",
                       "5m", "--yes")  # fmt: skip
    serving = boto3.client("sagemaker").describe_endpoint(EndpointName=NAME)
    if rolled_back:
        assert code == 1
        assert (
            f"rolled back by SageMaker during the canary bake: alarm {NAME}-rollout-speculation"
            in err.strip().splitlines()[-1]
        )
        assert serving["EndpointConfigName"] == old
    else:
        assert code == 0, err
        assert serving["EndpointConfigName"] != old
    assert alarms_left() == []


def test_a_rollback_without_a_tripped_alarm_says_so_and_the_json_error_names_none(
    rw, capsys, sagemaker_harness, tmp_path
):
    old = deploy(rw, capsys)
    traffic(sagemaker_harness)
    # The new fleet takes 200 s to come up; 200 + 300 + 300 s of bakes outlast the
    # rollout's MaximumExecutionTimeoutInSeconds of 700 s: SageMaker rolls back then.
    sagemaker_harness.provisioning_seconds = 200.0
    sagemaker_harness.rollback_failure_reason = "deployment exceeded its execution timeout"
    sagemaker_harness.rollback_seconds = 60.0  # traffic returns to the old fleet meanwhile
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "model: gpt-oss-20b\n"
        "speculative: {num_speculative_tokens: 5}\n"
        "endpoint:\n"
        "  instance_count: 2\n"
        "  rollout: {strategy: canary, bake: 300, timeout: 700}\n"
    )
    code, out, err = run(capsys, "apply", "-f", str(spec), "--yes", "--json")
    assert code == 1
    # One line per phase, in order, then the rollback.
    lines = err.splitlines()
    said = [
        next(i for i, line in enumerate(lines) if line.startswith(prefix))
        for prefix in ("provisioning the new fleet", "canary: 1 of 2", "final bake: 2 of 2",
                       "rolling back to the old fleet", "rolled back")
    ]  # fmt: skip
    assert said == sorted(said)
    (sent,) = rw.sent("UpdateEndpoint")
    assert (
        sent["DeploymentConfig"]["BlueGreenUpdatePolicy"]["MaximumExecutionTimeoutInSeconds"] == 700
    )
    error = json.loads(out)["error"]
    assert error["type"] == "RolloutRolledBack" and error["alarm"] is None
    assert error["still_serving"] == old
    assert error["message"] == (
        f"update of {NAME} rolled back by SageMaker during the final bake: no rollback alarm "
        "went to ALARM (the execution timeout, or SageMaker's own reason: deployment "
        f"exceeded its execution timeout); still serving {old}"
    )
    assert inventory()[0] == [old] and alarms_left() == []
