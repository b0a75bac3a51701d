"""The sandbox as a SageMaker training host: a job's real ContainerEntrypoint runs on this
CPU, with `python3` meaning the trainer venv's (`peagle sandbox install-trainer`:
`<home>/trainer-venv-0.9.0/`).

peagle's jobs run in AWS's vLLM DLC, which has no SageMaker training toolkit: the request
names the command (`AlgorithmSpecification.ContainerEntrypoint` + `ContainerArguments`)
and ships the source as the `code` channel (sm_peagle/training/request.py). When a job
reaches Training (`testing/moto_training.py`), the host, in a thread of its own (the
control plane answers meanwhile):

1. lays out a directory standing for `/opt/ml`, as SageMaker's File mode does before the
   container starts: `input/config/hyperparameters.json` (the request's string map),
   `inputdataconfig.json`, `resourceconfig.json`, `input/data/<channel>/` (every object
   under the channel's S3 prefix in the sandbox's S3), `model/`, `output/data/`. The
   directory is `<work dir>/<job>/opt-ml`, emptied first (a reused job name never sees
   the last job's files) and removed when the job ends (its model is read first);
2. runs the ContainerEntrypoint and ContainerArguments, with `/opt/ml` rewritten to that
   directory in every string (`engine_setup.map_opt_ml`, each rewrite logged), in its own
   process group, recorded as `<pgid>.pgid` beside the real engines' records so
   `peagle sandbox stop` ends it after a killed server. First on PATH, a `python3` (and
   `python`) that is the trainer venv's interpreter, except that `python3 -m pip ...` is
   skipped with a log line: the trainer venv holds speculators 0.9.0 and the CPU
   adaptations, and a job never reaches the network. The environment is an allowlist
   (`TRAINER_ENV`): never PYTHONPATH, PYTHONHOME or VIRTUAL_ENV (the product must not be
   importable inside a job, as in the real image), no SM_* (the image has no toolkit),
   `HF_HUB_OFFLINE=1`, and `PEAGLE_TRAIN_ML_ROOT` (the entrypoint's stand-in for /opt/ml);
3. writes its stdout and stderr, line by line, to the job's CloudWatch stream;
4. on exit records the code and the sandbox-clock time: the job then goes Uploading
   (exit 0; `model/` is uploaded as SageMaker uploads /opt/ml/model) or Failed with
   FailureReason from `output/failure` ("SageMaker returns the first 1024 characters
   from this file as FailureReason": "How Amazon SageMaker AI Processes Training
   Output"; prefixed `AlgorithmError: ` as real jobs show), else the exit code and the
   last output line.

StopTrainingJob sends SIGTERM to the process group and SIGKILL after `grace` seconds; the
job is Stopped no earlier than the process exits. Only the sandbox server runs a host; an
in-process harness trains with the SIMULATED trainer.
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path, PurePosixPath
from typing import Any

from peagle_sandbox.engine_setup import map_opt_ml
from peagle_sandbox.procs import kill_group, record_group
from peagle_sandbox.testing import training_io

__all__ = ["TRAINER_ENV", "TRAINER_VENV", "TrainerHost", "TrainerRun", "trainer_python"]

TRAINER_VENV = "trainer-venv-0.9.0"  # speculators 0.9.0's venv under the trainer home
FAILURE_CHARS = 1024
# What a job's process inherits from the server's environment (the rest is set by the
# host): the locale, home and temp dir, and the sandbox's own engine/trainer choices.
TRAINER_ENV = (
    "HOME",
    "LANG",
    "LC_ALL",
    "TMPDIR",
    "PEAGLE_ENGINE_HOME",
    "PEAGLE_ENGINE_VERSION",
    "PEAGLE_TRAINER_CONTINUATIONS",
)
SKIPPED_PIP = (
    "peagle-sandbox: skipped `python3 $*`: the trainer venv already holds "
    "speculators 0.9.0 and the sandbox's CPU adaptations, and a sandbox job never reaches "
    "the network (on SageMaker this installs requirements.txt into the image)"
)


def trainer_python(home: Path) -> Path:
    """The trainer venv's interpreter under a trainer home."""
    return Path(home).expanduser() / TRAINER_VENV / "bin" / "python"


