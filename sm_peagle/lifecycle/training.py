"""The side effects of `drafter train`: the reads preflight makes (the target's
config.json and the data in S3, the role, the training quota), the uploads, the
CreateTrainingJob, the wait (status, secondary status and the job's log lines), and the
stop-and-clean-up of an interrupted run. The request itself is `training/request.py`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from ..checks import Check
from ..errors import Param, PreflightFailed, QuotaExceeded, SpecError, text
from ..training.checks import TargetInfo
from ..training.errors import TrainingFailed
from ..training.report import REPORT_FILE
from ..training.request import TrainingLayout
from .preflight import check_quota, check_role

__all__ = [
    "LOG_GROUP",
    "TRAINING_USAGE",
    "check_training_quota",
    "read_s3_prompts",
    "read_s3_target",
    "delete_job",
    "head_location",
    "read_report",
    "remove_inputs",
    "remove_prefix",
    "run_training_preflight",
    "stop_job",
    "transient",
    "upload",
    "upload_failure",
    "wait_for_job",
]

LOG_GROUP = "/aws/sagemaker/TrainingJobs"
TRAINING_USAGE = " for training job usage"  # "<instance type> for training job usage"
# One read of S3 data in preflight: its first MiB holds many prompts if it holds any.
DATA_PEEK_BYTES = 1 << 20

Say = Callable[[str], None]


def _code(e: Exception) -> str:
    return getattr(e, "response", {}).get("Error", {}).get("Code", "")


def _split(uri: str) -> tuple[str, str]:
    bucket, _, key = uri[len("s3://") :].partition("/")
    return bucket, key


def read_s3_target(s3: Any, uri: str) -> TargetInfo:
    """The target at an S3 prefix: its config.json (one GET) and the size of its
    safetensors files (one listing)."""
    from botocore.exceptions import ClientError

    prefix = uri if uri.endswith("/") else uri + "/"
    bucket, key = _split(prefix)
    try:
        body = s3.get_object(Bucket=bucket, Key=key + "config.json")["Body"].read()
    except ClientError as e:
        raise SpecError(
            text(
                "{p}: cannot read {u}config.json ({c})",
                p=Param("target"),
                u=prefix,
                c=_code(e) or e,
            ),  # fmt: skip
            remedy="give the S3 prefix that holds the target's config.json and weights",
            field="target",
            value=uri,
        ) from None
    try:
        config = json.loads(body)
    except ValueError:
        raise SpecError(
            text("{p}: {u}config.json is not JSON", p=Param("target"), u=prefix),
            remedy="give the prefix of a Hugging Face model directory",
            field="target",
            value=uri,
        ) from None
    size = 0
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=key):
        size += sum(
            o["Size"] for o in page.get("Contents", []) if o["Key"].endswith(".safetensors")
        )
    return TargetInfo.from_config(uri, config, weight_bytes=size or None, model_data=prefix)


def read_s3_prompts(s3: Any, uri: str) -> list[str]:
    """The first lines of the S3 jsonl (one ranged GET) and whether that was all of it."""
    from botocore.exceptions import ClientError

    bucket, key = _split(uri)
    try:
        got = s3.get_object(Bucket=bucket, Key=key, Range=f"bytes=0-{DATA_PEEK_BYTES - 1}")
    except ClientError as e:
        raise SpecError(
            text("{p}: cannot read {u} ({c})", p=Param("data"), u=uri, c=_code(e) or e),
            remedy="give an S3 object that exists (a jsonl of prompts)",
            field="data",
            value=uri,
        ) from None
    body = got["Body"].read()
    return body.decode("utf-8", errors="replace").splitlines()


def check_training_quota(quotas: Any, instance_type: str) -> Check:
    """Training quotas are per instance type ("<type> for training job usage"), often 0:
    preflight's quota check (one function for both), on the training quota's name."""
    return check_quota(quotas, instance_type, 1, usage=TRAINING_USAGE, who="a training job")


def run_training_preflight(aws: Any, role_arn: str, instance_type: str, fit: Check) -> list[Check]:
    """The role (exists, trusts SageMaker), the training quota, and the GPU fit: raise
    PreflightFailed (QuotaExceeded when only the quota fails) before any upload."""
    checks = [check_role(aws.client("iam"), role_arn), fit]
    quotas = aws.client("service-quotas", retries={"mode": "standard", "max_attempts": 2})
    checks.append(check_training_quota(quotas, instance_type))
    bad = [c for c in checks if c.status == "fail"]
    if bad:
        cls = QuotaExceeded if all(c.name == "quota" for c in bad) else PreflightFailed
        parts = {f"c{i}": c.line() for i, c in enumerate(bad[:-1])}
        parts["last"] = bad[-1].line(with_fix=False)
        joined = text("; ".join(f"{{{key}}}" for key in parts), **parts)
        err = cls("preflight " + joined + "; nothing was created", remedy=bad[-1].fix)
        err.checks = checks  # type: ignore[attr-defined]
        raise err
    return checks


def upload(
    s3: Any, bucket: str, key: str, body: bytes | None = None, path: str | None = None
) -> str:
    """Put one object (bytes, or a local file); its s3:// URI."""
    if path is not None:
        s3.upload_file(path, bucket, key)
    else:
        s3.put_object(Bucket=bucket, Key=key, Body=body or b"")
    return f"s3://{bucket}/{key}"


