"""Training jobs in the sandbox server (issue 40), started as `peagle sandbox start` spawns
it, with a frozen clock the tests advance.

With `--trainer-home`, a job's Training runs its entrypoint for real: the stand-in
`peagle_train.py` below (stdlib only; the real entrypoint is another piece of issue 40)
is uploaded as `sagemaker_submit_directory`'s tar.gz, and the home's
`trainer-venv-0.9.0/bin/python` is a two-line wrapper around this interpreter. What the
stand-in saw (the /opt/ml layout and the SageMaker training toolkit's variables) comes
back through its model directory, which the sandbox uploads to the job's output path as
SageMaker uploads /opt/ml/model. Expected values are the toolkit's conventions
(SM_MODEL_DIR, SM_CHANNEL_<NAME>, SM_HPS without the sagemaker_ entries,
`input/config/hyperparameters.json` as the request's string map) and the training
container guide's failure file ("the first 1024 characters from this file as
FailureReason").

The only real-time waits are for the stand-in process itself (bounded polls); control-
plane phases move when the clock is advanced.
"""

from __future__ import annotations

import io
import json
import sys
import tarfile
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from peagle_sandbox.procs import pid_alive
from tests.e2e.test_sandbox_clock_server import ROLE, Server

pytestmark = pytest.mark.e2e

BUCKET = "sagemaker-us-east-1-123456789012"
IMAGE = "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-training:2.8.0-gpu-py312"
GROUP = "/aws/sagemaker/TrainingJobs"
TARGET = {
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 256,
    "vocab_size": 512,
    "num_hidden_layers": 4,
}
# Starting 60 + Downloading 30 (the server's defaults, moto_training.DEFAULT_SECONDS).
TO_TRAINING = timedelta(seconds=90)

STAND_IN = r"""
import json, os, pathlib, sys, time
config = pathlib.Path(os.environ["SM_INPUT_CONFIG_DIR"])
hps = json.loads((config / "hyperparameters.json").read_text())
model = pathlib.Path(os.environ["SM_MODEL_DIR"])
print("peagle-train: step 1 loss 1.5", flush=True)
print("stand-in: to stderr", file=sys.stderr, flush=True)
mode = hps.get("mode")
if mode == "fail":
    pathlib.Path(os.environ["SM_OUTPUT_DIR"], "failure").write_text("x" * 2000)
    sys.exit(3)
if mode == "hang":
    (model / "pid").write_text(str(os.getpid()))
    print("stand-in: waiting to be stopped", flush=True)
    while True:
        time.sleep(0.05)
target = pathlib.Path(os.environ["SM_CHANNEL_TARGET"]) / "config.json"
(model / "config.json").write_text(target.read_text())
seen = {
    "argv": sys.argv[1:],
    "hyperparameters.json": hps,
    "SM_HPS": json.loads(os.environ["SM_HPS"]),
    "SM_CHANNELS": json.loads(os.environ["SM_CHANNELS"]),
    "train": (pathlib.Path(os.environ["SM_CHANNEL_TRAIN"]) / "train.jsonl").read_text(),
    "cwd_has_requirements": pathlib.Path("requirements.txt").is_file(),
    "model_dir_name": model.name,
}
(model / "peagle-training-report.json").write_text(json.dumps(seen))
print("peagle-train: step 2 loss 0.5", flush=True)
"""


def _source() -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, body in (("peagle_train.py", STAND_IN), ("requirements.txt", "")):
            data = body.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    home = tmp_path_factory.mktemp("trainer-home")
    python = home / "trainer-venv-0.9.0" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    python.chmod(0o755)
    srv = Server(tmp_path_factory.mktemp("sandbox"), "--clock-frozen", "--trainer-home", str(home))
    s3 = _s3(srv)
    s3.create_bucket(Bucket=BUCKET)
    s3.put_object(Bucket=BUCKET, Key="targets/tiny/config.json", Body=json.dumps(TARGET))
    s3.put_object(Bucket=BUCKET, Key="data/train.jsonl", Body=b'{"prompt": "hello"}\n')
    s3.put_object(Bucket=BUCKET, Key="src/sourcedir.tar.gz", Body=_source())
    try:
        yield srv
    finally:
        srv.stop()


def _s3(srv: Server) -> Any:
    from tests.sandbox_helpers import sandbox_client

    return sandbox_client(srv.url, "s3")


