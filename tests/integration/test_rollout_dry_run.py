"""`update --dry-run` with a rollout shows the rollout it would run, planned from the live
fleet, and sends nothing that changes anything; an update with nothing to change says the
rollout it was given moved nothing (the endpoint's tags never carry a rollout)."""

from __future__ import annotations

import json
from typing import Any

from tests.integration.lifecycle_env import run
from tests.integration.test_rollout import NAME, deploy, mutating, rw

__all__ = ["rw"]  # the fixture, used by name


def test_a_dry_run_shows_the_canary_it_would_send_and_changes_nothing(rw: Any, capsys: Any) -> None:
    deploy(rw, capsys, count=4)
    code, out, err = run(capsys, "update", NAME, "-k", "5", "--rollout", "canary", "--bake", "5m",
                         "--dry-run", "--json")  # fmt: skip
    assert code == 0, err
    doc = json.loads(out)["rollout"]
    assert doc["outcome"] == "planned" and doc["strategy"] == "canary"
    # CanarySize: one instance of the live four; 300 s bake, the final bake the same.
    routing = doc["deployment_config"]["BlueGreenUpdatePolicy"]["TrafficRoutingConfiguration"]
    assert routing == {"Type": "CANARY", "WaitIntervalInSeconds": 300,
                       "CanarySize": {"Type": "INSTANCE_COUNT", "Value": 1}}  # fmt: skip
    assert doc["deployment_config"]["BlueGreenUpdatePolicy"]["TerminationWaitInSeconds"] == 300
    assert [s["share"] for s in doc["steps"]] == [0.25, 1.0]
    assert mutating(rw) == []
    code, out, _ = run(capsys, "update", NAME, "-k", "5", "--rollout", "canary", "--dry-run")
    assert "would roll out canary: 25% for 600s, 100% for 600s" in out  # the default bake
    assert mutating(rw) == []


def test_a_one_instance_canary_dry_run_is_exit_2_like_the_update(rw: Any, capsys: Any) -> None:
    deploy(rw, capsys, count=1)
    code, _, err = run(capsys, "update", NAME, "-k", "5", "--rollout", "canary", "--dry-run")
    assert code == 2 and "--rollout all-at-once" in err, err
    assert mutating(rw) == []


def test_nothing_to_change_says_the_rollout_moved_nothing(rw: Any, capsys: Any) -> None:
    deploy(rw, capsys)
    code, _, err = run(capsys, "update", NAME, "--rollout", "canary", "--yes")
    assert code == 0, err
    assert "nothing sent (the rollout applies only to an update that changes what runs)" in err
    assert mutating(rw) == []


def test_plan_and_the_update_send_the_same_policy(rw: Any, capsys: Any) -> None:
    """`plan` shows the policy for the spec's instance count, the update sends it for the
    live fleet: the same fleet gives the same BlueGreenUpdatePolicy, its execution timeout
    included (one provisioning allowance for both)."""
    deploy(rw, capsys, count=4)
    args = ("-k", "5", "--rollout", "canary", "--bake", "5m")
    code, out, err = run(capsys, "plan", "gpt-oss-20b", "--instance-count", "4", *args, "--json")
    assert code == 0, err
    planned = json.loads(out)["rollout"]["deployment_config"]["BlueGreenUpdatePolicy"]
    code, out, err = run(capsys, "update", NAME, *args, "--dry-run", "--json")
    assert code == 0, err
    assert json.loads(out)["rollout"]["deployment_config"]["BlueGreenUpdatePolicy"] == planned


def test_a_threshold_the_spec_gave_the_live_alarm_is_where_the_canary_starts(
    rw: Any, capsys: Any, sagemaker_harness: Any, tmp_path: Any
) -> None:
    """The endpoint's alarm was given 1.9 by its spec (`monitoring.threshold`); an update
    without a monitoring section keeps that rule for the new fleet: the canary fails below
    the higher of 1.9 and half the live gain (1 + 0.5 x (2.4 - 1) = 1.7), mixed with the
    live fleet's 2.4 at the canary's share 1/2: 0.5 x 1.9 + 0.5 x 2.4 = 2.15. (K=5's default,
    1.3, would give 0.5 x 1.7 + 0.5 x 2.4 = 2.05.)"""
    from tests.integration.test_rollout import seed_live, traffic

    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "model: gpt-oss-20b\n"
        "monitoring: {enabled: true, threshold: 1.9}\n"
        "endpoint: {instance_count: 2}\n"
    )
    code, _, err = run(capsys, "apply", "-f", str(spec), "--yes")
    assert code == 0, err
    seed_live(sagemaker_harness, 2.4)
    traffic(sagemaker_harness)
    rw.requests.clear()
    code, _, err = run(capsys, "update", NAME, "-k", "5", "--rollout", "canary", "--bake", "5m",
                       "--yes")  # fmt: skip
    assert code == 0, err
    [put] = [p for p in rw.sent("PutMetricAlarm") if p["AlarmName"].endswith("-speculation")
             and "-rollout-" in p["AlarmName"]]  # fmt: skip
    assert put["Threshold"] == 2.15
