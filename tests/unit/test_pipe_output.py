"""Issue 33, item 5: output outside a terminal (a pipe, a file, a CI log). pytest's capture
is not a terminal, as a pipe is not. The rules, from the issue: elapsed time reads `[00:03]`
(`[1:02:03]` past an hour), never `[0m03s]`, which looks like a broken colour code; no ANSI;
no wrapping at any width, so a value (an S3 URI, an image tag) is whole on one line when
copied; a table stays a table (its header on one line, one line per row). On a terminal the
width is still honoured (tests/unit/test_newcomer_cli.py: test_tables_never_break_a_word)."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest

from sm_peagle.cli import output
from sm_peagle.cli.live import elapsed, wait_view

IMAGE = (
    "763104351884.dkr.ecr.us-east-1.amazonaws.com/vllm:0.18.0-gpu-py312-cu129-ubuntu22.04-sagemaker"
)
WEIGHTS = (
    "s3://jumpstart-cache-prod-us-east-1/openai-reasoning/openai-reasoning-gpt-oss-20b/"
    "artifacts/inference-prepack/v1.0.0/"
)


@pytest.fixture(autouse=True)
def narrow(monkeypatch: pytest.MonkeyPatch) -> None:
    """An 80-column setting, as a CI runner or a terminal's child often passes on: outside a
    terminal it must not cut anything."""
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    output.reset()
    yield
    output.reset()


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (0, "00:00"),
        (3, "00:03"),
        (3.9, "00:03"),  # whole seconds elapsed, as a clock shows them
        (59, "00:59"),
        (62, "01:02"),
        (3599, "59:59"),
        (3600, "1:00:00"),
        (3723, "1:02:03"),
        (36000, "10:00:00"),
    ],
)
def test_elapsed_reads_as_a_clock(seconds: float, shown: str) -> None:
    assert elapsed(seconds) == shown


def test_the_plain_wait_line_starts_with_the_clock_and_keeps_the_log_line_whole(capsys) -> None:
    log = "INFO " + " ".join(f"word{i}" for i in range(60)) + " " + WEIGHTS  # ~470 characters
    state = SimpleNamespace(
        status="Creating", variant_summary="AllTraffic 1/1", log_line=log, elapsed=3.2,
        endpoint="ep",
    )  # fmt: skip
    with wait_view(quiet=False) as on_poll:
        on_poll(state)
    err = capsys.readouterr().err
    assert err == f"[00:03] ep Creating AllTraffic 1/1 | {log}\n"


def test_a_table_outside_a_terminal_stays_a_table_with_values_whole(capsys) -> None:
    rows = [["image", IMAGE], ["weights", WEIGHTS], ["mode", "p-eagle, K=3"]]
    output.Output().table("peagle-gpt-oss-20b-p-eagle", ["field", "value"], rows)
    out = capsys.readouterr().out
    assert "\x1b" not in out
    lines = out.splitlines()
    assert any(re.search(r"\bfield\b.*\bvalue\b", line) for line in lines)  # one header line
    for name, value in rows:  # one line per row: the name and its whole value together
        assert any(name in line and value in line for line in lines), (name, out)
    # nothing stacked: the value column's name is not repeated per record
    assert sum("value" in line for line in lines) == 1


def test_a_long_line_of_text_is_not_wrapped(capsys) -> None:
    words = " ".join(f"word{i}" for i in range(40))  # 300+ characters with spaces to wrap at
    output.reset().print(f"[bold]{words}[/] {IMAGE}")
    assert capsys.readouterr().out == f"{words} {IMAGE}\n"


def test_stderr_is_judged_on_its_own(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    """stdout a terminal, stderr a pipe (`peagle deploy 2>log`): the stderr console does
    not wrap, the stdout console keeps the terminal's width."""
    import sys

    monkeypatch.setattr(output, "is_terminal", lambda stream: stream is sys.stdout)
    assert output.reset().console().width == 80
    words = " ".join(f"word{i}" for i in range(40))  # 300+ characters with spaces to wrap at
    output.console(stderr=True).print(f"{words} {IMAGE}")
    assert capsys.readouterr().err == f"{words} {IMAGE}\n"  # one line, the URI whole


def test_a_failure_s_message_is_printed_whole_not_read_as_markup(capsys) -> None:
    """A vLLM error quotes shapes like `[32, 8640]`, which rich would eat as a tag."""
    from sm_peagle.benchmarking.sweep import combine_runs
    from sm_peagle.cli.bench_render import render_document

    run = {
        "schema": "peagle.bench/2", "kind": "bench", "label": "SANDBOX (SIMULATED)",
        "simulated": True, "engine": "SIMULATED", "notes": [], "mode": "p-eagle", "k": 3,
        "levels": [], "model": "gpt-oss-20b", "instance_type": "ml.g7e.2xlarge",
        "load": {"kind": "closed", "requests": 2, "warmup": 0, "workers": 1, "max_tokens": 8,
                 "temperature": None},
    }  # fmt: skip
    doc = combine_runs([run])
    error = "shape [32, 8640] does not match [b] [bold]"
    doc["failures"] = [{"configuration": "p-eagle K=5", "error": error}]
    render_document(doc, output.reset().console())
    assert f"failed p-eagle K=5: {error}\n" in capsys.readouterr().out
