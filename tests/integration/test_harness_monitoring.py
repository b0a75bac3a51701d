"""The moto harness computes what CloudWatch Logs and CloudWatch compute for peagle's
monitoring (issue 37): the exact requests of `plan(..., monitor=True)` are accepted and
echoed, vLLM's SpecDecoding lines become datapoints, and the alarm moves on the sandbox
clock. In process (`mock_aws`), on a frozen clock the tests advance; nothing sleeps.

The lines are written in vLLM 0.31.0's own format (`v1/spec_decode/metrics.py`,
`SpecDecodingLogging.log`, copied below), never from peagle's code; the expected numbers
are the ones in those lines, and the alarm's expected states follow AWS's documented
rules (M out of N breaching periods, TreatMissingData=missing), from the request's
threshold.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import botocore
import pytest
from botocore.exceptions import ClientError

import sm_peagle
from peagle_sandbox.sandbox_clock import SandboxClock
from peagle_sandbox.testing.moto_sagemaker import SageMakerHarness

REGION = "us-east-1"
ACCOUNT = "123456789012"  # moto's default account
T0 = 1_800_000_000  # 2027-01-15 08:00:00 UTC, a minute boundary

# vllm 0.31.0 v1/spec_decode/metrics.py, SpecDecodingLogging.log (logger format prefix and
# all): the values are mean acceptance length, accepted/drafted throughput, accepted,
# drafted, the per-position rates and the draft acceptance rate.
SPEC_FORMAT = (
    "SpecDecoding metrics: "
    "Mean acceptance length: %.2f, "
    "Accepted throughput: %.2f tokens/s, "
    "Drafted throughput: %.2f tokens/s, "
    "Accepted: %d tokens, "
    "Drafted: %d tokens, "
    "Per-position acceptance rate: %s, "
    "Avg Draft acceptance rate: %.1f%%"
)
PREFIX = "(APIServer pid=1) INFO 01-15 08:00:00 [metrics.py:96] "
OTHER = [
    "(APIServer pid=1) INFO 01-15 08:00:00 [loggers.py:123] Engine 000: Avg prompt "
    "throughput: 12.0 tokens/s, Avg generation throughput: 40.1 tokens/s, Running: 1 reqs",
    '(APIServer pid=1) INFO:     169.254.178.2:40000 - "POST /invocations HTTP/1.1" 200 OK',
    "Application startup complete.",
]


def spec_line(drafts: int, accepted: int, k: int = 3) -> str:
    """One SpecDecoding line for `drafts` draft steps of K tokens, `accepted` accepted."""
    drafted = drafts * k
    rates = ", ".join("%.3f" % (min(accepted, drafts) / drafts) for _ in range(k))
    return PREFIX + SPEC_FORMAT % (
        1 + accepted / drafts,
        accepted / 10,
        drafted / 10,
        accepted,
        drafted,
        rates,
        100 * accepted / drafted,
    )


@pytest.fixture
def harness(sagemaker_harness: SageMakerHarness) -> SageMakerHarness:
    sagemaker_harness.clock = SandboxClock(frozen=True, start=T0)
    return sagemaker_harness


@pytest.fixture
def monitoring() -> Any:
    return sm_peagle.plan("gpt-oss-20b", monitor=True).monitoring


def _clients() -> tuple[Any, Any]:
    return boto3.client("logs", region_name=REGION), boto3.client("cloudwatch", region_name=REGION)


def put_all(monitoring: Any) -> None:
    """Send the plan's requests, in order, as peagle does (the dashboard for this account)."""
    logs, cw = _clients()
    for service, operation, request in monitoring.requests():
        if operation == "PutDashboard":
            request = monitoring.dashboard_for(ACCOUNT)
        client = logs if service == "logs" else cw
        getattr(client, botocore.xform_name(operation))(**request)


def _at(seconds: float) -> int:
    return int((T0 + seconds) * 1000)


