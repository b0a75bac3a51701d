"""A bench against an endpoint that stops answering stops, and a run is judged by its
error rate (benchmarking/breaker.py); its request records stream to `--requests-out` as
each request finishes (benchmarking/export.py).

The rules, as stated in breaker.py and the bench docstring:
- a level stops after max(10, 2 x concurrency) consecutive requests that could not
  connect (no answer at all, or the endpoint gone); an error answer from a live model
  (a 4xx ModelError) does not count and resets the count; after the stop nothing is sent;
- a run fails when failed / total > max_error_rate (default 0.05), or a level stopped;
- max_error_rate is a fraction from 0 to 1.
"""

from __future__ import annotations

import json
import math
import threading
import typing
from pathlib import Path

import pytest

from sm_peagle.benchmarking.breaker import Breaker, consecutive_limit, run_verdict
from sm_peagle.benchmarking.datasets import builtin
from sm_peagle.benchmarking.export import RequestExporter
from sm_peagle.benchmarking.load import LoadSpec, _open, run_level
from sm_peagle.benchmarking.metrics import RequestRecord, summarize_level
from sm_peagle.cli.faces import CliFace
from sm_peagle.errors import SpecError
from sm_peagle.ops.measure_checks import check_error_rate
from tests.stream_fixtures import fake_runtime

MEASURED_MAX_TOKENS = 256  # LoadSpec's default; the pool-opening requests ask for 1


def rec(i: int, kind: str | None) -> RequestRecord:
    """A finished request: ok when `kind` is None, else failed with that error_kind."""
    return RequestRecord(index=i, ok=kind is None, sent_at=float(i), ended_at=i + 0.5,
                         error=kind and f"{kind} happened", error_kind=kind)  # fmt: skip


# -- the stopping rule -------------------------------------------------------------------


@pytest.mark.parametrize(("concurrency", "limit"), [(1, 10), (5, 10), (6, 12), (32, 64)])
def test_the_consecutive_limit_is_max_of_10_and_twice_the_concurrency(concurrency, limit):
    assert consecutive_limit(concurrency) == limit


def test_the_breaker_trips_on_the_limit_th_connection_failure_in_a_row() -> None:
    b = Breaker(concurrency=1)
    for i in range(9):
        b.observe(rec(i, "AwsUnreachable"))
    assert not b.stop.is_set() and b.stopped is None
    b.observe(rec(9, "AwsUnreachable"))
    assert b.stop.is_set()
    assert b.stopped is not None and b.stopped["consecutive_failures"] == 10
    assert b.stopped["limit"] == 10 and b.stopped["error_kind"] == "AwsUnreachable"


@pytest.mark.parametrize("kind", ["AwsUnreachable", "NotFound", "ModelStreamError:StreamBroken",
                                  "ModelStreamError:ReadTimeout"])  # fmt: skip
def test_every_kind_of_no_answer_counts(kind: str) -> None:
    b = Breaker(concurrency=1)
    for i in range(10):
        b.observe(rec(i, kind))
    assert b.stop.is_set()


def test_an_answer_resets_the_count_and_error_answers_never_stop_a_level() -> None:
    b = Breaker(concurrency=1)
    for i in range(9):
        b.observe(rec(i, "AwsUnreachable"))
    b.observe(rec(9, "ModelInvocationError:400"))  # the model answered: it is there
    for i in range(10, 19):
        b.observe(rec(i, "AwsUnreachable"))
    b.observe(rec(19, None))
    for i in range(20, 29):
        b.observe(rec(i, "AwsUnreachable"))
    for i in range(29, 100):  # a live model refusing every prompt: the error rate judges it
        b.observe(rec(i, "ModelInvocationError:400"))
    b.observe(rec(100, "NoUsage"))
    assert not b.stop.is_set()


# -- the run's verdict ---------------------------------------------------------------------


def doc_of(*levels: list[RequestRecord], stopped_at: int | None = None) -> dict:
    out = []
    for n, records in enumerate(levels):
        level = summarize_level(records, concurrency=n + 1)
        if n == stopped_at:
            level["stopped"] = {"consecutive_failures": 10, "limit": 10,
                                "error_kind": "AwsUnreachable"}  # fmt: skip
        out.append(level)
    return {"endpoint": "ep", "levels": out}


