"""AWS's time as peagle reads it: the `Date` header of each answer a client of
`AwsContext.client` receives (`aws.AwsClock`), not this machine's clock.

The answers are botocore's own: a `before-send` handler hands botocore an HTTP response
(status, headers, body) instead of sending the request, so everything after it (parsing,
retries, the events peagle listens to) runs as for a real answer. Dates are RFC 7231
IMF-fixdates, as AWS sends them.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from sm_peagle.aws import AwsClock, AwsContext, aws_now

# Two days ahead of any clock this test runs on: what a sandbox clock advanced by a test
# (or a badly set machine clock) looks like.
AHEAD = datetime.now(UTC).replace(microsecond=0) + timedelta(days=2)


def imf(when: datetime) -> str:
    return when.strftime("%a, %d %b %Y %H:%M:%S GMT")


class _Raw:
    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, **_: Any) -> Any:
        yield self._body


def answer_with(status: int, date: str | None, body: bytes = b"{}") -> Any:
    """A `before-send` handler answering every request with `status`, `body` and `Date`."""
    from botocore.awsrequest import AWSResponse

    def send(request: Any, **_: Any) -> Any:
        headers = {"Content-Type": "application/x-amz-json-1.1"}
        if date is not None:
            headers["Date"] = date
        return AWSResponse(request.url, status, headers, _Raw(body))

    return send


@pytest.fixture
def ctx(monkeypatch: pytest.MonkeyPatch) -> AwsContext:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    return AwsContext("us-east-1", max_attempts=0)


def test_before_any_answer_aws_time_is_the_local_clock(ctx: AwsContext) -> None:
    before = datetime.now(UTC)
    assert before <= ctx.aws_now() <= datetime.now(UTC)
    sm = ctx.client("sagemaker")
    assert before <= aws_now(sm) <= datetime.now(UTC)
    assert before <= aws_now(None) <= datetime.now(UTC)  # a client peagle did not make


def test_an_answers_date_is_aws_time_for_the_context_and_its_clients(ctx: AwsContext) -> None:
    sm = ctx.client("sagemaker")
    sm.meta.events.register("before-send.sagemaker", answer_with(200, imf(AHEAD)))
    sm.list_endpoints()
    # Date has one-second resolution; what follows it is local monotonic time since.
    for now in (ctx.aws_now(), aws_now(sm)):
        assert AHEAD <= now < AHEAD + timedelta(seconds=5)
    # Another service's client of the same context, and a derived context (same target),
    # share what was seen.
    assert AHEAD <= aws_now(ctx.client("logs")) < AHEAD + timedelta(seconds=5)
    assert AHEAD <= ctx.derive(max_pool_connections=50).aws_now() < AHEAD + timedelta(seconds=5)
    # Another context is another target: nothing seen there yet.
    assert AwsContext("us-east-1").aws_now() < AHEAD - timedelta(days=1)


def test_an_error_answer_carries_aws_time_too(ctx: AwsContext) -> None:
    from botocore.exceptions import ClientError

    sm = ctx.client("sagemaker")
    body = b'{"__type": "ValidationException", "message": "Could not find endpoint x"}'
    sm.meta.events.register("before-send.sagemaker", answer_with(400, imf(AHEAD), body))
    with pytest.raises(ClientError):
        sm.describe_endpoint(EndpointName="x")
    assert AHEAD <= ctx.aws_now() < AHEAD + timedelta(seconds=5)


def test_the_latest_answer_wins_even_when_its_clock_went_back(ctx: AwsContext) -> None:
    """A sandbox clock may be frozen or reset: the latest Date is AWS's now, not the
    largest seen."""
    sm = ctx.client("sagemaker")
    sm.meta.events.register("before-send.sagemaker", answer_with(200, imf(AHEAD)), "a")
    sm.list_endpoints()
    sm.meta.events.unregister("before-send.sagemaker", unique_id="a")
    earlier = AHEAD - timedelta(days=1)
    sm.meta.events.register("before-send.sagemaker", answer_with(200, imf(earlier)), "b")
    sm.list_endpoints()
    assert earlier <= ctx.aws_now() < earlier + timedelta(seconds=5)


def test_an_answer_without_a_readable_date_changes_nothing(ctx: AwsContext) -> None:
    sm = ctx.client("sagemaker")
    sm.meta.events.register("before-send.sagemaker", answer_with(200, imf(AHEAD)), "a")
    sm.list_endpoints()
    sm.meta.events.unregister("before-send.sagemaker", unique_id="a")
    for date in (None, "not a date"):
        sm.meta.events.register("before-send.sagemaker", answer_with(200, date), "b")
        sm.list_endpoints()
        sm.meta.events.unregister("before-send.sagemaker", unique_id="b")
    assert AHEAD <= ctx.aws_now() < AHEAD + timedelta(seconds=5)


def test_aws_time_runs_on_from_the_date_by_local_monotonic_time() -> None:
    ticks, wall = [100.0], 1_795_000_000.0  # the local clock stands still: only AWS's runs
    clock = AwsClock(monotonic=lambda: ticks[0], wall=lambda: wall)
    assert not clock.seen and clock.offset() == 0.0
    clock.observe(imf(AHEAD))
    assert clock.seen and clock.offset() == AHEAD.timestamp() - wall
    ticks[0] += 90.5
    assert clock.offset() == AHEAD.timestamp() + 90.5 - wall


@pytest.mark.parametrize(
    ("after_date", "offset"),
    [
        (0.0, 0.0),  # the local clock at the Date's own second: they agree
        (0.999, 0.0),  # Date truncates: anywhere within its second agrees
        (1.1, 0.0),  # plus the answer's latency
        (-0.1, 0.0),  # a little skew the other way
        (3.0, -3.0),  # AWS's clock three seconds behind: that is AWS's time
        (-2.0, 2.0),  # two ahead
    ],
)
def test_a_local_clock_within_the_date_s_second_is_aws_s_time(
    after_date: float, offset: float
) -> None:
    """Date has one-second resolution: a local clock that falls within it cannot be told
    from AWS's, and is finer, so it is used (against AWS itself nothing changes)."""
    date = 1_795_000_000.0
    clock = AwsClock(monotonic=lambda: 0.0, wall=lambda: date + after_date)
    clock.observe(imf(datetime.fromtimestamp(date, UTC)))
    assert clock.offset() == pytest.approx(offset)
    assert clock.now() == datetime.fromtimestamp(date + after_date + clock.offset(), UTC)


