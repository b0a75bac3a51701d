"""The sandbox as a SageMaker training host: a job's real entrypoint runs in the trainer
venv (`peagle sandbox install-trainer`: `<home>/trainer-venv-0.9.0/`) on this CPU.

When a job reaches Training (`testing/moto_training.py`), the host, in a thread of its own
(the control plane answers meanwhile):

1. lays out a directory standing for `/opt/ml`, as SageMaker's File mode does before the
   container starts: `input/config/hyperparameters.json` (the request's string map),
   `inputdataconfig.json`, `resourceconfig.json`, `input/data/<channel>/` (every object
   under the channel's S3 prefix in the sandbox's S3), `model/`, `output/data/`, and
   `code/`: the `sagemaker_submit_directory` tar.gz unpacked, as the SageMaker training
   toolkit does for script mode;
2. runs `<venv>/bin/python <code>/<sagemaker_program> --<name> <value> ...` (the user
   hyperparameters as arguments, as the toolkit passes them) in its own process group,
   with the toolkit's environment (`SM_MODEL_DIR`, `SM_CHANNEL_<NAME>`, `SM_CHANNELS`,
   `SM_HPS`, `SM_HP_<NAME>`, `SM_INPUT_DIR`, `SM_INPUT_CONFIG_DIR`, `SM_OUTPUT_DIR`,
   `SM_OUTPUT_DATA_DIR`, `SM_CURRENT_HOST`, `SM_HOSTS`, `SM_NUM_GPUS`, `SM_MODULE_DIR`,
   `SM_USER_ENTRY_POINT`) pointing into that directory; the toolkit's
   `pip install -r requirements.txt` is not run (the trainer venv has them);
3. writes its stdout and stderr, line by line, to the job's CloudWatch stream;
4. on exit records the code and the sandbox-clock time: the job then goes Uploading
   (exit 0; `model/` is uploaded as SageMaker uploads /opt/ml/model) or Failed with
   FailureReason from `output/failure` ("SageMaker returns the first 1024 characters
   from this file as FailureReason": "How Amazon SageMaker AI Processes Training
   Output"; prefixed `AlgorithmError: ` as real jobs show), else the exit code and the
   last output line.

StopTrainingJob sends SIGTERM to the process group and SIGKILL after `grace` seconds.
Only the sandbox server runs a host; an in-process harness trains with the SIMULATED
trainer.
"""

from __future__ import annotations

import collections
import contextlib
import io
import json
import os
import shutil
import subprocess
import tarfile
import threading
from pathlib import Path, PurePosixPath
from typing import Any

from peagle_sandbox.procs import kill_group
from peagle_sandbox.testing import training_io

__all__ = ["TRAINER_VENV", "TrainerHost", "TrainerRun", "trainer_python"]

TRAINER_VENV = "trainer-venv-0.9.0"  # speculators 0.9.0's venv under the trainer home
FAILURE_CHARS = 1024


def trainer_python(home: Path) -> Path:
    """The trainer venv's interpreter under a trainer home."""
    return Path(home).expanduser() / TRAINER_VENV / "bin" / "python"


def _decoded(value: str) -> Any:
    try:
        return json.loads(value)
    except ValueError:
        return value