def upload_failure(e: BaseException, what: str, uri: str) -> Exception | None:
    """An upload's S3 failure as a peagle AWS error (exit 1, one line), else None. boto3's
    `upload_file` raises S3UploadFailedError (not a botocore error) for AccessDenied or a
    KMS key it may not use; a PutObject raises a ClientError."""
    from boto3.exceptions import S3UploadFailedError
    from botocore.exceptions import BotoCoreError, ClientError

    from ..aws import as_peagle_error
    from ..errors import AwsError, Call, PeagleError

    if isinstance(e, S3UploadFailedError):
        cause = str(e).split(": ", 1)[-1] if ": An error occurred" in str(e) else str(e)
        return AwsError(
            f"uploading {what} to {uri} failed: {cause}",
            remedy=text(
                "check that your identity may write to the bucket and use its KMS key "
                "(`{p}` lists what peagle needs), or pass another bucket",
                p=Call("iam_policy"),
            ),  # fmt: skip
        )
    if isinstance(e, ClientError | BotoCoreError):
        err = as_peagle_error(e)
        if isinstance(err, PeagleError):
            return type(err)(
                text("uploading {w} to {u}: {m}", w=what, u=uri, m=err.message),
                remedy=err.remedy,
            )
    return None


def remove_prefix(s3: Any, bucket: str, prefix: str) -> int:
    """Delete every object under `prefix`; how many."""
    n = 0
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        keys = [{"Key": o["Key"]} for o in page.get("Contents", [])]
        if keys:
            s3.delete_objects(Bucket=bucket, Delete={"Objects": keys, "Quiet": True})
            n += len(keys)
    return n


# DescribeTrainingJob errors worth another try (it is idempotent): throttling past
# botocore's own retries, a server hiccup, or the network (a laptop waking, Wi-Fi).
TRANSIENT_CODES = frozenset({
    "Throttling", "ThrottlingException", "ThrottledException", "RequestLimitExceeded",
    "TooManyRequestsException", "ServiceUnavailable", "InternalFailure", "InternalServerError",
})  # fmt: skip
# Consecutive failed describes before the wait gives up (TrainingLost at the caller):
# with the back-off capped at poll_max, a few minutes of outage at most.
DESCRIBE_TRIES = 6