def _stats(cw: Any, endpoint: str, metric: str, start: float, end: float) -> list[dict]:
    points = cw.get_metric_statistics(
        Namespace="Peagle/SpeculativeDecoding",
        MetricName=metric,
        Dimensions=[{"Name": "EndpointName", "Value": endpoint}],
        StartTime=datetime.fromtimestamp(T0 + start, tz=UTC),
        EndTime=datetime.fromtimestamp(T0 + end, tz=UTC),
        Period=60,
        Statistics=["Sum", "Average", "SampleCount"],
    )["Datapoints"]
    return sorted(points, key=lambda p: p["Timestamp"])


def _alarm(cw: Any, name: str) -> dict[str, Any]:
    (alarm,) = cw.describe_alarms(AlarmNames=[name])["MetricAlarms"]
    return dict(alarm)


# ---------------------------------------------------------------- the requests


def test_the_plans_requests_are_accepted_and_echoed_field_by_field(
    harness: SageMakerHarness, monitoring: Any
) -> None:
    for service, operation, request in monitoring.requests():  # botocore's own validator
        model = botocore.session.get_session().get_service_model(service)
        report = botocore.validate.ParamValidator().validate(
            request, model.operation_model(operation).input_shape
        )
        assert not report.has_errors(), report.generate_report()
    put_all(monitoring)
    assert harness.requests.operations("logs") == [
        op for service, op, _ in monitoring.requests() if service == "logs"
    ]
    logs, cw = _clients()
    group = monitoring.log_group

    (described,) = logs.describe_log_groups(logGroupNamePrefix=group)["logGroups"]
    assert described["retentionInDays"] == monitoring.retention["retentionInDays"] == 30
    tags = logs.list_tags_for_resource(resourceArn=described["logGroupArn"])["tags"]
    assert tags == monitoring.create_log_group["tags"]

    got = logs.get_transformer(logGroupIdentifier=group)
    assert got["transformerConfig"] == monitoring.transformer["transformerConfig"]
    assert got["creationTime"] == got["lastModifiedTime"] == T0 * 1000  # the sandbox clock

    filters = logs.describe_metric_filters(logGroupName=group)["metricFilters"]
    sent = {f["filterName"]: f for f in monitoring.metric_filters}
    assert sorted(f["filterName"] for f in filters) == sorted(sent)
    for f in filters:
        assert f.pop("creationTime") == T0 * 1000
        assert f == sent[f["filterName"]]  # applyOnTransformedLogs and all, as sent

    alarm = _alarm(cw, monitoring.alarm["AlarmName"])
    for key, value in monitoring.alarm.items():
        if key != "Tags":
            assert alarm[key] == value, key
    # AWS: "When this operation creates an alarm, the alarm state is immediately set to
    # INSUFFICIENT_DATA."
    assert alarm["StateValue"] == "INSUFFICIENT_DATA"
    assert alarm["StateReason"] == "Unchecked: Initial alarm creation"
    alarm_tags = cw.list_tags_for_resource(ResourceARN=alarm["AlarmArn"])["Tags"]
    assert sorted(alarm_tags, key=lambda t: t["Key"]) == monitoring.alarm["Tags"]

    dashboard = cw.get_dashboard(DashboardName=monitoring.dashboard["DashboardName"])
    assert dashboard["DashboardBody"] == monitoring.dashboard_for(ACCOUNT)["DashboardBody"]
    assert f":{ACCOUNT}:alarm:" in dashboard["DashboardBody"]
    assert dashboard["DashboardArn"] == (
        f"arn:aws:cloudwatch::{ACCOUNT}:dashboard/{monitoring.dashboard['DashboardName']}"
    )
    dash_tags = cw.list_tags_for_resource(ResourceARN=dashboard["DashboardArn"])["Tags"]
    assert sorted(dash_tags, key=lambda t: t["Key"]) == monitoring.dashboard["Tags"]

    cw.delete_dashboards(DashboardNames=[monitoring.dashboard["DashboardName"]])
    assert cw.list_tags_for_resource(ResourceARN=dashboard["DashboardArn"])["Tags"] == []


