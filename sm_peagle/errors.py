"""Typed errors. Each carries what went wrong and the remedy, so the CLI can print one
line that names the fix instead of a traceback.

An error speaks Python: `str(error)` names keyword arguments (`k=`) and SDK calls
(`sm_peagle.delete('ep')`). What it names is kept as data (the wording vocabulary of
`sm_peagle/wording.py`, re-exported here: `Param`, `Call`, `Phrase`, `Text`, `text`, …),
so the CLI renders the same error with its flags (`-k`) and commands
(`peagle delete ep --yes`) from one table (`sm_peagle/cli/faces.py`), and no SDK code
knows which face called it.

A `PeagleError` carries `field` (the parameter that is wrong), `value` (what was given),
`rule` (what it must satisfy) and `remedy` (a `Text`: what fixes it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# The wording vocabulary, re-exported: `from sm_peagle.errors import Param, Text, text`
# is the documented path to it (docs/reference: "all in sm_peagle.errors").
from .wording import (
    ETC,
    PHRASES,
    PYTHON,
    UNSET,
    Call,
    Face,
    Param,
    Part,
    Phrase,
    Text,
    as_text,
    concat,
    render,
    text,
)

__all__ = [
    "ETC",
    "PHRASES",
    "PYTHON",
    "UNSET",
    "AwsError",
    "AwsUnreachable",
    "BenchmarkFailed",
    "Call",
    "CheckFailed",
    "DeploymentFailed",
    "DeploymentTimeout",
    "Face",
    "InstanceTypeUnavailable",
    "InternalStreamFailure",
    "Interrupted",
    "InterruptedAfterChange",
    "ModelInvocationError",
    "ModelStreamError",
    "NoCredentials",
    "NotFound",
    "OutputNotWritten",
    "Param",
    "Part",
    "PayloadTooLarge",
    "PeagleError",
    "Phrase",
    "PreflightFailed",
    "QuotaExceeded",
    "RolloutRolledBack",
    "RolloutUnverified",
    "SpecError",
    "Text",
    "TrainingFailed",
    "TrainingLost",
    "TrainingStopped",
    "as_text",
    "concat",
    "render",
    "text",
]


class PeagleError(Exception):
    """Base class of every error the SDK raises.

    Attributes:
        exit_code: what the CLI exits with: 2 for bad input (nothing was sent), 1 for a
            failure in AWS.
        message: what went wrong, a `Text` (its `str` is the Python wording).
        remedy: what fixes it, a `Text`, or None.
        field: the parameter that is wrong, by its keyword (`"k"`, `"component"`), or None.
        value: the value given for it (`UNSET` when not recorded).
        rule: what the value must satisfy, in words ("an integer >= 1"), or None.
    """

    exit_code = 1

    def __init__(
        self,
        message: str | Text,
        *,
        remedy: str | Text | Call | None = None,
        field: str | None = None,
        value: Any = UNSET,
        rule: str | None = None,
    ) -> None:
        msg = as_text(message)
        assert msg is not None
        super().__init__(msg)
        self.message: Text = msg
        self.remedy: Text | None = as_text(remedy)
        self.field = field
        self.value = value
        self.rule = rule

    def one_line(self, face: Face = PYTHON) -> str:
        """The error as one line, in `face`'s words: the message, then `(fix: <remedy>)`
        when there is a remedy."""
        text_ = (render(self.message, face) or "").strip().replace("\n", " ")
        if self.remedy:
            text_ += f" (fix: {render(self.remedy, face)})"
        return text_

    def to_dict(self) -> dict:
        """The `--json` error document's body (the docs' exit-code reference): `type`,
        `message`, `fix`, `exit_code`, and `field`/`value`/`rule` when the error names a
        parameter."""
        doc: dict[str, Any] = {
            "type": type(self).__name__,
            "message": self.message.strip() if not isinstance(self.message, Text) else self.message,
            "fix": self.remedy,
            "exit_code": self.exit_code,
        }
        if self.field is not None:
            doc["field"] = self.field
        if self.value is not UNSET:
            doc["value"] = _jsonable(self.value)
        if self.rule is not None:
            doc["rule"] = self.rule
        return doc


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return str(value)


class SpecError(PeagleError):
    """A deployment spec or CLI option is invalid. Nothing was created."""

    exit_code = 2


class CheckFailed(SpecError):
    """A plan check failed (e.g. the model does not fit). Nothing was created.

    Attributes:
        checks: every check of the plan.
        failed: the checks that failed, each named in the message with its fix.
    """

    def __init__(self, checks: list) -> None:  # list[Check]
        failed = [c for c in checks if c.status == "fail"]
        # Every failed check, each with its own fix: a user fixes them all in one go. Built
        # as one Text, so the parameters and calls each names stay structured (`k=7` in
        # Python, `-k 7` at the CLI).
        lines = {f"c{i}": c.line() for i, c in enumerate(failed)}
        # The field is the first failed check's: the option to fix first, when it is one.
        field = getattr(failed[0], "field", None) if failed else None
        super().__init__(text("; ".join(f"{{{key}}}" for key in lines), **lines), field=field)
        self.checks = checks
        self.failed = failed

    def to_dict(self) -> dict:
        """The error's document, with `errors`: each failed check's name, message and fix."""
        doc = super().to_dict()
        doc["errors"] = [
            {"name": c.name, "message": c.message, "fix": c.fix}
            | ({"field": c.field} if getattr(c, "field", None) else {})
            for c in self.failed
        ]
        return doc


class AwsUnreachable(PeagleError):
    """AWS (or a plugin's target, or AWS_ENDPOINT_URL) did not answer after the bounded retries."""

    exit_code = 1


class AwsError(PeagleError):
    """AWS answered with an error peagle has no more specific type for."""

    exit_code = 1


class PreflightFailed(PeagleError):
    """A precondition in AWS is not met (role, S3 prefix, name, quota). Nothing was created."""

    exit_code = 1


class InstanceTypeUnavailable(PreflightFailed):
    """The instance type is not offered for SageMaker endpoints in the region, as AWS
    answers it (preflight). A wrong choice of type or region, so exit 2. Nothing was
    created."""

    exit_code = 2


class QuotaExceeded(PeagleError):
    """The account's SageMaker quota for the instance type (per region) is below what the
    deployment needs: found by preflight before anything is created, or by SageMaker."""

    exit_code = 1


class DeploymentFailed(PeagleError):
    """The endpoint (or inference component) did not reach InService: SageMaker's
    FailureReason and the container's last log lines ride along; what the run created was
    rolled back before this was raised.

    Attributes:
        failure_reason: SageMaker's FailureReason, or None.
        log_lines: the container's last log lines.
    """

    exit_code = 1

    def __init__(
        self,
        message: str,
        *,
        remedy: str | None = None,
        failure_reason: str | None = None,
        log_lines: list[str] | None = None,
    ) -> None:
        super().__init__(message, remedy=remedy)
        self.failure_reason = failure_reason
        self.log_lines = log_lines or []


class DeploymentTimeout(DeploymentFailed):
    """The wait (`--timeout`) ended before the endpoint was InService; rolled back as any
    failure is."""


class RolloutRolledBack(DeploymentFailed):
    """SageMaker rolled a rollout (`endpoint.rollout`, `--rollout`) back because a rollback
    alarm tripped while a step baked (or the execution timeout passed): the endpoint serves
    its old config, and the new config, models and the rollout's alarms were removed.

    Attributes:
        alarm: the alarm that went to ALARM first in the deployment (CloudWatch's alarm
            history; DescribeEndpoint names none), or None when none did.
        alarm_reason: that alarm's StateReason, or None.
        phase: the bake it happened in ("canary bake", "step 2 of 4 bake", "final bake"),
            or None when the rollout was not seen baking.
        still_serving: the endpoint config the endpoint serves (the old one).
    """

    def __init__(
        self,
        message: str,
        *,
        alarm: str | None = None,
        alarm_reason: str | None = None,
        phase: str | None = None,
        still_serving: str | None = None,
        failure_reason: str | None = None,
        remedy: str | None = None,
    ) -> None:
        super().__init__(message, remedy=remedy, failure_reason=failure_reason)
        self.alarm = alarm
        self.alarm_reason = alarm_reason
        self.phase = phase
        self.still_serving = still_serving

    def to_dict(self) -> dict:
        """The error's document (`--json`): the base fields, and the rollout's: the alarm,
        its reason, the phase and the config still serving."""
        return {
            **super().to_dict(),
            "alarm": self.alarm,
            "alarm_reason": self.alarm_reason,
            "phase": self.phase,
            "still_serving": self.still_serving,
        }


class RolloutUnverified(DeploymentFailed):
    """A rollout completed (SageMaker committed it; the endpoint serves the new config and
    peagle switched over) but a bake saw no invocation on the new fleet, so its alarms
    verified nothing (`rollout.require_traffic`, the default). Exit 1.

    Attributes:
        unverified_bakes: the bakes (1-based) that saw no invocation on the new fleet.
        serving: the endpoint config the endpoint serves (the new one).
        rollout: the rollout's report (`RolloutReport`), or None.
    """

    def __init__(
        self,
        message: str,
        *,
        unverified_bakes: list[int] | None = None,
        serving: str | None = None,
        rollout: Any = None,
        remedy: str | None = None,
    ) -> None:
        super().__init__(message, remedy=remedy)
        self.unverified_bakes = list(unverified_bakes or [])
        self.serving = serving
        self.rollout = rollout

    def to_dict(self) -> dict:
        """The error's document (`--json`): the base fields, and the rollout's: the bakes
        that saw no invocation and the config now serving."""
        return {
            **super().to_dict(),
            "unverified_bakes": self.unverified_bakes,
            "serving": self.serving,
        }


class NotFound(PeagleError):
    """A named endpoint, component or log group does not exist (in this account and
    region)."""

    exit_code = 1


class NoCredentials(PeagleError):
    """No AWS credentials were found, or AWS rejected them (expired, invalid)."""

    exit_code = 1


class OutputNotWritten(PeagleError):
    """A result file could not be written; the run itself completed (its results are in
    `.result` where the caller has them) and the previous file, if any, is unchanged.

    Attributes:
        result: the run's result, as the operation would have returned it.
    """

    exit_code = 1
    result: object = None


class BenchmarkFailed(PeagleError):
    """A benchmark ran but failed its own bar: more requests failed than `max_error_rate`
    allows, or the endpoint stopped answering and the run stopped early. Every result
    file was still written, and what was measured is in `.result` (a BenchResult), so
    the caller can show it; `error_rate` and `max_error_rate` are the two numbers the
    message names.

    Attributes:
        result: what was measured (a BenchResult).
        error_rate: the share of requests that failed.
        max_error_rate: the share the run allowed.
    """

    exit_code = 1

    def __init__(
        self,
        message: str,
        *,
        result: object = None,
        error_rate: float | None = None,
        max_error_rate: float | None = None,
        remedy: str | None = None,
    ) -> None:
        super().__init__(message, remedy=remedy)
        self.result = result
        self.error_rate = error_rate
        self.max_error_rate = max_error_rate


class PayloadTooLarge(PeagleError):
    """The request body is over SageMaker's 6 MiB InvokeEndpoint limit. Nothing was sent.

    Attributes:
        size: the body's size, in bytes.
        limit: SageMaker's limit, in bytes.
    """

    exit_code = 2

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(
            f"request body is {size} bytes, over SageMaker's {limit}-byte limit",
            remedy="shorten the prompt or history, or send fewer messages",
        )
        self.size = size
        self.limit = limit


class ModelInvocationError(PeagleError):
    """SageMaker's ModelError: the container answered with an error (or not in 60 s).

    Attributes:
        original_status_code: the HTTP status the container answered, when known.
        original_message: the container's own error message, when known.
        log_stream_arn: the container's CloudWatch log stream, when SageMaker gives it.
    """

    def __init__(
        self,
        message: str,
        *,
        original_status_code: int | None = None,
        original_message: str | None = None,
        log_stream_arn: str | None = None,
        remedy: str | None = None,
    ) -> None:
        super().__init__(message, remedy=remedy)
        self.original_status_code = original_status_code
        self.original_message = original_message
        self.log_stream_arn = log_stream_arn


class ModelStreamError(PeagleError):
    """The response stream broke after it started (SageMaker's ModelStreamError event,
    or an error object from vLLM). `code` is SageMaker's ErrorCode, e.g.
    ModelInvocationTimeExceeded or StreamBroken; `partial_text` is what arrived first.

    Attributes:
        code: SageMaker's ErrorCode, or None.
        partial_text: the text that arrived before the stream broke.
    """

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        partial_text: str = "",
        remedy: str | None = None,
    ) -> None:
        super().__init__(f"{code}: {message}" if code else message, remedy=remedy)
        self.code = code
        self.partial_text = partial_text


