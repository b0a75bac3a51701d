"""Guardrail deployments on the SIMULATED sandbox (issue 38): while a canary bakes, each
invocation goes to the old or the new fleet by the new fleet's traffic share; each fleet
generates, logs and publishes AWS/SageMaker metrics as its own endpoint config says; a
rollback sends everything back to the old config, a commit to the new one; and the mixed
case: a canary whose new fleet accepts nothing trips the rollout's speculation alarm (the
threshold derived for the mixed share, `planning.rollout.mixed_threshold`) but not the
endpoint's own `<ep>-speculation` alarm, while a healthy canary trips neither.

The requests are the ones peagle plans (`plan(monitor=True)`, `plan_rollout`), sent with
boto3 to a sandbox whose clock is frozen and advanced: nothing sleeps.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import botocore
import pytest

import sm_peagle
from sm_peagle.planning.monitoring import default_threshold
from sm_peagle.planning.rollout import RolloutPlan, plan_rollout, rollout_alarm_name
from sm_peagle.planning.spec.rollout_spec import RolloutSpec
from tests.e2e.test_sandbox_clock_e2e import Peagle
from tests.e2e.test_sandbox_clock_server import IMAGE, ROLE
from tests.sandbox_helpers import sandbox_client

pytestmark = pytest.mark.e2e

ACCOUNT = "123456789012"  # the sandbox's account (moto's default)
HEADER = "x-peagle-endpoint-config"
SPEC_LINE = re.compile(
    r"Mean acceptance length: ([\d.]+), .*Per-position acceptance rate: ([\d., ]+), Avg"
)
# The engine model's acceptance (sandbox/peagle_sandbox/engine.py, docs/getting-started.md):
# draft position i is accepted with probability alpha**i; P-EAGLE's alpha is 0.80.
ALPHA_P_EAGLE = 0.80


def speculative(k: int, *, parallel: bool = True) -> dict[str, str]:
    """A container Environment as peagle writes it: P-EAGLE (parallel drafting) at depth K,
    or without `parallel_drafting`, vLLM's sequential EAGLE-3."""
    spec: dict[str, Any] = {"method": "eagle3", "model": "/opt/ml/drafter",
                            "num_speculative_tokens": k}  # fmt: skip
    if parallel:
        spec["parallel_drafting"] = True
    return {"SM_VLLM_SPECULATIVE_CONFIG": json.dumps(spec)}


