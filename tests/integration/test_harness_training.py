"""The moto harness's SageMaker training jobs (issue 40), in process (`mock_aws`): boto3
against the harness on a frozen sandbox clock that the tests advance.

Expected values come from botocore 1.44.8's `sagemaker` model (TrainingJobName's pattern
and length, HyperParameters' 100 entries / 256-character keys / 2500-character values,
required members, the SecondaryStatus enum, ResourceInUse among CreateTrainingJob's
errors) and the API reference's words: "The maximum value is 28 days"
(MaxRuntimeInSeconds); StopTrainingJob "changes the status of the job to Stopping. After
SageMaker stops the job, it sets the status to Stopped"; training logs go to
/aws/sagemaker/TrainingJobs, stream `[training-job-name]/algo-[n]-[epoch_timestamp]`.
Phase lengths are the ones each test sets on the harness. Stock moto 5.2.5 fails all of
it: a job is Completed at creation, any request is accepted, a name is overwritten, and
StopTrainingJob does not exist.
"""

from __future__ import annotations

import json
import struct
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from peagle_sandbox.sandbox_clock import SandboxClock
from peagle_sandbox.testing.moto_sagemaker import SageMakerHarness
from sm_peagle.contract import VllmVersion
from sm_peagle.drafter import check_drafter, inspect_drafter

REGION = "us-east-1"
ACCOUNT = "123456789012"
T0 = 1_800_000_000  # 2027-01-15 08:00:00 UTC
BUCKET = f"sagemaker-{REGION}-{ACCOUNT}"
JOB = "peagle-train-tiny-llama-0a1b2c3d"
ROLE = f"arn:aws:iam::{ACCOUNT}:role/peagle-sandbox-role"
IMAGE = "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-training:2.8.0-gpu-py312"
# The test's own phase lengths (sandbox seconds), so every expected time is the test's.
SECONDS = {
    "Starting": 40.0,
    "Downloading": 20.0,
    "Training": 100.0,
    "Uploading": 10.0,
    "Stopping": 15.0,
}
TARGET = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 256,
    "num_hidden_layers": 4,
    "vocab_size": 512,
}


@pytest.fixture
def harness(sagemaker_harness: SageMakerHarness) -> SageMakerHarness:
    sagemaker_harness.clock = SandboxClock(frozen=True, start=T0)
    sagemaker_harness.training.seconds = dict(SECONDS)
    s3 = boto3.client("s3", region_name=REGION)
    s3.create_bucket(Bucket=BUCKET)
    s3.put_object(Bucket=BUCKET, Key="targets/tiny/config.json", Body=json.dumps(TARGET))
    s3.put_object(Bucket=BUCKET, Key="data/train.jsonl", Body=b'{"prompt": "hello"}\n')
    return sagemaker_harness


def _sm(validate: bool = True) -> Any:
    return boto3.client(
        "sagemaker", region_name=REGION, config=Config(parameter_validation=validate)
    )


def _channel(name: str, uri: str) -> dict[str, Any]:
    return {
        "ChannelName": name,
        "InputMode": "File",
        "DataSource": {
            "S3DataSource": {
                "S3DataType": "S3Prefix",
                "S3Uri": uri,
                "S3DataDistributionType": "FullyReplicated",
            }
        },
    }


def _request(**over: Any) -> dict[str, Any]:
    req: dict[str, Any] = {
        "TrainingJobName": JOB,
        "AlgorithmSpecification": {"TrainingImage": IMAGE, "TrainingInputMode": "File"},
        "RoleArn": ROLE,
        "HyperParameters": {
            "k": "3",
            "layers": "1",
            "steps": "40",
            "target_layer_ids": "[1, 2, 3]",
        },
        "InputDataConfig": [
            _channel("target", f"s3://{BUCKET}/targets/tiny/"),
            _channel("train", f"s3://{BUCKET}/data/"),
        ],
        "OutputDataConfig": {
            "S3OutputPath": f"s3://{BUCKET}/peagle/training/",
            "CompressionType": "NONE",
        },
        "ResourceConfig": {
            "InstanceType": "ml.g6e.xlarge",
            "InstanceCount": 1,
            "VolumeSizeInGB": 50,
        },
        "StoppingCondition": {"MaxRuntimeInSeconds": 6 * 3600},
        "Tags": [{"Key": "peagle:managed", "Value": "true"}],
    }
    req.update(over)
    return req


