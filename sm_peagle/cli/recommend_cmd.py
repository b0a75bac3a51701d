"""`peagle recommend`: where to deploy a model, and on what basis."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from .output import console, current, table
from .spec_options import JsonOpt, ModeOpt


def recommend_command(
    model: Annotated[str, typer.Argument(help="Catalog alias or JumpStart id.")],
    concurrency: Annotated[
        int | None, typer.Option("--concurrency", help="Max-length sequences to hold at once.")
    ] = None,
    budget: Annotated[float | None, typer.Option("--budget", help="Max $/h.")] = None,
    mode: ModeOpt = None,
    max_model_len: Annotated[int, typer.Option("--max-model-len")] = 8192,
    results: Annotated[
        Path | None,
        typer.Option("--results", help="Bench results dir: rank by measured $/1M tokens."),
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Rank the instance types where the model + drafter fit, by $/h and headroom."""
    from .context import client

    rec = client().recommend(
        model,
        concurrency=concurrency,
        budget=budget,
        mode=mode,
        max_model_len=max_model_len,
        results=results,
    )
    current().result(rec, render=render_recommendation)


def render_recommendation(rec: Any) -> None:
    """The ranked instance types, as a table (or one line when none fits)."""
    if not rec.candidates:
        typer.echo("no catalog instance type fits these constraints")
        return
    rows = [
        [
            c.instance_type,
            f"{c.gpus}x {c.gpu}",
            f"{c.usd_per_hour:.2f}" if c.usd_per_hour is not None else "unknown",
            f"{c.kv_headroom_gb:g}",
            c.max_length_sequences,
            f"{c.usd_per_million_output_tokens:.3f}" if c.usd_per_million_output_tokens else "-",
            c.basis,
        ]
        for c in rec.candidates
    ]
    console().print(
        table(
            f"{rec.model}: where it fits ({rec.basis})",
            ["type", "GPUs", "$/h", "KV headroom GB", "max-len seqs", "$/1M out tokens", "basis"],
            rows,
        )
    )
