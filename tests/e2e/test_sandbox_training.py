"""Training jobs in the sandbox server (issue 40), started as `peagle sandbox start` spawns
it, with a frozen clock the tests advance.

With `--trainer-home`, a job's Training runs its ContainerEntrypoint for real, as peagle's
requests name it (the vLLM DLC has no training toolkit): `bash -c "<pip install> && exec
python3 /opt/ml/input/data/code/peagle_train.py"`, the source being the `code` channel.
The stand-in `peagle_train.py` below (stdlib only) reports what it saw through its model
directory, which the sandbox uploads as SageMaker uploads /opt/ml/model. The home's
`trainer-venv-0.9.0/bin/python` is a wrapper around this interpreter run with `-S` (no
site-packages: like the real trainer venv, it cannot import peagle unless PYTHONPATH leaks
in) that marks the process as the trainer venv's.

Expected values: SageMaker's File-mode layout (`input/config/hyperparameters.json` as the
request's string map, `input/data/<channel>/`, `model/`), the entrypoint and arguments as
given with /opt/ml being the job's directory, the training container guide's failure file
("the first 1024 characters from this file as FailureReason"), StopTrainingJob's "After
SageMaker stops the job, it sets the status to Stopped" (not before the process exits),
and the review of issue 40 (findings 11 and 12: no PYTHONPATH/VIRTUAL_ENV/SM_* in a job,
HF offline, recorded process groups, job directories removed when the job ends).

The only real-time waits are for the stand-in process itself (bounded polls); control-
plane phases move when the clock is advanced.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from peagle_sandbox.procs import pid_alive
from tests.e2e.test_sandbox_clock_server import ROLE, Server

pytestmark = pytest.mark.e2e

BUCKET = "sagemaker-us-east-1-123456789012"
IMAGE = (
    "763104351884.dkr.ecr.us-east-1.amazonaws.com/vllm:0.31.0-gpu-py312-cu130-ubuntu24.04-sagemaker"
)
GROUP = "/aws/sagemaker/TrainingJobs"
CODE = "/opt/ml/input/data/code"
ENTRYPOINT = [
    "bash",
    "-c",
    f"python3 -m pip install --quiet -r {CODE}/requirements.txt "
    f'&& exec python3 {CODE}/peagle_train.py "$@"',
    "peagle-train",  # $0 of the script; ContainerArguments follow as $1...
]
TARGET = {
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 256,
    "vocab_size": 512,
    "num_hidden_layers": 4,
}
# Starting 60 + Downloading 30 (the server's defaults, moto_training.DEFAULT_SECONDS).
TO_TRAINING = timedelta(seconds=90)

STAND_IN = r"""
import json, os, pathlib, signal, sys, time
root = pathlib.Path(os.environ["PEAGLE_TRAIN_ML_ROOT"])
hps = json.loads((root / "input" / "config" / "hyperparameters.json").read_text())
model = root / "model"
print("peagle-train: step 1 loss 1.5", flush=True)
print("stand-in: to stderr", file=sys.stderr, flush=True)
mode = hps.get("mode")
if mode == "fail":
    (root / "output" / "failure").write_text("x" * 2000)
    sys.exit(3)
if mode == "hang":
    def term(*_):
        (model / "late").write_text("written in the SIGTERM grace")
        while not (root / "release").exists():
            time.sleep(0.05)
        sys.exit(0)
    signal.signal(signal.SIGTERM, term)
    (model / "pid").write_text(str(os.getpid()))
    print(f"stand-in: waiting to be stopped in {root}", flush=True)
    while True:
        time.sleep(0.05)
try:
    import sm_peagle
    importable = True
except ImportError:
    importable = False