def test_the_error_rate_is_failed_over_total_across_every_level() -> None:
    # 1 of 20 then 1 of 20: 2 / 40 = 0.05 exactly, which is not over 0.05.
    one_in_twenty = [rec(i, "ModelInvocationError:400" if i == 0 else None) for i in range(20)]
    doc = doc_of(one_in_twenty, one_in_twenty)
    assert run_verdict(doc, 0.05) is None
    verdict = run_verdict(doc, 0.049)
    assert verdict is not None and verdict["error_rate"] == pytest.approx(0.05)
    assert "2 of 40 requests failed" in verdict["message"]
    # Python names the keyword; the CLI words the same message with its flag.
    assert "error rate 5.0% is over max_error_rate=0.049" in verdict["message"]
    cli = verdict["message"].render(CliFace("bench"))
    assert "error rate 5.0% is over --max-error-rate 0.049" in cli
    assert "--max-error-rate 1 accepts any error rate" in verdict["remedy"].render(CliFace("bench"))
    assert "max_error_rate=1 accepts any error rate" in verdict["remedy"]
    assert run_verdict(doc_of([rec(0, "NoUsage")]), 1.0) is None  # 1 accepts any
    assert run_verdict(doc_of([rec(0, "NoUsage")] + [rec(i, None) for i in range(1, 5)]), 0.0)


def test_a_stopped_level_fails_the_run_even_under_the_error_rate() -> None:
    records = [rec(i, None) for i in range(990)] + [rec(i, "AwsUnreachable") for i in range(10)]
    verdict = run_verdict(doc_of(records, stopped_at=0), 0.05)  # 1% failed
    assert verdict is not None
    assert "ep stopped answering" in verdict["message"]
    assert "10 of 1,000 requests failed" in verdict["message"]
    assert "(error rate 1.0%, max_error_rate=0.05)" in verdict["message"]
    assert "(error rate 1.0%, --max-error-rate 0.05)" in verdict["message"].render(CliFace("bench"))
    assert "sm_peagle.status('ep')" in verdict["remedy"]
    assert "`peagle status ep` and `peagle logs ep" in verdict["remedy"].render(CliFace("bench"))


# -- --max-error-rate values ---------------------------------------------------------------


@pytest.mark.parametrize(("value", "rate"), [(0, 0.0), (1, 1.0), (0.05, 0.05), ("0.5", 0.5),
                                             (" 1 ", 1.0), ("0", 0.0)])  # fmt: skip
def test_a_fraction_from_0_to_1_is_accepted(value, rate) -> None:
    assert check_error_rate(value) == rate


@pytest.mark.parametrize("value", [-0.01, 1.01, "-0.5", "2", "five", "", "nan", math.nan,
                                   "inf", True, None, [0.1]])  # fmt: skip
def test_anything_else_is_refused_with_a_fix(value) -> None:
    with pytest.raises(SpecError) as info:
        check_error_rate(value)
    assert info.value.exit_code == 2
    # Python names the keyword; the CLI words the same error with its flag.
    assert f"max_error_rate=: expected a fraction from 0 to 1, got '{value}'" in info.value.message
    assert info.value.field == "max_error_rate"
    cli = info.value.message.render(CliFace("bench"))
    assert f"--max-error-rate: expected a fraction from 0 to 1, got '{value}'" in cli
    assert info.value.remedy


def test_the_default_is_the_stated_one_everywhere() -> None:
    import inspect

    from sm_peagle.benchmarking.breaker import DEFAULT_MAX_ERROR_RATE
    from sm_peagle.cli.bench_cmds import bench_command
    from sm_peagle.client import Client

    bench, tune_k = Client.bench, Client.tune_k

    assert DEFAULT_MAX_ERROR_RATE == 0.05
    for fn in (bench, tune_k):
        assert inspect.signature(fn).parameters["max_error_rate"].default == 0.05
        assert "default 0.05" in (fn.__doc__ or ""), fn.__name__
    assert float(inspect.signature(bench_command).parameters["max_error_rate"].default) == 0.05
    hint = typing.get_type_hints(bench_command, include_extras=True)["max_error_rate"]
    assert "(default 0.05)" in hint.__metadata__[0].help


def test_the_same_value_from_the_sdk_and_the_cli_reads_the_same() -> None:
    with pytest.raises(SpecError) as sdk:
        check_error_rate(-0.5)
    with pytest.raises(SpecError) as cli:
        check_error_rate("-0.5")
    assert sdk.value.one_line() == cli.value.one_line()


# -- against the local fake runtime ---------------------------------------------------------


@pytest.fixture
def fake(aws_credentials, monkeypatch):
    with fake_runtime(monkeypatch) as server:
        yield server


def dies_after(fake, answered: int):
    """From the (answered+1)-th measured request on, the fake closes each connection
    without an answer, as a dead endpoint behind a live listener does."""
    measured = []

    def reply(request):
        if request["body"]["max_tokens"] == MEASURED_MAX_TOKENS:
            measured.append(request)
            if len(measured) > answered:
                raise ConnectionAbortedError("the endpoint died")  # the handler drops it
        return fake.default_stream(request)

    fake.stream_reply = reply
    return measured


