"""One output object for the CLI: JSON for machines, rich for people, one-line errors.

    out = current()                     # configured by the root options (--json, -q, -v)
    out.result(obj, render=show)        # --json: obj.to_dict() as one JSON document (the
                                        # SDK result's own: the CLI builds none);
                                        # otherwise show(obj) (rich is fine in there)
    out.stream(items, render=show)      # --json: JSON Lines, one per item as it comes
    out.label                           # where this command's output comes from: AWS,
                                        # or a plugin target's label
                                        # (sm_peagle.plugins.source_label)
    out.human(fn)                       # fn for people, None with --json: a callback that
                                        # shows something while the command runs
    out.live                            # a live view may draw on stdout (a terminal, no --json)
    out.note("creating model …")        # stderr; suppressed by --quiet (warnings stay)
    out.debug("polled 3 times")         # stderr; only with --verbose
    out.warn("--out is deprecated …")   # stderr; always
    out.table(title, columns, rows)     # a human table (nothing in JSON mode: the result
                                        # document carries the data)

The `--json` contract: every document a command prints as its result, its error or an item
of its stream says where it came from under the key `"label"` (`labelled()`), so nobody
mistakes a plugin's local target, or a CPU engine's figures, for AWS:
- an object gets `"label"` first, its own keys kept as they were; an object that already
  has a `"label"` keeps it (a benchmark result labels itself);
- a list stays a list (users index it), and each object in it carries the label (an
  empty list has nothing to carry it);
- JSON Lines (`logs --follow --json`): each line is an object, so each carries it.
The label is what the process talks to (`plugins.source_label()`, `document_label`), and
a command may pass `label=` to `result()` (a plugin's command describing its own target
does). `print_json()` and
`json_document()` itself writes what it is given as is: `peagle schema` prints the spec's
JSON Schema through it, a description of peagle's input rather than an output of AWS or
a plugin's target.

The module-level `console`, `print_json`, `note`, `error` and `table` are the older names;
they stay as thin wrappers over the object while the commands move to it.

rich is imported only when something is rendered for people, so `peagle --help` and
`peagle plan --json` never pay for it. Colour follows no-color.org: none when `NO_COLOR` is
set to anything non-empty. Each stream is judged by whether *it* is a terminal: when it is
not (a pipe, a file, CI), it gets no ANSI and no wrapping (`_make_console`): a line is as
long as its content, tables keep their columns at their natural width, and values (S3 URIs,
image tags, names) are never cut.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Callable
from typing import Any

__all__ = [
    "STATUS_STYLE",
    "Output",
    "cli_output",
    "configure",
    "console",
    "current",
    "error",
    "json_printed",
    "labelled",
    "live_counter",
    "note",
    "print_json",
    "reset",
    "table",
    "to_document",
]


def no_color() -> bool:
    """no-color.org: `NO_COLOR` present and not empty turns colour off."""
    from .. import settings

    return settings.no_color()


def to_document(obj: Any) -> Any:
    """What `--json` prints for `obj`: its `to_dict()`, a dataclass as a dict, a list of
    results as the list of their documents, else obj. Every `Text` in it (a note naming
    an SDK keyword or call) is in the CLI's words (cli/faces.py)."""
    from .faces import cli_doc

    return cli_doc(_document(obj))


def _document(obj: Any) -> Any:
    if hasattr(obj, "to_dict") and callable(obj.to_dict):
        return obj.to_dict()
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.asdict(obj)
    if isinstance(obj, list | tuple):
        return [_document(item) for item in obj]
    return obj


def labelled(doc: Any, label: str) -> Any:
    """`doc` saying where it came from: an object with `"label"` (first; one it already
    has is kept), a list with each object in it labelled; anything else as it is."""
    if isinstance(doc, dict):
        return {"label": label, **doc}
    if isinstance(doc, list):
        return [labelled(item, label) if isinstance(item, dict) else item for item in doc]
    return doc


def document_label(doc: Any, obj: Any = None) -> str:
    """The label of a command's document: what this process talks to
    (`plugins.source_label()`: AWS, or the label of a plugin's target). A result that
    describes something else (a plugin's own command reporting on its target) passes
    `label=` to `Output.result`."""
    from .. import plugins

    return plugins.source_label()


