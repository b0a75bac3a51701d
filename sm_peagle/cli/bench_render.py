"""Measurements for people: the tables and coloured lines of `peagle bench`, `sweep` and
`report`. The SDK gives the document in plain words (`MeasureText`: provenance lines,
level rows, notes); the markup is drawn here."""

from __future__ import annotations

from typing import Any

__all__ = ["render_document", "render_measurement", "render_text"]


def render_measurement(result: Any) -> None:
    """A measurement result (bench, sweep, report) for people: its own tables."""
    from .output import console

    render_text(result.text(), console())


def render_document(doc: dict[str, Any], con: Any) -> None:
    """`doc` (a bench or sweep document) on `con`, a rich Console."""
    from ..ops.measure_results import MeasureText

    render_text(MeasureText.of(doc), con)


def render_text(t: Any, con: Any) -> None:
    """A `MeasureText` on `con`, a rich Console: the title (red when the numbers did not
    come from AWS), where they came from, the tables, then the caveats."""
    from rich.markup import escape  # values hold brackets ("[32, 8640]"), not markup

    from .output import table

    style = "bold red" if t.from_target else "bold"  # red: not measured on AWS
    con.print(f"[{style}]{escape(t.title)}[/]")
    for line in t.provenance_lines:
        con.print(f"  {line}", markup=False)
    if t.comparison is not None:
        cols, rows = t.comparison
        con.print(table(f"output tokens/s ({t.provenance})", cols, rows))
        for line in t.recommendations:
            con.print(f"recommended {line}", markup=False)
        from .faces import cli_text

        for failed in t.failures:
            con.print(f"[red]failed[/] {escape(cli_text(failed) or '')}")
    # The terminal gets the columns people compare; markdown/CSV carry every statistic.
    keep = [0, 1, 2, 3, 5, 6, 9, 10, 11]
    cols = [t.level_columns[i] if i != 5 else "TTFT p50 ms" for i in keep]
    rows = [[row[i] if i != 5 else row[i].split("/")[0] for i in keep] for row in t.level_rows]
    con.print(table(f"levels ({t.provenance})", cols, rows))
    for note in t.acceptance_notes:
        con.print(note, markup=False, soft_wrap=True)
    for warning in t.client_warnings:
        con.print(f"[yellow]warning[/] {escape(warning)}")