def write_python_shim(directory: Path, python: Path) -> Path:
    """`python3` and `python` in `directory`: the trainer venv's interpreter, except that
    `-m pip` is skipped with a log line (see the module doc)."""
    directory.mkdir(parents=True, exist_ok=True)
    shim = directory / "python3"
    message = SKIPPED_PIP.replace("`", "\\`")
    shim.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = "-m" ] && [ "$2" = "pip" ]; then\n'
        f'  echo "{message}"\n'
        "  exit 0\n"
        "fi\n"
        f'exec "{python}" "$@"\n'
    )
    shim.chmod(0o755)
    alias = directory / "python"
    alias.unlink(missing_ok=True)
    alias.symlink_to(shim.name)
    return shim


def trainer_environ(root: Path, shim_dir: Path, base: dict[str, str] | None = None) -> dict:
    """A job process's environment (see the module doc): the allowlist, PATH without the
    server's venv, the shim first, and the sandbox's offline settings."""
    source = os.environ if base is None else base
    env = {k: source[k] for k in TRAINER_ENV if k in source}
    server_bins = {str(Path(sys.prefix) / "bin")}
    if source.get("VIRTUAL_ENV"):
        server_bins.add(str(Path(source["VIRTUAL_ENV"]) / "bin"))
    path = [p for p in source.get("PATH", os.defpath).split(os.pathsep) if p not in server_bins]
    env.update(
        PATH=os.pathsep.join([str(shim_dir), *path]),
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        PEAGLE_TRAIN_ML_ROOT=str(root),  # the entrypoint's /opt/ml (its defaults' root)
        PYTHONUNBUFFERED="1",  # lines reach the log stream as they are printed
    )
    return env


class TrainerRun:
    """One job's process (see the module doc); `exit_code` then `ended` are set on exit."""

    def __init__(self, host: TrainerHost, job: Any) -> None:
        self.host = host
        self.job = job
        self.dir = host.work_dir / job.name
        self.root = self.dir / "opt-ml"  # stands for /opt/ml
        self.exit_code: int | None = None
        self.ended: float | None = None  # sandbox-clock seconds, set after exit_code
        self._proc: subprocess.Popen[bytes] | None = None
        self._tail: collections.deque[str] = collections.deque(maxlen=20)
        self._stopping = False
        self._lock = threading.Lock()
        self._model: dict[str, bytes] = {}  # /opt/ml/model, read when the process ended
        self._failure = ""  # /opt/ml/output/failure, likewise

    # ------------------------------------------------------------------ the job's view

    def model_files(self) -> dict[str, bytes]:
        return dict(self._model)

    def failure_reason(self) -> str:
        text = self._failure[:FAILURE_CHARS].strip()
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
            command, env, notes = self._prepare()
        except Exception as e:  # a bad request or channel: the job fails, one line
            self._log([f"peagle-sandbox: cannot start the trainer: {e}"])
            self._tail.append(str(e))
            self._exit(1)
            return
        self._log([f"peagle-sandbox: /opt/ml is {self.root}", *notes])
        with self._lock:
            if self._stopping:
                self._exit(143)
                return
            self._proc = subprocess.Popen(
                command,
                cwd=self.root,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # its own group: a stop ends its children too
            )
            self.host.record(self._proc.pid, self.job.name, present=True)
        assert self._proc.stdout is not None
        for raw in self._proc.stdout:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            self._tail.append(line)
            self._log([line])
        code = self._proc.wait()
        kill_group(self._proc.pid, grace=2.0)  # anything it left behind in its group
        self.host.record(self._proc.pid, self.job.name, present=False)
        self._exit(code)

    def _exit(self, code: int) -> None:
        """Keep what SageMaker would read (the model, the failure file), remove the job's
        directory, then say the process ended."""
        model = self.root / "model"
        if model.is_dir():
            self._model = {
                p.relative_to(model).as_posix(): p.read_bytes()
                for p in sorted(model.rglob("*"))
                if p.is_file()
            }
        failure = self.root / "output" / "failure"
        if failure.is_file():
            self._failure = failure.read_text(errors="replace")
        shutil.rmtree(self.dir, ignore_errors=True)
        self.exit_code = code
        self.ended = self.host.clock.now()

    def _log(self, lines: list[str]) -> None:
        with contextlib.suppress(Exception):  # a log hiccup must not kill the job
            self.job.log(lines, self.host.clock.now())

    def _prepare(self) -> tuple[list[str], dict[str, str], list[str]]:
        shutil.rmtree(self.dir, ignore_errors=True)  # a reused name starts empty
        root, job = self.root, self.job
        spec = job.params.get("AlgorithmSpecification") or {}
        entrypoint = list(spec.get("ContainerEntrypoint") or [])
        if not entrypoint:
            raise ValueError(
                "the request has no AlgorithmSpecification.ContainerEntrypoint: the sandbox "
                "runs only a named command (it cannot run an image's own entrypoint)"
            )
        config = root / "input" / "config"
        for d in (config, root / "model", root / "output" / "data"):
            d.mkdir(parents=True, exist_ok=True)
        config.joinpath("hyperparameters.json").write_text(json.dumps(job.hyperparameters))
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
        argv = [*entrypoint, *(spec.get("ContainerArguments") or [])]
        mapped, notes = map_opt_ml({f"argv[{i}]": a for i, a in enumerate(argv)}, root)
        shim_dir = self.dir / "bin"
        write_python_shim(shim_dir, self.host.python)
        notes.append(f"python3: {self.host.python} (the trainer venv)")
        return list(mapped.values()), trainer_environ(root, shim_dir), notes


