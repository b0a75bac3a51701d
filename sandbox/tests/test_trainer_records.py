"""A killed sandbox server's training jobs are reaped like its engines (review of issue 40,
finding 12): the trainer host records each job's process group as `<pgid>.pgid` in the
engines' directory, and `reap_recorded_engines` (what `peagle sandbox stop` runs) ends a
group whose leader is a trainer, never a pid reused by something else."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from peagle_sandbox.procs import pid_alive, reap_recorded_engines

SLEEP = "import time\nwhile True: time.sleep(0.05)"


def _spawn(*argv: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", SLEEP, *argv], start_new_session=True)


def _wait_gone(proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30  # bounds a kill that did not happen
    while proc.poll() is None:
        assert time.monotonic() < deadline, f"pid {proc.pid} was not reaped"
        time.sleep(0.05)


def test_a_recorded_trainer_group_is_reaped_and_its_record_removed(tmp_path: Path) -> None:
    # What the job's leader runs: python3 /opt/ml/input/data/code/peagle_train.py.
    trainer = _spawn("/tmp/job/opt-ml/input/data/code/peagle_train.py")
    other = _spawn("something-else")  # a recorded pid now owned by another program
    try:
        for proc in (trainer, other):
            (tmp_path / f"{proc.pid}.pgid").write_text("training-job peagle-train-x-0\n")
        assert reap_recorded_engines(tmp_path) == [trainer.pid]
        _wait_gone(trainer)
        assert pid_alive(other.pid)  # not ours: left alone
        assert list(tmp_path.glob("*.pgid")) == []
    finally:
        for proc in (trainer, other):
            proc.kill()
            proc.wait()