def test_a_metric_filter_put_again_replaces_the_one_of_that_name(
    harness: SageMakerHarness, monitoring: Any
) -> None:
    put_all(monitoring)
    logs, _ = _clients()
    changed = {**monitoring.metric_filters[0], "filterPattern": "{ $.acceptance_length >= 2 }"}
    logs.put_metric_filter(**changed)
    filters = logs.describe_metric_filters(logGroupName=monitoring.log_group)["metricFilters"]
    assert len(filters) == 3
    (same,) = [f for f in filters if f["filterName"] == changed["filterName"]]
    assert same["filterPattern"] == "{ $.acceptance_length >= 2 }"


def test_delete_log_group_takes_its_transformer_and_filters(
    harness: SageMakerHarness, monitoring: Any
) -> None:
    put_all(monitoring)
    logs, _ = _clients()
    logs.delete_log_group(logGroupName=monitoring.log_group)
    assert logs.describe_metric_filters()["metricFilters"] == []
    logs.create_log_group(logGroupName=monitoring.log_group)  # the same name, new group
    with pytest.raises(ClientError) as e:
        logs.get_transformer(logGroupIdentifier=monitoring.log_group)
    assert e.value.response["Error"]["Code"] == "ResourceNotFoundException"
    assert logs.describe_metric_filters()["metricFilters"] == []


def test_transformer_calls_on_a_missing_log_group_are_resource_not_found(
    harness: SageMakerHarness, monitoring: Any
) -> None:
    logs, _ = _clients()
    for call in (
        lambda: logs.put_transformer(**monitoring.transformer),
        lambda: logs.get_transformer(logGroupIdentifier=monitoring.log_group),
        lambda: logs.delete_transformer(logGroupIdentifier=monitoring.log_group),
        lambda: logs.put_metric_filter(**monitoring.metric_filters[0]),
    ):
        with pytest.raises(ClientError) as e:
            call()
        assert e.value.response["Error"]["Code"] == "ResourceNotFoundException"
    assert logs.describe_log_groups()["logGroups"] == []


def test_bad_requests_fail_as_aws_fails_them_and_store_nothing(
    harness: SageMakerHarness, monitoring: Any
) -> None:
    logs, cw = _clients()
    logs.create_log_group(logGroupName=monitoring.log_group)
    # boto3 cannot even serialize a member its model lacks: rename it on the wire.
    renaming = boto3.client("logs", region_name=REGION)

    def rename(request: Any, **_: Any) -> None:
        request.data = request.data.replace(b'"grok"', b'"grokk"')

    renaming.meta.events.register("before-sign.logs.PutTransformer", rename)

    def error(call: Any) -> dict[str, str]:
        with pytest.raises(ClientError) as e:
            call()
        return dict(e.value.response["Error"])

    # A grok match longer than botocore's GrokMatch maximum (512): AWS's validation error.
    long_grok = json.loads(json.dumps(monitoring.transformer))
    long_grok["transformerConfig"][0]["grok"]["match"] = "Accepted: %{NUMBER:a} " + "x" * 500
    err = error(lambda: logs.put_transformer(**long_grok))
    assert err["Code"] == "InvalidParameterException"
    assert "transformerConfig.1.member.grok.match" in err["Message"]
    assert "less than or equal to 512" in err["Message"]

    # A processor AWS does not have (boto3 would refuse it before sending).
    err = error(lambda: renaming.put_transformer(**monitoring.transformer))
    assert err["Code"] == "InvalidParameterException"
    assert "grokk" in err["Message"]

    # A retention AWS does not offer (its documented values: ... 7, 14, 30 ...).
    err = error(lambda: logs.put_retention_policy(logGroupName=monitoring.log_group,
                                                  retentionInDays=10))  # fmt: skip
    assert err["Code"] == "InvalidParameterException"
    assert "retentionInDays" in err["Message"]

    # A metric unit outside StandardUnit.
    bad_unit = json.loads(json.dumps(monitoring.metric_filters[0]))
    bad_unit["metricTransformations"][0]["unit"] = "Tokens"
    err = error(lambda: logs.put_metric_filter(**bad_unit))
    assert err["Code"] == "InvalidParameterException"

    # CloudWatch: a tag key over 128 characters on the dashboard.
    dash = monitoring.dashboard_for(ACCOUNT)
    err = error(lambda: cw.put_dashboard(**{**dash, "Tags": [{"Key": "k" * 129, "Value": "v"}]}))
    assert err["Code"] == "InvalidParameterValue"

    # Nothing was stored by any of them.
    (group,) = logs.describe_log_groups()["logGroups"]
    assert "retentionInDays" not in group
    with pytest.raises(ClientError):
        logs.get_transformer(logGroupIdentifier=monitoring.log_group)
    assert logs.describe_metric_filters()["metricFilters"] == []
    assert cw.list_dashboards()["DashboardEntries"] == []