class InternalStreamFailure(ModelStreamError):
    """SageMaker's InternalStreamFailure event: the service, not the model, broke the stream."""


# Things left that are not resources: tags a stopped run had not (re)written yet.
_KIND = {"endpoint_tags": "the tags of endpoint", "tags": "the tags of"}


class Interrupted(KeyboardInterrupt):
    """A run stopped a second time (Ctrl-C, SIGTERM) while it cleaned up, so it left
    something behind. A KeyboardInterrupt still (exit 130; everything that handles Ctrl-C
    handles it), carrying what is left and the one command that deals with exactly that:

    - `what`: which step stopped ("rollback stopped", "delete stopped", ...);
    - `left`: (kind, name) of each thing left, e.g. ("endpoint_config", "x-cfg");
    - `command`: the SDK call that removes (or, `effect` says, finishes) them:
      `Call("gc", operation="op-…")` or `Call("delete", NAME)`;
    - `effect`: what running it does, e.g. "removes exactly these";
    - `operation`: the run's operation id (None for a delete or an adopt);
    - `region`: the region the run talked to, for the command to reach the same place.

    `str()` names the SDK call (`sm_peagle.gc(operation='op-…')`); the CLI prints the line
    with the `peagle` command of that call, `--yes` added, rendered in the invocation's
    context (a target's options, `--region`)."""

    def __init__(
        self,
        what: str,
        left: list[tuple[str, str]],
        command: Call,
        *,
        effect: str = "removes exactly these",
        operation: str | None = None,
        region: str | None = None,
        note: str | None = None,
    ) -> None:
        self.what = what
        self.left = list(left)
        self.command = command
        self.effect = effect
        self.operation = operation
        self.region = region
        self.note = note  # a qualifier on `left` ("one of the two sets is left")
        super().__init__(self.message(f"`{command}`"))

    def leftovers(self) -> str:
        """`endpoint config x-cfg, model x-mdl` (or `nothing`)."""
        named = ", ".join(
            f"{_KIND.get(kind, kind.replace('_', ' '))} {name}" for kind, name in self.left
        )
        return named or "nothing"

    def message(self, command: str) -> str:
        """The one line, with `command` rendered as the caller needs it."""
        note = f" ({self.note})" if self.note else ""
        return f"{self.what}: left {self.leftovers()}{note}; {command} {self.effect}"

    def to_dict(self) -> dict:
        """What the error's document adds: the leftovers and the call that removes them
        (the CLI's `--json` gives the `peagle` command's words instead)."""
        return {
            "left": [{"kind": k, "name": n} for k, n in self.left],
            "operation": self.operation,
            "command": str(self.command),
        }


