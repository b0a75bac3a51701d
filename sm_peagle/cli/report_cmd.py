"""`peagle report`: re-render stored results (no AWS access): tables, markdown, CSV, PNG, and
a self-contained HTML page (`--html`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from .bench_cmds import CsvOpt, MarkdownOpt, PlotOpt, _show, write_outputs
from .output import note
from .spec_options import JsonOpt

# Sweep fields derived from `runs` only: recomputed on every load.
DERIVED = (
    "schema", "kind", "label", "simulated", "runs", "table", "recommendation", "k_schedule",
    "max_concurrency",
)  # fmt: skip


def load_results(path: Path) -> dict[str, Any]:
    """A results file, or a directory: its sweep.json, else its bench documents combined.
    Derived parts (comparison table, K recommendation) are recomputed from the runs."""
    from ..bench.results import load_document
    from ..bench.sweep import combine_runs
    from ..errors import SpecError

    if path.is_dir():
        if (path / "sweep.json").exists():
            doc = load_document(path / "sweep.json")
        else:
            runs = [load_document(p) for p in sorted(path.glob("*.json"))]
            runs = [r for r in runs if r["kind"] == "bench"]
            if not runs:
                raise SpecError(f"no peagle.bench/1 results in {path}")
            return combine_runs(runs)
    else:
        doc = load_document(path)
    if doc["kind"] != "sweep":
        return doc
    return combine_runs(doc["runs"], extra={k: v for k, v in doc.items() if k not in DERIVED})


def report_command(
    path: Annotated[Path, typer.Argument(help="Results directory or JSON file.")],
    markdown: MarkdownOpt = None,
    csv_path: CsvOpt = None,
    plot_path: PlotOpt = None,
    html: Annotated[
        Path | None,
        typer.Option(
            "--html",
            help="Write one self-contained HTML page: charts, percentiles, goodput, the "
            "recommendation and provenance (needs sm-peagle[plot]).",
        ),
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Re-render stored results (no AWS access): tables, markdown, CSV, PNG, HTML."""
    doc = load_results(path)
    write_outputs(doc, csv_path=csv_path, markdown=markdown, plot_path=plot_path)
    if html is not None:
        from ..bench.html_report import write_html

        note(f"wrote {write_html(doc, html)}")
    _show(doc, json_out)
