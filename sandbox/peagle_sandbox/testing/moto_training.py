"""SageMaker training jobs for the moto harness, on the sandbox clock.

moto 5.2.5 stores a training job `Completed` the moment it is created (with a made-up
`MetricDefinitions` added to the request's AlgorithmSpecification and a model.tar.gz it
never writes), checks nothing, overwrites a job of the same name, and has no
StopTrainingJob. Here (botocore 1.44.8's `sagemaker` model; the API reference's texts are
quoted from the model's documentation):

- CreateTrainingJob is checked against the model (`moto_validate.problems`: required
  members, TrainingJobName's pattern `[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}` and 63
  characters, HyperParameters at most 100 entries with keys <= 256 and values <= 2500
  characters, 1-20 channels named `[A-Za-z0-9\\.\\-_]+`, enums, MaxRuntimeInSeconds >= 1)
  plus two documented rules the model cannot hold: "The maximum value is 28 days"
  (MaxRuntimeInSeconds <= 2419200) and one channel per name [INF: wording]. A problem is
  SageMaker's ValidationException; nothing is created. A name in use is `ResourceInUse`
  (among the operation's errors; wording from user reports).
- A channel whose S3 prefix holds nothing is accepted by the call and fails the job at
  Downloading, as SageMaker does, with the FailureReason users report ("ClientError: No
  S3 objects found under S3 URL ...").
- DescribeTrainingJob walks `TrainingJobStatus` InProgress with `SecondaryStatus`
  Starting -> Downloading -> Training -> Uploading, then Completed, each phase lasting
  `seconds[phase]` of the sandbox clock (Training: until the trainer process exits when
  a real trainer runs it), with `SecondaryStatusTransitions` (StartTime, EndTime,
  StatusMessage: the messages the model's documentation and real jobs' logs show),
  `TrainingStartTime` ("when the training job starts on training instances": here the
  end of Starting), `TrainingEndTime`, `BillableTimeInSeconds` (end - start) and
  `FailureReason`. A job past MaxRuntimeInSeconds is stopped: Stopped/MaxRuntimeExceeded.
- `ModelArtifacts.S3ModelArtifacts`: `<S3OutputPath>/<job>/output/model.tar.gz`, or with
  `CompressionType: NONE` the prefix `<S3OutputPath>/<job>/output/model/` where the
  uncompressed files land [INF: what users of uncompressed output report; the
  "Uncompressed model output" guide shows no key].
- StopTrainingJob: "SageMaker changes the status of the job to Stopping. After SageMaker
  stops the job, it sets the status to Stopped" (`seconds["Stopping"]` later); the
  algorithm gets SIGTERM and what it left in /opt/ml/model is uploaded ("Algorithms might
  use this 120-second window to save the model artifacts"). A job not InProgress:
  ValidationException [INF: wording]; an unknown one: ResourceNotFound. With a real
  trainer, Stopped comes no earlier than its process exits.
- DeleteTrainingJob: "You can delete only training jobs that are in a terminal state
  (Stopped, Failed, or Completed) [...] You cannot delete a job that is in the InProgress
  or Stopping state. After deleting the job, you can reuse its name" (the model's
  documentation). In InProgress/Stopping it is `ResourceInUse` (one of the operation's two
  errors; [INF: which one, and the wording]); an unknown job `ResourceNotFound`. The job
  is gone from Describe/List; "all of the metadata for the training job is lost", and
  nothing is said of S3: the output it wrote stays.
- ListTrainingJobs (NameContains, StatusEquals) and AddTags/ListTags on the job's ARN are
  moto's, on the statuses kept here.
- Logs: group `/aws/sagemaker/TrainingJobs`, stream `<job>/algo-1-<epoch seconds of
  TrainingStartTime>`, created when Training begins.

Who trains: `TrainingJobs.trainer`. None: the SIMULATED trainer writes a few labelled
`peagle-train: step N loss X` lines through Training and, on completion, the sandbox's
synthetic head sized from the target channel's config.json plus a report with
`"backend": "simulated"` and accuracies 0.0 (`training_io.simulated_head`). Otherwise
the sandbox server's `trainer_host.TrainerHost` runs the job's real entrypoint.
"""

