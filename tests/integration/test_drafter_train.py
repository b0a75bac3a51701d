"""`drafter_train` / `peagle drafter train` on moto: the exact CreateTrainingJob request,
what a dry run sends (nothing), what an interrupted run leaves (nothing), and CLI/SDK
parity for every bad input.

The expected values come from the rules, not from the code under test: SageMaker's
CreateTrainingJob API (hyperparameters are strings; the name pattern and 63 characters;
MaxRuntimeInSeconds; `AlgorithmSpecification.ContainerEntrypoint`, botocore's
TrainingContainerEntrypoint: up to 100 strings; File channels land under
`/opt/ml/input/data/<channel>/`), the lead's design for issue 40 (channel names
`target`/`train`, output `s3://<bucket>/peagle/training/` uncompressed, tags), the review
of it (the vLLM 0.31.0 SageMaker DLC as the image, which has no training toolkit: the
source as a third File channel `code`, one object per file, and a container entrypoint
that pip-installs requirements.txt under constraints.txt and execs peagle_train.py), and
botocore's own ParamValidator for the request.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import boto3
import pytest

import sm_peagle
from sm_peagle.errors import SpecError
from tests.integration.lifecycle_env import REGION, World, build_world, record_requests, run

ACCOUNT = "123456789012"
BUCKET = f"sagemaker-{REGION}-{ACCOUNT}"
MODELS = "my-models"
TARGET = f"s3://{MODELS}/tiny-llama/"
# The tiny Llama target's shape (sandbox/peagle_sandbox/models.py: hidden 256, 4 layers,
# vocab 512): the trainer handles LlamaForCausalLM.
TINY_CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 256,
    "intermediate_size": 512,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 512,
}
DLC = (
    "763104351884.dkr.ecr.us-east-1.amazonaws.com/vllm:0.31.0-gpu-py312-cu130-ubuntu24.04-sagemaker"
)
CODE = "/opt/ml/input/data/code"  # where SageMaker puts the `code` channel's files
ENTRYPOINT = [
    "bash",
    "-c",
    f"PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install --quiet --no-input "
    f"-c {CODE}/constraints.txt -r {CODE}/requirements.txt "
    f"&& exec python3 {CODE}/peagle_train.py",
]
ALL_SERVICES = ("sagemaker", "s3", "iam", "sts", "service-quotas", "logs")
PLACEHOLDER_ENTRYPOINT = {
    "peagle_train.py": b"print('placeholder: the real one is in training/source/')\n",
    "requirements.txt": b"speculators==0.9.0\n",
    "constraints.txt": b"torch==2.13.0\n",
}


@pytest.fixture
def data(tmp_path: Path) -> Path:
    p = tmp_path / "prompts.jsonl"
    rows = [{"prompt": f"count to {i}"} for i in range(5)]
    rows.append({"messages": [{"role": "user", "content": "hello"}]})
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return p


@pytest.fixture
def world(sagemaker_harness: Any, monkeypatch: pytest.MonkeyPatch) -> World:
    from peagle_sandbox.sandbox_clock import SandboxClock

    # The harness walks a job through minutes of sandbox time (moto_training.py): an hour
    # of it per real second keeps each run to a fraction of a second.
    sagemaker_harness.clock = SandboxClock(rate=3600)
    monkeypatch.setenv("PEAGLE_POLL_SECONDS", "0.01")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    w = build_world()
    monkeypatch.setenv("PEAGLE_ROLE_ARN", w.role_arn)
    s3 = boto3.client("s3", region_name=REGION)
    s3.create_bucket(Bucket=MODELS)
    s3.put_object(Bucket=MODELS, Key="tiny-llama/config.json", Body=json.dumps(TINY_CONFIG))
    s3.put_object(Bucket=MODELS, Key="tiny-llama/model.safetensors", Body=b"\0" * 4096)
    # The entrypoint is another helper's (sm_peagle/training/source/); a placeholder here.
    import sm_peagle.training.request as request_mod

    monkeypatch.setattr(request_mod, "source_files", lambda: dict(PLACEHOLDER_ENTRYPOINT))
    monkeypatch.setattr(request_mod.secrets, "token_hex", lambda n: "0123abcd"[: 2 * n])
    record_requests(w, monkeypatch, *ALL_SERVICES)
    return w


def _seed_head(job: str) -> None:
    """What a finished job leaves under its output prefix: a head for the tiny target and
    the report (what the entrypoint writes; SageMaker uploads the model dir)."""
    from peagle_sandbox.synthetic_head import synthetic_head

    s3 = boto3.client("s3", region_name=REGION)
    s3.create_bucket(Bucket=BUCKET)
    prefix = f"peagle/training/{job}/output/model/"
    # A speculators head has the target's hidden size, so every vLLM's mask_hidden rule
    # agrees on it.
    head = synthetic_head(hidden=256, target_hidden=256, target_vocab=512, mask_token_id=3,
                          vllm_version="0.31.0", aux_layer_ids=[1, 2, 3])  # fmt: skip
    for key, body in head.items():
        s3.put_object(Bucket=BUCKET, Key=prefix + key, Body=body)
    report = {"steps": 40, "k": 3, "per_depth_val_accuracy": [0.5, 0.4, 0.25],
              "train_loss_first": 4.7, "train_loss_last": 1.2, "samples": 5,
              "val_samples": 1, "speculators_version": "0.9.0", "backend": "gpu"}  # fmt: skip
    s3.put_object(Bucket=BUCKET, Key=prefix + "peagle-training-report.json",
                  Body=json.dumps(report))  # fmt: skip


def test_dry_run_sends_nothing_and_returns_a_request_botocore_accepts(
    world: World, data: Path
) -> None:
    r = sm_peagle.Client(region=REGION).drafter_train(
        TARGET, data=str(data), steps=40, dry_run=True
    )
    assert world.requests == []
    assert r.status == "DryRun"
    req = dict(r.request)
    # A dry run knows no account (no STS call): the bucket is shown as a placeholder.
    req["HyperParameters"] = dict(req["HyperParameters"], target_layer_ids="[1, 2, 3]")
    boto3.client("sagemaker", region_name=REGION).meta.events  # noqa: B018 - a client exists
    from botocore.validate import ParamValidator

    model = boto3.client("sagemaker", region_name=REGION).meta.service_model
    shape = model.operation_model("CreateTrainingJob").input_shape
    report = ParamValidator().validate(req, shape)
    assert not report.has_errors(), report.generate_report()
    assert world.requests == []  # making a client sent nothing either


def test_dry_run_cli_prints_the_request_and_exits_0(
    world: World, data: Path, capsys: pytest.CaptureFixture
) -> None:
    code, out, err = run(capsys, "drafter", "train", TARGET, "--data", str(data),
                         "--steps", "40", "--dry-run", "--json")  # fmt: skip
    assert code == 0, err
    doc = json.loads(out)
    assert doc["status"] == "DryRun"
    assert doc["request"]["TrainingJobName"] == "peagle-train-tiny-llama-0123abcd"
    assert world.requests == []
    # The GPU path has never run on a GPU: a run on AWS's default image says so.
    unverified = [n for n in doc["notes"] if "has not yet run on a GPU" in n]
    assert len(unverified) == 1 and "--max-runtime" in unverified[0]
    code, out, err = run(capsys, "drafter", "train", TARGET, "--data", str(data), "--steps",
                         "40", "--image", "123456789012.dkr.ecr.us-east-1.amazonaws.com/t:1",
                         "--dry-run", "--json")  # fmt: skip
    assert code == 0, err
    assert not [n for n in json.loads(out)["notes"] if "has not yet run on a GPU" in n]


def _snapshot_at_wait(monkeypatch: pytest.MonkeyPatch, job: str) -> dict[str, bytes]:
    """The objects under the job's prefix while the job runs (the wait's first call): what
    the job's channels read. Filled in when the run waits."""
    from sm_peagle.lifecycle import training as lt

    seen: dict[str, bytes] = {}
    real = lt.wait_for_job

    def wait(*a: Any, **k: Any) -> Any:
        s3 = boto3.client("s3", region_name=REGION)
        for o in s3.list_objects_v2(Bucket=BUCKET, Prefix=f"peagle/training/{job}/").get(
            "Contents", []
        ):
            seen[o["Key"]] = s3.get_object(Bucket=BUCKET, Key=o["Key"])["Body"].read()
        return real(*a, **k)

    monkeypatch.setattr(lt, "wait_for_job", wait)
    return seen


