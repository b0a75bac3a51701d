"""What `peagle gc` does with `drafter train`'s jobs, and what it must leave alone.

A training job peagle made (`peagle:managed=true`, not adopted, named `peagle-train-*`)
leaves two things: the job on SageMaker, and its files under
`s3://<bucket>/peagle/training/<job>/` (the uploaded source, data and target, and the
output: the head). Over its operation's lifetime (`Operation.may_be_running`, as every
gc judges a run), a job that ended:

- `Failed` or `Stopped`: nothing of it is of use (a run that sees this removes its files
  itself; a run killed with SIGKILL, or one started with `wait=False`, does not): gc
  removes the files, then the job. Files first: the job's description is what says where
  they are, so a gc that fails between the two finds the job again next time.
- `Completed`: its head is something a user may deploy, or has deployed. gc keeps it and
  says so, and removes only the run's uploads (`source/`, `data/`, `target/`: a run that
  completed removes them itself once it has read the report; a run killed before that, or
  started with `wait=False`, does not). Only naming the job (`gc(training=JOB)`,
  `peagle gc --training JOB`) removes the head, and that is refused while a SageMaker
  model's ModelDataSource, AdditionalModelDataSources or ModelDataUrl is under the job's
  prefix (the endpoint would fail at its next scale-out or instance replacement, when
  SageMaker downloads the head again), unless forced.

A job in progress (InProgress, Stopping) is never touched. A job without the peagle tag
is never touched, even when named.

DeleteTrainingJob (botocore's `sagemaker` model, the operation's documentation): "You can
delete only training jobs that are in a terminal state (Stopped, Failed, or Completed)
[...] You cannot delete a job that is in the InProgress or Stopping state"; "all of the
metadata for the training job is lost". It says nothing of S3: the job's output stays,
which is why gc removes the files itself. Its CloudWatch log stream is not the job's
either: it stays in `/aws/sagemaker/TrainingJobs` under the group's retention.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..training.request import JOB_PREFIX, TRAINING_PREFIX
from .resources import is_collectable, not_found
from .spec_tags import tag_dict

__all__ = [
    "ENDED",
    "TrainingGarbage",
    "find_training_garbage",
    "head_users",
    "named_training_job",
    "remove_training_garbage",
    "remove_training_job",
]

ENDED = ("Failed", "Stopped")  # what gc removes unasked
DENIED = ("AccessDenied", "AccessDeniedException")


@dataclass
class TrainingGarbage:
    jobs: dict[str, str] = field(default_factory=dict)  # job -> why it goes
    prefixes: dict[str, str | None] = field(default_factory=dict)  # job -> its s3:// prefix
    kept: dict[str, str] = field(default_factory=dict)  # Completed job -> why it stays
    # Completed job -> the s3:// prefixes of its uploads still there (its head stays)
    uploads: dict[str, list[str]] = field(default_factory=dict)


def _code(e: Exception) -> str:
    return str(getattr(e, "response", {}).get("Error", {}).get("Code", ""))


def job_prefix(desc: dict[str, Any]) -> str | None:
    """`s3://<bucket>/peagle/training/<job>/` when the job's output is peagle's layout
    (`training/request.py`), else None: files elsewhere are not peagle's to remove."""
    out = str((desc.get("OutputDataConfig") or {}).get("S3OutputPath", ""))
    if not out.startswith("s3://"):
        return None
    bucket, _, key = out[len("s3://") :].partition("/")
    if key.rstrip("/") + "/" != TRAINING_PREFIX or not bucket:
        return None
    return f"s3://{bucket}/{TRAINING_PREFIX}{desc['TrainingJobName']}/"


def peagle_job_tags(sm: Any, arn: str) -> dict[str, str] | None:
    try:
        return tag_dict(sm.list_tags(ResourceArn=arn).get("Tags", []))
    except Exception as e:
        if not_found(e) or _code(e) == "ValidationException":  # deleted meanwhile
            return None
        raise