class Sandbox:
    """A started SIMULATED sandbox, its clock frozen, and boto3 clients of it."""

    def __init__(self, peagle: Peagle, url: str) -> None:
        self.peagle, self.url = peagle, url
        self.sm, self.runtime, self.cw, self.logs = (
            sandbox_client(url, s) for s in ("sagemaker", "sagemaker-runtime", "cloudwatch", "logs")
        )

    def advance(self, duration: str) -> None:
        self.peagle("sandbox", "clock", "advance", duration)

    def epoch(self) -> float:
        return float(self.peagle.json("sandbox", "clock")["epoch"])

    def config(self, name: str, env: dict[str, str], instances: int = 2) -> None:
        """A model and an endpoint config named `name`, `instances` instances."""
        self.sm.create_model(ModelName=name, ExecutionRoleArn=ROLE,
                             PrimaryContainer={"Image": IMAGE, "Environment": env})  # fmt: skip
        self.sm.create_endpoint_config(
            EndpointConfigName=name,
            ProductionVariants=[{"VariantName": "AllTraffic", "ModelName": name,
                                 "InstanceType": "ml.g6e.xlarge",
                                 "InitialInstanceCount": instances}],
        )  # fmt: skip

    def invoke(self, name: str, n: int, tag: str = "q") -> list[str]:
        """`n` invocations of `name` (different prompts); the config each response names."""
        out = []
        for i in range(n):
            body = {"messages": [{"role": "user", "content": f"{tag} {i}"}], "max_tokens": 24}
            resp = self.runtime.invoke_endpoint(
                EndpointName=name, ContentType="application/json", Body=json.dumps(body)
            )
            resp["Body"].read()
            out.append(resp["ResponseMetadata"]["HTTPHeaders"][HEADER])
        return out

    def ground_truth(self, name: str) -> list[dict[str, Any]]:
        import urllib.request

        with urllib.request.urlopen(f"{self.url}/_peagle/ground-truth?endpoint={name}") as r:
            return list(json.loads(r.read())["requests"])

    def spec_lines(self, name: str) -> dict[str, list[str]]:
        """The endpoint's SpecDecoding lines by log stream."""
        out: dict[str, list[str]] = {}
        kwargs: dict[str, Any] = {"logGroupName": f"/aws/sagemaker/Endpoints/{name}"}
        while True:
            page = self.logs.filter_log_events(**kwargs)
            for e in page["events"]:
                if "SpecDecoding metrics" in e["message"]:
                    out.setdefault(e["logStreamName"], []).append(e["message"])
            if not page.get("nextToken"):
                return out
            kwargs["nextToken"] = page["nextToken"]

    def invocations(
        self, name: str, config: str, start: float, metric: str = "Invocations"
    ) -> float:
        """AWS/SageMaker `metric` (Sum) of the fleet of `config` since `start`."""
        points = self.cw.get_metric_statistics(
            Namespace="AWS/SageMaker", MetricName=metric,
            Dimensions=[{"Name": "EndpointName", "Value": name},
                        {"Name": "VariantName", "Value": "AllTraffic"},
                        {"Name": "EndpointConfigName", "Value": config}],
            StartTime=datetime.fromtimestamp(start - 60, tz=UTC),
            EndTime=datetime.fromtimestamp(self.epoch() + 60, tz=UTC),
            Period=60, Statistics=["Sum"],
        )["Datapoints"]  # fmt: skip
        return sum(p["Sum"] for p in points)

    def rollout(self, name: str, new: str, plan: RolloutPlan) -> None:
        """The rollout's alarms, then UpdateEndpoint with its DeploymentConfig."""
        for request in plan.alarms:
            self.cw.put_metric_alarm(**request)
        assert plan.deployment_config is not None
        self.sm.update_endpoint(
            EndpointName=name, EndpointConfigName=new, DeploymentConfig=plan.deployment_config
        )

    def alarm_went_to(self, alarm: str, state: str) -> bool:
        history = self.cw.describe_alarm_history(AlarmName=alarm, HistoryItemType="StateUpdate")
        return any(
            json.loads(h["HistoryData"])["newState"]["stateValue"] == state
            for h in history["AlarmHistoryItems"]
        )


@pytest.fixture
def peagle(tmp_path: Path) -> Iterator[Peagle]:
    p = Peagle(tmp_path)
    yield p
    p("sandbox", "stop")


def start(peagle: Peagle, **engine: float) -> Sandbox:
    """A SIMULATED sandbox with its clock frozen; `engine`: engine constants to override."""
    if engine:
        peagle.env["PEAGLE_SIMULATED_ENGINE"] = json.dumps(engine)
    started = peagle.json("sandbox", "start", "--metrics-interval", "10",
                          "--step-time-factor", "0.01")  # fmt: skip
    peagle.json("sandbox", "clock", "freeze")
    return Sandbox(peagle, str(started["url"]))


