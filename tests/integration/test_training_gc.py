"""`gc` / `peagle gc` and `drafter train`'s jobs on the moto harness (issue 40, item 5).

The rules the expected values come from:
- DeleteTrainingJob (botocore 1.44.8's `sagemaker` model, its documentation): only a job
  that is Stopped, Failed or Completed can be deleted; "all of the metadata for the
  training job is lost"; S3 is not mentioned, so the output stays unless removed.
- The issue's principle: never delete what a user may still use without being asked. A
  Completed job's head may be deployed: gc keeps it unless the job is named; a Failed or
  Stopped job's files (`s3://<bucket>/peagle/training/<job>/`, the design's layout) and
  the job go.
- peagle's ownership rules (lifecycle/garbage.py): only `peagle:managed=true`; nothing an
  operation that may still be running made.
- SageMaker's ListTrainingJobs has no resource type, hence "*" in the trainer policy.
"""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

import sm_peagle
from peagle_sandbox.sandbox_clock import SandboxClock
from peagle_sandbox.testing.moto_sagemaker import SageMakerHarness
from sm_peagle.errors import NotFound, SpecError
from tests.integration.lifecycle_env import REGION, World, build_world, record_requests, run

ACCOUNT = "123456789012"
BUCKET = f"sagemaker-{REGION}-{ACCOUNT}"
T0 = 1_800_000_000  # 2027-01-15 08:00:00 UTC
IMAGE = "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-training:2.8.0-gpu-py312"
TARGET = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 256,
          "num_hidden_layers": 4, "vocab_size": 512}  # fmt: skip
FAILED = "peagle-train-tiny-failed-00000001"
STOPPED = "peagle-train-tiny-stopped-00000002"
DONE = "peagle-train-tiny-done-00000003"
FOREIGN = "peagle-train-tiny-foreign-00000004"  # peagle's name, but not its tag
RUNNING_OP = "peagle-train-tiny-busy-00000005"  # Failed, its operation may still be going
# An operation over long ago, and one run from another host that is not over yet
# (lifecycle/operation.py: from another host, it may run until its deadline).
OVER = [
    {"Key": "peagle:operation", "Value": "op-20270101T000000Z-aaaaaa"},
    {"Key": "peagle:operation-owner", "Value": "elsewhere:1"},
    {"Key": "peagle:operation-until", "Value": "2027-01-01T06:00:00Z"},
]
GOING = [
    {"Key": "peagle:operation", "Value": "op-20270115T075000Z-bbbbbb"},
    {"Key": "peagle:operation-owner", "Value": "elsewhere:2"},
    {"Key": "peagle:operation-until", "Value": "2099-01-01T00:00:00Z"},
]
MANAGED = [{"Key": "peagle:managed", "Value": "true"}]
UPLOADS = ("source/peagle_train.py", "data/train.jsonl")


def _channel(name: str, uri: str) -> dict[str, Any]:
    source = {"S3DataType": "S3Prefix", "S3Uri": uri, "S3DataDistributionType": "FullyReplicated"}
    return {"ChannelName": name, "InputMode": "File", "DataSource": {"S3DataSource": source}}


def _create(sm: Any, job: str, tags: list[dict[str, str]], data: str | None = None) -> None:
    sm.create_training_job(
        TrainingJobName=job,
        AlgorithmSpecification={"TrainingImage": IMAGE, "TrainingInputMode": "File"},
        RoleArn=f"arn:aws:iam::{ACCOUNT}:role/peagle-exec",
        HyperParameters={"k": "3", "steps": "4"},
        InputDataConfig=[
            _channel("target", f"s3://{BUCKET}/targets/tiny/"),
            _channel("train", data or f"s3://{BUCKET}/peagle/training/{job}/data/"),
        ],
        OutputDataConfig={
            "S3OutputPath": f"s3://{BUCKET}/peagle/training/",
            "CompressionType": "NONE",
        },  # fmt: skip
        ResourceConfig={"InstanceType": "ml.g6e.xlarge", "InstanceCount": 1, "VolumeSizeInGB": 50},
        StoppingCondition={"MaxRuntimeInSeconds": 6 * 3600},
        Tags=tags,
    )


def _keys(job: str) -> set[str]:
    s3 = boto3.client("s3", region_name=REGION)
    got = s3.list_objects_v2(Bucket=BUCKET, Prefix=f"peagle/training/{job}/")
    return {o["Key"] for o in got.get("Contents", [])}


def _jobs() -> set[str]:
    sm = boto3.client("sagemaker", region_name=REGION)
    return {j["TrainingJobName"] for j in sm.list_training_jobs()["TrainingJobSummaries"]}


