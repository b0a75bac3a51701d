"""`drafter train`'s wait (lifecycle/training.py): DescribeTrainingJob tried again on a
transient error, a bounded number of times; the job's log read from where it was left,
not from its start on every poll; throttled logs said once.

Fakes stand in for the clients (no AWS, no sleeps: `sleep` is recorded). The expected
values come from the rules (issue 40 review, findings 2 and 10; CloudWatch Logs'
FilterLogEvents: `startTime` is inclusive, events "with a timestamp equal to or later
than this time"), not from the code under test.
"""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError

from sm_peagle.lifecycle import training as lt

JOB = "peagle-train-tiny-0123abcd"


def _error(code: str, op: str = "DescribeTrainingJob") -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": code}}, op)


class _Pages:
    def __init__(self, answer: Any) -> None:
        self.answer = answer

    def paginate(self, **kw: Any) -> Any:
        return self.answer(kw)


class FakeLogs:
    """filter_log_events over `events` (startTime inclusive, as CloudWatch Logs); each
    call's parameters are kept; `fail` raises instead for that many calls."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.calls: list[dict[str, Any]] = []
        self.fail: list[Exception] = []

    def get_paginator(self, name: str) -> _Pages:
        assert name == "filter_log_events"

        def answer(kw: dict[str, Any]) -> list[dict[str, Any]]:
            self.calls.append(kw)
            if self.fail:
                raise self.fail.pop(0)
            since = kw.get("startTime", 0)
            return [{"events": [e for e in self.events if e["timestamp"] >= since]}]

        return _Pages(answer)

    def add(self, ts: int, msg: str, stream: str = f"{JOB}/algo-1-1") -> None:
        self.events.append({"timestamp": ts, "message": msg, "logStreamName": stream,
                            "eventId": f"{stream}:{ts}:{msg}"})  # fmt: skip


class FakeSageMaker:
    def __init__(self, answers: list[Any]) -> None:
        self.answers = answers
        self.calls = 0

    def describe_training_job(self, TrainingJobName: str) -> dict[str, Any]:  # noqa: N803
        self.calls += 1
        a = self.answers.pop(0)
        if isinstance(a, Exception):
            raise a
        return {"TrainingJobName": TrainingJobName, **a}


class FakeAws:
    def __init__(self, sm: FakeSageMaker, logs: FakeLogs) -> None:
        self.clients = {"sagemaker": sm, "logs": logs}

    def client(self, name: str, *a: Any, **k: Any) -> Any:
        return self.clients[name]


DONE = {"TrainingJobStatus": "Completed", "SecondaryStatus": "Completed"}
RUNNING = {"TrainingJobStatus": "InProgress", "SecondaryStatus": "Training"}


def test_a_transient_describe_error_is_tried_again() -> None:
    throttled, offline = _error("ThrottlingException"), EndpointConnectionError(endpoint_url="x")
    sm = FakeSageMaker([throttled, offline, RUNNING, throttled, DONE])
    slept: list[float] = []
    desc = lt.wait_for_job(FakeAws(sm, FakeLogs()), JOB, say=lambda _l: None, poll=1.0,
                           poll_max=30.0, sleep=slept.append)  # fmt: skip
    assert desc["TrainingJobStatus"] == "Completed"
    assert sm.calls == 5
    assert all(s <= 30.0 for s in slept)


def test_the_retries_are_bounded_and_a_lasting_error_is_raised() -> None:
    sm = FakeSageMaker([_error("ThrottlingException")] * 50)
    slept: list[float] = []
    with pytest.raises(ClientError):
        lt.wait_for_job(FakeAws(sm, FakeLogs()), JOB, say=lambda _l: None, poll=1.0,
                        sleep=slept.append)  # fmt: skip
    assert 2 <= sm.calls <= 10  # a few tries, not forever
    assert sum(slept) <= 10 * 60  # minutes of outage at most, on the caller's clock


def test_an_error_that_another_try_cannot_fix_is_raised_at_once() -> None:
    sm = FakeSageMaker([_error("ExpiredTokenException"), DONE])
    with pytest.raises(ClientError):
        lt.wait_for_job(FakeAws(sm, FakeLogs()), JOB, say=lambda _l: None, sleep=lambda _s: None)
    assert sm.calls == 1


def test_the_log_is_read_from_where_it_was_left_each_line_once() -> None:
    logs = FakeLogs()
    said: list[str] = []
    tail = lt.LogTail(logs, JOB, said.append)
    logs.add(1000, "step 1")
    logs.add(2000, "step 2")
    assert tail.lines() == ["step 1", "step 2"]
    logs.add(2000, "step 2b")  # same millisecond as the last line shown
    logs.add(3000, "step 3")
    assert tail.lines() == ["step 2b", "step 3"]
    assert tail.lines() == []
    assert "startTime" not in logs.calls[0]
    # Each later poll starts at the newest timestamp shown: the old lines are not fetched.
    assert [c.get("startTime") for c in logs.calls[1:]] == [2000, 3000]
    assert said == []


def test_a_second_stream_is_read_from_its_own_position() -> None:
    """A restarted instance writes a new stream `<job>/algo-1-<epoch>`; its lines come
    though they are older than the first stream's newest."""
    logs = FakeLogs()
    tail = lt.LogTail(logs, JOB, lambda _l: None)
    logs.add(5000, "a5", stream=f"{JOB}/algo-1-1")
    logs.add(1000, "b1", stream=f"{JOB}/algo-1-2")
    assert tail.lines() == ["b1", "a5"]
    logs.add(1500, "b2", stream=f"{JOB}/algo-1-2")
    assert tail.lines() == ["b2"]


def test_throttled_logs_are_said_once_and_the_lines_come_later() -> None:
    logs = FakeLogs()
    said: list[str] = []
    tail = lt.LogTail(logs, JOB, said.append)
    logs.add(1000, "step 1")
    logs.fail = [_error("ThrottlingException", "FilterLogEvents")] * 2
    assert tail.lines() == [] and tail.lines() == []
    assert len(said) == 1 and "throttled" in said[0]
    assert tail.lines() == ["step 1"]


def test_no_log_group_yet_is_not_a_warning() -> None:
    logs = FakeLogs()
    said: list[str] = []
    logs.fail = [_error("ResourceNotFoundException", "FilterLogEvents")]
    assert lt.LogTail(logs, JOB, said.append).lines() == []
    assert said == []