class Output:
    """Where a command's output goes, in one of two modes (human or JSON)."""

    def __init__(self, *, json: bool = False, quiet: bool = False, verbose: bool = False):
        self.json = json
        self.quiet = quiet
        self.verbose = verbose
        self.documents = 0  # JSON documents printed by this command (the contract: one)

    def __repr__(self) -> str:
        return f"Output(json={self.json}, quiet={self.quiet}, verbose={self.verbose})"

    # -- results (stdout) ---------------------------------------------------------------
    @property
    def label(self) -> str:
        """Where this command's output comes from (read when asked: a target's option
        points the process at the target before the command runs)."""
        from .. import plugins

        return plugins.source_label()

    def result(
        self,
        obj: Any,
        render: Callable[[Any], Any] | None = None,
        *,
        label: str | None = None,
    ) -> None:
        """The command's result: one JSON document with --json (`to_document(obj)`: the
        result's own `to_dict()`), labelled with `label` or where it came from
        (`document_label`), else `render(obj)` (which prints, or returns something to
        print: a string or a rich renderable)."""
        if self.json:
            doc = to_document(obj)
            self.json_document(labelled(doc, label or document_label(doc, obj)))
            return
        shown = render(obj) if render is not None else obj
        if shown is not None:
            self.print(shown)

    def stream(self, items: Any, render: Callable[[Any], Any]) -> None:
        """Results that keep coming (`logs --follow`): with --json, JSON Lines (one compact
        document per item, written as it arrives, so the stream can be piped); else
        `render(items)`, which iterates them itself."""
        if not self.json:
            render(items)
            return
        label = self.label
        for item in items:
            sys.stdout.write(json.dumps(labelled(to_document(item), label)) + "\n")
            sys.stdout.flush()

    def human(self, fn: Any, otherwise: Any = None) -> Any:
        """`fn` for people, `otherwise` (None) with --json: for what a command shows while it
        runs rather than as its result (the diff `apply` shows before its prompt, an answer
        streamed as it arrives), which JSON mode leaves out of stdout."""
        return otherwise if self.json else fn

    @property
    def live(self) -> bool:
        """Whether a live view may draw on stdout: a terminal, and not --json."""
        return not self.json and sys.stdout.isatty()

    def json_document(self, doc: Any) -> None:
        self.documents += 1
        sys.stdout.write(json.dumps(doc, indent=2, default=str) + "\n")
        sys.stdout.flush()

    def echo(self, text: str = "") -> None:
        """Plain text on stdout (no markup, no rich)."""
        sys.stdout.write(f"{text}\n")
        sys.stdout.flush()

    def print(self, *renderables: Any) -> None:
        """Rich text or renderables on stdout, for people."""
        self.console().print(*renderables)

    def table(self, title: str | None, columns: list[str], rows: list[list[Any]]) -> None:
        if not self.json:
            self.print(table(title, columns, rows))

    # -- context (stderr) ---------------------------------------------------------------
    def note(self, message: str) -> None:
        """Progress and context for people; stderr, so stdout stays clean for pipes. With
        --quiet only warnings (a note starting `warning:`, as the SDK's progress callback
        passes them) are kept."""
        if self.quiet and not message.startswith("warning:"):
            return
        # In the CLI's words; a `peagle …` in a note targets where this command did.
        from .faces import cli_text

        message = cli_text(message) or ""
        # On a terminal, first erase a live counter line (live_counter) the note replaces.
        sys.stderr.write(("\r\x1b[K" if sys.stderr.isatty() else "") + message + "\n")
        sys.stderr.flush()

    def debug(self, message: str) -> None:
        if self.verbose:
            sys.stderr.write(f"debug: {message}\n")
            sys.stderr.flush()

    def warn(self, message: str) -> None:
        """A warning the user must see (a deprecated spelling): kept under --quiet."""
        sys.stderr.write(f"warning: {message}\n")
        sys.stderr.flush()

    def error(self, message: str) -> None:
        sys.stderr.write(f"error: {message}\n")
        sys.stderr.flush()

    def failure(self, message: str, doc: dict[str, Any]) -> None:
        """What stopped the command: `error: message` on stderr and, with --json, the
        document `{"error": doc}` on stdout, unless the command already printed its result
        document (plan --json with failed checks: the checks are in it)."""
        self.error(message)
        if self.json and not self.documents:
            self.json_document(labelled({"error": doc}, self.label))

    # -- rich (lazily) ------------------------------------------------------------------
    def console(self, stderr: bool = False) -> Any:
        """rich's Console (made on first use, again after `reset()`)."""
        global _console, _err_console

        if stderr:
            if _err_console is None:
                _err_console = _make_console(stderr=True)
            return _err_console
        if _console is None:
            _console = _make_console(stderr=False)
        return _console


