"""planning/rollout.py: the DeploymentConfig each strategy sends, the rules that refuse a
strategy an endpoint cannot take, and the speculation threshold for the mixed fleets.

Every expected value is written out here from AWS's rules (botocore 1.44.8's model and the
deployment-guardrails guides), never read back from the code under test:
- TrafficRoutingConfig: Type ALL_AT_ONCE | CANARY | LINEAR, WaitIntervalInSeconds 0..3600;
  CanarySize "<= 50% of the variant's total instance count"; LinearStepSize "10-50%";
  RollingUpdatePolicy.MaximumBatchSize "between 5% to 50%"; a step is at least one instance.
- TerminationWaitInSeconds = the final bake; MaximumExecutionTimeoutInSeconds 600..28800,
  "larger than the total waiting time".
- AutoRollbackConfiguration.Alarms: 1..10.
- UpdateInferenceComponent takes a RollingUpdatePolicy only (COPY_COUNT | CAPACITY_PERCENT).
"""

from __future__ import annotations

import pytest

from sm_peagle.errors import SpecError
from sm_peagle.planning.rollout import canary_threshold, mixed_threshold, plan_rollout
from sm_peagle.planning.spec.rollout_spec import RolloutSpec
from sm_peagle.planning.steps.aws_shapes import validate_request

EP, NEW, VARIANT = "ep", "ep-c2", "AllTraffic"
# The provisioning allowance the tests pass: the default timeout is it plus every bake
# (each batch provisions on a rolling update).
PROV = 900


def _plan(spec: RolloutSpec, fleet: int, **kw):
    kw.setdefault("provisioning_s", PROV)
    return plan_rollout(spec, endpoint=EP, new_config=NEW, variant=VARIANT, fleet=fleet, **kw)


def _errors_only(spec: RolloutSpec, fleet: int, **kw):
    """A plan whose only rollback alarm is the 5xx one: no K (baseline), so no speculation
    alarm; no live latency, so no latency alarm (both left out with a note)."""
    return _plan(spec, fleet, **kw)


ERRORS_ALARM = {"AlarmName": "ep-rollout-errors"}


def _update_endpoint_errors(config: dict) -> list[str]:
    return validate_request(
        "sagemaker",
        "UpdateEndpoint",
        {"EndpointName": EP, "EndpointConfigName": NEW, "DeploymentConfig": config},
    )


# --- each strategy's DeploymentConfig, written out -------------------------------------


def test_all_at_once_is_blue_green_with_a_final_bake() -> None:
    p = _errors_only(RolloutSpec(strategy="all-at-once", bake=600), fleet=4)
    assert p.deployment_config == {
        "BlueGreenUpdatePolicy": {
            "TrafficRoutingConfiguration": {"Type": "ALL_AT_ONCE", "WaitIntervalInSeconds": 0},
            "TerminationWaitInSeconds": 600,
            # provisioning 900 + the final bake 600
            "MaximumExecutionTimeoutInSeconds": 1500,
        },
        "AutoRollbackConfiguration": {"Alarms": [ERRORS_ALARM]},
    }
    assert [(s.share, s.bake_s, s.final) for s in p.steps] == [(1.0, 600, True)]
    assert _update_endpoint_errors(p.deployment_config) == []


def test_canary_of_one_instance_in_four() -> None:
    p = _errors_only(RolloutSpec(strategy="canary"), fleet=4)
    assert p.deployment_config == {
        "BlueGreenUpdatePolicy": {
            "TrafficRoutingConfiguration": {
                "Type": "CANARY",
                "WaitIntervalInSeconds": 600,
                "CanarySize": {"Type": "INSTANCE_COUNT", "Value": 1},
            },
            "TerminationWaitInSeconds": 600,
            # provisioning 900 + canary bake 600 + final bake 600
            "MaximumExecutionTimeoutInSeconds": 2100,
        },
        "AutoRollbackConfiguration": {"Alarms": [ERRORS_ALARM]},
    }
    # 1 of 4 instances takes its share, bakes; then everything, and the final bake
    assert [(s.share, s.bake_s, s.final) for s in p.steps] == [(0.25, 600, False), (1.0, 600, True)]
    assert _update_endpoint_errors(p.deployment_config) == []