@pytest.fixture
def world(sagemaker_harness: SageMakerHarness, monkeypatch: pytest.MonkeyPatch) -> World:
    """Five ended jobs: Failed, Stopped and Completed peagle jobs from an operation that is
    over, a Failed one without the peagle tag, and a Failed one whose operation may still
    be running; each with its uploads under its prefix."""
    sagemaker_harness.clock = SandboxClock(frozen=True, start=T0)
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    w = build_world()
    s3 = boto3.client("s3", region_name=REGION)
    s3.create_bucket(Bucket=BUCKET)
    s3.put_object(Bucket=BUCKET, Key="targets/tiny/config.json", Body=json.dumps(TARGET))
    sm = boto3.client("sagemaker", region_name=REGION)
    empty = f"s3://{BUCKET}/nothing-here/"  # fails the job at Downloading (the harness)
    for job, tags, data in (
        (FAILED, MANAGED + OVER, empty),
        (STOPPED, MANAGED + OVER, None),
        (DONE, MANAGED + OVER, None),
        (FOREIGN, OVER, empty),
        (RUNNING_OP, MANAGED + GOING, empty),
    ):
        for key in UPLOADS:
            s3.put_object(Bucket=BUCKET, Key=f"peagle/training/{job}/{key}", Body=b"x")
        _create(sm, job, tags, data)
    sagemaker_harness.clock.advance(150)  # Training (Starting 60 s, Downloading 30 s)
    sm.stop_training_job(TrainingJobName=STOPPED)
    sagemaker_harness.clock.advance(3600)  # everything has ended
    statuses = {
        j["TrainingJobName"]: j["TrainingJobStatus"]
        for j in sm.list_training_jobs()["TrainingJobSummaries"]
    }
    assert statuses == {FAILED: "Failed", STOPPED: "Stopped", DONE: "Completed",
                        FOREIGN: "Failed", RUNNING_OP: "Failed"}  # fmt: skip
    assert f"peagle/training/{DONE}/output/model/config.json" in _keys(DONE)  # the head
    record_requests(w, monkeypatch, "sagemaker", "s3")
    return w


def _mutations(w: World) -> list[tuple[str, dict[str, Any]]]:
    return [(op, p) for op, p in w.requests if not op.startswith(("List", "Describe", "Get"))]


def test_dry_run_lists_the_failed_and_stopped_jobs_and_sends_nothing(world: World) -> None:
    r = sm_peagle.Client(region=REGION).gc(dry_run=True)
    assert set(r.training_jobs) == {FAILED, STOPPED}
    assert r.training_jobs[STOPPED] == "Stopped"
    assert r.training_jobs[FAILED].startswith("Failed: ClientError: No S3 objects found")
    assert list(r.training_kept) == [DONE]
    assert r.running == {"op-20270115T075000Z-bbbbbb": [RUNNING_OP]}
    assert _mutations(world) == []
    assert r.deleted == []
    assert _jobs() == {FAILED, STOPPED, DONE, FOREIGN, RUNNING_OP}


def test_gc_removes_failed_and_stopped_jobs_files_then_the_jobs_and_nothing_else(
    world: World,
) -> None:
    done_files, foreign_files, busy_files = _keys(DONE), _keys(FOREIGN), _keys(RUNNING_OP)
    stopped_files = _keys(STOPPED)
    r = sm_peagle.Client(region=REGION).gc()
    # Exactly these mutating requests, each job's files before the job (its description
    # is what says where the files are).
    sent = _mutations(world)
    assert [op for op, _ in sent] == ["DeleteObjects", "DeleteTrainingJob"] * 2 + [
        "DeleteObjects"  # the completed job's uploads, one prefix each (two here)
    ] * 2
    assert [p["Delete"]["Objects"] for _, p in sent[4:]] == [
        [{"Key": f"peagle/training/{DONE}/{k}"}] for k in UPLOADS
    ]
    by_job = {FAILED: sent[0:2], STOPPED: sent[2:4]}
    for job, ((_, objs), (_, delete)) in sorted(by_job.items()):
        assert objs["Bucket"] == BUCKET
        expected = {f"peagle/training/{job}/{k}" for k in UPLOADS}
        if job == STOPPED:  # SageMaker uploaded what the stopped job left in /opt/ml/model
            expected = stopped_files
            assert any("/output/model/" in k for k in expected)
        assert {o["Key"] for o in objs["Delete"]["Objects"]} == expected
        assert delete == {"TrainingJobName": job}
    assert _keys(FAILED) == _keys(STOPPED) == set()
    assert _jobs() == {DONE, FOREIGN, RUNNING_OP}
    # The completed job's head, the untagged job and the running operation's job stay.
    assert (_keys(FOREIGN), _keys(RUNNING_OP)) == (foreign_files, busy_files)
    assert list(r.training_kept) == [DONE]
    # Of the completed job, only its head: its run's uploads go (issue 40 review, 6).
    head = {k for k in done_files if k.startswith(f"peagle/training/{DONE}/output/")}
    assert head and _keys(DONE) == head
    assert f"training-job {FAILED}" in r.deleted and f"training-job {STOPPED}" in r.deleted