# ---------------------------------------------------------------- datapoints


def test_spec_decoding_lines_become_datapoints_with_the_lines_numbers(
    harness: SageMakerHarness, monitoring: Any
) -> None:
    put_all(monitoring)
    _, cw = _clients()
    endpoint = monitoring.endpoint
    # Minute 0: two lines (10 s apart, as vLLM's stats interval), minute 1: one line,
    # other lines around them; minute 2: nothing.
    minute0 = [spec_line(drafts=100, accepted=85), spec_line(drafts=50, accepted=20)]
    minute1 = [spec_line(drafts=40, accepted=60)]
    harness.seed_logs(endpoint, [OTHER[0], minute0[0], OTHER[1]], start_ms=_at(0), step_ms=1)
    harness.seed_logs(endpoint, [minute0[1], OTHER[2]], start_ms=_at(10))
    harness.seed_logs(endpoint, [minute1[0]], start_ms=_at(70))
    # Another endpoint's group with the same filters must not feed this endpoint's metric.
    other = sm_peagle.plan("gpt-oss-20b", monitor=True, name="other-ep").monitoring
    put_all(other)
    harness.seed_logs(other.endpoint, [spec_line(drafts=10, accepted=1)], start_ms=_at(5))

    length = _stats(cw, endpoint, "AcceptanceLength", 0, 180)
    assert [p["Timestamp"] for p in length] == [
        datetime.fromtimestamp(T0, tz=UTC),
        datetime.fromtimestamp(T0 + 60, tz=UTC),
    ]
    # The lines' own "Mean acceptance length" values: 1.85 and 1.40, then 2.50.
    assert [p["SampleCount"] for p in length] == [2, 1]
    assert length[0]["Average"] == pytest.approx((1.85 + 1.40) / 2)
    assert length[1]["Average"] == pytest.approx(2.50)
    accepted = _stats(cw, endpoint, "AcceptedTokens", 0, 180)
    assert [p["Sum"] for p in accepted] == [85 + 20, 60]
    drafted = _stats(cw, endpoint, "DraftedTokens", 0, 180)
    assert [p["Sum"] for p in drafted] == [300 + 150, 120]
    assert {p["Unit"] for p in accepted + drafted} == {"Count"}
    assert {p["Unit"] for p in length} == {"None"}

    data = cw.get_metric_data(
        MetricDataQueries=[
            {
                "Id": "acc",
                "MetricStat": {
                    "Metric": {
                        "Namespace": "Peagle/SpeculativeDecoding",
                        "MetricName": "AcceptedTokens",
                        "Dimensions": [{"Name": "EndpointName", "Value": "other-ep"}],
                    },
                    "Period": 60,
                    "Stat": "Sum",
                },
            }
        ],
        StartTime=datetime.fromtimestamp(T0, tz=UTC),
        EndTime=datetime.fromtimestamp(T0 + 180, tz=UTC),
    )["MetricDataResults"]
    assert data[0]["Values"] == [1.0]


