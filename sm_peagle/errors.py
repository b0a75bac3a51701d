"""Typed errors. Each carries what went wrong and the remedy, so the CLI can print one
line that names the fix instead of a traceback."""

from __future__ import annotations


class PeagleError(Exception):
    """Base class. `exit_code` is what the CLI exits with (2 = bad input, 1 = AWS failure)."""

    exit_code = 1

    def __init__(self, message: str, *, remedy: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.remedy = remedy

    def one_line(self) -> str:
        """The error as the CLI prints it after `error: `: the message on one line, then
        `(fix: <remedy>)` when there is a remedy."""
        text = self.message.strip().replace("\n", " ")
        if self.remedy:
            text += f" (fix: {self.remedy})"
        return text

    def to_dict(self) -> dict:
        """The `--json` error document's body (the docs' exit-code reference)."""
        return {
            "type": type(self).__name__,
            "message": self.message.strip(),
            "fix": self.remedy,
            "exit_code": self.exit_code,
        }


class SpecError(PeagleError):
    """A deployment spec or CLI option is invalid. Nothing was created."""

    exit_code = 2


class CheckFailed(SpecError):
    """A plan check failed (e.g. the model does not fit). Nothing was created."""

    def __init__(self, checks: list) -> None:  # list[Check]
        failed = [c for c in checks if c.status == "fail"]
        # Every failed check, each with its own fix: a user fixes them all in one go.
        parts = [f"{c.name}: {c.message}" + (f" (fix: {c.fix})" if c.fix else "") for c in failed]
        super().__init__("; ".join(parts))
        self.checks = checks
        self.failed = failed

    def to_dict(self) -> dict:
        """The error's document, with `errors`: each failed check's name, message and fix."""
        doc = super().to_dict()
        doc["errors"] = [{"name": c.name, "message": c.message, "fix": c.fix} for c in self.failed]
        return doc


class AwsUnreachable(PeagleError):
    """AWS (or the sandbox, or AWS_ENDPOINT_URL) did not answer after the bounded retries."""

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
    rolled back before this was raised."""

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


class NotFound(PeagleError):
    """A named endpoint, component or log group does not exist (in this account and
    region)."""

    exit_code = 1


class NoCredentials(PeagleError):
    """No AWS credentials were found, or AWS rejected them (expired, invalid)."""

    exit_code = 1


class OutputNotWritten(PeagleError):
    """A result file could not be written; the run itself completed (its results are in
    `.result` where the caller has them) and the previous file, if any, is unchanged."""

    exit_code = 1
    result: object = None


class BenchmarkFailed(PeagleError):
    """A benchmark ran but failed its own bar: more requests failed than `max_error_rate`
    allows, or the endpoint stopped answering and the run stopped early. Every result
    file was still written, and what was measured is in `.result` (a BenchResult), so
    the caller can show it; `error_rate` and `max_error_rate` are the two numbers the
    message names."""

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
    """The request body is over SageMaker's 6 MiB InvokeEndpoint limit. Nothing was sent."""

    exit_code = 2

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(
            f"request body is {size} bytes, over SageMaker's {limit}-byte limit",
            remedy="shorten the prompt or history, or send fewer messages",
        )
        self.size = size
        self.limit = limit


class ModelInvocationError(PeagleError):
    """SageMaker's ModelError: the container answered with an error (or not in 60 s)."""

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
    ModelInvocationTimeExceeded or StreamBroken; `partial_text` is what arrived first."""

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
    - `command`: the words after `peagle`, `--yes` left out, of the command that removes
      (or, `effect` says, finishes) them: ("gc", "--operation", "op-…") or ("delete", NAME);
    - `effect`: what running it does, e.g. "removes exactly these";
    - `operation`: the run's operation id (None for a delete or an adopt);
    - `region`: the region the run talked to, for the command to reach the same place.

    The CLI prints it as one line and renders `command` in the invocation's context
    (`--sandbox`, `--region`); `str()` gives the same without that context."""

    def __init__(
        self,
        what: str,
        left: list[tuple[str, str]],
        command: tuple[str, ...],
        *,
        effect: str = "removes exactly these",
        operation: str | None = None,
        region: str | None = None,
        note: str | None = None,
    ) -> None:
        self.what = what
        self.left = list(left)
        self.command = tuple(command)
        self.effect = effect
        self.operation = operation
        self.region = region
        self.note = note  # a qualifier on `left` ("one of the two sets is left")
        super().__init__(self.message(f"`peagle {' '.join(self.command)} --yes`"))

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
        """What the `--json` error document adds: the leftovers and the command."""
        return {
            "left": [{"kind": k, "name": n} for k, n in self.left],
            "operation": self.operation,
            "command": ["peagle", *self.command, "--yes"],
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
