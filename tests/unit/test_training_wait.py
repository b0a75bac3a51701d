"""`drafter train`'s wait (lifecycle/training.py): DescribeTrainingJob tried again on a
transient error, a bounded number of times; each of the job's log streams read from
where it was left (its nextForwardToken), not from its start on every poll; throttled
logs said once.

Fakes stand in for the clients (no AWS, no sleeps: `sleep` is recorded). The expected
values come from the rules (issue 40 review, findings 2 and 10; CloudWatch Logs'
GetLogEvents: "If you have reached the end of the stream, it returns the same token you
passed in"; an answer holds at most 10,000 events), not from the code under test.
"""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError

from sm_peagle.lifecycle import training as lt

JOB = "peagle-train-tiny-0123abcd"


def _error(code: str, op: str = "DescribeTrainingJob") -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": code}}, op)


class FakeLogs:
    """DescribeLogStreams and GetLogEvents over `streams`, as CloudWatch Logs answers:
    a forward token per position, the same token back at the end of a stream, at most
    `page` events an answer. Each call's parameters are kept; `fail` raises instead."""

    def __init__(self, page: int = 100) -> None:
        self.streams: dict[str, list[dict[str, Any]]] = {}
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.fail: list[Exception] = []
        self.page = page

    def _maybe_fail(self) -> None:
        if self.fail:
            raise self.fail.pop(0)

    def get_paginator(self, name: str) -> Any:
        assert name == "describe_log_streams"
        logs = self

        class Pages:
            def paginate(self, **kw: Any) -> list[dict[str, Any]]:
                logs.calls.append(("DescribeLogStreams", kw))
                logs._maybe_fail()
                names = [n for n in logs.streams if n.startswith(kw["logStreamNamePrefix"])]
                return [{"logStreams": [{"logStreamName": n} for n in names]}]

        return Pages()

    def get_log_events(self, **kw: Any) -> dict[str, Any]:
        self.calls.append(("GetLogEvents", kw))
        self._maybe_fail()
        events = self.streams[kw["logStreamName"]]
        at = int(kw["nextToken"][2:]) if "nextToken" in kw else 0
        got = events[at : at + self.page]
        return {"events": got, "nextForwardToken": f"f/{at + len(got)}"}

    def add(self, ts: int, msg: str, stream: str = f"{JOB}/algo-1-1") -> None:
        self.streams.setdefault(stream, []).append({"timestamp": ts, "message": msg})

    def read(self) -> list[tuple[str, str | None]]:
        """(stream, token) of each GetLogEvents so far."""
        return [(kw["logStreamName"], kw.get("nextToken")) for op, kw in self.calls
                if op == "GetLogEvents"]  # fmt: skip


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
    assert tail.lines() == []  # no stream yet (the job is starting)
    logs.add(1000, "step 1")
    logs.add(2000, "step 2")
    assert tail.lines() == ["step 1", "step 2"]
    logs.add(2000, "step 2b")  # same millisecond as the last line shown
    logs.add(3000, "step 3")
    assert tail.lines() == ["step 2b", "step 3"]
    assert tail.lines() == []
    # Each read starts at the position the last one ended: never from the start again.
    stream = f"{JOB}/algo-1-1"
    assert logs.read() == [(stream, None), (stream, "f/2"), (stream, "f/4")]
    assert said == []


def test_a_backlog_longer_than_an_answer_comes_over_the_next_polls() -> None:
    logs = FakeLogs(page=2)
    tail = lt.LogTail(logs, JOB, lambda _l: None)
    for i in range(5):
        logs.add(1000 + i, f"step {i}")
    got = tail.lines() + tail.lines() + tail.lines() + tail.lines()
    assert got == [f"step {i}" for i in range(5)]


def test_a_restarted_instances_stream_is_read_from_its_own_position() -> None:
    """A restart writes a new stream `<job>/algo-1-<epoch>`; the old one, ended, is not
    read again from its start, and the new one is read from its own start."""
    logs = FakeLogs()
    tail = lt.LogTail(logs, JOB, lambda _l: None)
    old, new = f"{JOB}/algo-1-1", f"{JOB}/algo-1-2"
    logs.add(1000, "a1", stream=old)
    logs.add(2000, "a2", stream=old)
    assert tail.lines() == ["a1", "a2"]
    logs.add(5000, "b1", stream=new)
    assert tail.lines() == ["b1"]
    logs.add(6000, "b2", stream=new)
    assert tail.lines() == ["b2"]
    assert logs.read() == [(old, None), (old, "f/2"), (new, None), (old, "f/2"), (new, "f/1")]


def test_throttled_logs_are_said_once_and_the_lines_come_later() -> None:
    logs = FakeLogs()
    said: list[str] = []
    tail = lt.LogTail(logs, JOB, said.append)
    logs.add(1000, "step 1")
    logs.fail = [_error("ThrottlingException", "DescribeLogStreams")] * 2
    assert tail.lines() == [] and tail.lines() == []
    assert len(said) == 1 and "throttled" in said[0]
    assert tail.lines() == ["step 1"]


def test_no_log_group_yet_is_not_a_warning() -> None:
    logs = FakeLogs()
    said: list[str] = []
    logs.fail = [_error("ResourceNotFoundException", "DescribeLogStreams")]
    assert lt.LogTail(logs, JOB, said.append).lines() == []
    assert said == []
