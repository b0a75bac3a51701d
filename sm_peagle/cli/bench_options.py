"""Options `peagle bench` and `peagle sweep` share for SLOs, goodput, the max-concurrency
search, bursty arrivals and the per-request export (validated by the SDK,
`sm_peagle.ops.measure`, before any AWS call)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .options import component_option

SloOpt = Annotated[
    str | None,
    typer.Option(
        "--slo",
        help="Service-level objectives, any subset: ttft=500ms,tpot=50ms,e2e=20s. Each level "
        "then reports goodput (req/s and output tok/s of requests meeting every one) and "
        "the share meeting each.",
    ),
]
SearchOpt = Annotated[
    bool,
    typer.Option(
        "--search-max-concurrency",
        help="Instead of --concurrency: find the highest concurrency whose share meeting "
        "the --slo is >= --slo-share (doubling, then bisection; every probe reported).",
    ),
]
ShareOpt = Annotated[
    float, typer.Option("--slo-share", help="Share of requests that must meet the SLO.")
]
SearchLimitOpt = Annotated[
    int, typer.Option("--search-limit", help="Highest concurrency the search may probe.")
]
ProbesOpt = Annotated[int, typer.Option("--max-probes", help="Most levels the search runs.")]
BurstinessOpt = Annotated[
    float,
    typer.Option(
        "--burstiness",
        help="With --rate: gamma inter-arrivals of this shape (1 = Poisson, < 1 burstier).",
    ),
]
ComponentOpt = component_option(
    "Inference component to benchmark (every request carries it as InferenceComponentName; "
    "the short name it was deployed with is enough). Required on an endpoint that hosts "
    "components."
)
RequestsOutOpt = Annotated[
    Path | None,
    typer.Option(
        "--requests-out",
        help="Write every request as a JSON line (times, tokens, ITLs, status, SLO met).",
    ),
]
