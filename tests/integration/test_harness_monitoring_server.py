"""The monitoring half of the harness behind moto's threaded server (the sandbox's mode):
the same patches answer over HTTP (CloudWatch Logs' JSON protocol, CloudWatch's CBOR), and
the SpecDecoding lines written into the server's backends feed the alarm it evaluates.
"""

from __future__ import annotations

import json
from typing import Any

import boto3
import botocore
import pytest
from botocore.exceptions import ClientError

import sm_peagle
from peagle_sandbox.sandbox_clock import SandboxClock
from peagle_sandbox.testing.moto_sagemaker import SageMakerHarness
from tests.integration.test_harness_monitoring import ACCOUNT, REGION, T0, spec_line


def _client(url: str, service: str) -> Any:
    return boto3.client(service, region_name=REGION, endpoint_url=url)


@pytest.mark.parametrize("low", [False, True])
def test_over_http_the_requests_land_and_the_alarm_follows_the_lines(
    moto_server: str, moto_server_harness: SageMakerHarness, low: bool
) -> None:
    harness = moto_server_harness
    harness.clock = SandboxClock(frozen=True, start=T0)
    monitoring = sm_peagle.plan("gpt-oss-20b", monitor=True).monitoring
    logs, cw = _client(moto_server, "logs"), _client(moto_server, "cloudwatch")
    for service, operation, request in monitoring.requests():
        if operation == "PutDashboard":
            request = monitoring.dashboard_for(ACCOUNT)
        client = logs if service == "logs" else cw
        getattr(client, botocore.xform_name(operation))(**request)
    got = logs.get_transformer(logGroupIdentifier=monitoring.log_group)
    assert got["transformerConfig"] == monitoring.transformer["transformerConfig"]
    filters = logs.describe_metric_filters(logGroupName=monitoring.log_group)["metricFilters"]
    assert {f["applyOnTransformedLogs"] for f in filters} == {True}

    # Five minutes of one line each: acceptance 1.05 (below 1.2) or 1.85.
    accepted = 5 if low else 85
    for minute in range(5):
        harness.seed_logs(
            monitoring.endpoint, [spec_line(100, accepted)], start_ms=(T0 + minute * 60 + 30) * 1000
        )
    harness.clock.advance(5 * 60)
    (alarm,) = cw.describe_alarms(AlarmNames=[monitoring.alarm["AlarmName"]])["MetricAlarms"]
    assert alarm["StateValue"] == ("ALARM" if low else "OK")
    items = cw.describe_alarm_history(
        AlarmName=monitoring.alarm["AlarmName"], HistoryItemType="StateUpdate"
    )["AlarmHistoryItems"]
    new_states = [json.loads(i["HistoryData"])["newState"]["stateValue"] for i in items]
    # OK from the first complete period; ALARM once 3 periods breach (08:03:00).
    assert new_states == (["ALARM", "OK"] if low else ["OK"])

    with pytest.raises(ClientError) as e:  # an AWS-shaped refusal over HTTP as well
        logs.put_retention_policy(logGroupName=monitoring.log_group, retentionInDays=10)
    assert e.value.response["Error"]["Code"] == "InvalidParameterException"
