"""The errors of `drafter train` (the SDK's typed errors, as `sm_peagle.errors`)."""

from __future__ import annotations

from ..errors import InterruptedAfterChange, PeagleError, Text

__all__ = ["TrainingFailed", "TrainingLost", "TrainingStopped"]


class TrainingFailed(PeagleError):
    """The training job ended Failed or Stopped (exit 1): its FailureReason, one line.

    Attributes:
        job_name: the training job.
        failure_reason: SageMaker's FailureReason (None if it gave none).
    """

    exit_code = 1

    def __init__(self, message: str, *, job_name: str, failure_reason: str | None,
                 remedy: object = None) -> None:  # fmt: skip
        super().__init__(message, remedy=remedy)  # type: ignore[arg-type]
        self.job_name = job_name
        self.failure_reason = failure_reason


class TrainingLost(PeagleError):
    """The wait for a created training job broke (expired credentials, throttling past
    the retries, the network) before the job ended (exit 1). The job may still be running
    and billing; nothing was stopped and nothing in S3 was touched (removing its inputs
    under a running job would fail it, or leave its head in a prefix thought clean). The
    remedy says how to stop it, and the `gc` that removes what it leaves once it ended.

    Attributes:
        job_name: the training job.
        operation: the run's operation id (what `gc(operation=)` takes).
    """

    exit_code = 1

    def __init__(self, message: str | Text, *, job_name: str, operation: str,
                 remedy: Text) -> None:  # fmt: skip
        super().__init__(message, remedy=remedy)
        self.job_name = job_name
        self.operation = operation

    def to_dict(self) -> dict:
        """The error's document, with the job and the operation."""
        return {**super().to_dict(), "job_name": self.job_name, "operation": self.operation}


class TrainingStopped(InterruptedAfterChange):
    """Ctrl-C (or SIGTERM) during a training run: the job was stopped and deleted once
    Stopped, and what the run uploaded and any output were removed. A KeyboardInterrupt
    (exit 130), whose line says what is left: nothing, or the job when SageMaker had not
    stopped it within the wait (a second Ctrl-C during that clean-up is
    `errors.Interrupted` instead, naming what is left and the `gc` that removes it).

    Attributes:
        job_name: the training job (None: interrupted before it was created).
        status: the job's last status (`Stopped`, `Completed`, `Failed`; `Stopping` when
            the wait ran out; None when no job was created).
        left: (kind, name) of what is left (empty when nothing is).
    """

    def __init__(self, job_name: str | None, status: str | None = None,
                 left: list[tuple[str, str]] | None = None) -> None:  # fmt: skip
        self.job_name = job_name
        self.status = status
        self.left = list(left or [])
        kinds = {k for k, _ in self.left}
        if job_name is None:
            what = "start of the uploads: " + (
                "no job was created" if kinds else "they were removed and no job was created"
            )
        elif status == "Stopping":
            what = (
                f"start of training job {job_name}: it is still Stopping (it bills until "
                "Stopped, and may still upload its output), so its files were kept"
            )
        else:
            done = [] if "training_job" in kinds else ["deleted"]
            done += [] if "s3_prefix" in kinds else ["its uploads removed"]
            what = f"start of training job {job_name}: it is {status or 'Stopped'}"
            what += (", " + " and ".join(done)) if done else ""
        super().__init__(what)
        if self.left:  # InterruptedAfterChange's line says nothing is left: not so here
            named = ", ".join(f"{k.replace('_', ' ')} {n}" for k, n in self.left)
            self.args = (f"{what}; left {named} (gc removes them once it has ended)",)

    def to_dict(self) -> dict:
        """What the `--json` error document adds: what is left, the job and its status."""
        return {
            "completed": False,
            "stopped": self.job_name,
            "status": self.status,
            "left": [{"kind": k, "name": n} for k, n in self.left],
        }