def test_canary_percentage_stays_a_percentage_and_final_bake_is_its_own() -> None:
    p = _errors_only(RolloutSpec(strategy="canary", size="50%", bake=300, final_bake=900), fleet=2)
    policy = p.deployment_config["BlueGreenUpdatePolicy"]
    assert policy["TrafficRoutingConfiguration"] == {
        "Type": "CANARY",
        "WaitIntervalInSeconds": 300,
        "CanarySize": {"Type": "CAPACITY_PERCENT", "Value": 50},
    }
    assert policy["TerminationWaitInSeconds"] == 900
    assert policy["MaximumExecutionTimeoutInSeconds"] == 900 + 300 + 900


def test_linear_quarter_steps_over_four_instances() -> None:
    p = _errors_only(RolloutSpec(strategy="linear", size="25%"), fleet=4)
    assert p.deployment_config["BlueGreenUpdatePolicy"] == {
        "TrafficRoutingConfiguration": {
            "Type": "LINEAR",
            "WaitIntervalInSeconds": 600,
            "LinearStepSize": {"Type": "CAPACITY_PERCENT", "Value": 25},
        },
        "TerminationWaitInSeconds": 600,
        # provisioning 900 + three step bakes (25, 50, 75%) + the final bake at 100%
        "MaximumExecutionTimeoutInSeconds": 900 + 4 * 600,
    }
    assert [s.share for s in p.steps] == [0.25, 0.5, 0.75, 1.0]
    assert [s.final for s in p.steps] == [False, False, False, True]


def test_linear_default_step_is_a_quarter_of_the_fleet_as_a_count() -> None:
    p = _errors_only(RolloutSpec(strategy="linear"), fleet=8)
    routing = p.deployment_config["BlueGreenUpdatePolicy"]["TrafficRoutingConfiguration"]
    assert routing["LinearStepSize"] == {"Type": "INSTANCE_COUNT", "Value": 2}
    assert [s.share for s in p.steps] == [0.25, 0.5, 0.75, 1.0]


def test_rolling_quarter_batches_over_four_instances() -> None:
    p = _errors_only(RolloutSpec(strategy="rolling", size="25%", rollback_size=2), fleet=4)
    assert p.deployment_config == {
        "RollingUpdatePolicy": {
            "MaximumBatchSize": {"Type": "CAPACITY_PERCENT", "Value": 25},
            "WaitIntervalInSeconds": 600,
            # every batch provisions (4 x 900) and bakes (4 x 600); no final bake
            "MaximumExecutionTimeoutInSeconds": 4 * 900 + 4 * 600,
            "RollbackMaximumBatchSize": {"Type": "INSTANCE_COUNT", "Value": 2},
        },
        "AutoRollbackConfiguration": {"Alarms": [ERRORS_ALARM]},
    }
    assert [(s.share, s.final) for s in p.steps] == [
        (0.25, False), (0.5, False), (0.75, False), (1.0, False),
    ]  # fmt: skip
    assert _update_endpoint_errors(p.deployment_config) == []


def test_timeout_is_clamped_to_the_api_maximum() -> None:
    p = _errors_only(RolloutSpec(strategy="rolling", size=1, bake=3600), fleet=10)
    # 10 batches x (900 + 3600) is far above 28800, the model's maximum
    assert p.deployment_config["RollingUpdatePolicy"]["MaximumExecutionTimeoutInSeconds"] == 28800


def test_component_rolling_counts_copies_and_has_no_blue_green() -> None:
    p = _plan(RolloutSpec(strategy="rolling", size=1, alarms=["mine"]), fleet=4, component=True)
    assert p.deployment_config == {
        "RollingUpdatePolicy": {
            "MaximumBatchSize": {"Type": "COPY_COUNT", "Value": 1},
            "WaitIntervalInSeconds": 600,
            "MaximumExecutionTimeoutInSeconds": 4 * 900 + 4 * 600,
        },
        # a component's metrics carry InferenceComponentName, not a config: only the
        # user's own alarm can watch it
        "AutoRollbackConfiguration": {"Alarms": [{"AlarmName": "mine"}]},
    }
    assert p.alarms == []
    errors = validate_request(
        "sagemaker",
        "UpdateInferenceComponent",
        {"InferenceComponentName": "ic", "DeploymentConfig": p.deployment_config},
    )
    assert errors == []


