"""What a run stopped a second time left, as the CLI says it (`errors.Interrupted`).

The lifecycle raises the leftovers and the remedy as data; here the remedy becomes a
command that reaches the place the stopped command talked to: `--sandbox` when it ran
against the sandbox (`--sandbox` or PEAGLE_SANDBOX=1: both leave PEAGLE_SANDBOX_URL set),
`--region R` when it talked to AWS (or AWS_ENDPOINT_URL), so a pasted command never
lands on a real endpoint of the same name, nor in another region.
"""

from __future__ import annotations

from typing import Any

from .. import settings
from ..errors import Interrupted

__all__ = ["interrupted_error", "suggested_removal"]


def suggested_removal(exc: Interrupted) -> str:
    """`peagle [--sandbox] <command> [--region R] --yes`, the one command that removes (or
    finishes) what `exc` left, in the context of this invocation."""
    words = ["peagle"]
    if settings.sandbox_url():
        words.append("--sandbox")
    words += exc.command
    if exc.region and not settings.sandbox_url():
        words += ["--region", exc.region]
    return " ".join([*words, "--yes"])


def interrupted_error(exc: Interrupted, *, how: str) -> tuple[str, str, dict[str, Any]]:
    """The error line's parts, `<how>; <what>: left <kind name, ...>` and its fix
    `` `<command>` <effect> `` (`how`: "interrupted" or "terminated by SIGTERM"), and what
    the --json document adds (the leftovers, the operation, the command as words)."""
    command = suggested_removal(exc)
    note = f" ({exc.note})" if exc.note else ""
    extra: dict[str, Any] = {**exc.to_dict(), "command": command.split()}
    return f"{how}; {exc.what}: left {exc.leftovers()}{note}", f"`{command}` {exc.effect}", extra
