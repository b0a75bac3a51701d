"""The one set of source labels (issue 26): AWS, SANDBOX (SIMULATED), SANDBOX (vllm X.Y.Z,
CPU, tiny model); the expected strings are the issue's, written out."""

from __future__ import annotations

import pytest

from sm_peagle import settings as labels


@pytest.mark.parametrize(
    ("engine", "expected"),
    [
        ("SIMULATED", "SANDBOX (SIMULATED)"),
        ("vllm 0.31.0 (CPU, tiny model)", "SANDBOX (vllm 0.31.0, CPU, tiny model)"),
        ("vllm 0.32.0rc1 (CPU, tiny model)", "SANDBOX (vllm 0.32.0rc1, CPU, tiny model)"),
        (None, "SANDBOX (SIMULATED)"),
        ("", "SANDBOX (SIMULATED)"),
    ],
)
def test_label_for_a_sandbox_engine(engine: str | None, expected: str) -> None:
    assert labels.label_for_engine(engine) == expected


def test_source_label_follows_the_sandbox_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PEAGLE_SANDBOX_URL", "")
    assert labels.source_label() == "AWS"
    monkeypatch.setenv("PEAGLE_SANDBOX_URL", "http://127.0.0.1:1")
    monkeypatch.setenv("PEAGLE_SANDBOX_ENGINE_LABEL", "SIMULATED")
    assert labels.source_label() == "SANDBOX (SIMULATED)"
    monkeypatch.setenv("PEAGLE_SANDBOX_ENGINE_LABEL", "vllm 0.31.0 (CPU, tiny model)")
    assert labels.source_label() == "SANDBOX (vllm 0.31.0, CPU, tiny model)"
