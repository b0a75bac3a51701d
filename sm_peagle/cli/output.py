"""One sink for CLI output: JSON for machines, rich for people, one-line errors.

rich is imported only when a human-readable table is actually printed, so that
`peagle --help` and `peagle plan --json` never pay for it.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
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


_documents = 0  # JSON documents printed by this command (the --json contract: one)


def print_json(obj: Any) -> None:
    global _documents
    _documents += 1
    sys.stdout.write(json.dumps(obj, indent=2, default=str) + "\n")
    sys.stdout.flush()


def json_printed(reset: bool = False) -> bool:
    """Whether this command already printed its JSON document; `reset` starts a new one."""
    global _documents
    printed = _documents > 0
    if reset:
        _documents = 0
    return printed


def error(message: str) -> None:
    sys.stderr.write(f"error: {message}\n")
    sys.stderr.flush()


def note(message: str) -> None:
    """Progress and context for people; stderr, so stdout stays clean for pipes."""
    # On a terminal, first erase a live counter line (live_counter) the note replaces.
    sys.stderr.write(("\r\x1b[K" if sys.stderr.isatty() else "") + message + "\n")
    sys.stderr.flush()


def live_counter() -> Callable[[int, int | None], None] | None:
    """A live `12/16 requests finished` line on a terminal, erased when the level is done
    (or by the next note); None when stderr is not a terminal, so logs and pipes get only
    the level lines."""
    if not sys.stderr.isatty():
        return None

    def show(done: int, planned: int | None) -> None:
        if planned is not None and done >= planned:
            sys.stderr.write("\r\x1b[K")
        else:
            sys.stderr.write(f"\r\x1b[K  {done}{f'/{planned}' if planned else ''} "
                             "requests finished")  # fmt: skip
        sys.stderr.flush()

    return show


def _plain(value: str) -> str:
    from rich.text import Text

    return Text.from_markup(value).plain


def table(title: str | None, columns: list[str], rows: list[list[Any]]) -> Any:
    """A table that never breaks a word: the first column (the name) never wraps, the
    others wrap at spaces. If that cannot fit the terminal, each row becomes a block of
    `column: value` lines instead (so `openai-reasoning-gpt-oss-20b` stays whole at 80
    columns, and `p-eagle K=3` is never `p-eagl/e K=3`)."""
    from rich.table import Table

    cells = [["-" if v is None else str(v) for v in row] for row in rows]

    texts = [[_plain(c) for c in col] for col in zip(columns, *cells, strict=True)]
    # A column of single words (names, types, numbers) never wraps; prose wraps at spaces.
    prose = [i > 0 and any(" " in t for t in col[1:]) for i, col in enumerate(texts)]
    need = [
        min(max(len(w) for t in col for w in t.split() or [""]), 30)  # fold longer (URIs)
        if prose[i]
        else max(map(len, col))
        for i, col in enumerate(texts)
    ]
    room = console().width - (3 * len(columns) + 1)  # borders and padding
    if cells and sum(need) > room:
        return _records(title, columns, cells)
    # Widths set here, not by rich (whose collapse can crop the last column): start from
    # each column's natural width, narrow the widest prose column until the table fits.
    widths = [max(map(len, col)) for col in texts]
    while sum(widths) > room:
        i = max((j for j in range(len(widths)) if widths[j] > need[j]), key=widths.__getitem__)
        widths[i] -= 1
    t = Table(title=title, title_justify="left", show_lines=False)
    for i, col in enumerate(columns):
        t.add_column(col, no_wrap=not prose[i], width=widths[i], overflow="fold")
    for row in cells:
        t.add_row(*row)
    return t


def _records(title: str | None, columns: list[str], cells: list[list[str]]) -> Any:
    """The narrow layout: one block per row, `column  value` lines, words kept whole."""
    from rich.console import Group
    from rich.table import Table

    parts: list[Any] = []
    for row in cells:
        grid = Table.grid(padding=(0, 2))
        grid.add_column(style="bold", no_wrap=True)
        grid.add_column(overflow="fold")
        for col, value in zip(columns, row, strict=True):
            grid.add_row(col, value)
        parts += [grid, ""]
    if title:
        parts.insert(0, title)
    return Group(*parts[:-1] if parts and parts[-1] == "" else parts)


STATUS_STYLE = {"pass": "[green]pass[/]", "warn": "[yellow]warn[/]", "fail": "[red]FAIL[/]"}
