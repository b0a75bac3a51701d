"""One sink for CLI output: JSON for machines, rich for people, one-line errors.

rich is imported only when a human-readable table is actually printed, so that
`peagle --help` and `peagle plan --json` never pay for it.
"""

from __future__ import annotations

import json
import sys
from typing import Any

_console: Any = None
_err_console: Any = None


def console(stderr: bool = False) -> Any:
    global _console, _err_console
    from rich.console import Console

    if stderr:
        if _err_console is None:
            _err_console = Console(stderr=True, highlight=False)
        return _err_console
    if _console is None:
        _console = Console(highlight=False)
    return _console


def print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, indent=2, default=str) + "\n")
    sys.stdout.flush()


def error(message: str) -> None:
    sys.stderr.write(f"error: {message}\n")
    sys.stderr.flush()


def note(message: str) -> None:
    """Progress and context for people; stderr, so stdout stays clean for pipes."""
    sys.stderr.write(message + "\n")
    sys.stderr.flush()


def table(title: str | None, columns: list[str], rows: list[list[Any]]) -> Any:
    from rich.table import Table

    t = Table(title=title, title_justify="left", show_lines=False)
    for col in columns:
        t.add_column(col, overflow="fold")
    for row in rows:
        t.add_row(*["-" if v is None else str(v) for v in row])
    return t


STATUS_STYLE = {"pass": "[green]pass[/]", "warn": "[yellow]warn[/]", "fail": "[red]FAIL[/]"}
