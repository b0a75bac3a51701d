"""Where `confirm()` asks (cli/lifecycle_cmds.py): on a stream the user sees. stderr by
default, because stdout carries the result (`--json > out.json`); stdout when only stdout
is a terminal (`2> log`), so the question is not hidden in the log while the command
waits. Without a terminal on stdin it never asks: one line naming --yes."""

from __future__ import annotations

import io
import sys

import pytest

from sm_peagle.cli.lifecycle_cmds import confirm
from sm_peagle.errors import SpecError

QUESTION = "Delete ep and everything it uses?"


class Stream(io.StringIO):
    def __init__(self, tty: bool, text: str = "") -> None:
        super().__init__(text)
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


def ask(monkeypatch: pytest.MonkeyPatch, *, out_tty: bool, err_tty: bool) -> tuple[str, str]:
    out, err = Stream(out_tty), Stream(err_tty)
    monkeypatch.setattr(sys, "stdin", Stream(True, "y\n"))
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", err)
    confirm(QUESTION, yes=False)  # answered "y": returns
    return out.getvalue(), err.getvalue()


@pytest.mark.parametrize("out_tty", [True, False])
def test_the_prompt_goes_to_stderr_when_stderr_is_a_terminal(monkeypatch, out_tty):
    out, err = ask(monkeypatch, out_tty=out_tty, err_tty=True)
    # click hands the prompt's trailing space to input(), which writes it to stdout: one
    # blank, harmless before a JSON document; the question itself is on stderr.
    assert out.strip() == "" and err.startswith(QUESTION)


def test_stdout_gets_the_prompt_when_only_stdout_is_a_terminal(monkeypatch):
    out, err = ask(monkeypatch, out_tty=True, err_tty=False)
    assert err == "" and out.startswith(QUESTION)


def test_neither_a_terminal_stderr_gets_it_on_a_line_of_its_own(monkeypatch):
    out, err = ask(monkeypatch, out_tty=False, err_tty=False)
    assert out.strip() == "" and err.startswith(QUESTION) and err.endswith("\n")


def test_no_terminal_on_stdin_never_asks(monkeypatch):
    monkeypatch.setattr(sys, "stdin", Stream(False, "y\n"))
    with pytest.raises(SpecError, match="no terminal to ask") as e:
        confirm(QUESTION, yes=False)
    assert e.value.remedy == "pass --yes in non-interactive use"