PIPE_WIDTH = 100_000
"""The width rich lays out for outside a terminal: wide enough that nothing wraps (a pipe or
a CI log has no width of its own, and a value cut at 80 columns is broken when copied)."""


def is_terminal(stream: Any) -> bool:
    """Whether `stream` is a terminal (each stream is judged on its own: `peagle status |
    less` keeps its stderr notes on the terminal)."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # a closed or replaced stream
        return False


def _make_console(*, stderr: bool) -> Any:
    """rich's Console for stdout or stderr. On a terminal: its width, colour unless
    `NO_COLOR`. Elsewhere (a pipe, a file, a CI log): rich writes no ANSI (it checks the
    stream itself), and here nothing wraps either: text is printed as one line however long
    (`soft_wrap`), and tables are laid out at their natural width (`PIPE_WIDTH`), so they
    stay tables and an S3 URI or an image tag is never cut, whatever `COLUMNS` says."""
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    options: dict[str, Any] = {"stderr": stderr, "highlight": False, "no_color": no_color()}
    if not is_terminal(stream):
        options.update(width=PIPE_WIDTH, soft_wrap=True)
    return Console(**options)


_current = Output()
_console: Any = None
_err_console: Any = None


def current() -> Output:
    """The output object of the command being run."""
    return _current


def cli_output() -> Output:
    """The output object of the command being run, as a plugin's command reaches it
    (`sm_peagle.contract.cli_output`): `--json`, `-q` and `-v` already applied."""
    return _current


def configure(
    *, json: bool | None = None, quiet: bool | None = None, verbose: bool | None = None
) -> Output:
    """Turn modes on (the root options and the per-command `--json` alias call this)."""
    if json is not None:
        _current.json = json
    if quiet is not None:
        _current.quiet = quiet
    if verbose is not None:
        _current.verbose = verbose
    return _current


def reset() -> Output:
    """A fresh object for a new command (`main()` starts with this)."""
    global _current, _console, _err_console
    _current = Output()
    _console = _err_console = None  # NO_COLOR and the width are read again
    return _current


# -- the older names, thin wrappers over the object ---------------------------------------
def console(stderr: bool = False) -> Any:
    return _current.console(stderr)


def print_json(obj: Any) -> None:
    _current.json_document(obj)


def json_printed(reset: bool = False) -> bool:
    """Whether this command already printed its JSON document; `reset` starts a new one."""
    printed = _current.documents > 0
    if reset:
        _current.documents = 0
    return printed


def error(message: str) -> None:
    _current.error(message)


def note(message: str) -> None:
    """Progress and context for people (stderr; nothing with --quiet)."""
    _current.note(message)


def live_counter() -> Callable[[int, int | None], None] | None:
    """A live `12/16 requests finished` line on a terminal, erased when the level is done
    (or by the next note); None when stderr is not a terminal, so logs and pipes get only
    the level lines."""
    if not sys.stderr.isatty() or _current.quiet:
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
    columns, and `p-eagle K=3` is never `p-eagl/e K=3`). A `peagle …` command in a cell
    (status's price: `peagle instances --live-prices …`) is rendered for the context, as
    in a note."""
    from rich.table import Table

    # In the CLI's words (a Text: a price's note naming a call), and a `peagle …` in a cell
    # targets where this command did
    from .faces import cli_text

    cells = [["-" if v is None else cli_text(v if isinstance(v, str) else str(v)) for v in row]
             for row in rows]  # fmt: skip

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
