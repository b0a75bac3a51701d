"""Guardrail deployments on the `--engine vllm` sandbox host (issue 38), with the stand-in
engine (`tests/integration/fake_vllm.py`, no vLLM needed): the new config's engine starts in
a second slot while the old one serves, its /ping ends provisioning, invocations reach both
engines while the canary bakes, and the loser stops when the deployment settles (committed:
the old; rolled back: the new). A new engine that fails to start fails the update and the
old one serves on. The real engine's version runs in the conformance tier.

The sandbox clock is frozen and advanced; the only waits are bounded real-time polls for an
engine process to start or stop.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from peagle_sandbox.procs import group_alive
from sm_peagle.planning.rollout import plan_rollout
from sm_peagle.planning.spec.rollout_spec import RolloutSpec
from tests.e2e.test_sandbox_engine_host import (
    NAME,
    Cli,
    assert_nothing_left,
    fake_engine_home,
    port_free,
)

pytestmark = pytest.mark.e2e
HEADER = "x-peagle-endpoint-config"


def until(check: Callable[[], Any], what: str, timeout: float = 60.0) -> Any:
    """Poll `check` (real time, bounded) until it returns something true."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cli]:
    root = tmp_path_factory.mktemp("rollout-engine")
    cli = Cli(root, fake_engine_home(root))
    # This checkout's sandbox package too, not only whichever one is installed.
    repo = Path(__file__).resolve().parents[2]
    cli.env["PYTHONPATH"] = os.pathsep.join([str(repo), str(repo / "sandbox")])
    cli("sandbox", "start", "--engine", "vllm")
    out = cli("--sandbox", "deploy", "tiny-llama", "--mode", "p-eagle", "-k", "3",
              "--instance-count", "2", "--yes")  # fmt: skip
    assert f"{NAME} is InService" in out.stdout
    cli("sandbox", "clock", "freeze")
    yield cli
    cli("sandbox", "stop", code=None)


def new_config(cli: Cli, suffix: str, **env: str) -> str:
    """A copy of the endpoint's model and config under a new name, its Environment updated."""
    sm = cli.client("sagemaker")
    current = sm.describe_endpoint(EndpointName=NAME)["EndpointConfigName"]
    config = sm.describe_endpoint_config(EndpointConfigName=current)
    variant = config["ProductionVariants"][0]
    model = sm.describe_model(ModelName=variant["ModelName"])
    name = f"{NAME}-{suffix}"
    container = model["PrimaryContainer"]
    container["Environment"] = {**container.get("Environment", {}), **env}
    extra = {k: model[k] for k in ("AdditionalModelDataSources",) if k in model}
    sm.create_model(ModelName=name, ExecutionRoleArn=model["ExecutionRoleArn"],
                    PrimaryContainer=container, **extra)  # fmt: skip
    keep = ("VariantName", "InstanceType", "InitialInstanceCount",
            "ContainerStartupHealthCheckTimeoutInSeconds")  # fmt: skip
    sm.create_endpoint_config(
        EndpointConfigName=name,
        ProductionVariants=[{**{k: variant[k] for k in keep if k in variant}, "ModelName": name}],
    )
    return name


def canary(cli: Cli, new: str, alarms: list[str] | None = None) -> None:
    """UpdateEndpoint with a canary of 1 of 2 instances, rolling back on `alarms` (which
    exist) and the planned 5xx alarm on the new fleet."""
    plan = plan_rollout(RolloutSpec(strategy="canary", alarms=alarms or []), endpoint=NAME,
                        new_config=new, variant="AllTraffic", fleet=2, k=2)  # fmt: skip
    cw = cli.client("cloudwatch")
    for request in plan.alarms:
        cw.put_metric_alarm(**request)
    assert plan.deployment_config is not None
    cli.client("sagemaker").update_endpoint(
        EndpointName=NAME, EndpointConfigName=new, DeploymentConfig=plan.deployment_config
    )


def fleets(cli: Cli) -> dict[str, dict[str, Any]]:
    """The endpoint's engines by the fleet each stands for."""
    return {e["fleet"]: e for e in cli.engines() if e["endpoint"] == NAME}


def served(cli: Cli, n: int) -> set[str]:
    runtime = cli.client("sagemaker-runtime")
    out = set()
    for i in range(n):
        body = {"messages": [{"role": "user", "content": f"q {i}"}], "max_tokens": 8}
        resp = runtime.invoke_endpoint(EndpointName=NAME, ContentType="application/json",
                                       Body=json.dumps(body))  # fmt: skip
        resp["Body"].read()
        out.add(resp["ResponseMetadata"]["HTTPHeaders"][HEADER])
    return out


