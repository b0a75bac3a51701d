"""The CLI's error boundary: whatever stops a command becomes one line and an exit code.

The contract (docs: Reference, "Exit codes and --json"):

- 0 success; 1 a failure in AWS (or a plugin's target), a missing resource, "n" at a prompt;
  2 bad input (nothing was sent); 3 `diff --detailed-exitcode` with changes pending;
  130 Ctrl-C; 143 SIGTERM and 129 SIGHUP (each rolls back as Ctrl-C does).
- stderr gets one line, `error: <what> (fix: <remedy>)`, never a traceback.
- With `--json`, stdout gets one JSON document either way: the result (a command that
  fails after producing it, like `plan` with failed checks, keeps it), or
  `{"error": {"type", "message", "fix", "exit_code"[, "errors"]}}`.

Network errors from botocore (no route, refused, timeouts) arrive here after the bounded
retries of `aws.AwsContext` and become `AwsUnreachable`; every other botocore error
becomes `AwsError`. Set PEAGLE_DEBUG=1 to get the traceback of an unexpected error.

click's usage errors get a fix too (`usage_error`): an unknown option names the closest
ones (difflib over the command's own options) and the command's help, a missing argument
shows the usage line, a bad choice lists the choices, a bad number says what the option
takes. Exit 2: nothing was sent. Any other bad-input error (exit 2) raised without a
remedy gets the command's help as its fix, so every exit-2 line names one.
"""

from __future__ import annotations

import re
from typing import Any

from .. import settings
from ..errors import PeagleError

__all__ = ["exit_code_for", "json_requested", "report", "usage_error"]

INTERRUPTED = 130


def json_requested(args: list[str]) -> bool:
    """`--json` among the options (before or after the command, not after `--`), or the
    output object already in JSON mode."""
    from .output import current

    head = args[: args.index("--")] if "--" in args else args
    return "--json" in head or current().json


def report(message: str, *, fix: str | None, exit_code: int, kind: str, **extra: Any) -> int:
    """Print the error line (stderr) and, with --json, the error document (stdout): the
    output object's `failure` (a command that failed after printing its result keeps
    that one document)."""
    from .faces import cli_doc, cli_text
    from .output import current

    # In the CLI's words (flags for the SDK's keywords); a fix is pasted: each `peagle …`
    # in it (and in the message) targets what this command targeted.
    message, fix = cli_text(message) or "", cli_text(fix)
    extra = cli_doc(extra)  # CheckFailed's `errors`: each check's message and fix
    doc = {"type": kind, "message": message, "fix": fix, "exit_code": exit_code, **extra}
    current().failure(message + (f" (fix: {fix})" if fix else ""), doc)
    return exit_code


def _usage_hint(option: str) -> str | None:
    # The exact name: a typo of a global option (`--versio`) is not the option.
    name = option.split("=", 1)[0]
    if name == "--version" or _target_flag(name):
        return f"{name} is a global option: put it before the command (peagle {name} ...)"
    return None


def _target_flag(flag: str) -> bool:
    """Whether `flag` is a global option of an installed plugin's target."""
    if not flag.startswith("--"):
        return False
    from .. import plugins

    return plugins.target_option(flag) is not None


# peagle's own command groups; a plugin's (`plugins.commands()`) is one too.
GROUPS = ("drafter",)


def _group(word: str) -> bool:
    if word in GROUPS:
        return True
    from .. import plugins

    return word in plugins.commands()


def _help_command(exc: Any, args: list[str]) -> str:
    """`peagle deploy --help` for the command the error is about (`peagle --help` if none).
    Some of click's errors carry no context: then the command is read from `args`."""
    ctx = getattr(exc, "ctx", None)
    if ctx is not None:
        path = ctx.command_path
    else:
        words = []
        for arg in (a for a in args if not a.startswith("-")):
            words.append(arg)
            if not _group(arg):
                break
        path = " ".join(["peagle", *words])
    return f"`{path} --help`"