def test_no_filter_no_datapoint_and_a_default_value_for_every_other_event(
    harness: SageMakerHarness,
) -> None:
    logs, cw = _clients()
    logs.create_log_group(logGroupName="g")
    # A raw-text filter (no transformer): AWS publishes metricValue for a matching event and
    # defaultValue "when a filter pattern does not match a log event".
    logs.put_metric_filter(
        logGroupName="g",
        filterName="errors",
        filterPattern='ERROR "engine dead"',
        metricTransformations=[{"metricName": "Errors", "metricNamespace": "T",
                                "metricValue": "1", "defaultValue": 0.0}],
    )  # fmt: skip
    logs.create_log_stream(logGroupName="g", logStreamName="s")
    logs.put_log_events(
        logGroupName="g",
        logStreamName="s",
        logEvents=[
            {"timestamp": _at(1), "message": "ERROR engine dead: pid 283"},
            {"timestamp": _at(2), "message": "ERROR something else"},
            {"timestamp": _at(3), "message": "INFO fine"},
        ],
    )
    (point,) = cw.get_metric_statistics(
        Namespace="T", MetricName="Errors", StartTime=datetime.fromtimestamp(T0, tz=UTC),
        EndTime=datetime.fromtimestamp(T0 + 60, tz=UTC), Period=60,
        Statistics=["Sum", "SampleCount"],
    )["Datapoints"]  # fmt: skip
    assert (point["Sum"], point["SampleCount"]) == (1.0, 3.0)


def test_transformer_processors_as_test_transformer_shows_them(harness: SageMakerHarness) -> None:
    logs, _ = _clients()
    config = [
        {"parseJSON": {}},
        {"grok": {"source": "msg", "match": "took %{NUMBER:ms} ms on %{DATA:host} at"}},
        {"typeConverter": {"entries": [{"key": "ms", "type": "double"},
                                       {"key": "absent", "type": "integer"}]}},
        {"copyValue": {"entries": [{"source": "host", "target": "meta.host"}]}},
        {"addKeys": {"entries": [{"key": "level", "value": "INFO"},
                                 {"key": "env", "value": "prod", "overwriteIfExists": True}]}},
    ]  # fmt: skip
    out = logs.test_transformer(
        transformerConfig=config,
        logEventMessages=[
            json.dumps({"msg": "request took 12.5 ms on node-1 at noon", "level": "WARN",
                        "env": "dev"}),
            "not json at all",
        ],
    )["transformedLogs"]  # fmt: skip
    assert json.loads(out[0]["transformedEventMessage"]) == {
        "msg": "request took 12.5 ms on node-1 at noon",
        "ms": 12.5,
        "host": "node-1",
        "meta": {"host": "node-1"},
        "level": "WARN",  # addKeys without overwriteIfExists keeps the event's own
        "env": "prod",
    }
    # Not JSON, no "msg" for grok: only the added keys.
    assert json.loads(out[1]["transformedEventMessage"]) == {"level": "INFO", "env": "prod"}


def test_a_processor_the_harness_does_not_emulate_fails_loudly_on_ingestion(
    harness: SageMakerHarness,
) -> None:
    from peagle_sandbox.testing.moto_grok import NotEmulated

    logs, _ = _clients()
    logs.create_log_group(logGroupName="g")
    logs.put_transformer(  # valid AWS input: accepted
        logGroupIdentifier="g", transformerConfig=[{"lowerCaseString": {"withKeys": ["a"]}}]
    )
    logs.put_metric_filter(
        logGroupName="g", filterName="f", filterPattern="",
        metricTransformations=[{"metricName": "M", "metricNamespace": "T", "metricValue": "1"}],
        applyOnTransformedLogs=True,
    )  # fmt: skip
    logs.create_log_stream(logGroupName="g", logStreamName="s")
    with pytest.raises(NotEmulated, match="lowerCaseString"):
        logs.put_log_events(
            logGroupName="g", logStreamName="s", logEvents=[{"timestamp": _at(0), "message": "A"}]
        )


# ---------------------------------------------------------------- the alarm


