"""The one set of source labels (issue 26): AWS, SANDBOX (SIMULATED), SANDBOX (vllm X.Y.Z,
CPU, tiny model); the expected strings are the issue's, written out. The product asks the
plugin target the process talks to for its label (`plugins.source_label`); the sandbox's
own mapping from engine to label is tested in its distribution (sandbox/tests)."""

from __future__ import annotations

import pytest

from sm_peagle import plugins


def test_source_label_follows_the_target_the_process_talks_to(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("PEAGLE_TARGET", raising=False)
    monkeypatch.setenv("PEAGLE_SANDBOX_URL", "http://127.0.0.1:1")
    assert plugins.source_label() == "AWS"  # the target's variables alone point nowhere
    monkeypatch.setenv("PEAGLE_TARGET", "sandbox")  # as the sandbox's activate() sets it
    monkeypatch.setenv("PEAGLE_SANDBOX_ENGINE_LABEL", "SIMULATED")
    assert plugins.source_label() == "SANDBOX (SIMULATED)"
    monkeypatch.setenv("PEAGLE_SANDBOX_ENGINE_LABEL", "vllm 0.31.0 (CPU, tiny model)")
    assert plugins.source_label() == "SANDBOX (vllm 0.31.0, CPU, tiny model)"
    monkeypatch.setenv("PEAGLE_SANDBOX_URL", "")
    assert plugins.source_label() == "AWS"  # named, but not pointed at: AWS


def test_a_target_no_plugin_provides_is_aws(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PEAGLE_TARGET", "no-such-target")
    assert plugins.source_label() == "AWS"
