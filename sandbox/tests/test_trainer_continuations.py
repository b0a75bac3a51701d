"""Where the CPU trainer backend takes its training continuations from: the served engine
(vLLM, in the engine venv) when one is installed, HF transformers otherwise, with a warning.

The engine is stood in for by a fake `python` in a fake engine home that records what it
was asked and answers as `vllm_generate` does; the real generation runs in the conformance
tier (tests/conformance/test_drafter_train_engine.py)."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import pytest

from peagle_sandbox.trainer_cpu import backend as backend_mod
from peagle_sandbox.vllm_engine.install import DEFAULT_VLLM_VERSION

SANDBOX = Path(__file__).resolve().parents[1]

_FAKE = """#!{exe}
import json, os, sys
job = json.load(sys.stdin)
seen = {{"argv": sys.argv[1:], "job": job, "pythonpath": os.environ.get("PYTHONPATH"),
        "offline": os.environ.get("HF_HUB_OFFLINE")}}
open({record!r}, "w").write(json.dumps(seen))
if {fail}:
    print("RuntimeError: engine broke")
    sys.exit(1)
ids = [[len(p), job["max_new_tokens"], 2] for p in job["prompts"]]
open(job["out"], "w").write(json.dumps({{"token_ids": ids, "vllm_version": "0.31.0"}}))
"""


def _engine(home: Path, record: Path, fail: bool = False) -> Path:
    python = home / f"venv-{DEFAULT_VLLM_VERSION}" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(_FAKE.format(exe=sys.executable, record=str(record), fail=fail))
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    return python


def _no_hf(*_a: object, **_k: object) -> list[list[int]]:
    raise AssertionError("HF generation must not run when an engine is installed")


def test_continuations_come_from_the_installed_engine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    record = tmp_path / "seen.json"
    _engine(tmp_path / "home", record)
    monkeypatch.setenv("PEAGLE_ENGINE_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("PEAGLE_ENGINE_VERSION", raising=False)
    monkeypatch.delenv(backend_mod.CONTINUATIONS_ENV, raising=False)
    cpu = backend_mod.CpuBackend()
    monkeypatch.setattr(cpu, "hf_continuations", _no_hf)

    out = cpu.continuations(tmp_path / "target", [[1, 5, 7], [1, 9]], 32, 0)

    assert out == [[3, 32, 2], [2, 32, 2]]  # the engine's answer, in prompt order
    seen = json.loads(record.read_text())
    assert seen["argv"] == ["-m", "peagle_sandbox.trainer_cpu.vllm_generate"]
    assert seen["job"]["prompts"] == [[1, 5, 7], [1, 9]]  # token ids, not re-tokenised text
    assert (seen["job"]["model"], seen["job"]["max_new_tokens"]) == (str(tmp_path / "target"), 32)
    # The engine runs this checkout's generator, offline.
    assert seen["pythonpath"] == str(SANDBOX)
    assert seen["offline"] == "1"
    assert "continuations from vLLM 0.31.0" in capsys.readouterr().out


def test_without_an_engine_hf_generates_and_the_log_warns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PEAGLE_ENGINE_HOME", str(tmp_path / "empty"))
    monkeypatch.delenv(backend_mod.CONTINUATIONS_ENV, raising=False)
    cpu = backend_mod.CpuBackend()
    monkeypatch.setattr(cpu, "hf_continuations", lambda *_a: [[4]])

    assert cpu.continuations(tmp_path / "target", [[1]], 8, 0) == [[4]]
    out = capsys.readouterr().out
    assert out.startswith("peagle-train: warning: no vLLM engine installed")


def test_hf_can_be_chosen_even_with_an_engine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    record = tmp_path / "seen.json"
    _engine(tmp_path / "home", record)
    monkeypatch.setenv("PEAGLE_ENGINE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv(backend_mod.CONTINUATIONS_ENV, "hf")
    cpu = backend_mod.CpuBackend()
    monkeypatch.setattr(cpu, "hf_continuations", lambda *_a: [[4]])

    assert cpu.continuations(tmp_path / "target", [[1]], 8, 0) == [[4]]
    assert not record.exists()
    assert "warning" not in capsys.readouterr().out


def test_an_engine_that_fails_fails_the_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """No silent fallback: a head trained on HF's continuations after the engine broke would
    look trained and be judged against an engine it never learned from."""
    _engine(tmp_path / "home", tmp_path / "seen.json", fail=True)
    monkeypatch.setenv("PEAGLE_ENGINE_HOME", str(tmp_path / "home"))
    monkeypatch.delenv(backend_mod.CONTINUATIONS_ENV, raising=False)
    cpu = backend_mod.CpuBackend()
    monkeypatch.setattr(cpu, "hf_continuations", _no_hf)

    with pytest.raises(RuntimeError, match=r"vLLM generation .* failed \(exit 1\)"):
        cpu.continuations(tmp_path / "target", [[1]], 8, 0)
    assert "RuntimeError: engine broke" in capsys.readouterr().err