def find_training_garbage(sm: Any, judge: Any, s3: Any = None) -> TrainingGarbage:
    """peagle's ended training jobs (module doc). `judge`: garbage.py's, which decides
    by the operation tags (or the age of an untagged job) and scopes to one operation.
    A caller who may not list training jobs (a deployer without the trainer policy)
    gets none, not an error. `s3`: also a Completed job's uploads still in S3."""
    out = TrainingGarbage()
    try:
        pages = sm.get_paginator("list_training_jobs").paginate(NameContains=JOB_PREFIX)
        summaries = [s for page in pages for s in page.get("TrainingJobSummaries", [])]
    except Exception as e:
        if _code(e) in DENIED:
            return out
        raise
    for s in sorted(summaries, key=lambda s: s["TrainingJobName"]):
        name, status = s["TrainingJobName"], s["TrainingJobStatus"]
        if not name.startswith(JOB_PREFIX) or status not in (*ENDED, "Completed"):
            continue
        tags = peagle_job_tags(sm, s["TrainingJobArn"])
        if not tags or not is_collectable(tags):
            continue
        if not judge.collectable(name, tags, s["CreationTime"]):
            continue
        desc = sm.describe_training_job(TrainingJobName=name)
        prefix = job_prefix(desc)
        if status == "Completed":
            head = (desc.get("ModelArtifacts") or {}).get("S3ModelArtifacts", "")
            # The way to delete it is the caller's to word (CLI: gc --training JOB).
            out.kept[name] = f"Completed: its head {head} may be deployed"
            if s3 is not None and prefix is not None:
                out.uploads[name] = _uploads_left(s3, prefix)
                if not out.uploads[name]:
                    del out.uploads[name]
            continue
        reason = desc.get("FailureReason")
        out.jobs[name] = f"{status}" + (f": {reason}" if reason else "")
        out.prefixes[name] = prefix
    return out


def _uploads_left(s3: Any, prefix: str) -> list[str]:
    """The s3:// prefixes of the run's uploads (training.INPUT_DIRS) that hold objects."""
    from .training import INPUT_DIRS

    bucket, _, key = prefix[len("s3://") :].partition("/")
    left = []
    for d in INPUT_DIRS:
        try:
            got = s3.list_objects_v2(Bucket=bucket, Prefix=key + d, MaxKeys=1)
        except Exception as e:
            if _code(e) in (*DENIED, "NoSuchBucket"):
                return []  # not this caller's to read, or gone: nothing to remove
            raise
        if got.get("KeyCount", len(got.get("Contents", []))):
            left.append(prefix + d)
    return left


def remove_training_garbage(sm: Any, s3: Any, found: Any) -> list[str]:
    """gc's removal (garbage.py's `found`): each Failed or Stopped job's files, then the
    job; each Completed job's uploads (its head stays). What went, as labels."""
    from .training import remove_prefix

    gone: list[str] = []
    for job in found.training:
        gone.extend(remove_training_job(sm, s3, job, found.training_prefixes.get(job)))
    for uris in found.training_uploads.values():
        for uri in uris:
            bucket, _, key = uri[len("s3://") :].partition("/")
            n = remove_prefix(s3, bucket, key)
            if n:
                gone.append(f"{uri} ({n} objects)")
    return gone


def head_users(sm: Any, prefix: str) -> list[str]:
    """The SageMaker models whose data is under `prefix` (a job's files): ModelDataUrl,
    ModelDataSource or AdditionalModelDataSources of the primary container or any
    container. Every model is read (a head may be served by a model peagle did not
    make, and that endpoint fails as surely): their names."""
    users = []
    for page in sm.get_paginator("list_models").paginate():
        for m in page.get("Models", []):
            try:
                desc = sm.describe_model(ModelName=m["ModelName"])
            except Exception as e:
                if not_found(e) or _code(e) == "ValidationException":
                    continue  # deleted meanwhile
                raise
            containers = [desc.get("PrimaryContainer") or {}, *(desc.get("Containers") or [])]
            if any(u.startswith(prefix) for c in containers for u in _data_uris(c)):
                users.append(str(m["ModelName"]))
    return sorted(users)


