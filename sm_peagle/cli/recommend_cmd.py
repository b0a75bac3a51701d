"""`peagle recommend`: where to deploy a model, and on what basis."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from .output import console, print_json, table
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
    from ..catalog.models import find_model
    from ..errors import SpecError
    from ..planning.recommend import apply_results, candidates

    entry = find_model(model)
    if entry is None:
        raise SpecError(f"model: unknown model {model!r}", remedy="see `peagle models`")
    if mode not in (None, "p-eagle", "eagle3", "baseline"):
        raise SpecError(f"speculative.mode: {mode!r} is not p-eagle, eagle3 or baseline")
    cands = candidates(
        entry,
        speculative=mode != "baseline",
        max_model_len=max_model_len,
        budget_usd_per_hour=budget,
        concurrency=concurrency,
    )
    if results is not None:
        files = sorted(results.glob("*.json")) if results.is_dir() else []
        if not files:
            raise SpecError(f"--results: no result JSON files in {results}")
        cands = apply_results(cands, [json.loads(f.read_text()) for f in files])
    basis = (
        "fit and headroom: peagle's estimate; $/h: catalog or Price List; throughput: measured"
        if results
        else "fit and headroom: peagle's estimate; $/h: catalog or Price List (no measurement)"
    )
    if json_out:
        print_json(
            {"model": entry.alias, "basis": basis, "candidates": [c.to_dict() for c in cands]}
        )
        return
    if not cands:
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
        for c in cands
    ]
    console().print(
        table(
            f"{entry.alias}: where it fits ({basis})",
            ["type", "GPUs", "$/h", "KV headroom GB", "max-len seqs", "$/1M out tokens", "basis"],
            rows,
        )
    )
