"""`health` and status's speculation on the moto harness: the metric path (peagle's alarm
and the metrics AWS computes from the SpecDecoding lines) and the log path (the lines
themselves) give the same verdict on the same lines; status shows the alarm state and the
last hour's acceptance with one DescribeAlarms (GetMetricData only when the alarm exists);
a bad window is refused before any request.

The lines are vLLM's format (vllm 0.31.0 `v1/spec_decode/metrics.py`): Mean acceptance
length = 1 + accepted / drafts, drafts = drafted / K. The endpoint `deploy gpt-oss-20b`
makes serves K=3, so the default threshold is 1 + 0.05 x (1 + 3) = 1.2.
"""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

import sm_peagle
from sm_peagle.errors import SpecError
from tests.integration.lifecycle_env import REGION, record_requests, run

NAME = "peagle-gpt-oss-20b-p-eagle"
K = 3
ALARM = f"{NAME}-speculation"


def spec_line(accepted: int, drafted: int, k: int = K) -> str:
    drafts = drafted // k
    return (
        "(APIServer pid=1) INFO 11-29 21:00:00 [metrics.py:96] SpecDecoding metrics: "
        f"Mean acceptance length: {1 + accepted / drafts:.2f}, Accepted throughput: 1.00 "
        f"tokens/s, Drafted throughput: 2.00 tokens/s, Accepted: {accepted} tokens, "
        f"Drafted: {drafted} tokens, Per-position acceptance rate: 0.500, 0.300, 0.100, "
        f"Avg Draft acceptance rate: {100 * accepted / drafted:.1f}%"
    )


ENGINE_LINE = (
    "(APIServer pid=1) INFO 11-29 21:00:00 [loggers.py:123] Engine 000: Avg prompt "
    "throughput: 20.0 tokens/s, Avg generation throughput: 41.2 tokens/s, Running: 1 reqs"
)