from __future__ import annotations

import contextlib
import copy
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from moto.core.responses import ActionResult
from moto.sagemaker.exceptions import ResourceInUseException, ResourceNotFound, ValidationError
from moto.sagemaker.models import FakeTrainingJob, SageMakerModelBackend
from moto.sagemaker.responses import SageMakerResponse

from peagle_sandbox.testing import training_io
from peagle_sandbox.testing.moto_validate import problems, validation_message

__all__ = [
    "DEFAULT_SECONDS",
    "MAX_RUNTIME_SECONDS",
    "STATUS_MESSAGES",
    "TrainingJob",
    "TrainingJobs",
    "artifacts_uri",
    "check_create",
    "training_patches",
]

PHASES = ("Starting", "Downloading", "Training", "Uploading")
# Sandbox seconds per phase: a few simulated minutes, so tests advance the clock.
DEFAULT_SECONDS: dict[str, float] = {
    "Starting": 60.0,
    "Downloading": 30.0,
    "Training": 120.0,
    "Uploading": 20.0,
    "Stopping": 30.0,
}
MAX_RUNTIME_SECONDS = 28 * 24 * 3600  # "The maximum value is 28 days."
DEFAULT_RUNTIME_SECONDS = 24 * 3600  # "The default value is 1 day."
STATUS_MESSAGES = {
    "Starting": "Preparing the instances for training",
    "Downloading": "Downloading input data",
    "Training": "Training image download completed. Training in progress.",
    "Uploading": "Uploading generated training model",
    "Completed": "Training job completed",
    "Stopping": "Stopping the training job",  # [INF]
    "Stopped": "Training job stopped",  # [INF]
    "MaxRuntimeExceeded": "Training job stopped: MaxRuntimeInSeconds exceeded",  # [INF]
    "Failed": "Training job failed",  # [INF]: the detail is FailureReason
}
_SIM_STEP_LINES = 5


def _dt(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, tz=UTC).replace(tzinfo=None)  # moto's naive UTC


def artifacts_uri(params: dict[str, Any]) -> str:
    """Where the job's model lands (see the module doc)."""
    output = params.get("OutputDataConfig") or {}
    base = f"{str(output.get('S3OutputPath', '')).rstrip('/')}/{params['TrainingJobName']}/output"
    return f"{base}/model/" if output.get("CompressionType") == "NONE" else f"{base}/model.tar.gz"


