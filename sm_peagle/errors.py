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
        text = self.message.strip().replace("\n", " ")
        if self.remedy:
            text += f" (fix: {self.remedy})"
        return text


class SpecError(PeagleError):
    """A deployment spec or CLI option is invalid. Nothing was created."""

    exit_code = 2


class CheckFailed(SpecError):
    """A plan check failed (e.g. the model does not fit). Nothing was created."""

    def __init__(self, checks: list) -> None:  # list[Check]
        failed = [c for c in checks if c.status == "fail"]
        first = failed[0]
        more = f" (+{len(failed) - 1} more failed checks)" if len(failed) > 1 else ""
        super().__init__(f"{first.name}: {first.message}{more}", remedy=first.fix)
        self.checks = checks


class PreflightFailed(PeagleError):
    """A precondition in AWS is not met (role, S3 prefix, name, quota). Nothing was created."""

    exit_code = 1


class QuotaExceeded(PeagleError):
    exit_code = 1


class DeploymentFailed(PeagleError):
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
    pass


class NotFound(PeagleError):
    exit_code = 1


class NoCredentials(PeagleError):
    exit_code = 1