def test_a_canary_splits_invocations_by_its_share_within_a_binomial_bound(
    peagle: Peagle,
) -> None:
    sb = start(peagle)
    name, old, new = "split-e2e", "split-e2e", "split-e2e-k5"
    sb.config(old, speculative(3))
    sb.config(new, speculative(5))
    sb.sm.create_endpoint(EndpointName=name, EndpointConfigName=old)
    sb.advance("1m")
    plan = plan_rollout(RolloutSpec(strategy="canary"), endpoint=name, new_config=new,
                        variant="AllTraffic", fleet=2, k=5)  # fmt: skip
    assert [s.share for s in plan.steps] == [0.5, 1.0]  # canary: 1 of 2 instances
    sb.rollout(name, new, plan)
    sb.advance("10s")  # the new fleet is provisioned (--updating-seconds 3): canary bake
    pending = sb.sm.describe_endpoint(EndpointName=name)["PendingDeploymentSummary"]
    assert pending["ProductionVariants"][0]["VariantStatus"][-1]["Status"] == "Baking"
    start_epoch = sb.epoch()

    n, p = 400, 0.5
    served = Counter(sb.invoke(name, n))
    x = served[new]
    assert served[old] + x == n
    # X ~ Binomial(n, p): |X - np| <= 4 sd fails by chance with probability ~6e-5 (normal
    # approximation: 2 * (1 - Phi(4))); here 200 +- 40.
    assert abs(x - n * p) <= 4 * math.sqrt(n * p * (1 - p)), served

    # Ground truth and AWS/SageMaker's per-config Invocations agree with the headers.
    truth = Counter(r["config"] for r in sb.ground_truth(name))
    assert truth == served
    assert sb.invocations(name, new, start_epoch) == x
    assert sb.invocations(name, old, start_epoch) == n - x
    # A payload the model refuses (vLLM's 400, SageMaker's ModelError) counts as a 4XX error
    # of the fleet that refused it.
    with pytest.raises(botocore.exceptions.ClientError) as refused:
        sb.runtime.invoke_endpoint(EndpointName=name, ContentType="application/json", Body=b"{")
    assert refused.value.response["Error"]["Code"] == "ModelError"
    by = refused.value.response["ResponseMetadata"]["HTTPHeaders"][HEADER]
    assert sb.invocations(name, by, start_epoch, "Invocation4XXErrors") == 1
    assert sb.invocations(name, by, start_epoch, "Invocation5XXErrors") == 0

    # Each fleet writes its own stream, its SpecDecoding lines at its own K (one
    # per-position rate per draft position).
    sb.advance("10s")
    lines = sb.spec_lines(name)
    assert len(lines) == 2, lines
    depths = {
        len(SPEC_LINE.search(line).group(2).split(", ")): stream  # type: ignore[union-attr]
        for stream, found in lines.items()
        for line in found
    }
    assert sorted(depths) == [3, 5], lines
    # The new fleet's stream started as its own container: the NEW config's start-up.
    started = [
        e["message"]
        for e in sb.logs.filter_log_events(
            logGroupName=f"/aws/sagemaker/Endpoints/{name}", logStreamNames=[depths[5]]
        )["events"]
    ]
    assert any('"num_speculative_tokens": 5' in m for m in started), started
    assert "(APIServer pid=1) INFO:     Application startup complete." in started

    # Past both bakes: committed; every invocation reaches the new config.
    sb.advance("25m")
    described = sb.sm.describe_endpoint(EndpointName=name)
    assert (described["EndpointStatus"], described["EndpointConfigName"]) == ("InService", new)
    assert set(sb.invoke(name, 40, "after")) == {new}


def canary(sb: Sandbox, new_env: dict[str, str], new_k: int) -> tuple[str, str, str, RolloutPlan]:
    """A monitored P-EAGLE K=3 endpoint on 2 instances, and a canary (1 of 2) to `new_env`
    under way, its rollout alarms planned from the engine model's live acceptance."""
    name = "mixed-e2e"
    monitoring = sm_peagle.plan("gpt-oss-20b", monitor=True, name=name).monitoring
    assert monitoring is not None and monitoring.k == 3
    for service, operation, request in monitoring.requests():  # before the endpoint
        if operation == "PutDashboard":
            request = monitoring.dashboard_for(ACCOUNT)
        client = sb.logs if service == "logs" else sb.cw
        getattr(client, botocore.xform_name(operation))(**request)
    old, new = name, f"{name}-c2"
    sb.config(old, speculative(3))
    sb.config(new, new_env)
    sb.sm.create_endpoint(EndpointName=name, EndpointConfigName=old)
    sb.advance("1m")
    live = 1 + sum(ALPHA_P_EAGLE**i for i in range(1, 4))  # K=3: 2.952
    plan = plan_rollout(RolloutSpec(strategy="canary"), endpoint=name, new_config=new,
                        variant="AllTraffic", fleet=2, k=new_k, monitored=True,
                        live_acceptance=live)  # fmt: skip
    sb.rollout(name, new, plan)
    sb.advance("10s")  # provisioned: the canary bakes at 50%
    return name, old, new, plan


