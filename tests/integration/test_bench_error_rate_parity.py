"""`--max-error-rate` is a fraction from 0 to 1: any other value is refused the same way
by the SDK (`SpecError`) and the CLI (exit 2, `error: … (fix: …)`), before any request is
sent or any file written. "Nothing sent" is read where moto receives requests (the
harness's request record), as tests/integration/test_parity.py reads it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import sm_peagle
from sm_peagle.cli.faces import CliFace
from sm_peagle.errors import SpecError
from tests.integration.lifecycle_env import run
from tests.integration.test_parity import NAME, fresh_world, sent

# (as typed on the command line, as passed to the SDK)
BAD = [("-0.1", -0.1), ("1.5", 1.5), ("abc", "abc"), ("nan", float("nan")), ("", "")]


@pytest.mark.parametrize(("typed", "value"), BAD, ids=[t or "empty" for t, _ in BAD])
def test_a_bad_max_error_rate_is_refused_alike_and_nothing_is_sent(
    typed: str, value: object, aws_credentials: None, capsys: pytest.CaptureFixture,
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:  # fmt: skip
    monkeypatch.delenv("PEAGLE_SANDBOX_URL", raising=False)
    files = {"out": tmp_path / "r.json", "requests_out": tmp_path / "requests.jsonl"}
    with fresh_world() as (h, _):
        h.requests.clear()
        with pytest.raises(SpecError) as info:
            sm_peagle.bench(NAME, concurrency=1, requests=1, max_error_rate=value, **files)
        assert sent(h) == [], f"the SDK sent {sent(h)}"
        code, out, err = run(
            capsys, "bench", NAME, "-c", "1", "-n", "1", f"--max-error-rate={typed}",
            "-o", str(files["out"]), "--requests-out", str(files["requests_out"]),
        )  # fmt: skip
        assert sent(h) == [], f"the CLI sent {sent(h)}"
    assert code == info.value.exit_code == 2
    (line,) = [ln for ln in err.splitlines() if ln.startswith("error: ")]
    # One error from both faces: Python names the keyword, the CLI its flag.
    assert line == f"error: {info.value.one_line(CliFace('bench'))}"
    assert info.value.field == "max_error_rate" and "max_error_rate=" in info.value.message
    assert f"--max-error-rate: expected a fraction from 0 to 1, got '{typed}'" in line
    assert "(fix: " in line and "Traceback" not in err
    assert json.dumps(out) == '""'
    assert list(tmp_path.iterdir()) == []  # nothing written either


def test_a_negative_value_after_a_space_reaches_the_check(
    aws_credentials: None, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--max-error-rate -0.1` (no `=`): the value, not a missing one or an unknown option."""
    monkeypatch.delenv("PEAGLE_SANDBOX_URL", raising=False)
    with fresh_world() as (h, _):
        h.requests.clear()
        code, _, err = run(capsys, "bench", NAME, "-c", "1", "-n", "1", "--max-error-rate", "-0.1")
        assert sent(h) == []
    assert code == 2
    assert "--max-error-rate: expected a fraction from 0 to 1, got '-0.1'" in err