@dataclass(eq=False)
class TrainingJob:
    """One job's progress; times are sandbox epoch seconds."""

    account: str
    region: str
    params: dict[str, Any]
    arn: str
    created: float
    status: str = "InProgress"
    secondary: str = "Starting"
    phase_started: float = 0.0
    modified: float = 0.0
    transitions: list[dict[str, Any]] = field(default_factory=list)
    failure_reason: str | None = None
    training_start: float | None = None
    training_end: float | None = None
    stop_started: float | None = None
    stop_secondary: str = "Stopped"
    stream: str | None = None
    run: Any = None  # trainer_host.TrainerRun when a real trainer runs the job
    files: dict[str, bytes] | None = None  # the model, once Training ended
    sim_lines: int = 0
    trained: bool = False  # Training began (so /opt/ml/model may hold something)

    @property
    def name(self) -> str:
        return str(self.params["TrainingJobName"])

    @property
    def hyperparameters(self) -> dict[str, str]:
        return dict(self.params.get("HyperParameters") or {})

    @property
    def channels(self) -> dict[str, str]:
        """{channel name: S3Uri}."""
        return {
            str(c["ChannelName"]): str(((c.get("DataSource") or {}).get("S3DataSource") or {})
                                       .get("S3Uri", ""))
            for c in self.params.get("InputDataConfig") or []
        }  # fmt: skip

    def enter(self, secondary: str, at: float, message: str | None = None) -> None:
        if self.transitions and self.transitions[-1].get("EndTime") is None:
            self.transitions[-1]["EndTime"] = at
        self.transitions.append(
            {"Status": secondary, "StartTime": at, "EndTime": None,
             "StatusMessage": message or STATUS_MESSAGES.get(secondary, secondary)}
        )  # fmt: skip
        self.secondary = secondary
        self.phase_started = at
        self.modified = at

    def log(self, lines: list[str], at: float) -> None:
        if self.stream is not None and lines:
            training_io.write_log(self.account, self.region, self.stream, lines, int(at * 1000))

    def describe(self) -> dict[str, Any]:
        p = self.params
        out: dict[str, Any] = {
            "TrainingJobName": self.name,
            "TrainingJobArn": self.arn,
            "ModelArtifacts": {"S3ModelArtifacts": artifacts_uri(p)},
            "TrainingJobStatus": self.status,
            "SecondaryStatus": self.secondary,
            "HyperParameters": self.hyperparameters,
            "AlgorithmSpecification": copy.deepcopy(p.get("AlgorithmSpecification") or {}),
            "RoleArn": p["RoleArn"],
            "InputDataConfig": copy.deepcopy(p.get("InputDataConfig") or []),
            "OutputDataConfig": copy.deepcopy(p["OutputDataConfig"]),
            "ResourceConfig": copy.deepcopy(p.get("ResourceConfig") or {}),
            "StoppingCondition": copy.deepcopy(
                p.get("StoppingCondition") or {"MaxRuntimeInSeconds": DEFAULT_RUNTIME_SECONDS}
            ),
            "CreationTime": _dt(self.created),
            "LastModifiedTime": _dt(self.modified),
            "SecondaryStatusTransitions": [
                {k: (_dt(v) if k.endswith("Time") else v) for k, v in t.items() if v is not None}
                for t in self.transitions
            ],
            "EnableNetworkIsolation": bool(p.get("EnableNetworkIsolation", False)),
            "EnableInterContainerTrafficEncryption": bool(
                p.get("EnableInterContainerTrafficEncryption", False)
            ),
            "EnableManagedSpotTraining": bool(p.get("EnableManagedSpotTraining", False)),
        }
        for member in ("VpcConfig", "CheckpointConfig", "Environment", "RetryStrategy"):
            if p.get(member):
                out[member] = copy.deepcopy(p[member])
        if self.training_start is not None:
            out["TrainingStartTime"] = _dt(self.training_start)
        if self.training_end is not None:
            out["TrainingEndTime"] = _dt(self.training_end)
            billable = int(self.training_end - (self.training_start or self.training_end))
            out["BillableTimeInSeconds"] = billable
            out["TrainingTimeInSeconds"] = billable
        if self.failure_reason:
            out["FailureReason"] = self.failure_reason
        return out

    def summary(self) -> dict[str, Any]:
        """What GET /_peagle/training and `harness.training_jobs` show."""
        return {
            "name": self.name,
            "region": self.region,
            "status": self.status,
            "secondary_status": self.secondary,
            "failure_reason": self.failure_reason,
            "trainer": "simulated" if self.run is None else "real",
            "log_stream": self.stream,
            "model_artifacts": artifacts_uri(self.params),
        }


