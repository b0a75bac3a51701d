"""SIGTERM and SIGHUP stop a command the way Ctrl-C does.

A cancelled CI job, `timeout` and `kill` send SIGTERM; a closed terminal sends SIGHUP.
Python's default for both is to die on the spot, so a deploy killed that way left its
endpoint, config and model behind with no message. Here each raises `Terminated`, a
KeyboardInterrupt, so everything that cleans up after Ctrl-C (the lifecycle's rollback,
the error boundary) does so for them too; the exit code is 128 + the signal's number
(143 for SIGTERM, 129 for SIGHUP), as shells report a death by that signal.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

__all__ = [
    "HANDLED",
    "Terminated",
    "keep_stopped",
    "quiet_exit",
    "received",
    "stop_on_signals",
    "stopped",
]

HANDLED = (signal.SIGTERM, signal.SIGHUP)


class Terminated(KeyboardInterrupt):
    """The command was stopped by a signal other than SIGINT (`signum`)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name


_received: list[int] = []


def received() -> int | None:
    """The signal that stopped the command, if one of ours did (click turns any
    KeyboardInterrupt into exit code 130, so the boundary asks here which it was)."""
    return _received[-1] if _received else None


_stopped: list[KeyboardInterrupt] = []


def keep_stopped(exc: KeyboardInterrupt) -> None:
    """Remember the interrupt that stopped the command: typer turns any KeyboardInterrupt
    into a bare exit code 130, and an `errors.Interrupted` carries what the run left and
    the command that removes it, which the boundary prints."""
    _stopped.append(exc)


def stopped() -> KeyboardInterrupt | None:
    """The interrupt `keep_stopped` kept last (None: none was kept), forgotten once read:
    a later command in the same process (a notebook, a test) must not report it again."""
    last = _stopped[-1] if _stopped else None
    _stopped.clear()
    return last


def _raise(signum: int, _frame: FrameType | None) -> None:
    _received.append(signum)
    raise Terminated(signum)


def stop_on_signals() -> None:
    """Install the handlers (the main thread only, as Python requires)."""
    for sig in HANDLED:
        signal.signal(sig, _raise)


@contextmanager
def quiet_exit() -> Iterator[None]:
    """Once the command has answered, a late Ctrl-C or SIGTERM changes nothing: ignore
    them while the process exits, so it ends with the command's own code and no
    traceback (a Ctrl-C just after a command finished used to exit -2, unexplained)."""
    for sig in (signal.SIGINT, *HANDLED):
        signal.signal(sig, signal.SIG_IGN)
    yield
