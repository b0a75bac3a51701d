"""Monitoring against the running sandbox (issue 37): the exact CloudWatch Logs and
CloudWatch requests of `plan(monitor=True)` are put to a SIMULATED sandbox, the endpoint
serves, `peagle sandbox clock advance` moves time, and the metric carries the numbers of
the SpecDecoding lines the SIMULATED engine wrote while the alarm judges them.

The log simulator only ensures the log group exists: the group peagle created (its tags,
its retention) is left as it was. Nothing sleeps: the clock is frozen and advanced.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import botocore
import pytest

import sm_peagle
from tests.e2e.test_sandbox_clock_e2e import Peagle
from tests.e2e.test_sandbox_clock_server import CHAT, IMAGE, ROLE
from tests.sandbox_helpers import sandbox_client

pytestmark = pytest.mark.e2e

ACCOUNT = "123456789012"  # the sandbox's account (moto's default)
# The numbers of vLLM's SpecDecoding line (vllm 0.31.0 v1/spec_decode/metrics.py).
NUMBERS = re.compile(
    r"Mean acceptance length: ([\d.]+), .*Accepted: (\d+) tokens, Drafted: (\d+) tokens"
)


@pytest.fixture
def sandbox(tmp_path: Path) -> Iterator[tuple[Peagle, str]]:
    peagle = Peagle(tmp_path)
    started = peagle.json("sandbox", "start", "--creating-seconds", "60",
                          "--metrics-interval", "10")  # fmt: skip
    peagle.json("sandbox", "clock", "freeze")
    yield peagle, str(started["url"])
    peagle("sandbox", "stop")


def test_the_simulated_engines_lines_feed_the_metric_and_the_alarm(
    sandbox: tuple[Peagle, str],
) -> None:
    peagle, url = sandbox
    monitoring = sm_peagle.plan("gpt-oss-20b", monitor=True, name="mon-e2e").monitoring
    name = monitoring.endpoint
    logs, cw, sm = (sandbox_client(url, s) for s in ("logs", "cloudwatch", "sagemaker"))
    for service, operation, request in monitoring.requests():  # before the endpoint
        if operation == "PutDashboard":
            request = monitoring.dashboard_for(ACCOUNT)
        client = logs if service == "logs" else cw
        getattr(client, botocore.xform_name(operation))(**request)

    # A P-EAGLE endpoint at the plan's K (SIMULATED: SpecDecoding lines at K=3).
    assert monitoring.k == 3
    spec = {"method": "eagle3", "model": "/opt/ml/drafter", "num_speculative_tokens": 3,
            "parallel_drafting": True}  # fmt: skip
    sm.create_model(
        ModelName=name,
        ExecutionRoleArn=ROLE,
        PrimaryContainer={"Image": IMAGE,
                          "Environment": {"SM_VLLM_SPECULATIVE_CONFIG": json.dumps(spec)}},
    )  # fmt: skip
    sm.create_endpoint_config(
        EndpointConfigName=name,
        ProductionVariants=[{"VariantName": "AllTraffic", "ModelName": name,
                             "InstanceType": "ml.g6e.xlarge", "InitialInstanceCount": 1}],
    )  # fmt: skip
    sm.create_endpoint(EndpointName=name, EndpointConfigName=name)
    peagle("sandbox", "clock", "advance", "1m")
    assert sm.describe_endpoint(EndpointName=name)["EndpointStatus"] == "InService"

    runtime = sandbox_client(url, "sagemaker-runtime")
    for _ in range(3):
        runtime.invoke_endpoint(EndpointName=name, ContentType="application/json",
                                Body=json.dumps(CHAT))  # fmt: skip
    start = peagle.json("sandbox", "clock")["epoch"]
    peagle("sandbox", "clock", "advance", "10s")  # the stats interval: the line is written
    peagle("sandbox", "clock", "advance", "5m")  # its period ends; the alarm judges it

    events = logs.filter_log_events(logGroupName=monitoring.log_group)["events"]
    spec_events = [e for e in events if "SpecDecoding metrics" in e["message"]]
    assert len(spec_events) == 1, [e["message"] for e in events]
    length, accepted, drafted = NUMBERS.search(spec_events[0]["message"]).groups()  # type: ignore[union-attr]

    def stat(metric: str, statistic: str) -> float:
        (point,) = cw.get_metric_statistics(
            Namespace="Peagle/SpeculativeDecoding", MetricName=metric,
            Dimensions=[{"Name": "EndpointName", "Value": name}],
            StartTime=datetime.fromtimestamp(start - 600, tz=UTC),
            EndTime=datetime.fromtimestamp(start + 600, tz=UTC),
            Period=60, Statistics=[statistic],
        )["Datapoints"]  # fmt: skip
        return float(point[statistic])

    assert stat("AcceptanceLength", "Average") == float(length)
    assert stat("AcceptedTokens", "Sum") == int(accepted)
    assert stat("DraftedTokens", "Sum") == int(drafted)
    assert int(drafted) > 0

    (alarm,) = cw.describe_alarms(AlarmNames=[monitoring.alarm["AlarmName"]])["MetricAlarms"]
    assert alarm["StateValue"] == "OK", alarm["StateReason"]
    assert json.loads(alarm["StateReasonData"])["recentDatapoints"] == [float(length)]

    # The simulator wrote into peagle's group without recreating or re-tagging it.
    (group,) = logs.describe_log_groups(logGroupNamePrefix=monitoring.log_group)["logGroups"]
    assert group["retentionInDays"] == 30
    tags = logs.list_tags_for_resource(resourceArn=group["logGroupArn"])["tags"]
    assert tags == monitoring.create_log_group["tags"]
    assert any("Application startup complete" in e["message"] for e in events)
