"""What a run stopped a second time left, as the CLI says it (`errors.Interrupted`).

The lifecycle raises the leftovers and the remedy as data; here the remedy becomes a
command that reaches the place the stopped command talked to (`advice.render`: a plugin
target's options however it was chosen, `--region R` when it talked to AWS), so a pasted command
never lands on a real endpoint of the same name, nor in another region.
"""

from __future__ import annotations

from typing import Any

from ..errors import Interrupted

__all__ = ["interrupted_error", "suggested_removal"]


def suggested_removal(exc: Interrupted) -> str:
    """`peagle [TARGET OPTIONS] <command> --yes [--region R]`, the one command that removes (or
    finishes) what `exc` left, rendered by the one renderer of suggested commands
    (`advice.render`) for this invocation; the region the run talked to (a spec file's
    too) when it was AWS."""
    from dataclasses import replace

    from .advice import current_target, render
    from .faces import suggestion_for

    suggestion = suggestion_for(exc.command, yes=True)
    target = current_target()
    if exc.region and not target.carry and target.region is None:
        target = replace(target, region=exc.region)
    return render(suggestion, target)


def interrupted_error(exc: Interrupted, *, how: str) -> tuple[str, str, dict[str, Any]]:
    """The error line's parts, `<how>; <what>: left <kind name, ...>` and its fix
    `` `<command>` <effect> `` (`how`: "interrupted" or "terminated by SIGTERM"), and what
    the --json document adds (the leftovers, the operation, the command as words)."""
    command = suggested_removal(exc)
    note = f" ({exc.note})" if exc.note else ""
    extra: dict[str, Any] = {**exc.to_dict(), "command": command.split()}
    return f"{how}; {exc.what}: left {exc.leftovers()}{note}", f"`{command}` {exc.effect}", extra
