"""Measurements for people: the tables and coloured lines of `peagle bench`, `sweep` and
`report`. The SDK's results carry the document and its plain-text parts
(`benchmarking.report`: provenance lines, level rows, notes); the markup is drawn here."""

from __future__ import annotations

from typing import Any

__all__ = ["render_document", "render_measurement"]


def render_measurement(result: Any) -> None:
    """A measurement result (bench, sweep, report) for people: its own tables."""
    from .output import console

    render_document(result.to_dict(), console())


def render_document(doc: dict[str, Any], con: Any) -> None:
    """`doc` (a bench or sweep document) on `con`, a rich Console: the title (red when the
    numbers did not come from AWS), where they came from, the tables, then the caveats."""
    from rich.markup import escape  # values hold brackets ("[32, 8640]"), not markup

    from ..benchmarking.report import (
        LEVEL_COLUMNS,
        acceptance_notes,
        comparison_rows,
        level_rows,
        provenance_lines,
        recommendation_lines,
        runs_of,
        title_of,
    )
    from ..benchmarking.results import from_sandbox, provenance
    from .output import table

    style = "bold red" if from_sandbox(doc) else "bold"  # red: not measured on AWS
    con.print(f"[{style}]{escape(title_of(doc))}[/]")
    for line in provenance_lines(doc):
        con.print(f"  {line}", markup=False)
    if doc.get("kind") == "sweep":
        cols, rows = comparison_rows(doc)
        con.print(table(f"output tokens/s ({provenance(doc)})", cols, rows))
        for line in recommendation_lines(doc):
            con.print(f"recommended {line}", markup=False)
        for f in doc.get("failures") or []:
            failed = f"{f['configuration']}: {f['error']}"
            con.print(f"[red]failed[/] {escape(failed)}")
    # The terminal gets the columns people compare; markdown/CSV carry every statistic.
    keep = [0, 1, 2, 3, 5, 6, 9, 10, 11]
    cols = [LEVEL_COLUMNS[i] if i != 5 else "TTFT p50 ms" for i in keep]
    rows = [[row[i] if i != 5 else row[i].split("/")[0] for i in keep] for row in level_rows(doc)]
    con.print(table(f"levels ({provenance(doc)})", cols, rows))
    for note in acceptance_notes(doc):
        con.print(note, markup=False, soft_wrap=True)
    for run in runs_of(doc):
        for lv in run["levels"]:
            if lv["client_cpu"].get("warning"):
                warning = f"c={lv['concurrency']}: {lv['client_cpu']['warning']}"
                con.print(f"[yellow]warning[/] {escape(warning)}")