def _minute_lines(harness: SageMakerHarness, endpoint: str, minute: int, length: float) -> None:
    """One SpecDecoding line 30 s into `minute` whose mean acceptance length is `length`
    (100 drafts of K=3)."""
    accepted = round((length - 1) * 100)
    harness.seed_logs(endpoint, [spec_line(100, accepted)], start_ms=_at(minute * 60 + 30))


def test_the_alarm_is_ok_while_paying_alarm_after_3_of_5_low_periods_then_no_data(
    harness: SageMakerHarness, monitoring: Any
) -> None:
    put_all(monitoring)
    _, cw = _clients()
    name, endpoint = monitoring.alarm["AlarmName"], monitoring.endpoint
    threshold = monitoring.alarm["Threshold"]
    assert (monitoring.alarm["EvaluationPeriods"], monitoring.alarm["DatapointsToAlarm"]) == (5, 3)
    assert threshold == 1.2 and monitoring.alarm["TreatMissingData"] == "missing"

    # Minutes 0-1: paying (1.85). The alarm judges complete periods only.
    for minute in (0, 1):
        _minute_lines(harness, endpoint, minute, 1.85)
    harness.clock.advance(60)
    assert _alarm(cw, name)["StateValue"] == "OK"  # 1 datapoint present, none breaching
    harness.clock.advance(60)
    assert _alarm(cw, name)["StateValue"] == "OK"

    # Minutes 2, 3, 4: speculation stops paying (1.05 < 1.2). ALARM once 3 of the last 5
    # periods breach: at the boundary closing minute 4 (08:05:00), not before.
    for minute in (2, 3, 4):
        _minute_lines(harness, endpoint, minute, 1.05)
    harness.clock.advance(2 * 60)
    assert _alarm(cw, name)["StateValue"] == "OK"  # 2 of 5 so far
    harness.clock.advance(60 + 20)  # past 08:05:00, read at 08:05:20
    alarm = _alarm(cw, name)
    assert alarm["StateValue"] == "ALARM"
    assert alarm["StateUpdatedTimestamp"] == datetime.fromtimestamp(T0 + 300, tz=UTC)
    reason = alarm["StateReason"]
    assert reason.startswith("Threshold Crossed: 3 out of the last 5 datapoints [")
    for minute in (4, 3, 2):  # newest first, each with its period's start
        stamp = datetime.fromtimestamp(T0 + minute * 60, tz=UTC).strftime("%d/%m/%y %H:%M:%S")
        assert f"1.05 ({stamp})" in reason
    assert "were less than the threshold (1.2)" in reason
    data = json.loads(alarm["StateReasonData"])
    assert data["threshold"] == 1.2 and data["period"] == 60
    assert data["statistic"] == "Average"
    assert data["recentDatapoints"] == [1.85, 1.85, 1.05, 1.05, 1.05]

    # Idle from minute 5 on: no line, no datapoint. With TreatMissingData=missing the
    # alarm judges the periods that have data: at 08:08 only 2 of them breach (minutes 3
    # and 4): OK; once all 5 periods are empty (08:10) it is INSUFFICIENT_DATA.
    harness.clock.advance(2 * 60)  # 08:07:20: minutes 2, 3, 4 still in the range
    assert _alarm(cw, name)["StateValue"] == "ALARM"
    harness.clock.advance(60)  # 08:08:20
    alarm = _alarm(cw, name)
    assert alarm["StateValue"] == "OK"
    assert alarm["StateUpdatedTimestamp"] == datetime.fromtimestamp(T0 + 480, tz=UTC)
    harness.clock.advance(2 * 60)  # 08:10:20
    alarm = _alarm(cw, name)
    assert alarm["StateValue"] == "INSUFFICIENT_DATA"
    assert alarm["StateReason"] == "Insufficient Data: 5 datapoints were unknown."
    assert alarm["StateUpdatedTimestamp"] == datetime.fromtimestamp(T0 + 600, tz=UTC)

    history = cw.describe_alarm_history(AlarmName=name, HistoryItemType="StateUpdate")
    items = history["AlarmHistoryItems"]
    # Newest first, each stamped at the boundary where the state changed.
    assert [(i["Timestamp"], json.loads(i["HistoryData"])["newState"]["stateValue"])
            for i in items] == [
        (datetime.fromtimestamp(T0 + 600, tz=UTC), "INSUFFICIENT_DATA"),
        (datetime.fromtimestamp(T0 + 480, tz=UTC), "OK"),
        (datetime.fromtimestamp(T0 + 300, tz=UTC), "ALARM"),
        (datetime.fromtimestamp(T0 + 60, tz=UTC), "OK"),
    ]  # fmt: skip
    items = items[1:]
    assert items[1]["HistorySummary"] == "Alarm updated from OK to ALARM"
    data = json.loads(items[1]["HistoryData"])
    assert data["oldState"]["stateValue"] == "OK"
    assert data["newState"]["stateReason"] == reason
    assert data["newState"]["stateReasonData"]["recentDatapoints"][-3:] == [1.05, 1.05, 1.05]
    everything = cw.describe_alarm_history(AlarmName=name)["AlarmHistoryItems"]
    assert everything[-1]["HistoryItemType"] == "ConfigurationUpdate"  # the creation
    assert everything[-1]["Timestamp"] == datetime.fromtimestamp(T0, tz=UTC)


