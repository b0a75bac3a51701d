"""Rollouts on the real engine (issue 38), run by the last tests of `TestPEagle` on its
endpoint (the aligned head, K=3, `--monitor`, 2 instances), so they add two engine starts
and no deploy: a canary to the random head at K=2, rolled back by the speculation alarm
while the old engine keeps serving; then a canary to the aligned head at K=2, which
completes and replaces the old engine.

How the speculation alarm sees the canary (planning/rollout.py): during the canary bake
both engines write SpecDecoding lines to the endpoint's log group and the metric averages
them. The alarm's threshold is derived for the canary's share (1 of 2 instances: 0.5) from
the live fleet's acceptance over the last hour, which `fresh_hour` makes this engine's
greedy traffic alone. In the sandbox one engine stands for each fleet, whatever its
instance count: the traffic splits by the share, and each engine logs one line per stats
interval in which it drafted.
"""

from __future__ import annotations

import json
import textwrap
from typing import Any

from peagle_sandbox.procs import group_alive
from tests.conformance.health_traffic import PERIOD_S, advance
from tests.conformance.rollout_traffic import (
    alarms_named,
    bake_period,
    fresh_hour,
    invoke_split,
    start,
    start_python,
    wait_for_bake,
)
from tests.e2e.test_sandbox_engine_host import Cli

# The SDK in a child process: the update blocks while the rollout runs, and the test sends
# the traffic. It prints what it returned or the RolloutRolledBack it raised.
SDK_UPDATE = textwrap.dedent(
    """
    import json, sys
    import sm_peagle

    name, head = sys.argv[1], sys.argv[2]
    rollout = {"strategy": "canary", "bake": "5m", "rollback_on": ["speculation"]}
    try:
        result = sm_peagle.Client().update(name, k=2, drafter=head, rollout=rollout)
        print(json.dumps({"raised": None, "result": result.to_dict()}))
    except sm_peagle.RolloutRolledBack as e:
        print(json.dumps({"raised": type(e).__name__, "alarm": e.alarm,
                          "reason": e.alarm_reason, "phase": e.phase,
                          "serving": e.still_serving, "message": str(e),
                          "exit_code": e.exit_code,
                          "is_deployment_failed": isinstance(e, sm_peagle.DeploymentFailed)}))
    """
)


def _served_config(cli: Cli, name: str) -> str:
    return str(cli.client("sagemaker").describe_endpoint(EndpointName=name)["EndpointConfigName"])


def _engines_of(cli: Cli, name: str) -> list[dict[str, Any]]:
    return [e for e in cli.engines() if e["endpoint"] == name]


def _configs(cli: Cli) -> list[str]:
    pages = cli.client("sagemaker").list_endpoint_configs(MaxResults=100)
    return [c["EndpointConfigName"] for c in pages["EndpointConfigs"]]


def _models(cli: Cli) -> list[str]:
    return [m["ModelName"] for m in cli.client("sagemaker").list_models(MaxResults=100)["Models"]]


def canary_rolls_back(sandbox: Cli, name: str, random_head: str) -> None:
    """A canary to the random head at K=2 (through the SDK, speculation alarm only): the
    alarm trips in the canary bake, SageMaker's side rolls back, the SDK raises
    RolloutRolledBack naming it; the old engine serves everything after, and what the
    update created is gone."""
    old = _served_config(sandbox, name)
    old_pid = _engines_of(sandbox, name)[0]["pid"]
    before = (set(_configs(sandbox)), set(_models(sandbox)))
    fresh_hour(sandbox, name)
    child = start_python(sandbox, SDK_UPDATE, name, random_head)
    wait_for_bake(sandbox, name, child)
    new = sandbox.client("sagemaker").describe_endpoint(EndpointName=name)[
        "PendingDeploymentSummary"
    ]["EndpointConfigName"]
    served: dict[str, int] = {}
    for _ in range(3):  # three periods with both fleets' lines: 3 of 5 below
        for config, n in bake_period(sandbox, name).items():
            served[config] = served.get(config, 0) + n
        if child.poll() is not None:
            break
    advance(sandbox, PERIOD_S)  # the last period is complete: evaluated
    out, err = child.communicate(timeout=300)
    assert child.returncode == 0, err
    doc = json.loads(out.strip().splitlines()[-1])
    # Both fleets served during the bake: the canary's share reached the new engine.
    assert served.get(new, 0) > 0 and served.get(old, 0) > 0, served
    assert doc["raised"] == "RolloutRolledBack", doc
    assert doc["is_deployment_failed"] and doc["exit_code"] == 1
    assert doc["alarm"] == f"{name}-rollout-speculation", doc
    assert "Threshold Crossed" in doc["reason"] and doc["serving"] == old
    assert "canary" in doc["phase"]
    # The old engine serves everything afterwards, and it is the one that served before.
    assert _served_config(sandbox, name) == old
    assert invoke_split(sandbox, name, 4) == {old: 4}
    [engine] = _engines_of(sandbox, name)
    assert engine["pid"] == old_pid
    # What the update created is gone: the new config, its model, the rollout alarms.
    assert new not in _configs(sandbox)
    assert (set(_configs(sandbox)), set(_models(sandbox))) == before
    assert alarms_named(sandbox, f"{name}-rollout-") == []


def canary_completes(sandbox: Cli, name: str) -> None:
    """A canary to the aligned head at K=2 (through the CLI, every default alarm) with
    traffic in both bakes: it completes, the new engine replaces the old one, and the old
    config and the rollout alarms are gone."""
    old = _served_config(sandbox, name)
    [old_engine] = _engines_of(sandbox, name)
    # No fresh hour here: the rolled-back canary's lines in it lower the live acceptance,
    # and with it the threshold, which only makes a healthy canary's pass easier to reach.
    proc = start(sandbox, "--sandbox", "update", name, "-k", "2", "--rollout", "canary",
                 "--bake", "3m", "--yes", "--json")  # fmt: skip
    wait_for_bake(sandbox, name, proc)
    new = sandbox.client("sagemaker").describe_endpoint(EndpointName=name)[
        "PendingDeploymentSummary"
    ]["EndpointConfigName"]
    canary = bake_period(sandbox, name)  # the canary bake sees traffic on both fleets
    advance(sandbox, 2 * PERIOD_S)  # the rest of the 3-minute canary bake
    final = bake_period(sandbox, name)  # the final bake: the new fleet serves it all
    advance(sandbox, 3 * PERIOD_S)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err + out
    doc = json.loads(out)
    assert doc["endpoint_config"] == new and doc["rollout"]["strategy"] == "canary"
    assert doc["rollout"]["unverified_bakes"] == []
    assert canary.get(new, 0) > 0 and final == {new: sum(final.values())}, (canary, final)
    assert _served_config(sandbox, name) == new
    assert invoke_split(sandbox, name, 4) == {new: 4}
    [engine] = _engines_of(sandbox, name)
    assert engine["pid"] != old_engine["pid"] and not group_alive(old_engine["pid"])
    assert old not in _configs(sandbox)
    assert alarms_named(sandbox, f"{name}-rollout-") == []