def _error(exc: pytest.ExceptionInfo[ClientError]) -> tuple[str, str]:
    err = exc.value.response["Error"]
    return err["Code"], err["Message"]


def _status(name: str = JOB) -> tuple[str, str]:
    d = _sm().describe_training_job(TrainingJobName=name)
    return d["TrainingJobStatus"], d["SecondaryStatus"]


def _epoch(value: Any) -> float:
    return float(value.timestamp())


@pytest.mark.parametrize(
    ("over", "needle"),
    [
        ({"TrainingJobName": "peagle_train_x"}, "regular expression pattern"),
        ({"TrainingJobName": "p" * 64}, "length less than or equal to 63"),
        ({"HyperParameters": {"k": "3", "big": "x" * 2501}}, "less than or equal to 2500"),
        ({"HyperParameters": {"k" * 257: "3"}}, "less than or equal to 256"),
        ({"HyperParameters": {f"h{i}": "1" for i in range(101)}}, "less than or equal to 100"),
        ({"StoppingCondition": {"MaxRuntimeInSeconds": 28 * 24 * 3600 + 1}}, "2419200"),
        (
            {"OutputDataConfig": {"S3OutputPath": f"s3://{BUCKET}/o/", "CompressionType": "ZIP"}},
            "enum value set",
        ),
        (
            {"InputDataConfig": [_channel("train", "s3://b/a/"), _channel("train", "s3://b/c/")]},
            "train",
        ),
    ],
)
def test_create_refuses_what_aws_refuses_and_creates_nothing(
    harness: SageMakerHarness, over: dict[str, Any], needle: str
) -> None:
    sm = _sm(validate=False)  # what boto3 would let through, and what it would not
    with pytest.raises(ClientError) as exc:
        sm.create_training_job(**_request(**over))
    code, message = _error(exc)
    assert code == "ValidationException"
    assert needle in message
    assert sm.list_training_jobs()["TrainingJobSummaries"] == []


def test_create_refuses_a_request_missing_a_required_member(harness: SageMakerHarness) -> None:
    req = _request()
    del req["RoleArn"]  # required by the model
    with pytest.raises(ClientError) as exc:
        _sm(validate=False).create_training_job(**req)
    assert _error(exc)[0] == "ValidationException"
    assert "RoleArn" in _error(exc)[1]


def test_a_name_in_use_is_resource_in_use_and_the_job_is_kept(harness: SageMakerHarness) -> None:
    sm = _sm()
    sm.create_training_job(**_request())
    harness.clock.advance(50)
    with pytest.raises(ClientError) as exc:
        sm.create_training_job(**_request(HyperParameters={"k": "5"}))
    assert _error(exc)[0] == "ResourceInUse"
    d = sm.describe_training_job(TrainingJobName=JOB)
    assert d["HyperParameters"]["k"] == "3"
    assert d["SecondaryStatus"] == "Downloading"