def test_a_canary_runs_two_engines_then_commits_and_stops_the_old(real: Cli) -> None:
    old = real.client("sagemaker").describe_endpoint(EndpointName=NAME)["EndpointConfigName"]
    new = new_config(real, "k2", SM_VLLM_SPECULATIVE_CONFIG=json.dumps(
        {"method": "eagle3", "model": "/opt/ml/additional-model-data-sources/eagle",
         "num_speculative_tokens": 2, "parallel_drafting": True}))  # fmt: skip
    [before] = real.engines()
    canary(real, new)
    both = until(lambda: (f := fleets(real)) and "new" in f and f["new"]["ready"] and f,
                 "the new fleet's engine to answer /ping")  # fmt: skip
    assert both["old"]["pid"] == before["pid"] and both["old"]["config"] == old
    assert both["new"]["config"] == new and both["new"]["pid"] != before["pid"]
    status = real("sandbox", "status").stdout
    assert f"endpoint {NAME}, config {old}, old fleet (serving; one engine stands for all" in status
    assert f"endpoint {NAME}, config {new}, new fleet (serving; one engine stands for all" in status

    # /ping ended provisioning: the canary bakes with half the traffic on the new engine.
    real("sandbox", "clock", "advance", "1s")  # past the shift instant (ActivatingTraffic)
    pending = real.client("sagemaker").describe_endpoint(EndpointName=NAME)
    assert (
        pending["PendingDeploymentSummary"]["ProductionVariants"][0]["VariantStatus"][-1]["Status"]
        == "Baking"
    )
    assert served(real, 40) == {old, new}  # each misses all 40 with chance 2**-40

    real("sandbox", "clock", "advance", "25m")  # both bakes: committed
    described = real.client("sagemaker").describe_endpoint(EndpointName=NAME)
    assert (described["EndpointStatus"], described["EndpointConfigName"]) == ("InService", new)
    # The old engine left the books when the deployment settled; its process ends on the
    # thread that settled it (this request's, or the server's ticker: a bounded wait).
    after = fleets(real)
    assert set(after) == {"current"}, after
    assert after["current"]["pid"] == both["new"]["pid"]
    until(lambda: not group_alive(before["pid"]), "the old engine's processes to end")
    assert port_free(before["port"])
    assert served(real, 10) == {new}


def test_a_rolled_back_canary_stops_the_new_engine_and_the_old_serves_on(real: Cli) -> None:
    sm, cw = real.client("sagemaker"), real.client("cloudwatch")
    old = sm.describe_endpoint(EndpointName=NAME)["EndpointConfigName"]
    cw.put_metric_alarm(AlarmName="guard", Namespace="Test", MetricName="Guard",
                        Statistic="Average", Period=60, EvaluationPeriods=1, Threshold=1,
                        ComparisonOperator="GreaterThanThreshold")  # fmt: skip
    new = new_config(real, "rb")
    [before] = real.engines()
    canary(real, new, alarms=["guard"])
    both = until(lambda: (f := fleets(real)) and "new" in f and f["new"]["ready"] and f,
                 "the new fleet's engine to answer /ping")  # fmt: skip
    cw.set_alarm_state(AlarmName="guard", StateValue="ALARM", StateReason="test")
    real("sandbox", "clock", "advance", "1m")
    described = sm.describe_endpoint(EndpointName=NAME)
    assert (described["EndpointStatus"], described["EndpointConfigName"]) == ("InService", old)
    [after] = real.engines()  # the new engine left the books when the rollback settled
    assert after["pid"] == before["pid"]
    until(lambda: not group_alive(both["new"]["pid"]), "the new engine's processes to end")
    assert port_free(both["new"]["port"])
    assert served(real, 10) == {old}
    cw.delete_alarms(AlarmNames=["guard"])


def test_a_new_engine_that_fails_to_start_fails_the_update_and_the_old_serves_on(
    real: Cli,
) -> None:
    sm = real.client("sagemaker")
    old = sm.describe_endpoint(EndpointName=NAME)["EndpointConfigName"]
    # The stand-in fails as vLLM 0.31 does when max_model_len exceeds the model's 2048.
    new = new_config(real, "bad", SM_VLLM_MAX_MODEL_LEN="4096")
    [before] = real.engines()
    canary(real, new)

    def settled() -> dict[str, Any] | None:
        described = sm.describe_endpoint(EndpointName=NAME)
        return described if described["EndpointStatus"] != "Updating" else None

    described = until(settled, "the failed update to settle")
    assert (described["EndpointStatus"], described["EndpointConfigName"]) == ("InService", old)
    assert "User-specified max_model_len (4096) is greater than" in described["FailureReason"]
    [after] = real.engines()
    assert after["pid"] == before["pid"] and after["fleet"] == "current"
    assert served(real, 5) == {old}
    real("--sandbox", "delete", NAME, "--yes")
    cw = real.client("cloudwatch")
    left = [a["AlarmName"] for a in cw.describe_alarms()["MetricAlarms"]]
    if left:  # the rollouts' 5xx alarms: made here, not by peagle (it deletes its own)
        cw.delete_alarms(AlarmNames=left)
    for name in [m["ModelName"] for m in sm.list_models()["Models"]]:
        sm.delete_model(ModelName=name)
    for name in [c["EndpointConfigName"] for c in sm.list_endpoint_configs()["EndpointConfigs"]]:
        sm.delete_endpoint_config(EndpointConfigName=name)
    assert_nothing_left(real)