def transient(e: BaseException) -> bool:
    """Is `e` an error another DescribeTrainingJob may not meet (throttling, network)?"""
    from botocore import exceptions as bx

    if isinstance(e, bx.ClientError):
        return _code(e) in TRANSIENT_CODES
    return isinstance(e, bx.ConnectionError | bx.HTTPClientError)


class LogTail:
    """The job's new log lines, each once: every stream of the job (`<job>/algo-1-<epoch>`;
    a restarted instance writes a new one) is read from its own position, the
    `nextForwardToken` of its last GetLogEvents, so a long job's log is never read again
    from its start. Throttling (or any other refusal) is said once; the positions are
    kept, so the lines come late, not never."""

    def __init__(self, logs: Any, job: str, say: Say) -> None:
        self.logs, self.job, self.say = logs, job, say
        self.tokens: dict[str, str | None] = {}  # stream -> where its next read starts
        self.warned = False

    def lines(self) -> list[str]:
        from botocore.exceptions import ClientError

        try:
            return self._read()
        except NotImplementedError:
            return []
        except ClientError as e:
            if _code(e) != "ResourceNotFoundException" and not self.warned:  # not: no group yet
                self.warned = True
                what = "throttled" if "Throttl" in _code(e) else f"refused ({_code(e) or e})"
                self.say(f"the job's log lines are {what} by CloudWatch Logs; the wait goes on")
            return []

    def _read(self) -> list[str]:
        pages = self.logs.get_paginator("describe_log_streams").paginate(
            logGroupName=LOG_GROUP, logStreamNamePrefix=self.job
        )
        for page in pages:
            for st in page.get("logStreams", []):
                self.tokens.setdefault(str(st["logStreamName"]), None)
        events: list[dict[str, Any]] = []
        for stream in sorted(self.tokens):
            # One read a poll: an answer holds at most 10,000 events or 1 MB, and a
            # backlog beyond that comes with the next polls, from this answer's token
            # (at the stream's end, GetLogEvents returns the token it was given).
            kw: dict[str, Any] = {"logGroupName": LOG_GROUP, "logStreamName": stream}
            token = self.tokens[stream]
            kw.update({"nextToken": token} if token else {"startFromHead": True})
            got = self.logs.get_log_events(**kw)
            events += got.get("events", [])
            self.tokens[stream] = got.get("nextForwardToken") or token
        events.sort(key=lambda e: int(e["timestamp"]))
        return [str(e["message"]).rstrip() for e in events]


def _describe(sm: Any, job: str, sleep: Callable[[float], None], poll: float,
              poll_max: float) -> dict[str, Any]:  # fmt: skip
    """DescribeTrainingJob, tried again on a transient error (DESCRIBE_TRIES in all)."""
    for attempt in range(DESCRIBE_TRIES):
        try:
            return dict(sm.describe_training_job(TrainingJobName=job))
        except Exception as e:
            if not transient(e) or attempt == DESCRIBE_TRIES - 1:
                raise
            sleep(min(poll * 2**attempt, max(poll_max, poll)))
    raise AssertionError("unreachable")  # pragma: no cover


def wait_for_job(
    aws: Any,
    job: str,
    *,
    say: Say,
    poll: float = 5.0,
    poll_max: float = 30.0,
    sleep: Callable[[float], None] = time.sleep,
    on_poll: Callable[[Any], None] | None = None,
) -> dict[str, Any]:
    """Poll DescribeTrainingJob until the job ends; each status or secondary-status change
    and each new log line is a `say` line. A transient describe error is tried again
    (DESCRIBE_TRIES); any other error is raised as is (the job may still be running).
    Completed: its description. Failed or Stopped: TrainingFailed with the FailureReason."""
    sm = aws.client("sagemaker")
    tail = LogTail(aws.client("logs"), job, say)
    last: tuple[str, str] | None = None
    interval = poll
    while True:
        desc = _describe(sm, job, sleep, poll, poll_max)
        if on_poll is not None:
            on_poll(desc)
        now = (desc["TrainingJobStatus"], desc.get("SecondaryStatus", ""))
        if now != last:
            say(f"training job {job}: {now[0]} ({now[1]})" if now[1] else f"{job}: {now[0]}")
            interval = poll
        else:
            interval = min(interval * 1.5, max(poll_max, poll))
        last = now
        for line in tail.lines():
            say(line)
        status = now[0]
        if status == "Completed":
            return desc
        if status in ("Failed", "Stopped"):
            reason = desc.get("FailureReason")
            raise TrainingFailed(
                f"training job {job} is {status}: {reason or 'no reason given'}",
                job_name=job,
                failure_reason=reason,
                remedy=f"read the job's log lines above (CloudWatch {LOG_GROUP}, stream {job}/…)",
            )
        sleep(interval)