def _inside(base: Path, relative: str) -> Path:
    parts = PurePosixPath(relative).parts
    if not parts or any(p in ("..", "") for p in parts) or relative.startswith("/"):
        raise ValueError(f"ambiguous file name {relative!r}")
    return base.joinpath(*parts)


class TrainerHost:
    """Runs training jobs' entrypoints with `python` (a trainer venv's interpreter).
    `records_dir`: where each running job's process group is recorded (`<pgid>.pgid`, the
    real engines' directory, which `peagle sandbox stop` reaps)."""

    def __init__(
        self,
        python: Path,
        work_dir: Path,
        clock: Any,
        *,
        grace: float = 10.0,
        records_dir: Path | None = None,
    ) -> None:
        self.python = Path(python)
        self.work_dir = Path(work_dir)
        self.clock = clock  # the sandbox clock: exit times are on it
        self.grace = grace
        self.records_dir = records_dir
        self.runs: list[TrainerRun] = []
        # A killed server's job directories: nothing runs in them any more.
        shutil.rmtree(self.work_dir, ignore_errors=True)
        self.work_dir.mkdir(parents=True, exist_ok=True)

    def start(self, job: Any) -> TrainerRun:
        """Start `job` (a moto_training.TrainingJob) in a thread; returns its run."""
        run = TrainerRun(self, job)
        self.runs.append(run)
        threading.Thread(target=run.main, name=f"trainer-{job.name}", daemon=True).start()
        return run

    def record(self, pgid: int, job: str, *, present: bool) -> None:
        if self.records_dir is not None:
            record_group(self.records_dir, pgid, f"training-job {job}", present=present)

    def stop_all(self) -> None:
        """End every running job's process group (sandbox stop)."""
        for run in self.runs:
            proc = run._proc
            if proc is not None and proc.poll() is None:
                kill_group(proc.pid, grace=2.0)
                self.record(proc.pid, run.job.name, present=False)
        shutil.rmtree(self.work_dir, ignore_errors=True)