def test_the_three_alarms_watch_the_new_fleet() -> None:
    p = _plan(
        RolloutSpec(strategy="canary"), fleet=5, k=5, monitored=True, live_acceptance=2.4,
        live_latency_p90_ms=800,
    )  # fmt: skip
    assert p.alarm_names == ["ep-rollout-speculation", "ep-rollout-latency", "ep-rollout-errors"]
    assert p.deployment_config["AutoRollbackConfiguration"] == {
        "Alarms": [{"AlarmName": n} for n in p.alarm_names]
    }
    by_name = {a["AlarmName"]: a for a in p.alarms}
    new_fleet = [
        {"Name": "EndpointName", "Value": EP},
        {"Name": "VariantName", "Value": VARIANT},
        {"Name": "EndpointConfigName", "Value": NEW},
    ]
    latency = by_name["ep-rollout-latency"]
    assert (latency["Namespace"], latency["MetricName"]) == ("AWS/SageMaker", "ModelLatency")
    assert latency["Dimensions"] == new_fleet
    assert latency["ExtendedStatistic"] == "p90"
    # the default: twice the live p90 (800 ms), at least 1000 ms; ModelLatency is in µs
    assert latency["Threshold"] == 1_600_000
    assert latency["TreatMissingData"] == "notBreaching"
    errors = by_name["ep-rollout-errors"]
    assert errors["MetricName"] == "Invocation5XXErrors"
    assert errors["Dimensions"] == new_fleet
    assert (errors["Statistic"], errors["Threshold"]) == ("Average", 0.05)
    speculation = by_name["ep-rollout-speculation"]
    assert speculation["TreatMissingData"] == "missing"  # an idle bake is never ALARM
    # a bake of 600 s holds 5 periods of 60 s; 3 of them breaching alarm
    for a in p.alarms:
        assert (a["Period"], a["EvaluationPeriods"], a["DatapointsToAlarm"]) == (60, 5, 3)
        tags = {t["Key"]: t["Value"] for t in a["Tags"]}
        assert tags == {"peagle:managed": "true", "peagle:deployment": EP, "peagle:rollout": NEW}
        assert validate_request("cloudwatch", "PutMetricAlarm", a) == []


# --- the mixed-share speculation threshold ------------------------------------------------


def test_mixed_threshold_by_hand() -> None:
    """The mix of one canary instance next to four live ones (share 0.2 of the lines): the
    period mean crosses s x T + (1 - s) x L_live exactly when the canary crosses T.
    K=5: T = 1 + 0.05 x (5 + 1) = 1.3; live 2.4: 0.2 x 1.3 + 0.8 x 2.4 = 0.26 + 1.92 = 2.18."""
    assert mixed_threshold(0.2, 1.3, 2.4) == 2.18


def test_canary_threshold_by_hand() -> None:
    """The canary fails below T_canary = max(T, 1 + 0.5 x (min(L_live, 1 + K) - 1)): it
    keeps less than half the live fleet's gain, or stops paying (the module's rule)."""
    assert canary_threshold(1.3, 2.4, 5) == 1.7  # 1 + 0.5 x 1.4
    assert canary_threshold(1.3, 1.4, 5) == 1.3  # half of 0.4 is 1.2 < T: T holds
    assert canary_threshold(1.2, 9.0, 3) == 2.5  # the live figure capped at 1 + K = 4