def _data_uris(container: dict[str, Any]) -> list[str]:
    uris = [str(container.get("ModelDataUrl") or "")]
    source = (container.get("ModelDataSource") or {}).get("S3DataSource") or {}
    uris.append(str(source.get("S3Uri") or ""))
    for extra in container.get("AdditionalModelDataSources") or []:
        uris.append(str((extra.get("S3DataSource") or {}).get("S3Uri") or ""))
    return [u for u in uris if u]


def remove_training_job(sm: Any, s3: Any, name: str, prefix: str | None) -> list[str]:
    """Remove the job's files, then the job; what went (labels for `deleted`)."""
    from .training import remove_prefix

    gone: list[str] = []
    if prefix is not None:
        bucket, _, key = prefix[len("s3://") :].partition("/")
        n = remove_prefix(s3, bucket, key)
        if n:
            gone.append(f"{prefix} ({n} objects)")
    try:
        sm.delete_training_job(TrainingJobName=name)
        gone.append(f"training-job {name}")
    except Exception as e:
        if not not_found(e) and _code(e) != "ResourceNotFound":
            raise
    return gone


def named_training_job(sm: Any, name: str, force: bool = False) -> tuple[str, str | None]:
    """(its status line, its s3:// prefix) for the job `gc --training` names, once it is
    peagle's (tagged), has ended, its run is over, and no model serves its head (`force`:
    even so); otherwise SpecError (nothing is deleted)."""
    from ..aws import aws_now
    from ..errors import Call, NotFound, Param, SpecError, text
    from .operation import Operation

    try:
        desc = sm.describe_training_job(TrainingJobName=name)
    except Exception as e:
        if _code(e) in ("ValidationException", "ResourceNotFound") or not_found(e):
            raise NotFound(
                f"training job {name} does not exist",
                remedy=text("see the job names in a dry run of {gc}", gc=Call("gc")),
            ) from None
        raise
    tags = peagle_job_tags(sm, desc["TrainingJobArn"]) or {}
    if not is_collectable(tags):
        raise SpecError(
            f"training job {name} is not peagle's (no peagle:managed=true tag): gc never "
            "deletes it",
            remedy="delete it with the tool that made it",
            field="training",
            value=name,
        )
    status = desc["TrainingJobStatus"]
    op = Operation.from_tags(tags)
    ended = status in (*ENDED, "Completed")
    # On AWS's clock (the Date of the answers just read), the one the deadline is on.
    if not ended or (op is not None and op.may_be_running(aws_now(sm))):
        running = f", and its run {op.id} may still be going" if ended and op else ""
        raise SpecError(
            f"training job {name} is {status}{running}",
            remedy="wait until it has ended (Ctrl-C on its run stops it), then run this again",
            field="training",
            value=name,
        )
    prefix = job_prefix(desc)
    models = head_users(sm, prefix) if prefix is not None and not force else []
    if models:
        from .inventory import resource_users

        serving = resource_users(sm)
        endpoints = sorted({ep for m in models for ep in serving.get(m, ())})
        first = (
            text("delete the endpoints that serve it first (`{d}`)", d=Call("delete", endpoints[0]))
            if endpoints
            else text(
                "`{gc}` removes peagle's models once no endpoint uses them (a model peagle "
                "did not make stays: delete it with the tool that made it)",
                gc=Call("gc"),
            )
        )
        raise SpecError(
            text(
                "training job {n}'s head is in use: {u} read files under {p}{e}",
                n=name,
                u=", ".join(f"model {m}" for m in models),
                p=prefix,
                e=f" (endpoints: {', '.join(endpoints)})" if endpoints else "",
            ),
            remedy=text(
                "{first}, or pass {f} to delete the head anyway (an endpoint serving it fails "
                "at its next scale-out or instance replacement)",
                first=first,
                f=Param("force", True),
            ),
            field="training",
            value=name,
        )
    return status, prefix