@pytest.fixture
def deployed(world: Any, sagemaker_harness: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The endpoint `deploy gpt-oss-20b` makes (K=3), recording CloudWatch and its logs
    from now on."""
    sm_peagle.deploy("gpt-oss-20b")
    record_requests(world, monkeypatch, "cloudwatch", "logs")
    world.requests.clear()
    return world


def seed(harness: Any, lines: list[str], *, seconds_ago: float = 600.0, step: float = 10.0) -> None:
    """The lines, one every `step` seconds from `seconds_ago` before the harness's now (vLLM
    writes one per 10 s stats interval)."""
    start_ms = int((harness.clock.now() - seconds_ago) * 1000)
    harness.seed_logs(NAME, lines, start_ms=start_ms, step_ms=int(step * 1000))


def monitor() -> None:
    """peagle's monitoring on the endpoint: the plan's requests exactly as it sends them
    (`plan.monitoring.requests()`; the log group's CreateLogGroup and retention only when
    it does not exist yet). The harness then evaluates the metric filters on every line
    ingested from here on, as AWS does."""
    from botocore import xform_name

    plan = sm_peagle.plan("gpt-oss-20b", monitor=True)
    assert plan.monitoring is not None and plan.monitoring.k == K
    logs = boto3.client("logs", region_name=REGION)
    exists = bool(
        logs.describe_log_groups(logGroupNamePrefix=plan.monitoring.log_group)["logGroups"]
    )
    for service, operation, request in plan.monitoring.requests():
        if exists and operation in ("CreateLogGroup", "PutRetentionPolicy"):
            continue
        if operation == "PutDashboard":
            request = plan.monitoring.dashboard_for("123456789012")
        getattr(boto3.client(service, region_name=REGION), xform_name(operation))(**request)


def unmonitor() -> None:
    """Only the alarm goes: `health` then reads the same lines from the log group."""
    boto3.client("cloudwatch", region_name=REGION).delete_alarms(AlarmNames=[ALARM])


CASES = {
    # L = 1 + 3 x 120/300 = 2.2 >= 1.2
    "paying": [spec_line(120, 300), spec_line(120, 300), spec_line(60, 150)],
    # L = 1 + 3 x 10/300 = 1.1 < 1.2
    "degraded": [spec_line(10, 300), spec_line(10, 300)],
    # L = 1 + 3 x 0/300 = 1.0 < 1.01
    "off": [spec_line(0, 300)],
}


@pytest.mark.parametrize("verdict", list(CASES))
def test_the_metric_path_and_the_log_path_agree_on_the_same_lines(
    deployed: Any, sagemaker_harness: Any, verdict: str
) -> None:
    lines = CASES[verdict]
    monitor()
    seed(sagemaker_harness, lines)
    by_metric = sm_peagle.health(NAME)
    assert by_metric.source == "metric" and by_metric.alarm["name"] == ALARM
    unmonitor()
    by_lines = sm_peagle.health(NAME)
    assert by_lines.source == "log lines" and by_lines.alarm is None
    for r in (by_lines, by_metric):
        assert r.verdict == verdict, r.evidence
        assert r.k == K and r.threshold == 1.2 and r.samples == len(lines)
    assert by_metric.acceptance_length == pytest.approx(by_lines.acceptance_length)
    assert by_metric.draft_acceptance_rate == pytest.approx(by_lines.draft_acceptance_rate)
    assert by_metric.periods_with_data == by_lines.periods_with_data
    assert by_metric.periods == by_lines.periods == 60  # an hour of the alarm's 60 s periods
    assert by_metric.threshold_source == f"alarm {ALARM}"


def test_the_metric_reads_are_per_alarm_period_over_the_window_on_awss_clock(
    deployed: Any, sagemaker_harness: Any
) -> None:
    monitor()
    seed(sagemaker_harness, CASES["paying"])
    deployed.requests.clear()
    report = sm_peagle.health(NAME, window="30m")
    [alarms] = deployed.sent("DescribeAlarms")
    assert alarms == {"AlarmNames": [ALARM], "AlarmTypes": ["MetricAlarm"]}
    [query] = deployed.sent("GetMetricData")
    stats = {
        (q["MetricStat"]["Metric"]["MetricName"], q["MetricStat"]["Stat"])
        for q in query["MetricDataQueries"]
    }
    assert stats == {
        ("AcceptanceLength", "Average"),
        ("AcceptanceLength", "SampleCount"),
        ("AcceptedTokens", "Sum"),
        ("DraftedTokens", "Sum"),
    }
    for q in query["MetricDataQueries"]:
        assert q["MetricStat"]["Period"] == 60  # the alarm's Period
        assert q["MetricStat"]["Metric"]["Namespace"] == "Peagle/SpeculativeDecoding"
        assert q["MetricStat"]["Metric"]["Dimensions"] == [{"Name": "EndpointName", "Value": NAME}]
    # The window ends at AWS's now (the harness clock) and reaches back at most 30 minutes,
    # to a period boundary.
    from datetime import datetime

    start = datetime.fromisoformat(report.window_start).timestamp()
    end = datetime.fromisoformat(report.window_end).timestamp()
    assert start % 60 == 0 and 1740 < end - start <= 1800
    assert abs(end - sagemaker_harness.clock.now()) < 5
    assert report.periods == 30
    # No log read on the metric path with data.
    assert deployed.sent("FilterLogEvents") == []


def test_idle_is_no_data_and_serving_without_lines_is_off(
    deployed: Any, sagemaker_harness: Any
) -> None:
    idle = sm_peagle.health(NAME)
    assert idle.verdict == "no data" and idle.samples == 0 and idle.source == "log lines"
    monitor()
    assert sm_peagle.health(NAME).verdict == "no data"  # monitored and idle: no datapoint
    seed(sagemaker_harness, [ENGINE_LINE, ENGINE_LINE])
    # Serving (the engine's stats lines) without a SpecDecoding line: no datapoint either.
    serving = sm_peagle.health(NAME)
    assert serving.verdict == "off" and serving.source == "metric"
    assert any("generation throughput > 0" in e for e in serving.evidence), serving.evidence
    unmonitor()
    assert sm_peagle.health(NAME).verdict == "off"


def test_status_shows_the_alarm_state_and_the_last_hours_acceptance(
    deployed: Any, sagemaker_harness: Any, capsys: pytest.CaptureFixture
) -> None:
    st = sm_peagle.status(NAME)
    assert st.speculation is None
    assert deployed.sent("DescribeAlarms") == [
        {"AlarmNames": [ALARM], "AlarmTypes": ["MetricAlarm"]}
    ]
    assert deployed.sent("GetMetricData") == []  # no alarm: no metric read
    code, out, _ = run(capsys, "status", NAME)
    assert code == 0 and "monitoring off (`peagle deploy MODEL --monitor`" in out, out

    monitor()
    seed(sagemaker_harness, CASES["paying"])
    state = boto3.client("cloudwatch", region_name=REGION).describe_alarms(AlarmNames=[ALARM])
    alarm_state = state["MetricAlarms"][0]["StateValue"]
    st = sm_peagle.status(NAME)
    assert st.speculation == {
        "alarm": ALARM,
        "alarm_state": alarm_state,
        "acceptance_length_1h": pytest.approx(1 + 3 * 300 / 750),  # 1 + K x 300/750
        "draft_acceptance_rate_1h": pytest.approx(0.4),
    }
    code, out, _ = run(capsys, "status", NAME, "--json")
    assert code == 0 and json.loads(out)["speculation"]["alarm"] == ALARM
    code, out, _ = run(capsys, "status", NAME)
    assert f"acceptance 2.20 over the last hour (alarm {alarm_state})" in out, out


def test_a_bad_window_is_refused_before_any_request(deployed: Any, capsys: Any) -> None:
    for window in ("soon", "0", -5):
        with pytest.raises(SpecError) as e:
            sm_peagle.health(NAME, window=window)
        assert e.value.field == "window"
    code, out, err = run(capsys, "health", NAME, "--window", "soon")
    assert code == 2 and out == "" and err.startswith("error: ") and "(fix: " in err
    assert deployed.requests == []


def test_a_caller_denied_describe_alarms_still_gets_status_and_health_from_the_lines(
    deployed: Any, sagemaker_harness: Any, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """A deployer policy written before monitoring (no cloudwatch:DescribeAlarms): status
    says the speculation is unknown and why, not "monitoring off"; health judges from the
    log lines and says why."""
    from botocore.exceptions import ClientError

    from sm_peagle.aws import AwsContext

    made = AwsContext.client

    def client(self: AwsContext, service: str, *a: Any, **k: Any) -> Any:
        c = made(self, service, *a, **k)
        if service == "cloudwatch" and not getattr(c, "_denied", False):
            c._denied = True

            def deny(**_: Any) -> None:
                error = {"Code": "AccessDenied", "Message": "not authorized"}
                raise ClientError({"Error": error}, "DescribeAlarms")

            c.meta.events.register("before-call.cloudwatch.DescribeAlarms", deny)
        return c

    monkeypatch.setattr(AwsContext, "client", client)
    seed(sagemaker_harness, CASES["paying"])
    st = sm_peagle.status(NAME)
    assert st.status == "InService"
    assert st.speculation is not None and st.speculation["alarm"] is None
    assert st.speculation["unreadable"] == "cannot read CloudWatch alarms (AccessDenied)"
    code, out, _ = run(capsys, "status", NAME)
    assert code == 0 and "unknown: cannot read CloudWatch alarms (AccessDenied)" in out, out
    report = sm_peagle.health(NAME)
    assert report.verdict == "paying" and report.source == "log lines"
    assert report.evidence[-1] == (
        "cannot read CloudWatch alarms (AccessDenied): judged from the log lines"
    )


def test_a_component_is_judged_from_its_own_log_group(world: Any, sagemaker_harness: Any) -> None:
    sm_peagle.deploy(
        "gpt-oss-20b",
        instance_type="ml.g7e.12xlarge",
        components=["p-eagle:k=7", "baseline"],
        accelerators_per_copy=1,
    )
    with pytest.raises(SpecError) as e:
        sm_peagle.health(NAME)  # which one? both faces name them
    assert e.value.field == "component"
    full = f"{NAME}-p-eagle"
    start_ms = int((sagemaker_harness.clock.now() - 300) * 1000)
    # K=7: L = 1 + 7 x 140/350 = 3.8; the default threshold for K=7 is 1.4.
    line = spec_line(140, 350, k=7)
    assert "Mean acceptance length: 3.80," in line
    sagemaker_harness.seed_logs(NAME, [line], start_ms=start_ms, component=full)
    r = sm_peagle.health(NAME, component="p-eagle")
    assert (r.endpoint, r.verdict, r.source, r.k) == (f"{NAME}/p-eagle", "paying", "log lines", 7)
    assert r.acceptance_length == pytest.approx(3.8) and r.threshold == 1.4
    base = sm_peagle.health(NAME, component="baseline")
    assert base.verdict == "off" and base.k is None


def test_the_alarm_the_harness_evaluates_is_the_evidence_and_statuss_state(
    deployed: Any, sagemaker_harness: Any, capsys: Any
) -> None:
    """Five minutes of lines below the threshold (one a minute, L = 1.1 < 1.2): the alarm,
    3 of 5 periods of 60 s, goes to ALARM; health says degraded with the alarm's state and
    reason, and status shows the same state."""
    monitor()
    seed(sagemaker_harness, [spec_line(10, 300)] * 5, seconds_ago=330, step=60)
    # CloudWatch evaluates an alarm at each period boundary: let one pass.
    sagemaker_harness.clock.advance(60)
    r = sm_peagle.health(NAME)
    assert r.verdict == "degraded" and r.periods_with_data == 5
    assert r.alarm is not None and r.alarm["state"] == "ALARM", r.alarm
    assert r.alarm["reason"].startswith("Threshold Crossed"), r.alarm
    assert f"alarm {ALARM}: ALARM: Threshold Crossed" in r.evidence[-1]
    assert sm_peagle.status(NAME).speculation["alarm_state"] == "ALARM"
    code, out, _ = run(capsys, "status", NAME)
    assert code == 0 and "acceptance 1.10 over the last hour (alarm ALARM)" in out, out