def busy_periods(sb: Sandbox, name: str, periods: int, stop: Any = None) -> Counter[str]:
    """Traffic in each of `periods` alarm periods (60 s): a burst, the stats interval (both
    fleets write their line), then the rest of the period (the alarms judge it). How many
    invocations each config served."""
    served: Counter[str] = Counter()
    for i in range(periods):
        served.update(sb.invoke(name, 40, f"period {i}"))
        sb.advance("10s")
        sb.advance("50s")
        if stop is not None and stop():
            break
    return served


def test_a_canary_whose_new_fleet_accepts_nothing_trips_the_mixed_threshold_only(
    peagle: Peagle,
) -> None:
    # The SIMULATED engine has no random head: sequential EAGLE-3 with alpha 0 stands for
    # one (every draft rejected: acceptance length 1.00), next to P-EAGLE's 0.80.
    sb = start(peagle, alpha_eagle3=0.0)
    name, old, new, plan = canary(sb, speculative(3, parallel=False), 3)
    rollout_alarm = rollout_alarm_name(name, "speculation")
    [request] = [a for a in plan.alarms if a["AlarmName"] == rollout_alarm]
    # The canary rule (planning/rollout.py's module doc): the new fleet fails below half the
    # live fleet's gain, T_canary = max(T(K=3), 1 + 0.5 * (min(2.952, 1 + 3) - 1)) = 1.976,
    # mixed 50/50 with the live 2.952. A collapsed canary mixes to 0.5 * 1 + 0.5 * 2.95.
    canary_floor = max(default_threshold(3), 1 + 0.5 * (min(2.952, 1 + 3) - 1))
    assert request["Threshold"] == round(0.5 * canary_floor + 0.5 * 2.952, 3) == 2.464

    def rolled_back() -> bool:
        described = sb.sm.describe_endpoint(EndpointName=name)
        return described["EndpointStatus"] == "InService" and "PendingDeploymentSummary" not in (
            described
        )

    served = busy_periods(sb, name, 5, stop=rolled_back)
    assert served[new] > 0 and served[old] > 0, served
    assert rolled_back()
    described = sb.sm.describe_endpoint(EndpointName=name)
    assert described["EndpointConfigName"] == old
    assert sb.alarm_went_to(rollout_alarm, "ALARM")
    assert not sb.alarm_went_to(f"{name}-speculation", "ALARM")
    [own] = sb.cw.describe_alarms(AlarmNames=[f"{name}-speculation"])["MetricAlarms"]
    assert own["StateValue"] == "OK", own["StateReason"]

    # The new fleet's own stream says what it did: nothing accepted.
    lengths = {
        stream: {SPEC_LINE.search(line).group(1) for line in found}  # type: ignore[union-attr]
        for stream, found in sb.spec_lines(name).items()
    }
    assert len(lengths) == 2 and {"1.00"} in lengths.values(), lengths
    assert set(sb.invoke(name, 40, "after")) == {old}


def test_a_healthy_canary_trips_neither_alarm_and_commits(peagle: Peagle) -> None:
    sb = start(peagle, alpha_eagle3=0.0)
    name, old, new, plan = canary(sb, speculative(2), 2)
    served = busy_periods(sb, name, 5)
    assert served[new] > 0 and served[old] > 0, served  # both fleets wrote lines: a mix
    for alarm in (rollout_alarm_name(name, "speculation"), f"{name}-speculation"):
        assert not sb.alarm_went_to(alarm, "ALARM"), alarm
        [found] = sb.cw.describe_alarms(AlarmNames=[alarm])["MetricAlarms"]
        assert found["StateValue"] == "OK", (alarm, found["StateReason"])
    sb.advance("20m")  # the rest of the canary bake and the final bake
    described = sb.sm.describe_endpoint(EndpointName=name)
    assert (described["EndpointStatus"], described["EndpointConfigName"]) == ("InService", new)
    assert set(sb.invoke(name, 40, "after")) == {new}
