"""The errors of `drafter train` (the SDK's typed errors, as `sm_peagle.errors`)."""

from __future__ import annotations

from ..errors import InterruptedAfterChange, PeagleError

__all__ = ["TrainingFailed", "TrainingStopped"]


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


class TrainingStopped(InterruptedAfterChange):
    """Ctrl-C (or SIGTERM) during a training run: the job was stopped (it is Stopped, not
    running, not billing), and what the run uploaded and any output were removed. A
    KeyboardInterrupt (exit 130), whose line says nothing is left.

    Attributes:
        job_name: the stopped training job (None: interrupted before it was created).
    """

    def __init__(self, job_name: str | None) -> None:
        self.job_name = job_name
        what = (
            f"start of training job {job_name}: it was stopped and its uploads removed"
            if job_name
            else "start of the uploads: they were removed and no job was created"
        )
        super().__init__(what)

    def to_dict(self) -> dict:
        """What the `--json` error document adds: nothing left, the job stopped."""
        return {"completed": False, "stopped": self.job_name, "left": []}