@dataclass(eq=False)
class TrainingJobs:
    """Every training job the harness knows, walked on the clock (see the module doc)."""

    seconds: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_SECONDS))
    # trainer_host.TrainerHost (the sandbox server with a trainer env), or None: SIMULATED.
    trainer: Any = None
    _jobs: dict[tuple[str, str, str], TrainingJob] = field(default_factory=dict, repr=False)
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False)

    def clear(self) -> None:
        with self._lock:
            for job in self._jobs.values():
                if job.run is not None and job.run.exit_code is None:
                    job.run.stop()
            self._jobs.clear()

    def get(self, account: str, region: str, name: str) -> TrainingJob | None:
        return self._jobs.get((account, region, name))

    def jobs(self) -> list[TrainingJob]:
        with self._lock:
            return list(self._jobs.values())

    # ------------------------------------------------------------------ API hooks

    def create(self, backend: SageMakerModelBackend, params: dict[str, Any], now: float) -> None:
        arn = FakeTrainingJob.arn_formatter(
            params["TrainingJobName"], backend.account_id, backend.region_name
        )
        job = TrainingJob(backend.account_id, backend.region_name, params, arn, created=now)
        job.enter("Starting", now)
        with self._lock:
            self._jobs[(backend.account_id, backend.region_name, job.name)] = job
        self._sync(backend, job)

    def stop(self, backend: SageMakerModelBackend, name: str, now: float) -> None:
        with self._lock:
            self.walk(now)
            job = self.get(backend.account_id, backend.region_name, name)
            if job is None:
                raise ResourceNotFound("Requested resource not found.")  # [INF: wording]
            if job.status != "InProgress":
                raise ValidationError(
                    f"The request was rejected because the training job is in status {job.status}."
                )  # [INF: wording]
            self._begin_stop(job, now, "Stopped")
            self._sync(backend, job)

    def delete(self, backend: SageMakerModelBackend, name: str, now: float) -> None:
        """DeleteTrainingJob (the module doc): a job that ended goes, its S3 output stays."""
        with self._lock:
            self.walk(now)
            job = self.get(backend.account_id, backend.region_name, name)
            if job is None:
                raise ResourceNotFound("Requested resource not found.")  # [INF: wording]
            if job.status in ("InProgress", "Stopping"):
                raise ResourceInUseException(
                    f"Training job {name} is in status {job.status}: only a job that is "
                    "Stopped, Failed or Completed can be deleted"
                )  # [INF: wording]
            del self._jobs[(backend.account_id, backend.region_name, name)]
            backend.training_jobs.pop(name, None)  # its tags go with it

    def walk(self, now: float) -> None:
        """Move every job to where the clock says it is (idempotent)."""
        with self._lock:
            for job in list(self._jobs.values()):
                self._walk(job, now)
                backend = _backend_of(job)
                if backend is not None:
                    self._sync(backend, job)

    # ------------------------------------------------------------------ the walk

    def _phase_end(self, job: TrainingJob) -> float | None:
        if job.secondary == "Training" and job.run is not None:
            return job.run.ended  # None while the process runs
        return job.phase_started + self.seconds[job.secondary]

    def _walk(self, job: TrainingJob, now: float) -> None:
        while True:
            if job.status == "Stopping":
                assert job.stop_started is not None
                end = job.stop_started + self.seconds["Stopping"]
                if job.run is not None:
                    # SageMaker waits for the container to exit: no earlier than the
                    # process's end (it may still be in its SIGTERM grace).
                    if job.run.ended is None:
                        return
                    end = max(end, job.run.ended)
                if now >= end:
                    self._stopped(job, end)
                return
            if job.status != "InProgress":
                return
            limit = (job.params.get("StoppingCondition") or {}).get("MaxRuntimeInSeconds")
            deadline = job.created + float(limit or DEFAULT_RUNTIME_SECONDS)
            end = self._phase_end(job)
            if now >= deadline and (end is None or deadline < end):
                self._begin_stop(job, deadline, "MaxRuntimeExceeded")
                continue
            if job.secondary == "Training" and job.run is None:
                self._simulated_lines(job, min(now, end if end is not None else now))
            if end is None or now < end:
                return
            self._next(job, end)

    def _next(self, job: TrainingJob, at: float) -> None:
        if job.secondary == "Starting":
            job.training_start = at
            job.enter("Downloading", at)
        elif job.secondary == "Downloading":
            for uri in job.channels.values():
                if not training_io.list_prefix(job.account, uri):
                    bucket = uri[len("s3://") :].split("/", 1)[0]
                    self._fail(
                        job,
                        at,
                        f'ClientError: No S3 objects found under S3 URL "{uri}" given in input '
                        f"data source. Please ensure that the bucket exists in the selected "
                        f"region ({job.region}), that objects exist under that S3 prefix, and "
                        f'that the role "{job.params.get("RoleArn")}" has "s3:ListBucket" '
                        f'permissions on bucket "{bucket}".',
                    )
                    return
            job.enter("Training", at)
            job.trained = True
            job.stream = f"{job.name}/algo-1-{int(job.training_start or at)}"
            # The stream exists once the container starts, before its first line.
            training_io.write_log(job.account, job.region, job.stream, [], int(at * 1000))
            if self.trainer is not None:
                job.run = self.trainer.start(job)
            else:
                job.log(
                    [
                        "peagle-sandbox: SIMULATED trainer (no trainer environment): "
                        "it writes a zero-weight head and learns nothing",
                        f"peagle-train: hyperparameters {json.dumps(job.hyperparameters)}",
                    ],
                    at,
                )
        elif job.secondary == "Training":
            if job.run is not None:
                if job.run.exit_code != 0:
                    self._fail(job, at, job.run.failure_reason())
                    return
                job.files = job.run.model_files()
            else:
                try:
                    job.files = self._simulated_files(job)
                except ValueError as e:
                    job.log([f"peagle-train: error: {e}"], at)
                    self._fail(job, at, f"AlgorithmError: {e}")
                    return
                job.log(["peagle-train: wrote the head to /opt/ml/model (SIMULATED)"], at)
            job.enter("Uploading", at)
        elif job.secondary == "Uploading":
            try:
                training_io.put_files(job.account, job.files or {}, artifacts_uri(job.params))
            except training_io.S3Error as e:
                self._fail(job, at, str(e))
                return
            self._finish(job, "Completed", "Completed", at)

    def _simulated_lines(self, job: TrainingJob, upto: float) -> None:
        steps = int(job.hyperparameters.get("steps") or 0)
        count = min(steps, _SIM_STEP_LINES)
        span = self.seconds["Training"]
        while job.sim_lines < count:
            due = job.phase_started + span * (job.sim_lines + 1) / (count + 1)
            if due > upto:
                return
            step = max(1, round(steps * (job.sim_lines + 1) / count))
            job.log([f"peagle-train: step {step} loss 0.0 (SIMULATED)"], due)
            job.sim_lines += 1

    def _simulated_files(self, job: TrainingJob) -> dict[str, bytes]:
        uri = job.channels.get("target")
        raw = (
            training_io.read_object(job.account, uri.rstrip("/") + "/config.json") if uri else None
        )
        if raw is None:
            raise ValueError("no config.json in the target channel")
        try:
            config = json.loads(raw)
        except ValueError:
            raise ValueError("the target channel's config.json is not JSON") from None
        return training_io.simulated_head(config, job.hyperparameters, stopped=False)

    def _begin_stop(self, job: TrainingJob, at: float, secondary: str) -> None:
        job.status = "Stopping"
        job.stop_started = at
        job.stop_secondary = secondary
        job.enter("Stopping", at)
        if job.run is not None:
            job.run.stop()  # SIGTERM now; the host kills it if it outlives the grace

    def _stopped(self, job: TrainingJob, at: float) -> None:
        files: dict[str, bytes] = {}
        if job.run is not None:
            files = job.run.model_files()
        elif job.trained:
            try:  # the simulated trainer's head sat in /opt/ml/model from Training's start
                files = self._simulated_files(job)
                files[training_io.REPORT_NAME] = _stopped_report(files)
            except ValueError:
                files = {}
        if files:
            # A stopped job reports no upload failure [INF].
            with contextlib.suppress(training_io.S3Error):
                training_io.put_files(job.account, files, artifacts_uri(job.params))
        self._finish(job, "Stopped", job.stop_secondary, at)

    def _fail(self, job: TrainingJob, at: float, reason: str) -> None:
        job.failure_reason = reason
        self._finish(job, "Failed", "Failed", at)

    def _finish(self, job: TrainingJob, status: str, secondary: str, at: float) -> None:
        job.status = status
        job.enter(secondary, at)
        job.transitions[-1]["EndTime"] = at
        job.training_end = at
        if job.training_start is None:
            job.training_start = at

    def _sync(self, backend: SageMakerModelBackend, job: TrainingJob) -> None:
        """Keep moto's record (ListTrainingJobs, the tag calls read it) on our status."""
        fake = backend.training_jobs.get(job.name)
        if fake is None:
            return
        fake.training_job_status = job.status
        fake.secondary_status = job.secondary
        fake.last_modified_time = _dt(job.modified)
        fake.training_end_time = _dt(job.training_end) if job.training_end else None