def test_the_status_walk_on_the_clock(harness: SageMakerHarness) -> None:
    sm = _sm()
    arn = sm.create_training_job(**_request())["TrainingJobArn"]
    assert arn == f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:training-job/{JOB}"
    seen = [_status()]
    for step in (40, 20, 99, 1, 10):  # Starting, Downloading, Training (1 s short), Uploading
        harness.clock.advance(step)
        seen.append(_status())
    assert seen == [
        ("InProgress", "Starting"),
        ("InProgress", "Downloading"),
        ("InProgress", "Training"),
        ("InProgress", "Training"),
        ("InProgress", "Uploading"),
        ("Completed", "Completed"),
    ]
    d = sm.describe_training_job(TrainingJobName=JOB)
    walk = [
        (t["Status"], _epoch(t["StartTime"]) - T0, _epoch(t["EndTime"]) - T0)
        for t in d["SecondaryStatusTransitions"]
    ]
    assert walk == [
        ("Starting", 0, 40),
        ("Downloading", 40, 60),
        ("Training", 60, 160),
        ("Uploading", 160, 170),
        ("Completed", 170, 170),
    ]
    assert all(t["StatusMessage"] for t in d["SecondaryStatusTransitions"])
    assert _epoch(d["CreationTime"]) == T0
    assert _epoch(d["TrainingStartTime"]) == T0 + 40  # on the instances, after Starting
    assert _epoch(d["TrainingEndTime"]) == T0 + 170
    assert d["BillableTimeInSeconds"] == 130
    assert d["ModelArtifacts"] == {
        "S3ModelArtifacts": f"s3://{BUCKET}/peagle/training/{JOB}/output/model/"
    }
    assert "FailureReason" not in d
    # What was asked is what is described: no member added (moto adds MetricDefinitions).
    req = _request()
    for member in (
        "AlgorithmSpecification",
        "HyperParameters",
        "InputDataConfig",
        "OutputDataConfig",
        "ResourceConfig",
        "StoppingCondition",
        "RoleArn",
    ):
        assert d[member] == req[member], member


def test_gzip_output_is_one_model_tar_gz(harness: SageMakerHarness) -> None:
    sm = _sm()
    out = {"S3OutputPath": f"s3://{BUCKET}/peagle/training", "CompressionType": "GZIP"}
    sm.create_training_job(**_request(OutputDataConfig=out))
    harness.clock.advance(sum(SECONDS.values()))
    d = sm.describe_training_job(TrainingJobName=JOB)
    uri = f"s3://{BUCKET}/peagle/training/{JOB}/output/model.tar.gz"
    assert (d["TrainingJobStatus"], d["ModelArtifacts"]["S3ModelArtifacts"]) == ("Completed", uri)
    s3 = boto3.client("s3", region_name=REGION)
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET, Prefix="peagle/")["Contents"]]
    assert keys == [f"peagle/training/{JOB}/output/model.tar.gz"]


def test_the_simulated_trainer_writes_a_labelled_head_the_drafter_check_accepts(
    harness: SageMakerHarness,
) -> None:
    _sm().create_training_job(**_request())
    harness.clock.advance(170)
    s3 = boto3.client("s3", region_name=REGION)
    prefix = f"peagle/training/{JOB}/output/model/"
    listed = s3.list_objects_v2(Bucket=BUCKET, Prefix=prefix)["Contents"]
    assert sorted(o["Key"][len(prefix) :] for o in listed) == [
        "config.json",
        "model.safetensors",
        "peagle-training-report.json",
    ]
    report = json.loads(
        s3.get_object(Bucket=BUCKET, Key=prefix + "peagle-training-report.json")["Body"].read()
    )
    assert report["backend"] == "simulated"
    assert report["per_depth_val_accuracy"] == [0.0, 0.0, 0.0]  # k=3, and nothing learned
    assert "learned nothing" in report["note"]
    # The real job's per-round estimate keys (round_starts.py), labelled placeholders.
    assert report["round_start_basis"].startswith("placeholder")
    assert (report["expected_position0_acceptance"], report["expected_accepted_length"]) == (0, 1)
    config = json.loads(s3.get_object(Bucket=BUCKET, Key=prefix + "config.json")["Body"].read())
    assert config["target_hidden_size"] == TARGET["hidden_size"]
    assert config["vocab_size"] == TARGET["vocab_size"]
    assert config["eagle_aux_hidden_state_layer_ids"] == [1, 2, 3]  # the hyperparameter
    raw = s3.get_object(Bucket=BUCKET, Key=prefix + "model.safetensors")["Body"].read()
    (size,) = struct.unpack("<Q", raw[:8])
    # fc maps the three aux hidden states to the head's width, the target's (as speculators
    # builds a P-EAGLE head)
    assert json.loads(raw[8 : 8 + size])["fc.weight"]["shape"] == [256, 3 * 256]
    # The product's drafter check (what deploy --drafter runs) passes it, the report aside,
    # for the sandbox's engine and for the newest vLLM (which sizes mask_hidden by the
    # target's hidden size).
    ins = inspect_drafter(f"s3://{BUCKET}/{prefix}", s3_client=s3)
    for version in ("0.18.0", "0.31.0", "0.33.0"):
        checks = check_drafter(
            ins,
            target_hidden_size=256,
            target_vocab_size=512,
            vllm_version=VllmVersion(version),
            mode="p-eagle",
            k=3,
        )
        assert [c.message for c in checks if c.status == "fail"] == [], version