def test_the_canary_alarm_threshold_by_hand() -> None:
    """K=5, T 1.3, live 2.4, one canary in five (share 0.2): T_canary = 1.7 and the alarm's
    threshold is 0.2 x 1.7 + 0.8 x 2.4 = 0.34 + 1.92 = 2.26."""
    p = _plan(RolloutSpec(strategy="canary", rollback_on=["speculation"]), fleet=5, k=5,
              monitored=True, live_acceptance=2.4)  # fmt: skip
    (alarm,) = p.alarms
    assert alarm["AlarmName"] == "ep-rollout-speculation"
    assert alarm["Threshold"] == 2.26
    assert alarm["ComparisonOperator"] == "LessThanThreshold"
    assert (alarm["Namespace"], alarm["MetricName"]) == ("Peagle/SpeculativeDecoding",
                                                         "AcceptanceLength")  # fmt: skip
    assert alarm["Dimensions"] == [{"Name": "EndpointName", "Value": EP}]
    # a collapsed canary (nothing accepted: 1.0) pulls the mean to 0.2 + 1.92 = 2.12: ALARM;
    # a healthy one leaves it at 2.4: OK
    assert 0.2 * 1.0 + 0.8 * 2.4 < alarm["Threshold"] < 2.4


def test_all_at_once_speculation_uses_the_new_k_threshold() -> None:
    p = _plan(RolloutSpec(strategy="all-at-once", rollback_on=["speculation"]), fleet=1, k=5,
              monitored=True)  # fmt: skip
    assert p.alarms[0]["Threshold"] == 1.3  # one fleet serves after the flip: T for K=5


def test_a_canary_too_small_to_see_is_refused_for_speculation() -> None:
    """1 of 20 instances at K=5, live 2.4: T_canary = 1.7, so a collapsed canary moves the
    mean by 0.05 x (1.7 - 1) = 0.035, under the 0.05 allowed for noise."""
    with pytest.raises(SpecError) as e:
        _plan(RolloutSpec(strategy="canary", rollback_on=["speculation"]), fleet=20, k=5,
              monitored=True, live_acceptance=2.4)  # fmt: skip
    assert "cannot roll back on speculation" in str(e.value)
    assert "0.035" in str(e.value)
    assert e.value.remedy == "use a larger first step"
    # left to the default signals, the same canary goes without it, and says why
    p = _plan(RolloutSpec(strategy="canary"), fleet=20, k=5, monitored=True, live_acceptance=2.4)
    assert "ep-rollout-speculation" not in p.alarm_names
    assert any("no speculation rollback alarm" in n and "0.035" in n for n in p.notes)
    # one of ten: 0.1 x 0.7 = 0.07, seen
    p = _plan(RolloutSpec(strategy="canary"), fleet=10, k=5, monitored=True, live_acceptance=2.4)
    assert "ep-rollout-speculation" in p.alarm_names


def test_a_live_fleet_at_the_new_threshold_cannot_be_told_apart() -> None:
    with pytest.raises(SpecError) as e:
        _plan(RolloutSpec(strategy="canary", rollback_on=["speculation"]), fleet=4, k=5,
              monitored=True, live_acceptance=1.3)  # fmt: skip
    assert "cannot tell the fleets apart" in str(e.value)


# --- refusals: exit 2, nothing sent, the strategy that fits ------------------------------


def _refusal(spec: RolloutSpec, fleet: int, **kw) -> SpecError:
    with pytest.raises(SpecError) as e:
        _plan(spec, fleet, **kw)
    assert e.value.exit_code == 2
    assert e.value.field == "rollout"
    return e.value


def test_one_instance_canary_suggests_all_at_once() -> None:
    e = _refusal(RolloutSpec(strategy="canary"), fleet=1)
    assert "needs at least 2 instances" in str(e)
    assert "all-at-once" in str(e.remedy)


def test_component_canary_suggests_rolling() -> None:
    e = _refusal(RolloutSpec(strategy="canary"), fleet=4, component=True)
    assert "inference components do not take" in str(e)
    assert "'rolling'" in str(e.remedy)
    e = _refusal(RolloutSpec(strategy="linear"), fleet=1, component=True)
    assert "'all-at-once'" in str(e.remedy)  # one copy: not even rolling fits


def test_linear_five_percent_of_four_is_under_the_ten_percent_floor() -> None:
    e = _refusal(RolloutSpec(strategy="linear", size="5%"), fleet=4)
    assert "10-50% of the instances" in str(e)
    # 10% of 4 is 0.4 of an instance, so the least step is 1 instance; 50% of 4 is 2
    assert "'linear:1' (1-2 instances)" in str(e.remedy)


