"""`peagle report`: re-render stored results (no AWS access): tables, markdown, CSV, PNG, and
a self-contained HTML page (`--html`). One SDK call, `sm_peagle.report`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .bench_cmds import CsvOpt, MarkdownOpt, PlotOpt
from .bench_render import render_measurement
from .output import current
from .spec_options import JsonOpt


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
    from .bench_cmds import measure_client

    client = measure_client(None, say_where=False)  # no AWS access
    result = client.report(path, markdown=markdown, csv=csv_path, plot=plot_path, html=html)
    current().result(result, render=render_measurement)