def test_logs_go_to_the_training_group_stream_named_by_the_start_time(
    harness: SageMakerHarness,
) -> None:
    _sm().create_training_job(**_request())
    logs = boto3.client("logs", region_name=REGION)
    harness.clock.advance(60)  # Training begins: the stream appears
    streams = logs.describe_log_streams(logGroupName="/aws/sagemaker/TrainingJobs")
    name = f"{JOB}/algo-1-{T0 + 40}"  # TrainingStartTime's epoch seconds
    assert [s["logStreamName"] for s in streams["logStreams"]] == [name]
    first = logs.get_log_events(logGroupName="/aws/sagemaker/TrainingJobs", logStreamName=name)
    assert not any("peagle-train: step" in e["message"] for e in first["events"])
    assert "SIMULATED" in first["events"][0]["message"]
    harness.clock.advance(100)  # through Training: the step lines, stamped on the clock
    events = logs.get_log_events(logGroupName="/aws/sagemaker/TrainingJobs", logStreamName=name)
    steps = [e for e in events["events"] if e["message"].startswith("peagle-train: step")]
    assert len(steps) >= 2
    assert all(T0 + 60 <= e["timestamp"] / 1000 <= T0 + 160 for e in steps)
    assert steps[-1]["message"].startswith("peagle-train: step 40 ")


def test_a_missing_input_prefix_fails_the_job_at_downloading(harness: SageMakerHarness) -> None:
    sm = _sm()
    missing = f"s3://{BUCKET}/data/nothing-here/"
    channels = [_channel("target", f"s3://{BUCKET}/targets/tiny/"), _channel("train", missing)]
    sm.create_training_job(**_request(InputDataConfig=channels))  # accepted: no check here
    harness.clock.advance(59)
    assert _status() == ("InProgress", "Downloading")
    harness.clock.advance(1)
    d = sm.describe_training_job(TrainingJobName=JOB)
    assert (d["TrainingJobStatus"], d["SecondaryStatus"]) == ("Failed", "Failed")
    assert missing in d["FailureReason"]
    assert [t["Status"] for t in d["SecondaryStatusTransitions"]] == [
        "Starting",
        "Downloading",
        "Failed",
    ]
    s3 = boto3.client("s3", region_name=REGION)
    assert s3.list_objects_v2(Bucket=BUCKET, Prefix="peagle/")["KeyCount"] == 0


