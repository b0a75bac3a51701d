"""`peagle logs --until TEXT` (the README tour waits with it for vLLM's SpecDecoding line):
an empty TEXT would match every line, so it is refused before any request."""

from __future__ import annotations

import pytest

from tests.plan_helpers import make_offline, run_cli


def test_an_empty_until_is_refused_before_anything_is_sent(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    make_offline(monkeypatch, tmp_path)  # a request would fail differently (no credentials)
    code, out, err = run_cli(capsys, "logs", "my-endpoint", "--until", "")
    assert code == 2
    assert out == ""
    assert err.strip().splitlines() == [
        "error: --until: empty text would match every line "
        "(fix: give the text to wait for, e.g. SpecDecoding metrics)"
    ]