def _keys_left(job: str) -> set[str]:
    s3 = boto3.client("s3", region_name=REGION)
    got = s3.list_objects_v2(Bucket=BUCKET, Prefix=f"peagle/training/{job}/")
    return {o["Key"].removeprefix(f"peagle/training/{job}/") for o in got.get("Contents", [])}


def test_the_create_training_job_request_field_by_field(
    world: World, data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = "peagle-train-tiny-llama-0123abcd"
    _seed_head(job)
    during = _snapshot_at_wait(monkeypatch, job)
    r = sm_peagle.Client(region=REGION).drafter_train(TARGET, data=str(data), k=3, steps=40)
    sent = world.sent("CreateTrainingJob")
    assert len(sent) == 1
    req = sent[0]
    assert req["TrainingJobName"] == job
    assert re.fullmatch(r"[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}", job)
    assert req["AlgorithmSpecification"] == {
        "TrainingImage": DLC,
        "TrainingInputMode": "File",
        "ContainerEntrypoint": ENTRYPOINT,
    }
    prefix = f"s3://{BUCKET}/peagle/training/{job}/"
    # Only the trainer's: the image has no toolkit to read sagemaker_program & co.
    assert req["HyperParameters"] == {
        "k": "3",
        "layers": "1",
        "steps": "40",
        "max_new_tokens": "256",
        "seed": "0",
        # 4 layers: speculators' default [2, n//2, n-3] = [2, 2, 1] is invalid (facts 14);
        # three distinct layers below the last, ascending.
        "target_layer_ids": "[1, 2, 3]",
        "val_fraction": "0.1",
    }
    assert req["RoleArn"] == world.role_arn
    channel = {"S3DataType": "S3Prefix", "S3DataDistributionType": "FullyReplicated"}
    assert req["InputDataConfig"] == [
        {"ChannelName": "target", "InputMode": "File",
         "DataSource": {"S3DataSource": {**channel, "S3Uri": TARGET}}},
        {"ChannelName": "train", "InputMode": "File",
         "DataSource": {"S3DataSource": {**channel, "S3Uri": prefix + "data/train.jsonl"}}},
        {"ChannelName": "code", "InputMode": "File",
         "DataSource": {"S3DataSource": {**channel, "S3Uri": prefix + "source/"}}},
    ]  # fmt: skip
    assert req["OutputDataConfig"] == {
        "S3OutputPath": f"s3://{BUCKET}/peagle/training/",
        "CompressionType": "NONE",
    }
    assert req["ResourceConfig"]["InstanceType"] == "ml.g7e.2xlarge"
    assert req["ResourceConfig"]["InstanceCount"] == 1
    # Six short prompts for a hidden-256 target: far under the 200 GB floor peagle keeps.
    assert req["ResourceConfig"]["VolumeSizeInGB"] == 200
    assert req["StoppingCondition"] == {"MaxRuntimeInSeconds": 6 * 3600}
    tags = {t["Key"]: t["Value"] for t in req["Tags"]}
    assert tags["peagle:managed"] == "true"
    assert tags["peagle:training-target"] == TARGET
    assert re.fullmatch(r"op-\d{8}T\d{6}Z-[0-9a-f]{6}", tags["peagle:operation"])
    assert {"peagle:operation-owner", "peagle:operation-until"} <= set(tags)
    # While the job ran, the uploads were where the channels point: the `code` channel one
    # object per source file, the data as given.
    assert {f"peagle/training/{job}/source/{n}" for n in PLACEHOLDER_ENTRYPOINT} <= set(during)
    assert during[f"peagle/training/{job}/data/train.jsonl"] == data.read_bytes()
    # Once it completed and its report was read, only the head is left (issue 40 review,
    # finding 6: the uploaded prompts and source stay nowhere).
    assert _keys_left(job) == {
        "output/model/config.json",
        "output/model/model.safetensors",
        "output/model/peagle-training-report.json",
    }
    # The result: the head's prefix (what deploy --drafter takes), the report read back.
    assert r.status == "Completed"
    assert r.head_uri == prefix + "output/model/"
    assert len(r.report.per_depth_val_accuracy) == 3
    # The head passes the checks deploy makes, the report file beside it included.
    assert r.check.ok, [c.message for c in r.check.checks if c.status == "fail"]
    assert not [c for c in r.check.checks if "report" in str(c.message)]
    # Nothing was created before the checks: CreateTrainingJob is the only SageMaker write.
    writes = [op for op, _ in world.requests if op.startswith(("Create", "Stop", "Delete"))]
    assert [op for op in writes if op != "DeleteObjects"] == ["CreateTrainingJob"]
    # The uploads went only after the report was read (a run that cannot read it keeps
    # them for the user to look at).
    ops = [(op, p.get("Key", "")) for op, p in world.requests]
    report_read = ops.index(("GetObject", f"peagle/training/{job}/output/model/"
                                          "peagle-training-report.json"))  # fmt: skip
    assert ops.index(("DeleteObjects", "")) > report_read


def test_the_code_channel_is_the_source_dir_file_for_file(
    world: World, data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each source file is one object under the `code` channel's prefix, byte for byte, and
    nothing else is there while the job runs: SageMaker copies exactly these to
    /opt/ml/input/data/code/, the directory the entrypoint runs from."""
    job = "peagle-train-tiny-llama-0123abcd"
    _seed_head(job)
    during = _snapshot_at_wait(monkeypatch, job)
    sm_peagle.Client(region=REGION).drafter_train(TARGET, data=str(data), steps=1)
    prefix = f"peagle/training/{job}/source/"
    got = {k[len(prefix) :]: body for k, body in during.items() if k.startswith(prefix)}
    assert got == PLACEHOLDER_ENTRYPOINT
    # The entrypoint names files the channel holds.
    command = world.sent("CreateTrainingJob")[0]["AlgorithmSpecification"]["ContainerEntrypoint"]
    for name in re.findall(rf"{CODE}/([\w.]+)", command[-1]):
        assert name in got


def _stop_supported() -> bool:
    try:
        from moto.sagemaker.responses import SageMakerResponse
    except ImportError:  # pragma: no cover
        return False
    if hasattr(SageMakerResponse, "stop_training_job"):
        return True
    try:  # the training emulation of the sandbox harness (issue 40's other helper)
        import peagle_sandbox.testing.moto_training  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.skipif(not _stop_supported(), reason="moto has no StopTrainingJob; the sandbox "
                    "harness's training emulation (testing/moto_training.py) adds it")  # fmt: skip
def test_an_interrupt_during_training_stops_the_job_and_leaves_nothing(
    world: World, data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sm_peagle.lifecycle import training as lt
    from sm_peagle.training.errors import TrainingStopped

    def interrupted(*_a: Any, **_k: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(lt, "wait_for_job", interrupted)
    job = "peagle-train-tiny-llama-0123abcd"
    with pytest.raises(TrainingStopped) as caught:
        sm_peagle.Client(region=REGION).drafter_train(TARGET, data=str(data), steps=40)
    assert caught.value.job_name == job
    assert world.sent("StopTrainingJob") == [{"TrainingJobName": job}]
    # Once Stopped, the job is deleted (gc would delete it: nothing of it is of use), so
    # "nothing is left" is true of SageMaker too (issue 40 review, finding 7).
    assert caught.value.status == "Stopped"
    assert world.sent("DeleteTrainingJob") == [{"TrainingJobName": job}]
    assert caught.value.left == [] and caught.value.to_dict()["left"] == []
    jobs = boto3.client("sagemaker", region_name=REGION).list_training_jobs()
    assert jobs["TrainingJobSummaries"] == []
    left = boto3.client("s3", region_name=REGION).list_objects_v2(
        Bucket=BUCKET, Prefix="peagle/training/"
    )
    assert left.get("KeyCount", 0) == 0


def test_an_interrupt_after_the_job_completed_keeps_its_head(
    world: World, data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C lands after the job reached Completed but before the wait saw it: the stop is
    refused (SageMaker stops only InProgress jobs) and the job is Completed, so its head (the
    hours it cost) and the job stay; only the uploads go, and the line says so."""
    from sm_peagle.lifecycle import training as lt
    from sm_peagle.training.errors import TrainingStopped

    real_wait = lt.wait_for_job

    def completed_then_interrupted(*a: Any, **k: Any) -> None:
        real_wait(*a, **k)  # the harness runs the job to Completed
        raise KeyboardInterrupt

    monkeypatch.setattr(lt, "wait_for_job", completed_then_interrupted)
    _seed_head(JOB)
    with pytest.raises(TrainingStopped) as caught:
        sm_peagle.Client(region=REGION).drafter_train(TARGET, data=str(data), steps=40)
    assert caught.value.status == "Completed"
    assert world.sent("DeleteTrainingJob") == []
    assert _keys_left(JOB) == {
        "output/model/config.json",
        "output/model/model.safetensors",
        "output/model/peagle-training-report.json",
    }
    assert "gc removes" not in str(caught.value)  # gc keeps a Completed job's head
    assert "kept" in str(caught.value) and ("head", f"s3://{BUCKET}/peagle/training/{JOB}/"
                                            "output/model/") in caught.value.left  # fmt: skip


def test_an_aws_error_while_stopping_is_a_lost_job_not_a_bare_error(
    world: World, data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C with expired credentials: StopTrainingJob fails, so the job may run on. The
    error names it, says so, and gives the stop command and the gc (as a lost wait does)."""
    from sm_peagle.lifecycle import training as lt
    from sm_peagle.training.errors import TrainingLost

    def interrupted(*_a: Any, **_k: Any) -> None:
        raise KeyboardInterrupt

    def expired(*_a: Any, **_k: Any) -> str:
        raise _client_error("ExpiredTokenException", "StopTrainingJob")

    monkeypatch.setattr(lt, "wait_for_job", interrupted)
    monkeypatch.setattr(lt, "stop_job", expired)
    with pytest.raises(TrainingLost) as caught:
        sm_peagle.Client(region=REGION).drafter_train(TARGET, data=str(data), steps=40)
    assert caught.value.job_name == JOB and "may still be running" in str(caught.value)
    assert "stop-training-job" in str(caught.value.remedy)
    assert "gc(operation=" in str(caught.value.remedy)


def test_an_interrupt_during_the_uploads_removes_them_and_creates_no_job(
    world: World, data: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    from sm_peagle.lifecycle import training as lt
    from sm_peagle.training.errors import TrainingStopped

    real = lt.upload
    calls = []

    def upload_then_stop(*a: Any, **k: Any) -> str:
        calls.append(a[2])
        uri = real(*a, **k)
        if len(calls) == 2:  # Ctrl-C right after the data upload, before CreateTrainingJob
            raise KeyboardInterrupt
        return uri

    monkeypatch.setattr(lt, "upload", upload_then_stop)
    with pytest.raises(TrainingStopped) as caught:
        sm_peagle.Client(region=REGION).drafter_train(TARGET, data=str(data), steps=40)
    assert caught.value.job_name is None
    assert len(calls) == 2
    # The CLI: exit 130 (interrupted), one line saying what happened and that nothing is left.
    calls.clear()
    code, _out, err = run(capsys, "drafter", "train", TARGET, "--data", str(data), "--steps",
                          "40", "--yes")  # fmt: skip
    assert code == 130
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "no job was created" in errors[0], err
    assert "nothing is left" in errors[0] and "Traceback" not in err
    assert world.sent("CreateTrainingJob") == [] and world.sent("StopTrainingJob") == []
    left = boto3.client("s3", region_name=REGION).list_objects_v2(
        Bucket=BUCKET, Prefix="peagle/training/"
    )
    assert left.get("KeyCount", 0) == 0


BAD_INPUTS = [
    # (SDK keywords, CLI arguments, the parameter named)
    ({"k": 0, "steps": 1}, ["-k", "0", "--steps", "1"], "k"),
    ({"k": 16, "steps": 1}, ["-k", "16", "--steps", "1"], "k"),
    ({"layers": 5, "steps": 1}, ["--layers", "5", "--steps", "1"], "layers"),
    ({"steps": -1}, ["--steps", "-1"], "steps"),
    ({"steps": 1, "epochs": 1}, ["--steps", "1", "--epochs", "1"], "epochs"),
    ({}, [], "steps"),
    ({"steps": 1, "max_new_tokens": 0}, ["--steps", "1", "--max-new-tokens", "0"],
     "max_new_tokens"),
    ({"steps": 1, "instance_type": "ml.c5.xlarge"},
     ["--steps", "1", "--instance-type", "ml.c5.xlarge"], "instance_type"),
    ({"steps": 1, "instance_type": "ml.nope.xlarge"},
     ["--steps", "1", "--instance-type", "ml.nope.xlarge"], "instance_type"),
    # GPU types the training image (CUDA 13.0, x86, bf16) cannot run on.
    ({"steps": 1, "instance_type": "ml.p3.2xlarge"},
     ["--steps", "1", "--instance-type", "ml.p3.2xlarge"], "instance_type"),
    ({"steps": 1, "instance_type": "ml.g4dn.xlarge"},
     ["--steps", "1", "--instance-type", "ml.g4dn.xlarge"], "instance_type"),
    ({"steps": 1, "instance_type": "ml.p6e-gb200.36xlarge"},
     ["--steps", "1", "--instance-type", "ml.p6e-gb200.36xlarge"], "instance_type"),
    ({"steps": 1, "max_runtime": "29d"}, ["--steps", "1", "--max-runtime", "29d"],
     "max_runtime"),
    ({"steps": 1, "draft_vocab_size": 513}, ["--steps", "1", "--draft-vocab", "513"],
     "draft_vocab_size"),
    ({"steps": 1, "role": "not-an-arn"}, ["--steps", "1", "--role", "not-an-arn"], "role"),
    # deploy serves catalog models: refused before hours of training, not after
    ({"steps": 1, "deploy": True}, ["--steps", "1", "--deploy"], "deploy"),
]  # fmt: skip


@pytest.mark.parametrize(("kwargs", "argv", "field"), BAD_INPUTS)
def test_bad_input_is_the_same_error_in_sdk_and_cli_and_sends_nothing(
    world: World,
    data: Path,
    capsys: pytest.CaptureFixture,
    kwargs: dict[str, Any],
    argv: list[str],
    field: str,
) -> None:
    with pytest.raises(SpecError) as caught:
        sm_peagle.Client(region=REGION).drafter_train(TARGET, data=str(data), **kwargs)
    assert caught.value.field == field
    assert caught.value.remedy is not None
    code, out, err = run(capsys, "drafter", "train", TARGET, "--data", str(data), *argv,
                         "--json")  # fmt: skip
    assert code == 2, (out, err)
    doc = json.loads(out)
    got = doc.get("error", doc)
    assert got["type"] == "SpecError"
    assert got["field"] == field
    code, out, err = run(capsys, "drafter", "train", TARGET, "--data", str(data), *argv)
    assert code == 2
    # An S3 target is read before it is judged: the "talking to" line comes first.
    lines = [line for line in err.splitlines() if line.strip() and "talking to" not in line]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "(fix: " in lines[0], err
    assert "Traceback" not in err
    writes = [op for op, _ in world.requests if not op.startswith(("Get", "List", "Head"))]
    assert writes == []


def test_bad_data_and_targets_are_the_same_error_in_sdk_and_cli(
    world: World, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text('{"text": "no prompt here"}\n\n')
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"prompt": "ok"}\n{not json\n')
    moe = tmp_path / "moe"
    moe.mkdir()
    (moe / "config.json").write_text(
        json.dumps({**TINY_CONFIG, "architectures": ["GptOssForCausalLM"]})
    )
    cases = [
        (TARGET, str(empty), "data"),
        (TARGET, str(broken), "data"),
        (TARGET, str(tmp_path / "missing.jsonl"), "data"),
        (str(moe), str(broken).replace("broken", "empty"), "data"),  # data judged first
        ("gpt-oss-20b", str(empty).replace("empty", "broken"), "data"),
        ("no-such-model", str(empty), "data"),
    ]
    good = tmp_path / "good.jsonl"
    good.write_text('{"prompt": "hi"}\n{"prompt": "there"}\n')
    cases += [
        (str(moe), str(good), "target"),  # an architecture the trainer cannot handle
        ("gpt-oss-20b", str(good), "target"),
        ("no-such-model", str(good), "target"),
        (f"s3://{MODELS}/missing/", str(good), "target"),  # read once, before any upload
    ]
    for target, data_file, field in cases:
        with pytest.raises(SpecError) as caught:
            sm_peagle.Client(region=REGION).drafter_train(target, data=data_file, steps=1)
        assert caught.value.field == field, (target, data_file, caught.value)
        code, out, err = run(capsys, "drafter", "train", target, "--data", data_file,
                             "--steps", "1")  # fmt: skip
        assert code == 2, (target, data_file, err)
        lines = [line for line in err.splitlines() if line.strip() and "talking to" not in line]
        assert len(lines) == 1 and lines[0].startswith("error: ") and "(fix: " in lines[0], err
    assert [op for op, _ in world.requests if op.startswith(("Put", "Create"))] == []


# Data the job's entrypoint refuses (prompt_rows.py, its rule), so preflight refuses it
# too: (file name, contents); a name starting "s3://" is S3 data, never read.
JOB_REFUSES = [
    # An OpenAI-style conversation whose assistant turn is a tool call: content null.
    ("tool_call.jsonl", '{"prompt": "a"}\n{"messages": [{"role": "user", "content": "q"}, '
     '{"role": "assistant", "content": null, "tool_calls": [{"id": "c1"}]}]}\n'),
    # A content given as a list of parts.
    ("parts.jsonl", '{"prompt": "a"}\n{"messages": [{"role": "user", "content": '
     '[{"type": "text", "text": "hi"}]}]}\n{"prompt": "b"}\n'),
    # A row of another shape mixed in.
    ("mixed.jsonl", '{"prompt": "a"}\n{"prompt": "b"}\n{"text": "c"}\n'),
    # One prompt: speculators' split trains on int(1 * 0.9) = 0 rows.
    ("one.jsonl", '{"prompt": "only"}\n'),
    # S3 data the job would not read: its channel reads *.jsonl only, and one object.
    (f"s3://{MODELS}/data/prompts.json", None),
    (f"s3://{MODELS}/data/prompts.ndjson", None),
    (f"s3://{MODELS}/data/", None),
]  # fmt: skip


@pytest.mark.parametrize(("name", "body"), JOB_REFUSES, ids=[n for n, _ in JOB_REFUSES])
def test_data_the_job_would_refuse_is_refused_first_in_sdk_and_cli(
    world: World, tmp_path: Path, capsys: pytest.CaptureFixture, name: str, body: str | None
) -> None:
    data = name
    if body is not None:
        (tmp_path / name).write_text(body)
        data = str(tmp_path / name)
    with pytest.raises(SpecError) as caught:
        sm_peagle.Client(region=REGION).drafter_train(TARGET, data=data, steps=1)
    assert caught.value.field == "data" and caught.value.remedy is not None
    code, _out, err = run(capsys, "drafter", "train", TARGET, "--data", data, "--steps", "1")
    assert code == 2, err
    lines = [line for line in err.splitlines() if line.strip() and "talking to" not in line]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "(fix: " in lines[0], err
    # Judged before anything is read from S3 or created: local data before the target's
    # read, S3 data by its name.
    assert world.requests == []


def test_bad_rows_name_their_line_and_the_fix(
    world: World, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": "a"}\n\n{"text": "b"}\n{"prompt": "c"}\n')
    with pytest.raises(SpecError) as caught:
        sm_peagle.Client(region=REGION).drafter_train(TARGET, data=str(bad), steps=1)
    assert "line 3" in str(caught.value) and "line 3" in str(caught.value.remedy)
    code, _out, err = run(capsys, "drafter", "train", TARGET, "--data", str(bad), "--steps", "1")
    assert code == 2 and "line 3" in err
    assert world.requests == []  # the local data is judged before anything is read


def test_a_dry_run_on_s3_data_says_only_its_first_mib_is_checked(world: World) -> None:
    r = sm_peagle.Client(region=REGION).drafter_train(
        TARGET, data=f"s3://{MODELS}/data/good.jsonl", steps=1, dry_run=True
    )
    assert world.requests == []
    assert any("first MiB" in n and "not checked" in n for n in r.notes), r.notes


BIG_CONFIG = {**TINY_CONFIG, "hidden_size": 4096, "intermediate_size": 14336,
              "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
              "vocab_size": 128256}  # fmt: skip
# 20,000 prompts of 800 characters (200 tokens at 4 characters a token) + 256 new tokens,
# 3 aux + 1 last layer of 4096 bf16 values: 20,000 x 456 x 4 x 4096 x 2 = 298.84 GB of
# hidden states, + 20 GB margin (no weights in the listing): 318.84 GB -> 319 GB.
BIG_ROWS = 20_000
BIG_VOLUME_GB = 319


def _big_data() -> bytes:
    return b"".join(
        json.dumps({"prompt": f"{i:08d}" + "x" * 792}).encode() + b"\n" for i in range(BIG_ROWS)
    )


def test_the_volume_is_sized_from_local_data_in_the_dry_run(world: World, tmp_path: Path) -> None:
    model = tmp_path / "big"
    model.mkdir()
    (model / "config.json").write_text(json.dumps(BIG_CONFIG))
    data = tmp_path / "big.jsonl"
    data.write_bytes(_big_data())
    r = sm_peagle.Client(region=REGION).drafter_train(
        str(model), data=str(data), steps=1, dry_run=True
    )
    assert r.request["ResourceConfig"]["VolumeSizeInGB"] == BIG_VOLUME_GB
    assert any("characters / 4" in n for n in r.notes), r.notes
    assert world.requests == []


def test_the_volume_is_sized_from_s3_data_extrapolated_from_its_first_mib(world: World) -> None:
    s3 = boto3.client("s3", region_name=REGION)
    s3.put_object(Bucket=MODELS, Key="big/config.json", Body=json.dumps(BIG_CONFIG))
    s3.put_object(Bucket=MODELS, Key="data/big.jsonl", Body=_big_data())
    sm_peagle.Client(region=REGION).drafter_train(
        f"s3://{MODELS}/big/", data=f"s3://{MODELS}/data/big.jsonl", steps=1, wait=False
    )
    req = world.sent("CreateTrainingJob")[0]
    assert req["ResourceConfig"]["VolumeSizeInGB"] == BIG_VOLUME_GB
    reads = [p for op, p in world.requests if op == "GetObject" and p["Key"] == "data/big.jsonl"]
    assert len(reads) == 1 and reads[0]["Range"] == f"bytes=0-{(1 << 20) - 1}"


# The IAM action each request of a run is authorized as (Service Authorization Reference:
# ListObjectsV2 and HeadBucket are s3:ListBucket, DeleteObjects is s3:DeleteObject per key;
# STS GetCallerIdentity needs no permission).
ACTION = {
    "ListObjectsV2": "s3:ListBucket",
    "HeadBucket": "s3:ListBucket",
    "DeleteObjects": "s3:DeleteObject",
    "ListServiceQuotas": "servicequotas:ListServiceQuotas",
    "GetRole": "iam:GetRole",
    "HeadObject": "s3:GetObject",
    "DescribeLogStreams": "logs:DescribeLogStreams",
    "GetLogEvents": "logs:GetLogEvents",
}


def _granted(policy: dict[str, Any]) -> set[str]:
    return {a for s in policy["Statement"] for a in s["Action"]}


def _actions(requests: list[tuple[str, dict[str, Any]]]) -> set[str]:
    out = set()
    for op, _params in requests:
        if op == "GetCallerIdentity":
            continue
        prefix = "s3" if op in ("PutObject", "GetObject", "CreateBucket") else "sagemaker"
        out.add(ACTION.get(op) or f"{prefix}:{op}")
    return out


def test_the_trainer_policy_grants_every_action_a_run_sends(world: World, data: Path) -> None:
    job = "peagle-train-tiny-llama-0123abcd"
    _seed_head(job)
    sm_peagle.Client(region=REGION).drafter_train(TARGET, data=str(data), steps=40)
    sent = _actions(world.requests)
    policy = sm_peagle.Client(region=REGION).iam_policy(for_="trainer", role=world.role_arn).policy
    assert sent - _granted(policy) == set()
    # Also granted, for what this run did not do: an interrupt (StopTrainingJob, deleting
    # the uploads and the stopped job), creating the default bucket, PassRole (no request
    # of its own), and what gc sends for training jobs (test_training_gc.py runs it; gc
    # --training reads the models, to refuse a head one serves).
    assert _granted(policy) - sent <= {
        "sagemaker:ListModels",
        "sagemaker:DescribeModel",
        "sagemaker:ListEndpoints",
        "sagemaker:ListInferenceComponents",
        "sagemaker:DescribeEndpoint",
        "sagemaker:DescribeEndpointConfig",
        "sagemaker:DescribeInferenceComponent",
        "sagemaker:DeleteTrainingJob",
        "sagemaker:ListTags",
        "sagemaker:ListTrainingJobs",
        "sagemaker:StopTrainingJob",
        "sagemaker:AddTags",
        "s3:DeleteObject",
        "s3:CreateBucket",
        "iam:PassRole",
        # The cost estimate's Price List read: moto has no Price List API, so the harness
        # records no request for it (its exact request: tests/unit/test_pricing.py).
        "pricing:GetProducts",
    }


def test_a_run_prices_its_instance_for_training_and_asks_with_the_most_it_can_bill(
    world: World, data: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """The run looks up the instance's training price (on AWS: the Price List API) and the
    most the job can bill is that price x MaxRuntimeInSeconds: 6 h (the default) at
    $1.50/h is $9.00, in the result and in the confirm question."""
    from sm_peagle.lifecycle import live_prices

    asked: list[tuple[str, str]] = []

    def price(region: str, instance_type: str, _aws: Any) -> tuple[float, str]:
        asked.append((region, instance_type))
        return 1.5, "AWS Price List API, USE1-Train:ml.g7e.2xlarge"

    monkeypatch.setattr(live_prices, "training_price", price)
    _seed_head(JOB)
    questions: list[str] = []
    r = sm_peagle.Client(region=REGION).drafter_train(
        TARGET, data=str(data), steps=40, confirm=questions.append
    )
    assert asked == [(REGION, "ml.g7e.2xlarge")]
    assert (r.cost["usd_per_hour"], r.cost["max_usd"]) == (1.5, 9.0)
    assert len(questions) == 1 and "at most 6 h, at most $9.00" in questions[0]
    assert any(n.startswith("at most $9.00: ml.g7e.2xlarge at $1.5/h") for n in r.notes)


def test_a_failed_job_is_exit_1_in_one_line_and_leaves_nothing_in_s3(
    world: World, data: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    from sm_peagle.lifecycle import training as lt
    from sm_peagle.training.errors import TrainingFailed

    def failed(_aws: Any, job: str, **_k: Any) -> None:
        raise TrainingFailed(
            f"training job {job} is Failed: AlgorithmError: CUDA out of memory",
            job_name=job,
            failure_reason="AlgorithmError: CUDA out of memory",
        )

    monkeypatch.setattr(lt, "wait_for_job", failed)
    code, out, err = run(capsys, "drafter", "train", TARGET, "--data", str(data),
                         "--steps", "40", "--yes")  # fmt: skip
    assert code == 1
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "CUDA out of memory" in errors[0], err
    assert "Traceback" not in err
    left = boto3.client("s3", region_name=REGION).list_objects_v2(
        Bucket=BUCKET, Prefix="peagle/training/"
    )
    assert left.get("KeyCount", 0) == 0


def test_a_role_sagemaker_cannot_assume_fails_preflight_before_any_upload(
    world: World, data: Path, capsys: pytest.CaptureFixture
) -> None:
    iam = boto3.client("iam", region_name=REGION)
    ec2_only = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"},
                       "Action": "sts:AssumeRole"}],
    }  # fmt: skip
    made = iam.create_role(
        RoleName="not-for-sagemaker", AssumeRolePolicyDocument=json.dumps(ec2_only)
    )
    role = made["Role"]["Arn"]
    code, out, err = run(capsys, "drafter", "train", TARGET, "--data", str(data), "--steps",
                         "40", "--role", role, "--yes")  # fmt: skip
    assert code == 1, err
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "does not trust sagemaker.amazonaws.com" in errors[0], err
    assert "nothing was created" in errors[0]
    sent = [op for op, _ in world.requests]
    assert "PutObject" not in sent and "CreateTrainingJob" not in sent


def test_s3_data_is_read_once_and_judged_before_any_upload(world: World) -> None:
    s3 = boto3.client("s3", region_name=REGION)
    s3.put_object(Bucket=MODELS, Key="data/empty.jsonl", Body=b'{"text": "no prompt"}\n')
    s3.put_object(Bucket=MODELS, Key="data/good.jsonl", Body=b'{"prompt": "hi"}\n' * 3)
    with pytest.raises(SpecError) as caught:
        sm_peagle.Client(region=REGION).drafter_train(
            TARGET, data=f"s3://{MODELS}/data/empty.jsonl", steps=1
        )
    assert caught.value.field == "data"
    reads = [p for op, p in world.requests if op == "GetObject" and p["Key"].startswith("data/")]
    assert len(reads) == 1 and reads[0]["Range"].startswith("bytes=0-")
    assert not [op for op, _ in world.requests if op in ("PutObject", "CreateTrainingJob")]
    _seed_head("peagle-train-tiny-llama-0123abcd")
    sm_peagle.Client(region=REGION).drafter_train(
        TARGET, data=f"s3://{MODELS}/data/good.jsonl", steps=1
    )
    channel = world.sent("CreateTrainingJob")[0]["InputDataConfig"][1]
    assert channel["DataSource"]["S3DataSource"]["S3Uri"] == f"s3://{MODELS}/data/good.jsonl"
    # S3 data is the channel itself: nothing of it is uploaded again.
    puts = [p["Key"] for op, p in world.requests if op == "PutObject"]
    assert not [k for k in puts if k.endswith("train.jsonl")]


def test_a_local_target_is_pushed_under_the_job_and_is_the_target_channel(
    world: World, data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = tmp_path / "my-llama"
    model.mkdir()
    (model / "config.json").write_text(json.dumps(TINY_CONFIG))
    (model / "model.safetensors").write_bytes(b"\0" * 64)
    job = "peagle-train-my-llama-0123abcd"
    _seed_head(job)
    during = _snapshot_at_wait(monkeypatch, job)
    sm_peagle.Client(region=REGION).drafter_train(str(model), data=str(data), steps=1)
    prefix = f"peagle/training/{job}/target/"
    channel = world.sent("CreateTrainingJob")[0]["InputDataConfig"][0]
    assert channel["ChannelName"] == "target"
    assert channel["DataSource"]["S3DataSource"]["S3Uri"] == f"s3://{BUCKET}/{prefix}"
    keys = {k for k in during if k.startswith(prefix)}
    assert keys == {prefix + "config.json", prefix + "model.safetensors"}
    # The copy of the target (tens of GB for a real model) is gone once the job completed.
    assert not [k for k in _keys_left(job) if k.startswith("target/")]


def test_without_wait_the_job_is_created_and_left_running(world: World, data: Path) -> None:
    r = sm_peagle.Client(region=REGION).drafter_train(TARGET, data=str(data), steps=1, wait=False)
    assert r.status == "InProgress" and r.report is None
    assert len(world.sent("CreateTrainingJob")) == 1
    assert world.sent("DescribeTrainingJob") == []  # it did not wait


# Issue 40's review of the run's robustness (findings 2, 7, 8, 9a): what a user sees when
# the wait breaks, when Ctrl-C comes twice, when an upload is refused.

JOB = "peagle-train-tiny-llama-0123abcd"


def _client_error(code: str, op: str) -> Exception:
    from botocore.exceptions import ClientError

    return ClientError({"Error": {"Code": code, "Message": f"{code} message"}}, op)


def test_an_error_while_waiting_leaves_the_job_and_its_files_and_says_so(
    world: World, data: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """An hour in, the credentials expire: the job runs on (SageMaker's, not this
    process's), so its inputs stay, nothing is stopped, and the one line names the job,
    says it may still be running, and gives the commands, on the invocation's target."""
    from sm_peagle.lifecycle import training as lt
    from sm_peagle.training.errors import TrainingLost
    from tests.printed_commands import off_target, printed_commands

    def expired(*_a: Any, **_k: Any) -> None:
        raise _client_error("ExpiredTokenException", "DescribeTrainingJob")

    monkeypatch.setattr(lt, "wait_for_job", expired)
    with pytest.raises(TrainingLost) as caught:
        sm_peagle.Client(region=REGION).drafter_train(TARGET, data=str(data), steps=40)
    assert caught.value.job_name == JOB and caught.value.exit_code == 1
    assert "may still be running" in str(caught.value)
    assert world.sent("StopTrainingJob") == [] and world.sent("DeleteObjects") == []
    assert {"source/peagle_train.py", "data/train.jsonl"} <= _keys_left(JOB)
    status = boto3.client("sagemaker", region_name=REGION).describe_training_job(
        TrainingJobName=JOB
    )["TrainingJobStatus"]
    # Nothing stopped it: it runs on, or (the harness's clock is fast) has completed.
    assert status in ("InProgress", "Completed")

    monkeypatch.setattr(request_name(), "token_hex", lambda n: "4567cdef"[: 2 * n])
    code, _out, err = run(capsys, "drafter", "train", TARGET, "--data", str(data), "--steps",
                          "40", "--yes", "--region", REGION)  # fmt: skip
    assert code == 1, err
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "Traceback" not in err, err
    line = errors[0]
    assert "peagle-train-tiny-llama-4567cdef" in line and "may still be running" in line
    assert "refresh your AWS credentials" in line  # the cause's own fix comes first
    stop = "aws sagemaker stop-training-job --training-job-name peagle-train-tiny-llama-4567cdef"
    assert f"{stop} --region {REGION}" in line
    gc = [c for c in printed_commands(err) if c.split()[1] == "gc"]
    assert len(gc) == 1 and re.search(r"--operation op-\d{8}T\d{6}Z-[0-9a-f]{6}", gc[0]), err
    assert off_target(err, sandbox=False, region=REGION) == []


def test_a_lost_jobs_stop_command_reaches_the_server_the_run_reached() -> None:
    """A run against the sandbox (or any endpoint URL) that loses its job prints the stop
    command with that `--endpoint-url`: pasted, it stops the sandbox's job, never one of the
    same name in the real account the shell's credentials reach."""
    from sm_peagle.ops.training_run import _lost
    from sm_peagle.training.request import TrainingLayout

    layout = TrainingLayout(BUCKET, JOB)
    cause = _client_error("ExpiredTokenException", "DescribeTrainingJob")
    url = "http://127.0.0.1:45123"
    remedy = str(_lost(cause, layout, "op-20270101T000000Z-abcdef", REGION, url).remedy)
    assert (f"aws sagemaker stop-training-job --training-job-name {JOB} --region {REGION} "
            f"--endpoint-url {url}`") in remedy  # fmt: skip
    on_aws = str(_lost(cause, layout, "op-20270101T000000Z-abcdef", REGION).remedy)
    assert "--endpoint-url" not in on_aws


def request_name() -> Any:
    import sm_peagle.training.request as request_mod

    return request_mod.secrets


def test_a_second_interrupt_during_the_stop_names_what_is_left_and_the_gc(
    world: World, data: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    from sm_peagle.errors import Interrupted
    from sm_peagle.lifecycle import training as lt

    def interrupted(*_a: Any, **_k: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(lt, "wait_for_job", interrupted)
    monkeypatch.setattr(lt, "stop_job", interrupted)  # Ctrl-C again while it stops
    caught: BaseException | None = None
    try:  # a bare KeyboardInterrupt would stop the test session: caught, then judged
        sm_peagle.Client(region=REGION).drafter_train(TARGET, data=str(data), steps=40)
    except BaseException as e:  # noqa: BLE001
        caught = e
    assert isinstance(caught, Interrupted), repr(caught)
    op = caught.operation
    assert op and re.fullmatch(r"op-\d{8}T\d{6}Z-[0-9a-f]{6}", op)
    assert caught.left == [
        ("training_job", JOB),
        ("s3_prefix", f"s3://{BUCKET}/peagle/training/{JOB}/"),
    ]
    assert caught.command.op == "gc"
    assert dict(caught.command.kwargs) == {"operation": op}
    assert _keys_left(JOB)  # nothing was removed: what is named as left is left

    monkeypatch.setattr(request_name(), "token_hex", lambda n: "89abcdef"[: 2 * n])
    code, _out, err = run(capsys, "drafter", "train", TARGET, "--data", str(data), "--steps",
                          "40", "--yes")  # fmt: skip
    assert code == 130, err
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "Traceback" not in err, err
    assert "training job peagle-train-tiny-llama-89abcdef" in errors[0]
    assert re.search(r"`peagle gc --operation op-\S+ --yes[^`]*`", errors[0]), errors[0]


def test_a_job_not_stopped_within_the_wait_is_named_as_left(
    world: World, data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sm_peagle.lifecycle import training as lt
    from sm_peagle.training.errors import TrainingStopped

    def interrupted(*_a: Any, **_k: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(lt, "wait_for_job", interrupted)
    monkeypatch.setattr(lt, "stop_job", lambda *_a, **_k: "Stopping")  # the 30 min ran out
    with pytest.raises(TrainingStopped) as caught:
        sm_peagle.Client(region=REGION).drafter_train(TARGET, data=str(data), steps=40)
    err = caught.value
    assert err.status == "Stopping"
    assert ("training_job", JOB) in err.left
    assert {"kind": "training_job", "name": JOB} in err.to_dict()["left"]
    assert "still Stopping" in str(err) and "it was stopped" not in str(err)
    assert "nothing is left" not in str(err) and "files were kept" in str(err)
    # It may still upload its output: its files are left for gc, not removed under it.
    assert world.sent("DeleteTrainingJob") == [] and world.sent("DeleteObjects") == []


def test_an_upload_s3_refuses_is_one_aws_error_and_no_job(
    world: World, data: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """AccessDenied (or a KMS key the caller may not use) on upload_file is boto3's
    S3UploadFailedError, not a botocore error: still exit 1 in one line, not a bug."""
    from boto3.exceptions import S3UploadFailedError

    from sm_peagle.errors import AwsError
    from sm_peagle.lifecycle import training as lt

    real = lt.upload

    def refused(s3: Any, bucket: str, key: str, body: Any = None, path: Any = None) -> str:
        if path is not None:
            raise S3UploadFailedError(
                f"Failed to upload {path} to {bucket}/{key}: An error occurred "
                "(AccessDenied) when calling the PutObject operation: Access Denied"
            )
        return real(s3, bucket, key, body, path)

    monkeypatch.setattr(lt, "upload", refused)
    with pytest.raises(AwsError) as caught:
        sm_peagle.Client(region=REGION).drafter_train(TARGET, data=str(data), steps=40)
    assert "AccessDenied" in str(caught.value) and str(data) in str(caught.value)
    code, _out, err = run(capsys, "drafter", "train", TARGET, "--data", str(data), "--steps",
                          "40", "--yes")  # fmt: skip
    assert code == 1, err
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "AccessDenied" in errors[0], err
    assert "bug" not in errors[0] and "Traceback" not in err
    assert world.sent("CreateTrainingJob") == []
    assert _keys_left(JOB) == set()  # the source that did go up was removed


def test_a_data_path_with_a_tilde_is_expanded_in_sdk_and_cli(
    world: World, data: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """`--data=~/p.jsonl` reaches peagle unexpanded (bash expands `~` only at a word's
    start), as does the SDK's `data="~/p.jsonl"`."""
    monkeypatch.setenv("HOME", str(data.parent))
    _seed_head(JOB)
    during = _snapshot_at_wait(monkeypatch, JOB)
    r = sm_peagle.Client(region=REGION).drafter_train(TARGET, data="~/prompts.jsonl", steps=1)
    assert r.status == "Completed"
    assert during[f"peagle/training/{JOB}/data/train.jsonl"] == data.read_bytes()
    other = "peagle-train-tiny-llama-4567cdef"
    monkeypatch.setattr(request_name(), "token_hex", lambda n: "4567cdef"[: 2 * n])
    _seed_head(other)
    code, _out, err = run(capsys, "drafter", "train", TARGET, "--data=~/prompts.jsonl",
                          "--steps", "1", "--yes")  # fmt: skip
    assert code == 0, err


def test_the_head_is_where_describe_training_job_says(
    world: World, data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ModelArtifacts.S3ModelArtifacts is where SageMaker put the model dir; the layout's
    `output/model/` is only the fallback."""
    from sm_peagle.lifecycle import training as lt

    real = lt.wait_for_job
    moved = f"s3://{BUCKET}/peagle/training/{JOB}/output/elsewhere/"

    def wait(*a: Any, **k: Any) -> dict[str, Any]:
        desc = real(*a, **k)
        # The harness answers what AWS answers for uncompressed output: the prefix.
        assert desc["ModelArtifacts"]["S3ModelArtifacts"] == (
            f"s3://{BUCKET}/peagle/training/{JOB}/output/model/"
        )
        return {**desc, "ModelArtifacts": {"S3ModelArtifacts": moved.rstrip("/")}}

    monkeypatch.setattr(lt, "wait_for_job", wait)
    _seed_head(JOB)
    s3 = boto3.client("s3", region_name=REGION)
    src = f"peagle/training/{JOB}/output/model/"
    for o in s3.list_objects_v2(Bucket=BUCKET, Prefix=src)["Contents"]:
        s3.copy_object(Bucket=BUCKET, CopySource={"Bucket": BUCKET, "Key": o["Key"]},
                       Key=o["Key"].replace("/model/", "/elsewhere/"))  # fmt: skip
        s3.delete_object(Bucket=BUCKET, Key=o["Key"])
    r = sm_peagle.Client(region=REGION).drafter_train(TARGET, data=str(data), steps=1)
    assert r.head_uri == moved
    assert r.report is not None and r.check.ok


def test_a_create_sagemaker_refuses_is_an_aws_error_and_removes_the_uploads(
    world: World, data: Path, capsys: pytest.CaptureFixture
) -> None:
    """CreateTrainingJob answered with an error made no job: not "may still be running";
    the uploads go, as for any run that created nothing."""
    from sm_peagle.errors import AwsError
    from sm_peagle.training.errors import TrainingLost

    sm = boto3.client("sagemaker", region_name=REGION)
    sm.create_training_job(  # the name the run will pick, taken: ResourceInUse
        TrainingJobName=JOB,
        AlgorithmSpecification={"TrainingImage": DLC, "TrainingInputMode": "File"},
        RoleArn=world.role_arn,
        OutputDataConfig={"S3OutputPath": f"s3://{MODELS}/elsewhere/"},
        ResourceConfig={"InstanceType": "ml.g6e.xlarge", "InstanceCount": 1,
                        "VolumeSizeInGB": 50},
        StoppingCondition={"MaxRuntimeInSeconds": 3600},
    )  # fmt: skip
    with pytest.raises(AwsError) as caught:
        sm_peagle.Client(region=REGION).drafter_train(TARGET, data=str(data), steps=40)
    assert not isinstance(caught.value, TrainingLost)
    assert "ResourceInUse" in str(caught.value)
    assert "uploading" not in str(caught.value)  # the uploads succeeded: SageMaker refused
    assert _keys_left(JOB) == set() and world.sent("StopTrainingJob") == []


def test_a_completed_run_whose_clean_up_fails_still_returns_the_head(
    world: World, data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hours of training are not lost to a refused delete of the uploads: a note, and gc."""
    from sm_peagle.lifecycle import training as lt

    def denied(*_a: Any, **_k: Any) -> int:
        raise _client_error("AccessDenied", "DeleteObjects")

    monkeypatch.setattr(lt, "remove_inputs", denied)
    _seed_head(JOB)
    r = sm_peagle.Client(region=REGION).drafter_train(TARGET, data=str(data), steps=1)
    assert r.status == "Completed" and r.check.ok
    assert [n for n in r.notes if "could not remove the job's uploads" in n and "gc" in n]


def test_an_interrupted_run_that_cannot_remove_its_files_names_them_as_left(
    world: World, data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C with credentials that expired meanwhile: the job is stopped and deleted, the
    prefix cannot be emptied; the error says so instead of an AWS error hiding the stop."""
    from sm_peagle.lifecycle import training as lt
    from sm_peagle.training.errors import TrainingStopped

    def interrupted(*_a: Any, **_k: Any) -> None:
        raise KeyboardInterrupt

    def expired(*_a: Any, **_k: Any) -> int:
        raise _client_error("ExpiredToken", "ListObjectsV2")

    monkeypatch.setattr(lt, "wait_for_job", interrupted)
    monkeypatch.setattr(lt, "remove_prefix", expired)
    with pytest.raises(TrainingStopped) as caught:
        sm_peagle.Client(region=REGION).drafter_train(TARGET, data=str(data), steps=40)
    err = caught.value
    assert err.status == "Stopped" and world.sent("DeleteTrainingJob") == [{"TrainingJobName": JOB}]
    assert err.left == [("s3_prefix", f"s3://{BUCKET}/peagle/training/{JOB}/")]
    assert "uploads removed" not in str(err) and "nothing is left" not in str(err)


def test_the_jobs_log_lines_are_shown_once_each_and_never_read_again(
    world: World, data: Path, capsys: pytest.CaptureFixture
) -> None:
    """The harness's SIMULATED trainer logs a line per step (moto_training.py) to
    `/aws/sagemaker/TrainingJobs`, stream `<job>/algo-1-<epoch>`: each is printed once,
    and each stream is read from its start once, then from its last token."""
    _seed_head(JOB)
    code, out, err = run(capsys, "drafter", "train", TARGET, "--data", str(data), "--steps",
                         "3", "--yes")  # fmt: skip
    assert code == 0, err
    both = out + err
    for step in (1, 2, 3):
        assert both.count(f"peagle-train: step {step} loss") == 1, both
    reads = world.sent("GetLogEvents")
    assert reads, "the wait read no log"
    from_start = [r["logStreamName"] for r in reads if r.get("startFromHead")]
    assert len(from_start) == len(set(from_start)) >= 1
    assert all(r["logStreamName"].startswith(JOB + "/algo-1-") for r in reads)
