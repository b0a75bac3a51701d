"""The sandbox clock type itself (peagle_sandbox/sandbox_clock.py), on an injected real
clock: rates, freezing, advancing, the 1:1 hold of an invocation, and durations."""

from __future__ import annotations

import pytest

from peagle_sandbox.sandbox_clock import SandboxClock, format_duration, parse_duration

START = 1_800_000_000.0  # 2027-01-15, any fixed instant


class Real:
    """A stand-in for time.monotonic that the test moves."""

    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def real() -> Real:
    return Real()


def test_it_runs_at_its_rate_of_sandbox_seconds_per_real_second(real: Real) -> None:
    clock = SandboxClock(60, start=START, real=real)
    real.t += 15  # 15 real seconds
    assert clock.now() == START + 15 * 60
    assert clock.datetime().timestamp() == START + 900


def test_a_new_rate_continues_from_the_current_instant(real: Real) -> None:
    clock = SandboxClock(1, start=START, real=real)
    real.t += 10
    clock.set_rate(100)
    assert clock.now() == START + 10  # changing the rate moved nothing
    real.t += 1
    assert clock.now() == START + 110


def test_frozen_it_stands_still_until_advanced_then_resumes_at_its_rate(real: Real) -> None:
    clock = SandboxClock(60, start=START, frozen=True, real=real)
    real.t += 1000
    assert clock.now() == START and clock.frozen
    assert clock.advance(900) == START + 900
    real.t += 5
    assert clock.now() == START + 900  # still frozen after an advance
    clock.resume()
    real.t += 2
    assert clock.now() == START + 900 + 120  # its rate (60) again
    clock.resume(rate=1)
    real.t += 3
    assert clock.now() == START + 900 + 120 + 3


def test_time_never_goes_backwards(real: Real) -> None:
    clock = SandboxClock(start=START, real=real)
    for bad in (-1, float("nan"), float("-inf"), float("inf"), True, "15m"):
        with pytest.raises(ValueError):
            clock.advance(bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="year 9998"):
        clock.advance(1e20)  # no timestamp could be written after it
    assert clock.now() == START
    for rate in (0, -60, float("nan"), float("inf"), True):
        with pytest.raises(ValueError):
            SandboxClock(rate, real=real)  # type: ignore[arg-type]
        with pytest.raises(ValueError):
            clock.set_rate(rate)  # type: ignore[arg-type]


def test_an_invocation_in_flight_holds_a_running_clock_at_real_time(real: Real) -> None:
    clock = SandboxClock(60, start=START, real=real)
    with clock.real_time():
        with clock.real_time():  # two at once count once
            real.t += 10
            assert clock.now() == START + 10
            assert clock.state()["real_time_holds"] == 2
        real.t += 1
        assert clock.now() == START + 11
    real.t += 1
    assert clock.now() == START + 11 + 60  # its rate again once none is in flight


def test_a_frozen_clock_stays_frozen_while_an_invocation_runs(real: Real) -> None:
    clock = SandboxClock(60, start=START, frozen=True, real=real)
    with clock.real_time():
        real.t += 10
        assert clock.now() == START


def test_advance_and_resume_tell_the_listeners_before_returning(real: Real) -> None:
    clock = SandboxClock(start=START, frozen=True, real=real)
    seen: list[float] = []
    clock.on_advance(lambda: seen.append(clock.now()))
    clock.advance(60)
    clock.freeze()  # no notice: nothing became due
    clock.resume()
    assert seen == [START + 60, START + 60]


def test_state_is_what_the_clock_command_shows(real: Real) -> None:
    clock = SandboxClock(60, start=START, frozen=True, real=real)
    state = clock.state()
    assert state["now"] == "2027-01-15T08:00:00+00:00"
    assert (state["epoch"], state["rate"], state["frozen"]) == (START, 60.0, True)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("15m", 900.0),
        ("2d", 172800.0),
        ("1h30m", 5400.0),
        ("45s", 45.0),
        ("90", 90.0),
        ("1.5h", 5400.0),
        ("2d12h", 216000.0),
        (" 10M ", 600.0),
        (30, 30.0),
    ],
)
def test_durations(text: str | float, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "15x", "m", "-5m", "1h-30m", "nan", True, "1m2h"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(ValueError):
        parse_duration(text)


def test_format_duration() -> None:
    assert format_duration(90061) == "1d1h1m1s"
    assert format_duration(172800) == "2d"
    assert format_duration(0) == "0s"
    assert format_duration(-3600) == "-1h"