# One stream: the 5 answers all end before the death. Six streams: dead from the first
# measured request (the pool's 1-token requests were answered), so no answer still in
# flight resets the count after the death.
@pytest.mark.parametrize(("concurrency", "answered"), [(1, 5), (6, 0)])
def test_a_level_stops_when_the_endpoint_stops_answering(fake, concurrency, answered) -> None:
    from sm_peagle.benchmarking.load import bench_client

    measured = dies_after(fake, answered=answered)
    rt = bench_client("us-east-1", "peagle-test-ep", concurrency)
    run = run_level(rt, builtin(), LoadSpec(concurrency=concurrency, requests=500))
    rt.close()
    limit = max(10, 2 * concurrency)
    after_death = len(measured) - answered
    # The count reached the limit, then at most the requests already in flight went out.
    assert limit <= after_death <= limit + concurrency
    assert run.stopped is not None and run.stopped["limit"] == limit
    assert run.stopped["error_kind"] == "AwsUnreachable"
    assert len(run.records) == len(measured)  # every request sent is recorded
    assert sum(r.ok for r in run.records) == answered


def test_an_open_loop_level_stops_too_and_sends_no_queued_request(fake) -> None:
    from sm_peagle.benchmarking.load import bench_client

    measured = dies_after(fake, answered=0)
    rt = bench_client("us-east-1", "peagle-test-ep", 2)
    run = run_level(rt, builtin(), LoadSpec(concurrency=2, requests=500, rate=200.0))
    rt.close()
    assert 10 <= len(measured) <= 10 + 2
    assert run.stopped is not None and len(run.records) == len(measured)


def test_the_open_loop_sends_nothing_once_stopped() -> None:
    stop = threading.Event()
    sent: list[int] = []

    def call(g: int, scheduled: float) -> RequestRecord:
        sent.append(g)
        if len(sent) == 3:
            stop.set()
        return rec(g, None)

    records = _open(call, 1, 50, None, iter(lambda: 0.0, None), lambda i: i, stop)
    assert sent == [0, 1, 2] and len(records) == 3


def test_records_reach_the_file_as_each_request_finishes(fake, tmp_path: Path) -> None:
    """One stream at a time: when the fake receives measured request j, the j before it
    have finished, so the partial file must hold exactly j whole lines."""
    from sm_peagle.benchmarking.load import bench_client

    target = tmp_path / "requests.jsonl"
    target.write_text('{"previous": true}\n')
    exporter = RequestExporter(target)
    lines_seen: list[int] = []

    def reply(request):
        if request["body"]["max_tokens"] == MEASURED_MAX_TOKENS:
            lines_seen.append(len(exporter.partial.read_text().splitlines()))
        return fake.default_stream(request)

    fake.stream_reply = reply
    rt = bench_client("us-east-1", "peagle-test-ep", 1)
    write = exporter.level(endpoint="peagle-test-ep", configuration=None, concurrency=1,
                           rate=None, slo=None)  # fmt: skip
    run = run_level(rt, builtin(), LoadSpec(concurrency=1, requests=6), on_record=write)
    rt.close()
    assert lines_seen == [0, 1, 2, 3, 4, 5]
    assert target.read_text() == '{"previous": true}\n'  # not before the run completes
    lines = [json.loads(x) for x in exporter.partial.read_text().splitlines()]
    assert [ln["request_id"] for ln in lines] == [r.request_id for r in run.records]
    assert exporter.abandon() == (
        f"{target} was not changed; the 6 requests measured are in {exporter.partial}"
    )
    assert target.read_text() == '{"previous": true}\n' and exporter.partial.exists()


def test_an_abandoned_export_with_nothing_measured_leaves_no_partial(tmp_path: Path) -> None:
    target = tmp_path / "requests.jsonl"
    target.write_text("previous\n")
    exporter = RequestExporter(target)
    assert exporter.abandon() is None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["requests.jsonl"]
    assert target.read_text() == "previous\n"


def test_a_full_disk_mid_run_is_reported_at_the_end(tmp_path: Path, monkeypatch) -> None:
    import errno
    import os

    from sm_peagle.errors import OutputNotWritten

    target = tmp_path / "requests.jsonl"
    target.write_text("previous\n")
    exporter = RequestExporter(target)
    write = exporter.level(endpoint="ep", configuration=None, concurrency=1, rate=None,
                           slo=None)  # fmt: skip
    write(rec(0, None))
    real = os.write

    def full(fd: int, data) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", full)
    write(rec(1, None))  # measuring goes on: the error waits for the end
    monkeypatch.setattr(os, "write", real)
    write(rec(2, None))  # nothing more is written after a failed write
    with pytest.raises(OutputNotWritten) as info:
        exporter.finish()
    assert f"cannot write {target}: No space left on device" in info.value.message
    assert f"the 1 requests written before are in {exporter.partial}" in info.value.message
    assert target.read_text() == "previous\n"