class InterruptedAfterChange(KeyboardInterrupt):
    """A run interrupted once after its change had taken effect: it finished the clean-up
    (a first Ctrl-C lets that run) and the change is complete, so the interrupt cost
    nothing. Still a KeyboardInterrupt (exit 130: the command was interrupted), but the
    CLI's line says the change completed rather than only `interrupted`.

    - `what`: what completed, e.g. "update of NAME completed (it serves CFG)"."""

    def __init__(self, what: str) -> None:
        self.what = what
        super().__init__(f"{what}; nothing is left to clean up")

    def to_dict(self) -> dict:
        """What the `--json` error document adds."""
        return {"completed": True, "left": []}


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
    the retries, the network) before it ended (exit 1). The job may still be running and
    billing: nothing was stopped or removed (removing its inputs would fail it). The
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
    Stopped, and what the run uploaded was removed. A KeyboardInterrupt (exit 130) whose
    line says what is left (a second Ctrl-C during that clean-up is `Interrupted`).

    Attributes:
        job_name: the training job (None: interrupted before it was created).
        status: the job's last status (`Stopped`, `Completed`, `Failed`; `Stopping` when
            the wait ran out; None when no job was created).
        left: (kind, name) of what is left (empty when nothing is).
    """

    def __init__(self, job_name: str | None, status: str | None, left: list[tuple[str, str]],
                 what: str) -> None:  # fmt: skip
        self.job_name, self.status, self.left = job_name, status, list(left)
        super().__init__(what)
        # A Completed job and its head are kept on purpose (`what` says so); the rest is left.
        if rest := [(k, n) for k, n in self.left if status != "Completed" or k == "s3_prefix"]:
            named = ", ".join(f"{k.replace('_', ' ')} {n}" for k, n in rest)
            KeyboardInterrupt.__init__(self, f"{what}; left {named} (gc removes them once ended)")

    def to_dict(self) -> dict:
        """What the `--json` error document adds: what is left, the job and its status."""
        left = [{"kind": k, "name": n} for k, n in self.left]
        return {"completed": False, "stopped": self.job_name, "status": self.status, "left": left}