def test_an_idle_alarm_stays_insufficient_data_and_an_update_keeps_the_state(
    harness: SageMakerHarness, monitoring: Any
) -> None:
    put_all(monitoring)
    _, cw = _clients()
    name = monitoring.alarm["AlarmName"]
    harness.clock.advance(timedelta(hours=1).total_seconds())
    alarm = _alarm(cw, name)
    assert alarm["StateValue"] == "INSUFFICIENT_DATA"
    assert (
        cw.describe_alarm_history(AlarmName=name, HistoryItemType="StateUpdate")[
            "AlarmHistoryItems"
        ]
        == []
    )  # never changed: no state update
    _minute_lines(harness, monitoring.endpoint, 60, 1.02)  # minute 60: low
    harness.clock.advance(60)
    assert _alarm(cw, name)["StateValue"] == "OK"  # 1 breaching of 1 present < 3
    # AWS: "When you update an existing alarm, its state is left unchanged".
    cw.put_metric_alarm(**{**monitoring.alarm, "DatapointsToAlarm": 1})
    assert _alarm(cw, name)["StateValue"] == "OK"
    harness.clock.advance(60)  # the next boundary: 1 of 5 breaching, M=1 now
    assert _alarm(cw, name)["StateValue"] == "ALARM"


def test_alarms_evaluate_when_the_clock_advances_without_anyone_asking(
    harness: SageMakerHarness, monitoring: Any
) -> None:
    put_all(monitoring)
    _minute_lines(harness, monitoring.endpoint, 0, 1.85)
    harness.clock.advance(60)  # on_advance: evaluated now, not at the next Describe
    from moto.cloudwatch.models import cloudwatch_backends

    stored = cloudwatch_backends[ACCOUNT][REGION].alarms[monitoring.alarm["AlarmName"]]
    assert stored.state_value == "OK"


# ---------------------------------------------------------------- uninstall


def test_uninstall_restores_moto_exactly(aws: None) -> None:
    from moto.cloudwatch.models import CloudWatchBackend
    from moto.cloudwatch.responses import CloudWatchResponse
    from moto.logs.models import LogGroup, LogsBackend
    from moto.logs.responses import LogsResponse

    classes = (LogsResponse, LogsBackend, LogGroup, CloudWatchResponse, CloudWatchBackend)
    before = [dict(cls.__dict__) for cls in classes]
    assert not hasattr(LogsResponse, "put_transformer")  # stock moto 5.2.5
    with SageMakerHarness(region=REGION):
        assert hasattr(LogsResponse, "put_transformer")
        assert hasattr(CloudWatchResponse, "describe_alarm_history")
    assert [dict(cls.__dict__) for cls in classes] == before
    assert not hasattr(LogsResponse, "put_transformer")
    with pytest.raises(NotImplementedError):
        boto3.client("logs", region_name=REGION).get_transformer(logGroupIdentifier="g")


