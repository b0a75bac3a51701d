"""adopt: DescribeEndpoint's LastDeploymentConfig back to `endpoint.rollout`
(planning/adopt/rollout.py). The configs are written out in AWS's field names (botocore's
DeploymentConfig shape); peagle's own `<endpoint>-rollout-*` alarms are dropped, any other
alarm is kept; and what a config maps to plans back to the same DeploymentConfig."""

from __future__ import annotations

import pytest

from sm_peagle.planning.adopt.rollout import rollout_from
from sm_peagle.planning.rollout import plan_rollout
from sm_peagle.planning.spec.rollout_spec import RolloutSpec

EP = "ep"


def _alarms(*names: str) -> dict:
    return {"AutoRollbackConfiguration": {"Alarms": [{"AlarmName": n} for n in names]}}


def test_canary_with_peagles_and_a_foreign_alarm() -> None:
    config = {
        "BlueGreenUpdatePolicy": {
            "TrafficRoutingConfiguration": {
                "Type": "CANARY",
                "WaitIntervalInSeconds": 300,
                "CanarySize": {"Type": "INSTANCE_COUNT", "Value": 1},
            },
            "TerminationWaitInSeconds": 900,
            "MaximumExecutionTimeoutInSeconds": 9300,
        },
        **_alarms("ep-rollout-speculation", "ep-rollout-errors", "team-5xx"),
    }
    section, notes = rollout_from(config, EP)
    assert section == {
        "strategy": "canary",
        "size": 1,
        "bake": 300,
        "final_bake": 900,
        "timeout": 9300,
        "alarms": ["team-5xx"],  # rollback_on left to its default: peagle's alarms ran
    }
    assert any("ep-rollout-speculation, ep-rollout-errors" in n for n in notes)


def test_linear_percentage_final_bake_equal_to_the_bake_is_not_repeated() -> None:
    config = {
        "BlueGreenUpdatePolicy": {
            "TrafficRoutingConfiguration": {
                "Type": "LINEAR",
                "WaitIntervalInSeconds": 600,
                "LinearStepSize": {"Type": "CAPACITY_PERCENT", "Value": 25},
            },
            "TerminationWaitInSeconds": 600,
        }
    }
    section, _ = rollout_from(config, EP)
    # no AutoRollbackConfiguration: the last update ran with none of peagle's alarms
    assert section == {"strategy": "linear", "size": "25%", "rollback_on": []}


def test_all_at_once_takes_its_bake_from_the_termination_wait() -> None:
    config = {
        "BlueGreenUpdatePolicy": {
            "TrafficRoutingConfiguration": {"Type": "ALL_AT_ONCE", "WaitIntervalInSeconds": 0},
            "TerminationWaitInSeconds": 120,
            "MaximumExecutionTimeoutInSeconds": 1500,
        },
        **_alarms("ep-rollout-errors"),
    }
    section, _ = rollout_from(config, EP)
    assert section == {"strategy": "all-at-once", "bake": 120, "timeout": 1500}


def test_rolling_with_its_rollback_batch() -> None:
    config = {
        "RollingUpdatePolicy": {
            "MaximumBatchSize": {"Type": "CAPACITY_PERCENT", "Value": 25},
            "WaitIntervalInSeconds": 600,
            "MaximumExecutionTimeoutInSeconds": 6000,
            "RollbackMaximumBatchSize": {"Type": "INSTANCE_COUNT", "Value": 2},
        },
        **_alarms("other-team-alarm"),
    }
    section, _ = rollout_from(config, EP)
    assert section == {
        "strategy": "rolling",
        "size": "25%",
        "timeout": 6000,
        "rollback_size": 2,
        "rollback_on": [],
        "alarms": ["other-team-alarm"],
    }


def test_none_and_what_cannot_be_one() -> None:
    assert rollout_from(None, EP) == (None, [])
    section, notes = rollout_from({"AutoRollbackConfiguration": {"Alarms": []}}, EP)
    assert section is None and "names no update policy" in notes[0]
    bad = {
        "BlueGreenUpdatePolicy": {
            "TrafficRoutingConfiguration": {"Type": "CANARY", "WaitIntervalInSeconds": 7200}
        }
    }
    section, notes = rollout_from(bad, EP)  # over the model's 3600: not a spec peagle takes
    assert section is None and "not carried" in notes[0]


def test_another_endpoints_rollout_alarm_is_foreign() -> None:
    config = {
        "RollingUpdatePolicy": {
            "MaximumBatchSize": {"Type": "INSTANCE_COUNT", "Value": 1},
            "WaitIntervalInSeconds": 600,
        },
        **_alarms("other-rollout-errors", "ep-rollout-latency"),
    }
    section, _ = rollout_from(config, EP)
    assert section["alarms"] == ["other-rollout-errors"]
    assert "rollback_on" not in section


@pytest.mark.parametrize(
    ("spec", "fleet"),
    [
        (RolloutSpec(strategy="canary", bake=300, final_bake=60), 4),
        (RolloutSpec(strategy="canary", size="50%", alarms=["team"]), 2),
        (RolloutSpec(strategy="linear", size=2), 8),
        (RolloutSpec(strategy="rolling", size="25%", rollback_size="50%"), 4),
        (RolloutSpec(strategy="all-at-once", bake=240), 1),
    ],
)
def test_what_peagle_sent_comes_back_as_a_spec_that_sends_it_again(spec, fleet) -> None:
    kw = dict(endpoint=EP, new_config="ep-c2", variant="AllTraffic", fleet=fleet,
              provisioning_s=900)  # fmt: skip
    sent = plan_rollout(spec, **kw).deployment_config
    section, _ = rollout_from(sent, EP)
    again = plan_rollout(RolloutSpec(**section), **kw).deployment_config
    assert again == sent