(model / "config.json").write_text((root / "input/data/target/config.json").read_text())
seen = {
    "argv": sys.argv[1:],
    "hyperparameters.json": hps,
    "code": sorted(p.name for p in (root / "input/data/code").iterdir()),
    "train": (root / "input/data/train/train.jsonl").read_text(),
    "sm_peagle_importable": importable,
    "trainer_venv": os.environ.get("STAND_IN_TRAINER_VENV"),
    "env": sorted(os.environ),
    "hf_offline": os.environ.get("HF_HUB_OFFLINE"),
    "root": str(root),
}
(model / "peagle-training-report.json").write_text(json.dumps(seen))
print("peagle-train: step 2 loss 0.5", flush=True)
"""


@dataclass
class Sandbox:
    server: Server
    root: Path  # beside its state file: engines/ (process records), training/ (job dirs)


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    home = tmp_path_factory.mktemp("trainer-home")
    python = home / "trainer-venv-0.9.0" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f'#!/bin/sh\nSTAND_IN_TRAINER_VENV=1 exec "{sys.executable}" -S "$@"\n')
    python.chmod(0o755)
    root = tmp_path_factory.mktemp("sandbox")
    srv = Server(root, "--clock-frozen", "--trainer-home", str(home))
    s3 = _s3(srv)
    s3.create_bucket(Bucket=BUCKET)
    s3.put_object(Bucket=BUCKET, Key="targets/tiny/config.json", Body=json.dumps(TARGET))
    s3.put_object(Bucket=BUCKET, Key="data/train.jsonl", Body=b'{"prompt": "hello"}\n')
    s3.put_object(Bucket=BUCKET, Key="src/peagle_train.py", Body=STAND_IN.encode())
    s3.put_object(Bucket=BUCKET, Key="src/requirements.txt", Body=b"speculators==0.9.0\n")
    try:
        yield Sandbox(srv, root)
    finally:
        srv.stop()


def _s3(srv: Server) -> Any:
    from tests.sandbox_helpers import sandbox_client

    return sandbox_client(srv.url, "s3")


def _create(srv: Server, name: str, arguments: list[str] | None = None, **hps: str) -> None:
    def channel(n: str, prefix: str) -> dict[str, Any]:
        return {
            "ChannelName": n,
            "DataSource": {
                "S3DataSource": {
                    "S3DataType": "S3Prefix",
                    "S3Uri": f"s3://{BUCKET}/{prefix}",
                    "S3DataDistributionType": "FullyReplicated",
                }
            },
        }

    spec: dict[str, Any] = {
        "TrainingImage": IMAGE,
        "TrainingInputMode": "File",
        "ContainerEntrypoint": ENTRYPOINT,
    }
    if arguments:
        spec["ContainerArguments"] = arguments
    srv.sm.create_training_job(
        TrainingJobName=name,
        AlgorithmSpecification=spec,
        RoleArn=ROLE,
        HyperParameters={"k": "3", "target_layer_ids": "[1, 2, 3]", **hps},
        InputDataConfig=[
            channel("target", "targets/tiny/"),
            channel("train", "data/"),
            channel("code", "src/"),
        ],
        OutputDataConfig={
            "S3OutputPath": f"s3://{BUCKET}/peagle/training/",
            "CompressionType": "NONE",
        },
        ResourceConfig={"InstanceType": "ml.g6e.xlarge", "InstanceCount": 1, "VolumeSizeInGB": 50},
        StoppingCondition={"MaxRuntimeInSeconds": 3600},
    )


def _describe(srv: Server, name: str) -> dict[str, Any]:
    return dict(srv.sm.describe_training_job(TrainingJobName=name))


def _until_training_ends(srv: Server, name: str) -> dict[str, Any]:
    """Poll (real time: the stand-in process runs) until the job leaves Training."""
    deadline = time.monotonic() + 60  # bounds a process that never exits
    while True:
        d = _describe(srv, name)
        if d["SecondaryStatus"] != "Training":
            return d
        assert time.monotonic() < deadline, "the stand-in trainer never finished"
        time.sleep(0.05)


def _output(srv: Server, name: str, file: str) -> bytes:
    key = f"peagle/training/{name}/output/model/{file}"
    return bytes(_s3(srv).get_object(Bucket=BUCKET, Key=key)["Body"].read())


def _log(srv: Server, name: str) -> list[str]:
    d = _describe(srv, name)
    stream = f"{name}/algo-1-{int(d['TrainingStartTime'].timestamp())}"
    events = srv.logs.get_log_events(logGroupName=GROUP, logStreamName=stream)["events"]
    return [e["message"] for e in events]


def test_the_container_entrypoint_runs_in_the_trainer_venv_and_its_model_is_the_output(
    sandbox: Sandbox,
) -> None:
    server = sandbox.server
    name = "peagle-train-ok-00000001"
    _create(server, name, ["--ml", "/opt/ml/input", "plain"], steps="2")
    server.advance(TO_TRAINING)
    d = _until_training_ends(server, name)
    assert (d["TrainingJobStatus"], d["SecondaryStatus"]) == ("InProgress", "Uploading")
    server.advance(timedelta(seconds=20))  # Uploading
    d = _describe(server, name)
    assert (d["TrainingJobStatus"], d["SecondaryStatus"]) == ("Completed", "Completed")
    assert json.loads(_output(server, name, "config.json")) == TARGET  # the target channel
    seen = json.loads(_output(server, name, "peagle-training-report.json"))
    root = seen["root"]
    # ContainerArguments reach the command, /opt/ml rewritten to the job's directory.
    assert seen["argv"] == ["--ml", f"{root}/input", "plain"]
    assert seen["hyperparameters.json"] == {"k": "3", "target_layer_ids": "[1, 2, 3]",
                                            "steps": "2"}  # fmt: skip
    assert seen["code"] == ["peagle_train.py", "requirements.txt"]  # the code channel
    assert seen["train"] == '{"prompt": "hello"}\n'
    assert seen["trainer_venv"] == "1"  # python3 is the trainer venv's
    # Finding 11: the product is not importable in a job (the server's PYTHONPATH stays
    # out), nor does anything of the server's venv or a toolkit reach it.
    assert seen["sm_peagle_importable"] is False
    assert not {"PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV"} & set(seen["env"])
    assert not [k for k in seen["env"] if k.startswith(("SM_", "AWS_"))]
    assert seen["hf_offline"] == "1"
    lines = _log(server, name)
    assert "peagle-train: step 1 loss 1.5" in lines
    assert "stand-in: to stderr" in lines
    assert "peagle-train: step 2 loss 0.5" in lines
    # The entrypoint's pip install was skipped, and the log says so.
    skipped = [x for x in lines if x.startswith("peagle-sandbox: skipped `python3 -m pip")]
    assert len(skipped) == 1 and f"-r {root}/input/data/code/requirements.txt" in skipped[0]
    assert f"peagle-sandbox: /opt/ml is {root}" in lines
    jobs = server.request("GET", "/_peagle/training")
    listed = {j["name"]: j for j in json.loads(jobs[2])["jobs"]}
    assert listed[name]["trainer"] == "real"
    # Finding 12: the job's directory went with the job.
    assert not Path(root).exists()
    assert not (sandbox.root / "training" / name).exists()


def test_a_failing_entrypoint_fails_the_job_with_its_failure_file(sandbox: Sandbox) -> None:
    server = sandbox.server
    name = "peagle-train-fail-00000002"
    _create(server, name, mode="fail")
    server.advance(TO_TRAINING)
    d = _until_training_ends(server, name)
    assert (d["TrainingJobStatus"], d["SecondaryStatus"]) == ("Failed", "Failed")
    assert d["FailureReason"] == "AlgorithmError: " + "x" * 1024  # the file's first 1024
    assert "peagle-train: step 1 loss 1.5" in _log(server, name)
    listed = _s3(server).list_objects_v2(Bucket=BUCKET, Prefix=f"peagle/training/{name}/")
    assert listed["KeyCount"] == 0
    assert not (sandbox.root / "training" / name).exists()


def test_a_reused_name_starts_from_an_empty_directory(sandbox: Sandbox) -> None:
    """After DeleteTrainingJob frees a name, the new job sees none of the old one's files:
    the failed job above left a failure file; the same name now completes."""
    server = sandbox.server
    name = "peagle-train-reuse-00000004"
    _create(server, name, mode="fail")
    server.advance(TO_TRAINING)
    assert _until_training_ends(server, name)["TrainingJobStatus"] == "Failed"
    server.sm.delete_training_job(TrainingJobName=name)
    _create(server, name)
    server.advance(TO_TRAINING)
    d = _until_training_ends(server, name)
    assert (d["TrainingJobStatus"], d["SecondaryStatus"]) == ("InProgress", "Uploading")
    assert "FailureReason" not in d


def test_stop_ends_the_process_then_the_job_and_uploads_what_it_left(sandbox: Sandbox) -> None:
    server = sandbox.server
    name = "peagle-train-hang-00000003"
    _create(server, name, mode="hang")
    server.advance(TO_TRAINING)
    deadline = time.monotonic() + 60
    while not (waiting := [x for x in _log(server, name) if x.startswith("stand-in: waiting")]):
        assert time.monotonic() < deadline, "the stand-in never started"
        time.sleep(0.05)
    root = Path(waiting[0].rsplit(" ", 1)[-1])
    records = sorted((sandbox.root / "engines").glob("*.pgid"))
    assert [r.read_text() for r in records] == [f"training-job {name}\n"]  # reapable
    server.sm.stop_training_job(TrainingJobName=name)
    server.advance(timedelta(seconds=30))  # the Stopping phase's sandbox time has passed...
    d = _describe(server, name)
    # ...but the process is still in its SIGTERM handler: SageMaker waits for it.
    assert (d["TrainingJobStatus"], d["SecondaryStatus"]) == ("Stopping", "Stopping")
    (root / "release").write_text("")
    deadline = time.monotonic() + 30
    while _describe(server, name)["TrainingJobStatus"] == "Stopping":
        assert time.monotonic() < deadline, "the stand-in never exited"
        time.sleep(0.05)
    d = _describe(server, name)
    assert (d["TrainingJobStatus"], d["SecondaryStatus"]) == ("Stopped", "Stopped")
    pid = int(records[0].stem)
    assert int(_output(server, name, "pid")) == pid  # /opt/ml/model, uploaded on stop
    assert _output(server, name, "late") == b"written in the SIGTERM grace"
    assert not pid_alive(pid)
    assert not records[0].exists()  # its record went with it
    assert not root.exists()


def test_a_trainer_home_without_its_venv_stops_the_server_at_start(tmp_path: Path) -> None:
    import os
    import subprocess

    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "PEAGLE_"))}
    cmd = [
        sys.executable,
        "-m",
        "peagle_sandbox.server",
        "--port",
        "0",
        "--trainer-home",
        str(tmp_path),
    ]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert f"error: no trainer venv at {tmp_path}" in done.stdout
    assert "install-trainer" in done.stdout
