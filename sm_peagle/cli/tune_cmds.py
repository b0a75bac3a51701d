"""`peagle tune-k NAME`: estimate output tokens/s at every K' <= the deployed K from one
deployment (vLLM's per-position acceptance rates, from the requests' own acceptance
histograms where the image reports them, else from the log lines, + the step cost
measured at K), without redeploying. The numbers are an ESTIMATE and say so (see
sm_peagle/benchmarking/tune_k.py). The work is one SDK call, the client's `tune_k`; this
module renders its result."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from .options import (
    AcceptanceWaitOpt,
    DatasetOpt,
    MaxTokensOpt,
    component_option,
    concurrency_option,
    requests_option,
)
from .output import current
from .spec_options import JsonOpt, RegionOpt

TuneComponentOpt = component_option(
    "Inference component to tune (its short name is enough); required on an endpoint "
    "that hosts components."
)
TuneConcurrencyOpt = concurrency_option(
    "Comma-separated concurrency levels to measure at (one estimate per level)."
)
TuneRequestsOpt = requests_option("Requests per level, 1 to 100,000.", optional=False)


def tune_k_command(
    name: Annotated[str, typer.Argument(help="Endpoint name (deployed with K).")],
    component: TuneComponentOpt = None,
    concurrency: TuneConcurrencyOpt = "1",
    requests: TuneRequestsOpt = 16,
    max_tokens: MaxTokensOpt = 256,
    dataset: DatasetOpt = None,
    results: Annotated[
        Path | None,
        typer.Option(
            "--results", metavar="FILE", help="Use a stored `peagle bench` JSON: send nothing."
        ),
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
    acceptance_wait: AcceptanceWaitOpt = "25s",
    region: RegionOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Estimate output tok/s for each K' <= K from one deployment's per-position acceptance."""
    from .bench_cmds import measure_client

    result = measure_client(region, say_where=False).tune_k(
        name, component=component, concurrency=concurrency, requests=requests,
        max_tokens=max_tokens, dataset=dataset, results=results, position_cost=position_cost,
        tolerance=tolerance, acceptance_wait=acceptance_wait,
    )  # fmt: skip
    current().result(result, render=render_tune_k)


def render_tune_k(result: Any) -> None:
    """One table per concurrency level: the estimate at each K', and the pick."""
    from rich.markup import escape

    from .advice import Suggestion, render
    from .output import console, table

    ests = result.estimates
    con = console()
    label = result.label
    if result.simulated:  # in the words of the plugin whose target made them up
        con.print(f"[bold red]{escape(result.caveat or 'SIMULATED')}[/]")
    for est in ests:
        rows = [
            [str(r.k), f"{r.acceptance_length:.2f}", f"{r.marginal_rate:.3f}",
             f"{r.output_tokens_per_s:,.0f}", "<- measured" if r.k == est.measured_k else ""]
            for r in est.by_k or []
        ]  # fmt: skip
        title = f"{result.endpoint} at concurrency {est.concurrency}: {label}"
        cols = ["K'", "acceptance length", "rate at K'", "est. out tok/s", ""]
        con.print(table(title, cols, rows))
        if est.rates_from:
            con.print(f"per-position rates from {est.rates_from}", markup=False)
        con.print(
            f"estimated best: K'={est.recommended_k} (smallest within "
            f"{est.tolerance:.0%} of the best; step cost +{est.position_cost:.0%} per "
            f"position) — an ESTIMATE: confirm with `{render(Suggestion.of('sweep'))}`",
            markup=False,
        )
