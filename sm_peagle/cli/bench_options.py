"""Options `peagle bench` and `peagle sweep` share for SLOs, goodput, the max-concurrency
search, bursty arrivals and the per-request export (parsed here, before any AWS call)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

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
ComponentOpt = Annotated[
    str | None,
    typer.Option(
        "--component",
        help="Inference component to benchmark (every request carries it as "
        "InferenceComponentName; the short name it was deployed with is enough). Required "
        "on an endpoint that hosts components.",
    ),
]
RequestsOutOpt = Annotated[
    Path | None,
    typer.Option(
        "--requests-out",
        help="Write every request as a JSON line (times, tokens, ITLs, status, SLO met).",
    ),
]


def extra_options(
    *, slo: str | None, search: bool, share: float, limit: int, probes: int,
    burstiness: float, rate: str | None, requests_out: Path | None,
) -> dict[str, Any]:  # fmt: skip
    """The keyword arguments of `bench_endpoint` these options set (SpecError on misuse)."""
    from ..bench.slo import parse_slo
    from ..errors import SpecError

    slo_s = parse_slo(slo)
    if burstiness <= 0:
        raise SpecError("--burstiness must be positive (1 = Poisson)")
    if burstiness != 1.0 and not rate:
        raise SpecError("--burstiness shapes open-loop arrivals: give --rate too")
    out: dict[str, Any] = {"slo": slo_s, "burstiness": burstiness}
    if search:
        if slo_s is None:
            raise SpecError("--search-max-concurrency needs --slo (what must hold)")
        if rate:
            raise SpecError("--search-max-concurrency is closed loop: drop --rate")
        if not 0 < share <= 1 or limit < 1 or probes < 1:
            raise SpecError("need 0 < --slo-share <= 1, --search-limit >= 1, --max-probes >= 1")
        out["search"] = {"target_share": share, "max_concurrency": limit, "max_probes": probes}
    if requests_out is not None:
        from ..bench.export import RequestExporter

        out["requests_out"] = RequestExporter(requests_out)
    return out