class TrainerRun:
    """One job's process (see the module doc); `exit_code` then `ended` are set on exit."""

    def __init__(self, host: TrainerHost, job: Any) -> None:
        self.host = host
        self.job = job
        self.root = host.work_dir / job.name
        self.exit_code: int | None = None
        self.ended: float | None = None  # sandbox-clock seconds, set after exit_code
        self._proc: subprocess.Popen[bytes] | None = None
        self._tail: collections.deque[str] = collections.deque(maxlen=20)
        self._stopping = False
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ the job's view

    def model_files(self) -> dict[str, bytes]:
        model = self.root / "model"
        if not model.is_dir():
            return {}
        return {
            p.relative_to(model).as_posix(): p.read_bytes()
            for p in sorted(model.rglob("*"))
            if p.is_file()
        }

    def failure_reason(self) -> str:
        failure = self.root / "output" / "failure"
        if failure.is_file():
            text = failure.read_text(errors="replace")[:FAILURE_CHARS].strip()
            if text:
                return f"AlgorithmError: {text}"
        last = self._tail[-1] if self._tail else "no output"
        return f"AlgorithmError: ExitCode {self.exit_code}: {last}"

    def stop(self) -> None:
        """SIGTERM the process group now, SIGKILL after the host's grace (a thread)."""
        with self._lock:
            self._stopping = True
            proc = self._proc
        if proc is not None and proc.poll() is None:
            threading.Thread(
                target=kill_group, args=(proc.pid, self.host.grace), daemon=True
            ).start()

    # ------------------------------------------------------------------ the thread

    def main(self) -> None:
        try:
            command, env = self._prepare()
        except Exception as e:  # a bad source dir or channel: the job fails, one line
            self._log([f"peagle-sandbox: cannot start the trainer: {e}"])
            self._tail.append(str(e))
            self._exit(1)
            return
        with self._lock:
            if self._stopping:
                self._exit(143)
                return
            self._proc = subprocess.Popen(
                command,
                cwd=self.root / "code",
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # its own group: a stop ends its children too
            )
        assert self._proc.stdout is not None
        for raw in self._proc.stdout:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            self._tail.append(line)
            self._log([line])
        self._exit(self._proc.wait())

    def _exit(self, code: int) -> None:
        self.exit_code = code
        self.ended = self.host.clock.now()

    def _log(self, lines: list[str]) -> None:
        with contextlib.suppress(Exception):  # a log hiccup must not kill the job
            self.job.log(lines, self.host.clock.now())

    def _prepare(self) -> tuple[list[str], dict[str, str]]:
        root, job = self.root, self.job
        hps = job.hyperparameters
        config = root / "input" / "config"
        for d in (config, root / "model", root / "output" / "data", root / "code"):
            d.mkdir(parents=True, exist_ok=True)
        config.joinpath("hyperparameters.json").write_text(json.dumps(hps))
        config.joinpath("resourceconfig.json").write_text(
            json.dumps({"current_host": "algo-1", "hosts": ["algo-1"]})
        )
        channels = {}
        for c in job.params.get("InputDataConfig") or []:
            channels[c["ChannelName"]] = {
                "TrainingInputMode": c.get("InputMode") or "File",
                "S3DistributionType": "FullyReplicated",
                "RecordWrapperType": c.get("RecordWrapperType") or "None",
            }
        config.joinpath("inputdataconfig.json").write_text(json.dumps(channels))
        for name, uri in job.channels.items():
            dest = root / "input" / "data" / name
            for rel, body in training_io.list_prefix(job.account, uri).items():
                target = _inside(dest, rel)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(body)
        submit = str(_decoded(hps.get("sagemaker_submit_directory", "")))
        program = str(_decoded(hps.get("sagemaker_program", "")))
        if not submit or not program:
            raise ValueError("sagemaker_program / sagemaker_submit_directory are not set")
        archive = training_io.read_object(job.account, submit)
        if archive is None:
            raise ValueError(f"no source archive at {submit}")
        with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
            tar.extractall(root / "code", filter="data")
        entry = _inside(root / "code", program)
        if not entry.is_file():
            raise ValueError(f"{program} is not in {submit}")
        user = {k: v for k, v in hps.items() if not k.startswith("sagemaker_")}
        command = [str(self.host.python), str(entry)]
        for key, value in user.items():
            command += [f"--{key}", value]
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "SM_"))}
        env.update(
            SM_MODEL_DIR=str(root / "model"),
            SM_INPUT_DIR=str(root / "input"),
            SM_INPUT_CONFIG_DIR=str(config),
            SM_OUTPUT_DIR=str(root / "output"),
            SM_OUTPUT_DATA_DIR=str(root / "output" / "data"),
            SM_CHANNELS=json.dumps(sorted(channels)),
            SM_HPS=json.dumps({k: _decoded(v) for k, v in user.items()}),
            SM_CURRENT_HOST="algo-1",
            SM_HOSTS=json.dumps(["algo-1"]),
            SM_NUM_GPUS="0",
            SM_MODULE_DIR=submit,
            SM_USER_ENTRY_POINT=program,
            PYTHONUNBUFFERED="1",  # lines reach the log stream as they are printed
        )
        for name in channels:
            env[f"SM_CHANNEL_{name.upper()}"] = str(root / "input" / "data" / name)
        for key, value in user.items():
            env[f"SM_HP_{key.upper()}"] = value
        return command, env


def _inside(base: Path, relative: str) -> Path:
    parts = PurePosixPath(relative).parts
    if not parts or any(p in ("..", "") for p in parts) or relative.startswith("/"):
        raise ValueError(f"ambiguous file name {relative!r}")
    return base.joinpath(*parts)


class TrainerHost:
    """Runs training jobs' entrypoints with `python` (a trainer venv's interpreter)."""

    def __init__(self, python: Path, work_dir: Path, clock: Any, *, grace: float = 10.0) -> None:
        self.python = Path(python)
        self.work_dir = Path(work_dir)
        self.clock = clock  # the sandbox clock: exit times are on it
        self.grace = grace
        self.runs: list[TrainerRun] = []

    def start(self, job: Any) -> TrainerRun:
        """Start `job` (a moto_training.TrainingJob) in a thread; returns its run."""
        run = TrainerRun(self, job)
        self.runs.append(run)
        threading.Thread(target=run.main, name=f"trainer-{job.name}", daemon=True).start()
        return run

    def stop_all(self) -> None:
        """End every running job's process group (sandbox stop)."""
        for run in self.runs:
            proc = run._proc
            if proc is not None and proc.poll() is None:
                kill_group(proc.pid, grace=2.0)
        # The job directories hold copies of every channel: they die with the sandbox.
        shutil.rmtree(self.work_dir, ignore_errors=True)
