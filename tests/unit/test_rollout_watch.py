"""The rollout watch's reading of DescribeEndpoint and of the alarm history, on
descriptions written out by hand in the shape botocore's model gives them
(PendingDeploymentSummary, VariantStatus) and AWS's alarm-history items."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from sm_peagle.lifecycle.rollout_watch import Watch, describe_phase, rollback_alarm
from sm_peagle.planning.rollout import RolloutPlan, Step

T = 1_800_000_000
CANARY = RolloutPlan(
    strategy="canary", endpoint="ep", new_config="ep-new", fleet=4, deployment_config={},
    alarm_names=["ep-rollout-errors"], steps=[Step(0.25, 300), Step(1.0, 600, final=True)],
)  # fmt: skip
LINEAR = RolloutPlan(
    strategy="linear", endpoint="ep", new_config="ep-new", fleet=4, deployment_config={},
    steps=[Step(0.25, 300), Step(0.5, 300), Step(0.75, 300), Step(1.0, 300, final=True)],
)  # fmt: skip


def desc(status: str, up: int, of: int = 4, endpoint: str = "Updating") -> dict[str, Any]:
    when = datetime.fromtimestamp(T, UTC)
    return {
        "EndpointStatus": endpoint,
        "EndpointConfigName": "ep-old",
        "PendingDeploymentSummary": {
            "EndpointConfigName": "ep-new",
            "StartTime": when,
            "ProductionVariants": [
                {
                    "VariantName": "AllTraffic",
                    "DesiredInstanceCount": of,
                    "CurrentInstanceCount": up,
                    "VariantStatus": [{"Status": status, "StartTime": when}],
                }
            ],
        },
    }


def test_the_phase_follows_the_pending_variant():
    assert describe_phase(CANARY, desc("Creating", 0))[0] == "provisioning"
    name, line, step, start = describe_phase(CANARY, desc("Baking", 1))
    assert (name, step, start) == ("canary bake", 0, T)
    assert line == (
        "canary: 1 of 4 instances on ep-new (25%), baking 5:00 (alarms: ep-rollout-errors)"
    )
    name, line, step, _ = describe_phase(CANARY, desc("Baking", 4))
    assert (name, step) == ("final bake", 1) and line.startswith("final bake: 4 of 4")
    assert describe_phase(LINEAR, desc("Baking", 2))[0] == "step 2 of 3 bake"
    assert describe_phase(CANARY, desc("Deleting", 0))[0] == "rolling back"
    assert describe_phase(CANARY, {"EndpointStatus": "InService"}) is None
    # No summary while Updating: the rollback (RollingBack too, though AWS documents it
    # only for UpdateEndpointWeightsAndCapacities).
    assert describe_phase(CANARY, {"EndpointStatus": "RollingBack"})[0] == "rolling back"


def test_bake_windows_not_seen_are_placed_back_from_the_next():
    w = Watch(bake_starts={0: T})
    assert w.windows(CANARY, T + 900) == [(T, T + 300), (T + 300, T + 900)]
    assert Watch().windows(CANARY, T + 900) == [(T, T + 300), (T + 300, T + 900)]


class _Pages:
    def __init__(self, items: dict[str, list[dict[str, Any]]]) -> None:
        self.items = items

    def paginate(self, AlarmName: str, **_: Any) -> list[dict[str, Any]]:  # noqa: N803
        return [{"AlarmHistoryItems": self.items.get(AlarmName, [])}]


class _Aws:
    def __init__(self, items: dict[str, list[dict[str, Any]]]) -> None:
        self.items = items

    def client(self, _: str) -> Any:
        aws = self

        class _Cw:
            def get_paginator(self, _: str) -> _Pages:
                return _Pages(aws.items)

        return _Cw()

    def synced_aws_now(self) -> datetime:
        return datetime.fromtimestamp(T + 3600, UTC)


def _item(at: float, state: str, reason: str) -> dict[str, Any]:
    data = {"newState": {"stateValue": state, "stateReason": reason}}
    return {"Timestamp": datetime.fromtimestamp(at, UTC), "HistoryData": json.dumps(data)}


def test_the_rollback_names_the_first_alarm_to_go_to_alarm():
    aws = _Aws(
        {
            "a": [_item(T + 500, "ALARM", "late"), _item(T + 100, "OK", "fine")],
            "b": [_item(T + 200, "ALARM", "Threshold Crossed: 3 datapoints")],
            "c": [_item(T + 50, "INSUFFICIENT_DATA", "idle")],  # not a trip
        }
    )
    assert rollback_alarm(aws, ["a", "b", "c"], T) == (
        "b",
        "Threshold Crossed: 3 datapoints",
        T + 200,
    )
    assert rollback_alarm(_Aws({}), ["a"], T) is None