def usage_error(exc: Any, args: list[str] | None = None) -> tuple[str, str]:
    """A click usage error as (what, fix): one line each, the fix always present."""
    kind = type(exc).__name__
    see = f"see {_help_command(exc, args or [])}"
    if kind == "NoSuchOption":
        message = exc.message.strip()
        hint = _usage_hint(getattr(exc, "option_name", ""))
        if hint:
            return message, hint
        close = _closest_options(getattr(exc, "option_name", ""), _option_names(exc))
        if close:
            return message, f"did you mean {' or '.join(close)}? {see}"
        return message, see
    message = exc.format_message().strip()
    param = getattr(exc, "param", None)
    if kind == "MissingParameter":
        ctx = getattr(exc, "ctx", None)
        message = message.split(". ")[0].rstrip(".")
        usage = ctx.get_usage().replace("Usage: ", "", 1).strip() if ctx is not None else ""
        return message, (f"usage: {usage}; " if usage else "") + see
    choices = _choices(param)
    if choices:
        message = message.split(": ")[0] if ": " in message else message
        return message, f"use one of: {', '.join(choices)}"
    if kind == "UsageError" and "No such command" in message:
        found = re.search(r"Did you mean (.+)\?", message)
        what = message.split(".")[0]
        if found:
            return what, f"did you mean {found.group(1)}? {see}"
        return what, f"{see} for the commands"
    if kind == "BadOptionUsage" and "requires an argument" in message:
        return message.rstrip("."), f"give it a value; {see}"
    number = _number_kind(param)
    if kind == "BadParameter" and number:
        return message.rstrip("."), f"give {_param_name(param)} {number}; {see}"
    return message.rstrip(".").replace("\n", " "), see


def _closest_options(word: str, options: list[str]) -> list[str]:
    """The options closest to a mistyped one, closest first: the closest, and any other
    nearly as close (at most three). Compared without their dashes: `--bogus` and
    `--verbose` share only `--` and an `o`, and with the dashes counted difflib calls them
    close."""
    import difflib

    if not word.startswith("--"):  # a one-letter `-x` is close to every other letter
        return []
    typed = word.lstrip("-")
    by_name = {o.lstrip("-"): o for o in options if o.startswith("--") and o != "--help"}
    close = difflib.get_close_matches(typed, list(by_name), n=3, cutoff=0.6)
    if not close:
        return []
    best = difflib.SequenceMatcher(None, typed, close[0]).ratio()
    near = [n for n in close if difflib.SequenceMatcher(None, typed, n).ratio() >= best - 0.1]
    return [by_name[name] for name in near]


def _option_names(exc: Any) -> list[str]:
    """Every spelling of every option of the command the error is about (click's own
    `possibilities` when the error carries no context)."""
    ctx = getattr(exc, "ctx", None)
    if ctx is None:
        return list(getattr(exc, "possibilities", None) or ())
    names: list[str] = []
    for param in ctx.command.params:
        if getattr(param, "param_type_name", None) == "option":
            names.extend((*param.opts, *getattr(param, "secondary_opts", ())))
    return names


def _number_kind(param: Any) -> str | None:
    """What an option typed int or float takes, in words (None for other types)."""
    annotation = getattr(getattr(param, "type_descriptor", None), "annotation", None)
    return {int: "a whole number", float: "a number"}.get(annotation)


def _param_name(param: Any) -> str:
    opts = [o for o in getattr(param, "opts", ()) if o.startswith("--")]
    return opts[0] if opts else (getattr(param, "opts", None) or [str(param.name)])[0]


def _choices(param: Any) -> list[str]:
    descriptor = getattr(param, "type_descriptor", None)
    values = getattr(descriptor, "choices", None)
    if values is None:
        values = getattr(getattr(param, "type", None), "choices", None)
    return [str(getattr(v, "value", v)) for v in values or ()]