def _stopped_report(files: dict[str, bytes]) -> bytes:
    report = json.loads(files[training_io.REPORT_NAME])
    report["stopped"] = True
    return json.dumps(report, indent=1).encode()


def _backend_of(job: TrainingJob) -> SageMakerModelBackend | None:
    from moto.sagemaker.models import sagemaker_backends

    try:
        return sagemaker_backends[job.account][job.region]
    except KeyError:
        return None


def _request(response: SageMakerResponse) -> dict[str, Any]:
    raw = response.body
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", "replace")
    try:
        loaded = json.loads(raw or "{}")
    except ValueError:
        return {}
    return loaded if isinstance(loaded, dict) else {}


def check_create(params: dict[str, Any]) -> list[str]:
    """Every problem AWS would refuse CreateTrainingJob for (empty: valid)."""
    found = problems("sagemaker", "CreateTrainingJob", params)
    runtime = (params.get("StoppingCondition") or {}).get("MaxRuntimeInSeconds")
    if isinstance(runtime, int) and runtime > MAX_RUNTIME_SECONDS:
        found.append(
            f"Value '{runtime}' at 'StoppingCondition.MaxRuntimeInSeconds' failed to satisfy "
            f"constraint: Member must have value less than or equal to {MAX_RUNTIME_SECONDS}"
        )  # the documented maximum; the wording follows the model's checks [INF]
    names = [c.get("ChannelName") for c in params.get("InputDataConfig") or []]
    dupes = sorted({n for n in names if names.count(n) > 1 and isinstance(n, str)})
    if dupes:
        found.append(f"Channel names must be unique: {', '.join(dupes)} repeated")  # [INF]
    return found