def test_dry_run_lists_a_completed_jobs_uploads_not_its_head(
    world: World, capsys: pytest.CaptureFixture
) -> None:
    r = sm_peagle.Client(region=REGION).gc(dry_run=True)
    prefix = f"s3://{BUCKET}/peagle/training/{DONE}/"
    assert r.training_uploads == {DONE: [prefix + "source/", prefix + "data/"]}
    assert _mutations(world) == []
    code, out, err = run(capsys, "gc", "--dry-run")
    assert code == 0, err
    assert f"would delete {prefix}data/" in out and f"would delete {prefix}output" not in out


def _serve_head(job: str, name: str = "peagle-tiny-served") -> None:
    """A model that mounts the job's head (deploy --drafter s3://…/output/model/), and an
    endpoint config and endpoint on it."""
    sm = boto3.client("sagemaker", region_name=REGION)
    head = f"s3://{BUCKET}/peagle/training/{job}/output/model/"
    sm.create_model(
        ModelName=name,
        ExecutionRoleArn=f"arn:aws:iam::{ACCOUNT}:role/peagle-exec",
        PrimaryContainer={
            "Image": IMAGE,
            "ModelDataSource": {"S3DataSource": {"S3Uri": f"s3://{BUCKET}/targets/tiny/",
                                                 "S3DataType": "S3Prefix",
                                                 "CompressionType": "None"}},
            "AdditionalModelDataSources": [
                {"ChannelName": "eagle", "S3DataSource": {
                    "S3Uri": head, "S3DataType": "S3Prefix", "CompressionType": "None"}},
            ],
        },
    )  # fmt: skip
    sm.create_endpoint_config(
        EndpointConfigName=name + "-cfg",
        ProductionVariants=[{"VariantName": "AllTraffic", "ModelName": name,
                             "InstanceType": "ml.g6e.xlarge", "InitialInstanceCount": 1}],
    )  # fmt: skip
    sm.create_endpoint(EndpointName=name, EndpointConfigName=name + "-cfg")


def test_a_served_head_is_refused_when_named_unless_forced_in_sdk_and_cli(
    world: World, capsys: pytest.CaptureFixture
) -> None:
    """deploy --drafter s3://…/<job>/output/model/, then gc --training <job>: the endpoint
    works until its next scale-out, which fails to download the head. Refused (exit 2,
    nothing deleted); force goes ahead."""
    _serve_head(DONE)
    before = _keys(DONE)
    with pytest.raises(SpecError) as caught:
        sm_peagle.Client(region=REGION).gc(training=DONE)
    assert caught.value.field == "training" and caught.value.value == DONE
    assert "peagle-tiny-served" in str(caught.value)
    code, _out, err = run(capsys, "gc", "--training", DONE, "--yes")
    assert code == 2, err
    [line] = [x for x in err.splitlines() if x.startswith("error: ")]
    assert "model peagle-tiny-served" in line and "--force" in line and "(fix: " in line
    assert "`peagle delete peagle-tiny-served --yes`" in line, line
    assert _mutations(world) == [] and _keys(DONE) == before and DONE in _jobs()
    code, _out, err = run(capsys, "gc", "--training", DONE, "--force", "--yes")
    assert code == 0, err
    assert _keys(DONE) == set() and DONE not in _jobs()


def test_a_head_no_model_serves_is_deleted_when_named(world: World) -> None:
    _serve_head(FAILED, "peagle-other-head")  # another job's head: not this one
    sm_peagle.Client(region=REGION).gc(training=DONE)
    assert _keys(DONE) == set() and DONE not in _jobs()


def test_a_completed_job_goes_only_when_named(world: World) -> None:
    client = sm_peagle.Client(region=REGION)
    dry = client.gc(training=DONE, dry_run=True)
    assert dry.training_jobs == {DONE: "Completed"} and _mutations(world) == []
    client.gc(training=DONE)
    sent = _mutations(world)
    assert [op for op, _ in sent] == ["DeleteObjects", "DeleteTrainingJob"]
    assert sent[1][1] == {"TrainingJobName": DONE}
    assert _keys(DONE) == set() and DONE not in _jobs()
    assert _jobs() == {FAILED, STOPPED, FOREIGN, RUNNING_OP}  # only the one named


def test_a_job_without_the_peagle_tag_is_never_deleted_even_named(
    world: World, capsys: pytest.CaptureFixture
) -> None:
    with pytest.raises(SpecError, match="not peagle's"):
        sm_peagle.Client(region=REGION).gc(training=FOREIGN)
    code, _out, err = run(capsys, "gc", "--training", FOREIGN, "--yes")
    assert code == 2 and err.count("error: ") == 1 and "not peagle's" in err
    assert "Traceback" not in err
    assert _mutations(world) == [] and FOREIGN in _jobs() and _keys(FOREIGN)