STOP_WAIT_S = 1800


def stop_job(aws: Any, job: str, *, say: Say, poll: float = 5.0,
             sleep: Callable[[float], None] = time.sleep) -> str:  # fmt: skip
    """StopTrainingJob, then wait until it is no longer running; its last status."""
    from botocore.exceptions import ClientError

    sm = aws.client("sagemaker")
    say(f"stopping training job {job}")
    try:
        sm.stop_training_job(TrainingJobName=job)
    except ClientError as e:
        # Already ended (or never created): nothing to stop.
        if _code(e) not in ("ValidationException", "ResourceNotFound"):
            raise
    # By time, not by count: a poll interval made short (PEAGLE_POLL_SECONDS) must not end
    # the wait early. SageMaker stops a job within minutes; 30 is generous.
    deadline = time.monotonic() + STOP_WAIT_S
    while time.monotonic() < deadline:
        try:
            status = sm.describe_training_job(TrainingJobName=job)["TrainingJobStatus"]
        except ClientError as e:
            if _code(e) in ("ValidationException", "ResourceNotFound"):
                return "NotFound"  # the create never went through
            raise
        if status not in ("InProgress", "Stopping"):
            say(f"training job {job} is {status}")
            return status
        sleep(poll)
    return "Stopping"


def delete_job(aws: Any, job: str) -> bool:
    """DeleteTrainingJob of an ended job (its description goes; its log stream and S3
    files stay: training_gc.py). False: it is gone already."""
    from botocore.exceptions import ClientError

    try:
        aws.client("sagemaker").delete_training_job(TrainingJobName=job)
    except ClientError as e:
        if _code(e) in ("ResourceNotFound", "ValidationException"):
            return False
        raise
    return True


# What a run uploads under the job's prefix (training/request.py's layout): of no use once
# the job has ended. `output/` (the head) is not among them.
INPUT_DIRS = ("source/", "data/", "target/")


def remove_inputs(s3: Any, bucket: str, prefix: str) -> int:
    """Delete the run's uploads under the job's `prefix` (INPUT_DIRS), keep its output;
    how many objects went."""
    return sum(remove_prefix(s3, bucket, prefix + d) for d in INPUT_DIRS)


def head_location(desc: dict[str, Any] | None, layout: TrainingLayout) -> str:
    """Where the job's head is: DescribeTrainingJob's `ModelArtifacts.S3ModelArtifacts`
    (with `CompressionType: NONE`, the prefix the model dir's files were uploaded under),
    else the layout's `<S3OutputPath>/<job>/output/model/`."""
    uri = str(((desc or {}).get("ModelArtifacts") or {}).get("S3ModelArtifacts") or "")
    if not uri.startswith("s3://"):
        return layout.head_uri
    return uri if uri.endswith("/") else uri + "/"


def read_report(s3: Any, head_uri: str) -> dict[str, Any] | None:
    """The job's `peagle-training-report.json` beside the head (None if it wrote none)."""
    from botocore.exceptions import ClientError

    bucket, key = _split(head_uri + REPORT_FILE)
    try:
        return json.loads(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
    except (ClientError, ValueError):
        return None
