"""`peagle sandbox install-trainer`: bad input is refused before any step (the install itself
is exercised by the conformance tier, which needs the trainer venv it builds)."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.test_sandbox_settings import Cli, one_error_line


def test_install_trainer_refuses_bad_inputs_before_any_step(tmp_path: Path) -> None:
    """A bad home or index URL is exit 2 on one line with a fix, and no step runs: no home,
    no log, no virtualenv is made."""
    cli = Cli(tmp_path)
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    home = tmp_path / "trainer-home"
    cases = [
        (["--home", str(a_file)], f"--home: {a_file} is not a directory"),
        (["--home", "/proc/peagle-trainer"], "--home: /proc/peagle-trainer cannot be written"),
        (["--home", str(home), "--torch-index-url", "localhost-8000"], "localhost-8000"),
    ]
    for argv, says in cases:
        proc = cli("sandbox", "install-trainer", *argv, code=2)
        line = one_error_line(proc)
        assert line.startswith("error: install-trainer: ") and says in line, line
        assert "(fix: " in line or "fix:" in proc.stderr, proc.stderr
        assert proc.stdout == ""
        assert not home.exists(), argv  # checked before the home is even created
    assert a_file.read_text() == ""


def test_a_failed_step_is_exit_1_on_one_line_pointing_at_the_logs(tmp_path: Path) -> None:
    """Both installers (one shape in the CLI): a step that fails is exit 1, its progress so
    far, then one error line naming the step and its last error, with the logs in the home
    as the fix. Here the venv step fails: a file stands where the venv goes."""
    cli = Cli(tmp_path)
    cli.env["PIP_NO_INDEX"] = "1"  # the engine's torch check asks pip: never the network
    home = (tmp_path / "install-home").resolve()
    home.mkdir()
    for command, venv in (
        ("install-trainer", home / "trainer-venv-0.9.0"),
        ("install-engine", home / "venv-0.31.0"),
    ):
        venv.write_text("")
        proc = cli("sandbox", command, "--home", str(home), code=1)
        assert proc.stdout == ""
        *progress, line = proc.stderr.strip().splitlines()
        assert progress[0].startswith(f"peagle {command.split('-')[1]}: "), proc.stderr
        assert line.startswith(f"error: {command}: "), line
        assert line.endswith(f" (fix: see the logs in {home / 'logs'})"), line
        if command == "install-trainer":  # the engine's first step asks the index for torch
            assert f"venv failed: Error: [Errno 20] Not a directory: '{venv}'" in line, line
        assert venv.read_text() == ""  # nothing made where the venv should be