def test_a_job_whose_run_may_still_be_going_is_refused_when_named(world: World) -> None:
    with pytest.raises(SpecError, match="may still be going"):
        sm_peagle.Client(region=REGION).gc(training=RUNNING_OP)
    assert _mutations(world) == [] and RUNNING_OP in _jobs()


@pytest.mark.parametrize(
    ("args", "kw", "needle"),
    [
        (["--training", "my-job"], {"training": "my-job"}, "is not a peagle training job's"),
        (
            ["--training", FAILED, "--idle", "1d"],
            {"training": FAILED, "idle": "1d"},
            "deletes one training job",
        ),
    ],
)
def test_bad_training_names_are_exit_2_in_sdk_and_cli_and_send_nothing(
    world: World,
    capsys: pytest.CaptureFixture,
    args: list[str],
    kw: dict[str, Any],
    needle: str,
) -> None:
    with pytest.raises(SpecError, match=needle) as exc:
        sm_peagle.Client(region=REGION).gc(**kw)
    assert exc.value.field == "training"
    code, _out, err = run(capsys, "gc", *args, "--yes")
    assert code == 2, err
    [line] = [x for x in err.splitlines() if x.startswith("error: ")]
    assert needle in line and "--training" in line and "(fix: " in line
    assert world.requests == []


def test_an_unknown_job_is_not_found(world: World) -> None:
    with pytest.raises(NotFound):
        sm_peagle.Client(region=REGION).gc(training="peagle-train-tiny-gone-0000000f")
    assert _mutations(world) == []


def test_gc_json_carries_the_training_jobs(world: World, capsys: pytest.CaptureFixture) -> None:
    code, out, err = run(capsys, "gc", "--dry-run", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert set(doc["training_jobs"]) == {FAILED, STOPPED}
    assert set(doc["training_kept"]) == {DONE}
    code, out, err = run(capsys, "gc", "--dry-run")
    assert code == 0, err
    assert f"would delete training job {STOPPED} (Stopped) and its files in S3" in out
    assert f"kept training job {DONE}: Completed" in err and f"--training {DONE}" in err
    assert _mutations(world) == []


def test_the_trainer_policy_grants_what_gc_sends_for_training_jobs(world: World) -> None:
    client = sm_peagle.Client(region=REGION)
    client.gc()
    client.gc(training=DONE)
    training = {
        op
        for op, p in world.requests
        if "TrainingJob" in op or (op == "ListTags" and "training-job/" in p["ResourceArn"])
    }
    assert training == {"ListTrainingJobs", "ListTags", "DescribeTrainingJob",
                        "DeleteTrainingJob"}  # fmt: skip
    # gc --training reads the models, to refuse a head one serves.
    assert {"ListModels"} <= {op for op, _ in world.requests}
    s3_ops = {op for op, _ in world.requests if op in ("ListObjectsV2", "DeleteObjects")}
    assert s3_ops == {"ListObjectsV2", "DeleteObjects"}
    policy = client.iam_policy(for_="trainer", role=world.role_arn).policy
    granted: dict[str, list[Any]] = {}
    for s in policy["Statement"]:
        for a in s["Action"]:
            granted.setdefault(a, []).append(s["Resource"])
    jobs = f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:training-job/peagle-train-*"
    for op in ("DeleteTrainingJob", "ListTags", "DescribeTrainingJob"):
        assert [jobs] in granted[f"sagemaker:{op}"], op
    # ListTrainingJobs has no resource type (List- calls: no resource-level restrictions).
    assert granted["sagemaker:ListTrainingJobs"] == ["*"]
    # ListObjectsV2 is s3:ListBucket, DeleteObjects is s3:DeleteObject per key (S3 API
    # reference), on the bucket and its peagle/training/ keys.
    assert granted["sagemaker:ListModels"] == ["*"]
    models = f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:model/*"
    assert any(models in r for r in granted["sagemaker:DescribeModel"])
    # ...and which endpoints serve them, to name those in the refusal (inventory's reads).
    for op in ("ListEndpoints", "ListInferenceComponents"):
        assert granted[f"sagemaker:{op}"] == ["*"], op
    for op, kind in (
        ("DescribeEndpoint", "endpoint"),
        ("DescribeEndpointConfig", "endpoint-config"),
        ("DescribeInferenceComponent", "inference-component"),
    ):
        arn = f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:{kind}/*"
        assert any(arn in r for r in granted[f"sagemaker:{op}"]), op
    assert [f"arn:aws:s3:::{BUCKET}"] in granted["s3:ListBucket"]
    assert [f"arn:aws:s3:::{BUCKET}/peagle/training/*"] in granted["s3:DeleteObject"]