def test_stop_walks_stopping_then_stopped(harness: SageMakerHarness) -> None:
    sm = _sm()
    sm.create_training_job(**_request())
    harness.clock.advance(80)
    assert _status() == ("InProgress", "Training")
    assert sm.stop_training_job(TrainingJobName=JOB)["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert _status() == ("Stopping", "Stopping")
    listed = sm.list_training_jobs(StatusEquals="Stopping")["TrainingJobSummaries"]
    assert [j["TrainingJobName"] for j in listed] == [JOB]
    harness.clock.advance(14)
    assert _status() == ("Stopping", "Stopping")
    harness.clock.advance(1)
    d = sm.describe_training_job(TrainingJobName=JOB)
    assert (d["TrainingJobStatus"], d["SecondaryStatus"]) == ("Stopped", "Stopped")
    assert _epoch(d["TrainingEndTime"]) == T0 + 95
    # SageMaker uploads what the algorithm left in /opt/ml/model when it stops.
    report = boto3.client("s3", region_name=REGION).get_object(
        Bucket=BUCKET, Key=f"peagle/training/{JOB}/output/model/peagle-training-report.json"
    )
    assert json.loads(report["Body"].read())["stopped"] is True
    with pytest.raises(ClientError) as exc:
        sm.stop_training_job(TrainingJobName=JOB)  # no longer InProgress
    assert _error(exc)[0] == "ValidationException"
    with pytest.raises(ClientError) as exc:
        sm.stop_training_job(TrainingJobName="peagle-train-nope-00000000")
    assert _error(exc)[0] == "ResourceNotFound"


def test_a_job_past_max_runtime_is_stopped(harness: SageMakerHarness) -> None:
    sm = _sm()
    sm.create_training_job(**_request(StoppingCondition={"MaxRuntimeInSeconds": 120}))
    harness.clock.advance(119)
    assert _status() == ("InProgress", "Training")
    harness.clock.advance(1 + SECONDS["Stopping"])
    assert _status() == ("Stopped", "MaxRuntimeExceeded")


def test_list_filters_and_tags_on_the_job_arn(harness: SageMakerHarness) -> None:
    sm = _sm()
    other = "peagle-train-other-11111111"
    arn = sm.create_training_job(**_request())["TrainingJobArn"]
    harness.clock.advance(170)
    sm.create_training_job(**_request(TrainingJobName=other))

    def names(**kw: Any) -> list[str]:
        return [j["TrainingJobName"] for j in sm.list_training_jobs(**kw)["TrainingJobSummaries"]]

    assert names(StatusEquals="Completed") == [JOB]
    assert names(StatusEquals="InProgress") == [other]
    assert names(NameContains="other") == [other]
    sm.add_tags(ResourceArn=arn, Tags=[{"Key": "peagle:operation", "Value": "op-1"}])
    assert sm.list_tags(ResourceArn=arn)["Tags"] == [
        {"Key": "peagle:managed", "Value": "true"},
        {"Key": "peagle:operation", "Value": "op-1"},
    ]
    assert [(j["name"], j["status"], j["trainer"]) for j in harness.training_jobs] == [
        (JOB, "Completed", "simulated"),
        (other, "InProgress", "simulated"),
    ]


def test_delete_takes_only_an_ended_job_and_leaves_its_s3_output(
    harness: SageMakerHarness,
) -> None:
    # DeleteTrainingJob's documentation (botocore's model): "You cannot delete a job that is
    # in the InProgress or Stopping state"; its errors are ResourceNotFound and ResourceInUse;
    # "all of the metadata for the training job is lost" (S3 is not mentioned: it stays);
    # "you can reuse its name".
    sm = _sm()
    sm.create_training_job(**_request())
    with pytest.raises(ClientError) as exc:
        sm.delete_training_job(TrainingJobName=JOB)  # InProgress
    assert _error(exc)[0] == "ResourceInUse"
    harness.clock.advance(80)
    sm.stop_training_job(TrainingJobName=JOB)
    with pytest.raises(ClientError) as exc:
        sm.delete_training_job(TrainingJobName=JOB)  # Stopping
    assert _error(exc)[0] == "ResourceInUse"
    harness.clock.advance(SECONDS["Stopping"])
    assert _status() == ("Stopped", "Stopped")
    sm.delete_training_job(TrainingJobName=JOB)
    assert sm.list_training_jobs()["TrainingJobSummaries"] == []
    with pytest.raises(ClientError):
        sm.describe_training_job(TrainingJobName=JOB)
    with pytest.raises(ClientError) as exc:
        sm.delete_training_job(TrainingJobName=JOB)
    assert _error(exc)[0] == "ResourceNotFound"
    s3 = boto3.client("s3", region_name=REGION)
    kept = s3.list_objects_v2(Bucket=BUCKET, Prefix=f"peagle/training/{JOB}/output/")
    assert kept.get("KeyCount", 0) > 0
    sm.create_training_job(**_request())  # the name is free again
    assert _status() == ("InProgress", "Starting")


def test_the_server_takes_its_trainer_from_peagle_trainer_home_or_refuses(
    harness: SageMakerHarness, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from peagle_sandbox.server import TrainerMissing, start_trainer

    monkeypatch.delenv("PEAGLE_TRAINER_HOME", raising=False)
    assert start_trainer(harness, None) is None  # nothing asked for: SIMULATED
    monkeypatch.setenv("PEAGLE_TRAINER_HOME", str(tmp_path))
    with pytest.raises(TrainerMissing, match="install-trainer"):
        start_trainer(harness, None)  # asked for, and no venv: never a silent fake
    assert harness.training.trainer is None
    python = tmp_path / "trainer-venv-0.9.0" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text("#!/bin/sh\n")
    host = start_trainer(harness, None)
    assert host is not None and host.python == python
    assert harness.training.trainer is host


def test_trainer_alone_means_the_engine_home(
    harness: SageMakerHarness, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from peagle_sandbox.server import TrainerMissing, start_trainer

    monkeypatch.delenv("PEAGLE_TRAINER_HOME", raising=False)
    monkeypatch.setenv("PEAGLE_ENGINE_HOME", str(tmp_path))
    with pytest.raises(TrainerMissing, match=str(tmp_path)):
        start_trainer(harness, None, wanted=True)


class _Run:
    """A trainer process the test ends by hand (trainer_host.TrainerRun's interface)."""

    def __init__(self) -> None:
        self.exit_code: int | None = None
        self.ended: float | None = None
        self.stopped = False

    def stop(self) -> None:
        self.stopped = True  # SIGTERM sent; the process decides when it exits

    def model_files(self) -> dict[str, bytes]:
        return {"left.txt": b"written in the SIGTERM grace"}

    def failure_reason(self) -> str:
        return "AlgorithmError: unused"


def test_a_real_trainers_job_is_stopped_no_earlier_than_its_process_exits(
    harness: SageMakerHarness,
) -> None:
    """ "After SageMaker stops the job, it sets the status to Stopped": a process still in
    its SIGTERM grace keeps the job Stopping past the phase's own length, and what it
    leaves in /opt/ml/model by its exit is uploaded."""
    run = _Run()
    harness.training.trainer = type("Host", (), {"start": lambda self, job: run})()
    sm = _sm()
    sm.create_training_job(**_request())
    harness.clock.advance(80)
    assert _status() == ("InProgress", "Training")
    sm.stop_training_job(TrainingJobName=JOB)
    assert run.stopped
    harness.clock.advance(60)  # Stopping is 15 s: long past it
    assert _status() == ("Stopping", "Stopping")
    run.exit_code, run.ended = 143, harness.clock.now()
    d = sm.describe_training_job(TrainingJobName=JOB)
    assert (d["TrainingJobStatus"], d["SecondaryStatus"]) == ("Stopped", "Stopped")
    assert _epoch(d["TrainingEndTime"]) == T0 + 140  # the process's exit, not stop + 15
    body = (
        boto3.client("s3", region_name=REGION)
        .get_object(Bucket=BUCKET, Key=f"peagle/training/{JOB}/output/model/left.txt")["Body"]
        .read()
    )
    assert body == b"written in the SIGTERM grace"


def test_the_trainers_directories_and_records_sit_beside_the_state_file(
    harness: SageMakerHarness, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Finding 12: a killed server's job directories are cleared by the next host, and its
    processes are recorded where `peagle sandbox stop` reaps the engines'."""
    from peagle_sandbox.server import start_trainer

    home = tmp_path / "home"
    python = home / "trainer-venv-0.9.0" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text("#!/bin/sh\n")
    state = tmp_path / "state"
    stale = state / "training" / "peagle-train-old-00000000" / "opt-ml" / "output"
    stale.mkdir(parents=True)
    (stale / "failure").write_text("a killed server's job")
    host = start_trainer(harness, home, state_file=state / "sandbox.json")
    assert host is not None
    assert host.work_dir == state / "training"
    assert host.records_dir == state / "engines"
    assert list(host.work_dir.iterdir()) == []
