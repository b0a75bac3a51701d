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

from ..checks import Check, failed, passed, warned
from ..errors import Param, PreflightFailed, QuotaExceeded, SpecError, text
from ..training.checks import TargetInfo
from ..training.errors import TrainingFailed
from ..training.report import REPORT_FILE
from ..training.request import TrainingLayout
from .preflight import check_role, list_sagemaker_quotas

__all__ = [
    "LOG_GROUP",
    "TRAINING_USAGE",
    "check_training_quota",
    "read_s3_prompts",
    "read_s3_target",
    "read_report",
    "remove_prefix",
    "run_training_preflight",
    "stop_job",
    "upload",
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
    """Training quotas are per instance type ("<type> for training job usage"), often 0."""
    from botocore.exceptions import BotoCoreError, ClientError

    wanted = f"{instance_type}{TRAINING_USAGE}"
    try:
        for q in list_sagemaker_quotas(quotas):
            if q.get("QuotaName") == wanted:
                value = int(q.get("Value", 0))
                if value < 1:
                    return failed(
                        "quota",
                        f"quota '{wanted}' is {value}, a training job needs 1",
                        f"request an increase in Service Quotas (code {q.get('QuotaCode', '?')})",
                    )
                return passed("quota", f"'{wanted}' = {value}")
    except (ClientError, BotoCoreError, NotImplementedError) as e:
        return warned(
            "quota", f"cannot read Service Quotas ({_code(e) or type(e).__name__}); not checked"
        )
    return warned("quota", f"no quota named '{wanted}' visible; not checked")


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


def remove_prefix(s3: Any, bucket: str, prefix: str) -> int:
    """Delete every object under `prefix`; how many."""
    n = 0
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        keys = [{"Key": o["Key"]} for o in page.get("Contents", [])]
        if keys:
            s3.delete_objects(Bucket=bucket, Delete={"Objects": keys, "Quiet": True})
            n += len(keys)
    return n


def _log_lines(logs: Any, job: str, seen: set[str]) -> list[str]:
    """The job's new log lines (every stream `<job>/algo-1-<epoch>`), oldest first."""
    from botocore.exceptions import ClientError

    try:
        pages = logs.get_paginator("filter_log_events").paginate(
            logGroupName=LOG_GROUP, logStreamNamePrefix=job
        )
        events = [e for page in pages for e in page.get("events", [])]
    except (ClientError, NotImplementedError):  # no group yet (the job is starting)
        return []
    events.sort(key=lambda e: (e["timestamp"], e.get("eventId", "")))
    out = []
    for e in events:
        key = e.get("eventId") or f"{e['timestamp']}:{e['message']}"
        if key not in seen:
            seen.add(key)
            out.append(str(e["message"]).rstrip())
    return out


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
    and each new log line is a `say` line. Completed: its description. Failed or
    Stopped: TrainingFailed with the FailureReason."""
    sm = aws.client("sagemaker")
    logs = aws.client("logs")
    seen: set[str] = set()
    last: tuple[str, str] | None = None
    interval = poll
    while True:
        desc = sm.describe_training_job(TrainingJobName=job)
        if on_poll is not None:
            on_poll(desc)
        now = (desc["TrainingJobStatus"], desc.get("SecondaryStatus", ""))
        if now != last:
            say(f"training job {job}: {now[0]} ({now[1]})" if now[1] else f"{job}: {now[0]}")
            interval = poll
        else:
            interval = min(interval * 1.5, max(poll_max, poll))
        last = now
        for line in _log_lines(logs, job, seen):
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


def read_report(s3: Any, layout: TrainingLayout) -> dict[str, Any] | None:
    """The job's `peagle-training-report.json` beside the head (None if it wrote none)."""
    from botocore.exceptions import ClientError

    bucket, key = _split(layout.head_uri + REPORT_FILE)
    try:
        return json.loads(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
    except (ClientError, ValueError):
        return None
