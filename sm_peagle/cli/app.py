"""The `peagle` command. Thin: each command calls the SDK and renders the result.

Only typer (click) is imported at start-up. Every command imports what it needs inside
its body, so `peagle --help` and `peagle plan` never import boto3 or rich tables.
"""

from __future__ import annotations

import sys

import typer

from .catalog_cmds import instances, models, schema
from .plan_cmd import plan_command

app = typer.Typer(
    name="peagle",
    help="Deploy, verify, benchmark and cleanly remove P-EAGLE endpoints on SageMaker.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,  # plain click help: no rich import on --help
    pretty_exceptions_enable=False,
)

app.command("models")(models)
app.command("instances")(instances)
app.command("schema")(schema)
app.command("plan")(plan_command)


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the app, turning known errors into one line and an exit code."""
    from ..errors import PeagleError

    try:
        app(args=argv, standalone_mode=False)
    except PeagleError as e:
        from .output import error

        error(e.one_line())
        return e.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        return 130
    except typer.Exit as e:  # raised by typer for --help etc. in non-standalone mode
        return e.exit_code
    except Exception as e:  # click usage errors and anything unexpected
        import click

        if isinstance(e, click.exceptions.ClickException):
            e.show()
            return e.exit_code
        if isinstance(e, click.exceptions.Abort):
            sys.stderr.write("aborted\n")
            return 1
        raise
    return 0


def run() -> None:
    sys.exit(main())