def exit_code_for(exc: BaseException, args: list[str]) -> int:
    """Report `exc` as the contract says and return the exit code; re-raise what is not
    an error of the user's or AWS's making (unless we can still say it in one line)."""
    import typer

    from ..ops.session import as_peagle_error
    from .output import configure

    if json_requested(args):  # an error before click parsed --json still gets its document
        configure(json=True)
    if isinstance(exc, typer.Exit):  # --help, or a command's own exit code
        return exc.exit_code
    _debug_origin(exc)
    if isinstance(exc, KeyboardInterrupt):
        from ..errors import Interrupted
        from .signals import Terminated, received

        if isinstance(exc, Interrupted):  # stopped twice: what is left, what removes it
            from .leftovers import interrupted_error

            sig = received()
            how = f"terminated by {Terminated(sig).name}" if sig else "interrupted"
            what, fix, extra = interrupted_error(exc, how=how)
            code = 128 + sig if sig else INTERRUPTED
            return report(what, fix=fix, exit_code=code, kind="Interrupted", **extra)
        from ..errors import InterruptedAfterChange

        if isinstance(exc, InterruptedAfterChange):  # the change was done: say so
            sig = received()
            how = f"terminated by {Terminated(sig).name}" if sig else "interrupted"
            code = 128 + sig if sig else INTERRUPTED
            return report(
                f"{how} after the {exc}", fix=None, exit_code=code, kind="Interrupted",
                **exc.to_dict(),
            )  # fmt: skip
        if isinstance(exc, Terminated):
            return report(
                f"terminated by {exc.name}", fix=None, exit_code=exc.exit_code, kind="Terminated"
            )
        return report("interrupted", fix=None, exit_code=INTERRUPTED, kind="Interrupted")
    if isinstance(exc, typer.Abort):
        return report("aborted", fix=None, exit_code=1, kind="Aborted")
    err = exc if isinstance(exc, PeagleError) else as_peagle_error(exc)
    if isinstance(err, PeagleError):
        doc = err.to_dict()
        extra = {k: v for k, v in doc.items() if k not in ("type", "message", "fix", "exit_code")}
        message = err.message
        fix = err.remedy
        if fix is None and err.exit_code == 2 and "(fix: " not in message:
            # Bad input always names a fix (docs: Reference, "Exit codes and --json"): an error
            # raised without one points at the help of the command that refused it.
            fix = f"see {_help_command(None, args)}"
        return report(
            message,
            fix=fix,
            exit_code=err.exit_code,
            kind=doc["type"],
            **extra,
        )
    # typer >= 0.2x vendors click (typer._click), so `click.ClickException` no longer
    # matches what it raises: recognise a usage error by its shape instead.
    if callable(getattr(exc, "format_message", None)) and isinstance(
        getattr(exc, "exit_code", None), int
    ):
        if type(exc).__name__ == "NoArgsIsHelpError":  # no arguments: the help text itself
            exc.show()  # type: ignore[attr-defined]
            return int(exc.exit_code)  # type: ignore[attr-defined]
        message, fix = usage_error(exc, args)
        return report(
            message,
            fix=fix,
            exit_code=int(exc.exit_code),  # type: ignore[attr-defined]
            kind="UsageError",
        )
    if settings.debug():
        raise exc
    return report(
        f"internal error: {type(exc).__name__}: {exc}",
        fix="this is a bug in peagle; rerun with PEAGLE_DEBUG=1 for the traceback and report it",
        exit_code=1,
        kind="InternalError",
    )


def _debug_origin(exc: BaseException) -> None:
    """With --verbose: which exception stopped the command, and where it was raised."""
    import traceback

    from .output import current

    frames = traceback.extract_tb(exc.__traceback__) if exc.__traceback__ else []
    where = f" at {frames[-1].filename}:{frames[-1].lineno}" if frames else ""
    current().debug(f"{type(exc).__module__}.{type(exc).__qualname__}{where}")


def interrupted(args: list[str]) -> int:
    """Exit code 130 from click: Ctrl-C, or one of the signals `cli/signals.py` handles."""
    from ..errors import Interrupted, InterruptedAfterChange
    from .signals import Terminated, received, stopped

    signum = received()
    kept = stopped()  # what a run stopped twice left rides on it
    if isinstance(kept, Interrupted | InterruptedAfterChange):
        return exit_code_for(kept, args)
    return exit_code_for(Terminated(signum) if signum else KeyboardInterrupt(), args)