def _create(srv: Server, name: str, **hps: str) -> None:
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

    srv.sm.create_training_job(
        TrainingJobName=name,
        AlgorithmSpecification={"TrainingImage": IMAGE, "TrainingInputMode": "File"},
        RoleArn=ROLE,
        HyperParameters={
            "sagemaker_program": '"peagle_train.py"',  # the SageMaker SDK JSON-encodes them
            "sagemaker_submit_directory": f'"s3://{BUCKET}/src/sourcedir.tar.gz"',
            "k": "3",
            "target_layer_ids": "[1, 2, 3]",
            **hps,
        },
        InputDataConfig=[channel("target", "targets/tiny/"), channel("train", "data/")],
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


def test_the_entrypoint_runs_in_the_trainer_venv_and_its_model_is_the_output(
    server: Server,
) -> None:
    name = "peagle-train-ok-00000001"
    _create(server, name, steps="2")
    server.advance(TO_TRAINING)
    d = _until_training_ends(server, name)
    assert (d["TrainingJobStatus"], d["SecondaryStatus"]) == ("InProgress", "Uploading")
    server.advance(timedelta(seconds=20))  # Uploading
    d = _describe(server, name)
    assert (d["TrainingJobStatus"], d["SecondaryStatus"]) == ("Completed", "Completed")
    assert json.loads(_output(server, name, "config.json")) == TARGET  # the target channel
    seen = json.loads(_output(server, name, "peagle-training-report.json"))
    user = {"k": "3", "target_layer_ids": "[1, 2, 3]", "steps": "2"}
    assert seen["argv"] == [x for k, v in user.items() for x in (f"--{k}", v)]
    assert seen["hyperparameters.json"]["sagemaker_program"] == '"peagle_train.py"'
    assert seen["SM_HPS"] == {"k": 3, "target_layer_ids": [1, 2, 3], "steps": 2}
    assert seen["SM_CHANNELS"] == ["target", "train"]
    assert seen["train"] == '{"prompt": "hello"}\n'
    assert seen["cwd_has_requirements"] is True  # it runs from the unpacked source dir
    assert seen["model_dir_name"] == "model"
    lines = _log(server, name)
    assert "peagle-train: step 1 loss 1.5" in lines
    assert "stand-in: to stderr" in lines
    assert "peagle-train: step 2 loss 0.5" in lines
    jobs = server.request("GET", "/_peagle/training")
    listed = {j["name"]: j for j in json.loads(jobs[2])["jobs"]}
    assert listed[name]["trainer"] == "real"


def test_a_failing_entrypoint_fails_the_job_with_its_failure_file(server: Server) -> None:
    name = "peagle-train-fail-00000002"
    _create(server, name, mode="fail")
    server.advance(TO_TRAINING)
    d = _until_training_ends(server, name)
    assert (d["TrainingJobStatus"], d["SecondaryStatus"]) == ("Failed", "Failed")
    assert d["FailureReason"] == "AlgorithmError: " + "x" * 1024  # the file's first 1024
    assert "peagle-train: step 1 loss 1.5" in _log(server, name)
    listed = _s3(server).list_objects_v2(Bucket=BUCKET, Prefix=f"peagle/training/{name}/")
    assert listed["KeyCount"] == 0


def test_stop_ends_the_process_and_uploads_what_it_left(server: Server) -> None:
    name = "peagle-train-hang-00000003"
    _create(server, name, mode="hang")
    server.advance(TO_TRAINING)
    deadline = time.monotonic() + 60
    while "stand-in: waiting to be stopped" not in _log(server, name):
        assert time.monotonic() < deadline, "the stand-in never started"
        time.sleep(0.05)
    server.sm.stop_training_job(TrainingJobName=name)
    d = _describe(server, name)
    assert (d["TrainingJobStatus"], d["SecondaryStatus"]) == ("Stopping", "Stopping")
    server.advance(timedelta(seconds=30))
    d = _describe(server, name)
    assert (d["TrainingJobStatus"], d["SecondaryStatus"]) == ("Stopped", "Stopped")
    pid = int(_output(server, name, "pid"))  # /opt/ml/model, uploaded on stop
    deadline = time.monotonic() + 30
    while pid_alive(pid):
        assert time.monotonic() < deadline, f"the stand-in {pid} outlived StopTrainingJob"
        time.sleep(0.05)


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
