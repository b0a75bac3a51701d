"""`peagle tune-k NAME`: estimate output tokens/s at every K' <= the deployed K from one
deployment (vLLM's per-position acceptance rates + the step cost measured at K), without
redeploying. The numbers are an ESTIMATE and say so (see sm_peagle/bench/tune_k.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from .output import note, print_json
from .spec_options import JsonOpt, RegionOpt


def _estimates(doc: dict[str, Any], position_cost: float, tolerance: float) -> list[dict]:
    from ..bench.tune_k import estimate_for_level
    from ..errors import PeagleError

    if doc.get("mode") in (None, "baseline") or not doc.get("k"):
        raise PeagleError(f"{doc.get('endpoint')} runs no speculation: nothing to tune")
    out = []
    for lv in doc["levels"]:
        est = estimate_for_level(lv, doc["k"], position_cost=position_cost, tolerance=tolerance)
        if est is not None:
            out.append({"concurrency": lv["concurrency"], **est})
    if not out:
        reasons = {(lv.get("acceptance") or {}).get("reason") for lv in doc["levels"]}
        raise PeagleError(
            "no per-position acceptance rates for this endpoint "
            f"({'; '.join(sorted(r for r in reasons if r)) or 'none in the SpecDecoding lines'})",
            remedy="vLLM >= 0.16 logs them; run with traffic and --acceptance-wait 25s",
        )
    return out


def tune_k_command(
    name: Annotated[str, typer.Argument(help="Endpoint name (deployed with K).")],
    concurrency: Annotated[
        int, typer.Option("--concurrency", "-c", help="Concurrency of the measuring level.")
    ] = 1,
    requests: Annotated[int, typer.Option("--requests", "-n", help="Requests to send.")] = 16,
    max_tokens: Annotated[int, typer.Option("--max-tokens", help="max_tokens per request.")] = 256,
    dataset: Annotated[str | None, typer.Option("--dataset", help="As `peagle bench`.")] = None,
    results: Annotated[
        Path | None,
        typer.Option("--results", help="Use a stored `peagle bench` JSON: send nothing."),
    ] = None,
    position_cost: Annotated[
        float,
        typer.Option(
            "--position-cost",
            help="Share of one step each draft position costs (0: flat, P-EAGLE at low batch).",
        ),
    ] = 0.0,
    tolerance: Annotated[
        float, typer.Option("--tolerance", help="Pick the smallest K' within this of the best.")
    ] = 0.02,
    acceptance_wait: Annotated[
        str, typer.Option("--acceptance-wait", help="Wait for the SpecDecoding log line.")
    ] = "25s",
    region: RegionOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Estimate output tok/s for each K' <= K from one deployment's per-position acceptance."""
    from ..bench.tune_k import ESTIMATE_LABEL
    from ..errors import SpecError

    if position_cost < 0 or not 0 <= tolerance < 1:
        raise SpecError("--position-cost must be >= 0 and --tolerance in [0, 1)")
    if results is not None:
        from ..bench.results import load_document

        doc = load_document(results)
        if doc["kind"] != "bench":
            raise SpecError(f"{results}: give one endpoint's bench document, not a sweep")
    else:
        from ..aws import AwsContext
        from ..bench.runner import bench_endpoint
        from ..lifecycle.waiter import parse_duration

        if concurrency < 1 or requests < 1:
            raise SpecError("--concurrency and --requests must be at least 1")
        aws = AwsContext(region)
        aws.check_credentials()
        doc = bench_endpoint(
            name, concurrency=[concurrency], requests=requests, max_tokens=max_tokens,
            dataset=dataset, acceptance_wait_s=parse_duration(acceptance_wait), aws=aws,
            say=note,
        )  # fmt: skip
    ests = _estimates(doc, position_cost, tolerance)
    if doc.get("mode") == "eagle3" and position_cost == 0:
        note("EAGLE-3 drafts one position per pass: a flat step cost flatters large K; "
             "pass --position-cost (the share of a step one draft position costs)")  # fmt: skip
    out = {
        "endpoint": doc.get("endpoint"),
        "label": ESTIMATE_LABEL,
        "simulated": doc.get("simulated"),
        "mode": doc.get("mode"),
        "k": doc.get("k"),
        "estimates": ests,
    }
    if json_out:
        print_json(out)
        return
    from .output import console, table

    con = console()
    if doc.get("simulated"):
        con.print("[bold red]SIMULATED[/] sandbox numbers")
    for est in ests:
        rows = [
            [str(r["k"]), f"{r['acceptance_length']:.2f}", f"{r['marginal_rate']:.3f}",
             f"{r['output_tokens_per_s']:,.0f}", "<- measured" if r["k"] == est["measured_k"]
             else ""]
            for r in est["by_k"]
        ]  # fmt: skip
        title = f"{doc.get('endpoint')} at concurrency {est['concurrency']}: {ESTIMATE_LABEL}"
        cols = ["K'", "acceptance length", "rate at K'", "est. out tok/s", ""]
        con.print(table(title, cols, rows))
        con.print(
            f"estimated best: K'={est['recommended_k']} (smallest within "
            f"{est['tolerance']:.0%} of the best; step cost +{est['position_cost']:.0%} per "
            "position) — an ESTIMATE: confirm with `peagle sweep`",
            markup=False,
        )
