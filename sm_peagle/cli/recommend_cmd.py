"""`peagle recommend`: where to deploy a model, and on what basis."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from .output import console, current, table
from .spec_options import JsonOpt, ModeOpt


def recommend_command(
    model: Annotated[str, typer.Argument(help="Catalog alias or JumpStart id.")],
    sequences: Annotated[
        int | None,
        typer.Option(
            "--sequences",
            help="Sequences of --max-model-len tokens the KV cache must hold at once "
            "(default 1; was --concurrency).",
        ),
    ] = None,
    budget: Annotated[float | None, typer.Option("--budget", help="Max $/h.")] = None,
    mode: ModeOpt = None,
    max_model_len: Annotated[int, typer.Option("--max-model-len")] = 8192,
    results_dir: Annotated[
        Path | None,
        typer.Option(
            "--results-dir",
            metavar="DIR",
            help="Bench/sweep results directory: rank by measured $/1M tokens (was --results).",
        ),
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Rank the instance types where the model + drafter fit, by $/h and headroom."""
    from .context import client

    rec = client().recommend(
        model,
        sequences=sequences,
        budget=budget,
        mode=mode,
        max_model_len=max_model_len,
        results_dir=results_dir,
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
