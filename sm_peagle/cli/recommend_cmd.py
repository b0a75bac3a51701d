"""`peagle recommend`: where to deploy a model, and on what basis."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from .output import console, print_json, table
from .spec_options import JsonOpt, ModeOpt


def _results_for(entry: Any, results: Path, files: list[Path]) -> list[dict]:
    """The result documents of this model only; another model's numbers never rank it."""
    from ..catalog.models import find_model
    from ..errors import SpecError

    docs, others = [], set()
    for f in files:
        try:
            doc = json.loads(f.read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(doc, dict):
            continue
        found = find_model(str(doc.get("model"))) if doc.get("model") else None
        if found is entry:
            docs.append(doc)
        else:
            others.add(str(doc.get("model") or "unknown model"))
    if not docs:
        seen = f" (they are for: {', '.join(sorted(others))})" if others else ""
        raise SpecError(
            f"--results: no results for {entry.alias} in {results}{seen}",
            remedy=f"bench or sweep {entry.alias}, or drop --results",
        )
    return docs


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
    from ..catalog.names import unknown_model
    from ..errors import SpecError
    from ..planning.recommend import apply_results, candidates

    entry = find_model(model)
    if entry is None:
        raise unknown_model(model)
    if mode not in (None, "p-eagle", "eagle3", "baseline"):
        raise SpecError(f"speculative.mode: {mode!r} is not p-eagle, eagle3 or baseline")
    for flag, value in (("--concurrency", concurrency), ("--max-model-len", max_model_len)):
        if value is not None and value < 1:
            raise SpecError(f"{flag}: must be at least 1 (got {value})")
    if budget is not None and budget <= 0:
        raise SpecError(f"--budget: must be a positive $/h (got {budget:g})")
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
        docs = _results_for(entry, results, files)
        cands = apply_results(cands, docs)
    basis = "fit and headroom: peagle's estimate; $/h: catalog or Price List"
    if results is None:
        basis += " (no measurement)"
    elif all(d.get("simulated") is False for d in docs):
        basis += "; throughput: measured"
    else:
        basis += "; throughput: SIMULATED (sandbox), not a measurement"
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