# ---------------------------------------------------------------- alarm rules in general


def _generic_alarm(cw: Any, treat: str, **extra: Any) -> None:
    cw.put_metric_alarm(
        AlarmName="generic", Namespace="T", MetricName="Latency",
        Dimensions=[{"Name": "Ep", "Value": "a"}], Period=60, EvaluationPeriods=3,
        DatapointsToAlarm=2, Threshold=100.0, ComparisonOperator="GreaterThanThreshold",
        TreatMissingData=treat, **({"Statistic": "Average"} | extra),
    )  # fmt: skip


def _put(cw: Any, minute: int, *values: float) -> None:
    cw.put_metric_data(
        Namespace="T",
        MetricData=[
            {"MetricName": "Latency", "Dimensions": [{"Name": "Ep", "Value": "a"}],
             "Timestamp": datetime.fromtimestamp(T0 + minute * 60 + 5 + i, tz=UTC),
             "Value": v}
            for i, v in enumerate(values)
        ],
    )  # fmt: skip


@pytest.mark.parametrize(
    ("treat", "expected"),
    [
        # One breaching period (minute 0) and two missing, 2 of 3 needed (AWS's definitions):
        ("breaching", "ALARM"),  # missing periods count as breaching: 3 of 3
        ("notBreaching", "OK"),  # missing periods count as fine: 1 of 3
        ("missing", "OK"),  # only the period with data is judged: 1 < 2
        ("ignore", "OK"),  # as missing while some period has data
    ],
)
def test_treat_missing_data_as_aws_defines_it(
    harness: SageMakerHarness, treat: str, expected: str
) -> None:
    _, cw = _clients()
    _generic_alarm(cw, treat)
    _put(cw, 0, 150.0)
    harness.clock.advance(3 * 60)  # the boundary at minute 3 judges minutes 0-2
    assert _alarm(cw, "generic")["StateValue"] == expected


def test_with_every_period_missing_ignore_keeps_the_state_and_breaching_alarms(
    harness: SageMakerHarness,
) -> None:
    _, cw = _clients()
    _generic_alarm(cw, "ignore")
    harness.clock.advance(10 * 60)
    assert _alarm(cw, "generic")["StateValue"] == "INSUFFICIENT_DATA"  # kept from creation
    _generic_alarm(cw, "breaching")
    harness.clock.advance(60)
    assert _alarm(cw, "generic")["StateValue"] == "ALARM"


def test_a_percentile_alarm_uses_the_nearest_rank(harness: SageMakerHarness) -> None:
    _, cw = _clients()
    cw.put_metric_alarm(
        AlarmName="generic", Namespace="T", MetricName="Latency",
        Dimensions=[{"Name": "Ep", "Value": "a"}], Period=60, EvaluationPeriods=1,
        Threshold=100.0, ComparisonOperator="GreaterThanThreshold", ExtendedStatistic="p90",
    )  # fmt: skip
    # Ten values 10..100: p90 is the nearest-rank 9th, 90: not above 100.
    _put(cw, 0, *[float(v) for v in range(10, 101, 10)])
    harness.clock.advance(60)
    alarm = _alarm(cw, "generic")
    assert alarm["StateValue"] == "OK"
    assert json.loads(alarm["StateReasonData"])["recentDatapoints"] == [90.0]
    _put(cw, 1, *[float(v) for v in range(110, 201, 10)])  # 110..200: p90 = 190
    harness.clock.advance(60)
    alarm = _alarm(cw, "generic")
    assert alarm["StateValue"] == "ALARM"
    assert alarm["StateReason"] == (
        "Threshold Crossed: 1 datapoint [190.0 ("
        + datetime.fromtimestamp(T0 + 60, tz=UTC).strftime("%d/%m/%y %H:%M:%S")
        + ")] was greater than the threshold (100.0)."
    )
