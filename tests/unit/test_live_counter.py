"""`peagle bench` on a terminal shows a live count of finished requests per level."""

from __future__ import annotations

import io

import pytest

from sm_peagle.benchmarking.load import _counting
from sm_peagle.cli import output


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_counting_reports_failed_requests_too() -> None:
    seen: list[int] = []

    def call(i: int) -> int:
        if i == 1:
            raise RuntimeError("stream broke")
        return i

    counted = _counting(call, seen.append)
    assert counted(0) == 0
    with pytest.raises(RuntimeError):
        counted(1)
    assert counted(2) == 2
    assert seen == [1, 2, 3]


def test_live_counter_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    err = Tty()
    monkeypatch.setattr(output.sys, "stderr", err)
    show = output.live_counter()
    assert show is not None
    show(3, 16)
    assert err.getvalue() == "\r\x1b[K  3/16 requests finished"
    show(16, 16)  # the level is done: the line is erased for its summary
    assert err.getvalue().endswith("\r\x1b[K")
    show(5, None)  # a --duration level has no planned count
    assert err.getvalue().endswith("\r\x1b[K  5 requests finished")
    output.note("c=4: 16/16 ok")  # a note replaces whatever counter line is showing
    assert err.getvalue().endswith("\r\x1b[Kc=4: 16/16 ok\n")


def test_no_counter_when_stderr_is_not_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    err = io.StringIO()
    monkeypatch.setattr(output.sys, "stderr", err)
    assert output.live_counter() is None
    output.note("level concurrency 1: sending 8 requests ...")
    assert err.getvalue() == "level concurrency 1: sending 8 requests ...\n"  # no escapes