def test_synced_aws_now_reads_a_date_when_none_was_seen(ctx: AwsContext) -> None:
    """What an operation's deadline is stamped with: never the local clock when AWS's
    can be read (one STS GetCallerIdentity, which every identity may call)."""
    sts = ctx.client("sts")
    calls: list[str] = []
    body = (
        b"<GetCallerIdentityResponse><GetCallerIdentityResult><Arn>arn:aws:iam::123456789012"
        b":user/x</Arn><UserId>X</UserId><Account>123456789012</Account>"
        b"</GetCallerIdentityResult></GetCallerIdentityResponse>"
    )
    send = answer_with(200, imf(AHEAD), body)
    sts.meta.events.register("before-send.sts", lambda **kw: calls.append("sts") or send(**kw))
    assert AHEAD <= ctx.synced_aws_now() < AHEAD + timedelta(seconds=5)
    assert AHEAD <= ctx.synced_aws_now() < AHEAD + timedelta(seconds=5)
    assert calls == ["sts"]  # once: after that, the Date seen is enough


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("1d", 86400.0), ("2d12h", 216000.0), ("1h30m", 5400.0), ("45s", 45.0), ("90", 90.0)],
)
def test_durations_count_days(text: str, seconds: float) -> None:
    """A sandbox clock days ahead makes ages of days ordinary (`gc --min-age 1d`)."""
    from sm_peagle.lifecycle.waiter import parse_duration

    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "1w", "d", "2h1d", "yesterday"])
def test_a_malformed_duration_names_the_forms_including_days(text: str) -> None:
    from sm_peagle.errors import SpecError
    from sm_peagle.lifecycle.waiter import parse_duration

    with pytest.raises(SpecError) as e:
        parse_duration(text, "min_age")
    assert "2d" in str(e.value.remedy)