def test_rolling_sixty_percent_of_four_is_over_half() -> None:
    e = _refusal(RolloutSpec(strategy="rolling", size="60%"), fleet=4)
    assert "5-50% of the instances" in str(e)
    assert "'rolling:1' (1-2 instances)" in str(e.remedy)


def test_canary_of_three_in_four_is_over_half() -> None:
    e = _refusal(RolloutSpec(strategy="canary", size=3), fleet=4)
    assert "at most 50% of the instances" in str(e)
    assert "'canary:1' (1-2 instances)" in str(e.remedy)


def test_a_percentage_under_one_instance_is_refused() -> None:
    # 10% of 4 is within rolling's 5-50% but comes to 0.4 of an instance: what SageMaker
    # does with it is not documented
    e = _refusal(RolloutSpec(strategy="rolling", size="10%"), fleet=4)
    assert "(0.4)" in str(e)
    # 10% of 10 is one instance: taken
    p = _errors_only(RolloutSpec(strategy="rolling", size="10%"), fleet=10)
    assert p.steps[0].share == 0.1


def test_fallback_pools_refuse_guardrail_strategies() -> None:
    e = _refusal(RolloutSpec(strategy="canary"), fleet=4, pools=True)
    assert "fallback instance pools" in str(e)
    assert "all-at-once" in str(e.remedy)
    assert _errors_only(RolloutSpec(strategy="all-at-once"), fleet=4, pools=True)


def test_eleven_alarms_are_one_over_the_limit() -> None:
    # the three of peagle's plus eight of the user's: 11 > 10 (AutoRollbackConfig.Alarms)
    spec = RolloutSpec(strategy="canary", alarms=[f"mine-{i}" for i in range(8)])
    e = _refusal(spec, fleet=5, k=5, monitored=True, live_acceptance=2.4,
                 live_latency_p90_ms=800)  # fmt: skip
    assert "11 rollback alarms" in str(e) and "at most 10" in str(e)
    # seven of the user's: ten, taken
    spec = RolloutSpec(strategy="canary", alarms=[f"mine-{i}" for i in range(7)])
    p = _plan(spec, fleet=5, k=5, monitored=True, live_acceptance=2.4, live_latency_p90_ms=800)
    assert len(p.deployment_config["AutoRollbackConfiguration"]["Alarms"]) == 10


def test_timeout_not_above_the_bakes_is_refused() -> None:
    # canary bake 600 + final bake 600 = 1200: a timeout of 1200 is not larger
    e = _refusal(RolloutSpec(strategy="canary", timeout=1200), fleet=4)
    assert "not longer than its bakes (1200 s)" in str(e)
    p = _errors_only(RolloutSpec(strategy="canary", timeout=1201), fleet=4)
    assert p.deployment_config["BlueGreenUpdatePolicy"]["MaximumExecutionTimeoutInSeconds"] == 1201


def test_explicit_signals_that_cannot_apply_are_refused_not_dropped() -> None:
    e = _refusal(RolloutSpec(strategy="canary", rollback_on=["speculation"]), fleet=4, k=5)
    assert "monitoring is off" in str(e)
    e = _refusal(RolloutSpec(strategy="canary", rollback_on=["latency"]), fleet=4)
    assert "set rollout.latency_ms" in str(e.remedy)


def test_without_live_facts_a_missing_reading_is_a_note_not_a_refusal() -> None:
    """`plan` reads no live metric: the alarms whose thresholds need one are left out with
    a note; `update` (live_facts=True) refuses the same explicit signals without data."""
    spec = RolloutSpec(strategy="canary", rollback_on=["speculation", "latency"])
    kw = dict(fleet=4, k=5, monitored=True)
    with pytest.raises(SpecError, match="cannot roll back on speculation"):
        _plan(spec, **kw)
    p = _plan(spec, **kw, live_facts=False)
    assert p.alarms == []
    assert [n.split(":")[0] for n in p.notes] == ["ep-rollout-speculation", "ep-rollout-latency"]
    assert all("update reads and plan does not" in n for n in p.notes)
    # what no live reading could change is still refused: monitoring off
    with pytest.raises(SpecError, match="monitoring is off"):
        _plan(spec, fleet=4, k=5, live_facts=False)
