"""How a wait looks: a rich live panel on a terminal, plain lines otherwise."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


def elapsed(seconds: float) -> str:
    """Elapsed time as a clock reads it: `00:03`, `12:34`, and past an hour `1:02:03`
    (hours unpadded). Digits and colons only: `[0m03s]`, the old form, read like a broken
    colour code in a log."""
    m, s = divmod(max(int(seconds), 0), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


@contextmanager
def wait_view(quiet: bool | None = None) -> Iterator[Callable[[Any], None]]:
    """Yield an on_poll callback. Plain mode prints a line when something changes; on a
    terminal a live panel appears at the first poll. Nothing when `quiet`, which defaults
    to the output object's JSON mode (a machine reads the one document, not the wait)."""
    from .output import current, is_terminal

    if quiet is None:
        quiet = current().json
    if quiet:
        yield lambda _s: None
        return
    if not is_terminal(sys.stderr):
        last: list[tuple] = []

        def plain(state: Any) -> None:
            key = (state.status, state.variant_summary, state.log_line)
            if not last or last[-1] != key:
                last.append(key)
                # The whole log line: a log or a pipe has no width to fit, and a cut line
                # would break the value it ends with.
                log = f" | {state.log_line}" if state.log_line else ""
                sys.stderr.write(
                    f"[{elapsed(state.elapsed)}] {state.endpoint} {state.status} "
                    f"{state.variant_summary}{log}\n"
                )
                sys.stderr.flush()

        yield plain
        return

    from rich.live import Live
    from rich.table import Table

    from .output import console

    def render(state: Any) -> Table:
        t = Table.grid(padding=(0, 2))
        t.add_row("endpoint", state.endpoint)
        t.add_row("status", f"[bold]{state.status}[/]")
        t.add_row("elapsed", elapsed(state.elapsed))
        t.add_row("variant", state.variant_summary or "-")
        t.add_row("newest log", (state.log_line or "-")[:160])
        return t

    # Started at the first poll, not before: the SDK asks its confirmation (a prompt on
    # this terminal) inside the same call, before anything is waited for.
    live: list[Live] = []

    def show(state: Any) -> None:
        if not live:
            live.append(Live(console=console(stderr=True), refresh_per_second=4, transient=False))
            live[0].start()
        live[0].update(render(state))

    try:
        yield show
    finally:
        if live:
            live[0].stop()