def training_patches(
    jobs: Callable[[], TrainingJobs], now: Callable[[], float]
) -> list[tuple[type, str, Any]]:
    """(class, attribute, replacement): the checks and walk above on moto's handlers."""
    original_create = SageMakerResponse.__dict__["create_training_job"]
    original_describe = SageMakerResponse.__dict__["describe_training_job"]
    original_list = SageMakerModelBackend.list_training_jobs

    def create_training_job(self: SageMakerResponse) -> ActionResult:
        params = _request(self)
        found = check_create(params)
        if found:
            raise ValidationError(validation_message(found))
        backend = self.sagemaker_backend
        name = params["TrainingJobName"]
        if name in backend.training_jobs:
            arn = FakeTrainingJob.arn_formatter(name, backend.account_id, backend.region_name)
            raise ResourceInUseException(
                "Training job names must be unique within an AWS account and region, and a "
                f"training job with this name already exists ({arn})"
            )
        result = original_create(self)
        jobs().create(backend, copy.deepcopy(params), now())
        return result

    def describe_training_job(self: SageMakerResponse) -> ActionResult:
        registry = jobs()
        registry.walk(now())
        backend = self.sagemaker_backend
        job = registry.get(
            backend.account_id, backend.region_name, self._get_param("TrainingJobName")
        )
        if job is None:
            return original_describe(self)  # moto's "Could not find training job" error
        return ActionResult(job.describe())

    def stop_training_job(self: SageMakerResponse) -> ActionResult:
        jobs().stop(self.sagemaker_backend, self._get_param("TrainingJobName"), now())
        return ActionResult({})

    def delete_training_job(self: SageMakerResponse) -> ActionResult:
        jobs().delete(self.sagemaker_backend, self._get_param("TrainingJobName"), now())
        return ActionResult({})

    def list_training_jobs(self: SageMakerModelBackend, *args: Any, **kwargs: Any) -> Any:
        jobs().walk(now())
        return original_list(self, *args, **kwargs)

    return [
        (SageMakerResponse, "create_training_job", create_training_job),
        (SageMakerResponse, "describe_training_job", describe_training_job),
        # Not in moto: call_action finds it on the class by the action's snake_case name.
        (SageMakerResponse, "stop_training_job", stop_training_job),
        (SageMakerResponse, "delete_training_job", delete_training_job),  # nor this
        (SageMakerModelBackend, "list_training_jobs", list_training_jobs),
    ]
