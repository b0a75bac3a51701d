"""`sm_peagle.sweep`: deploy, benchmark and delete each mode x K in turn, compare and
recommend K (`peagle sweep`). Apart from measure.py because it deploys: it sits above
`sm_peagle.endpoint` (whose `Endpoint.bench` uses measure.py), with no cycle.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .measure import Levels, Seconds, load_options, slo_options, write_outputs
from .measure_checks import (
    parse_levels,
)
from .measure_results import SweepResult
from .session import OnConnect, Say, check_output_path, context, quiet

__all__ = ["sweep"]


def _plannable(model: str, *, mode: str, k: int | None, instance_type: str | None,
               role: str | None, region: str | None) -> None:  # fmt: skip
    """Plan one configuration as `deploy` would: an unknown model, a bad instance type or
    a failed check stops a sweep before it deploys anything or writes a directory."""
    from ..lifecycle.resolve import plan

    options = {"mode": mode, "instance_type": instance_type, "role": role, "region": region}
    if mode != "baseline":
        options["k"] = k
    plan(model, **{key: v for key, v in options.items() if v is not None}).raise_for_failures()


def sweep(
    model: str,
    *,
    modes: str | Sequence[str] = "baseline,eagle3,p-eagle",
    k: Levels = "3,7",
    concurrency: Levels = "1,4,8,32,128",
    instance_type: str | None = None,
    requests: int | None = None,
    duration: Seconds | None = None,
    warmup: int = 0,
    dataset: str | None = None,
    max_tokens: int = 256,
    temperature: float | None = None,
    acceptance_wait: Seconds = 25.0,
    slo: str | dict[str, float] | None = None,
    search: bool = False,
    slo_share: float = 0.99,
    search_limit: int = 1024,
    max_probes: int = 16,
    requests_out: str | Path | None = None,
    out_dir: str | Path | None = None,
    keep: bool = False,
    role: str | None = None,
    region: str | None = None,
    aws: Any = None,
    say: Say | None = None,
    on_connect: OnConnect | None = None,
) -> SweepResult:
    """Deploy, benchmark and delete each mode x K in turn; compare; recommend K
    (`peagle sweep`). Results go to `out_dir` (default ./peagle-sweep-<time>): one JSON
    per configuration as it finishes, then sweep.json/.csv/.md/.png. A configuration that
    fails is recorded and the others still run; `.failed` says every one failed."""
    from ..benchmarking.datasets import Dataset, default_sweep_dataset, load_dataset
    from ..benchmarking.results import save_document
    from ..benchmarking.sweep import configurations, run_sweep
    from ..endpoint import deploy

    say = say or quiet
    mode_list = (
        [m.strip() for m in modes.split(",") if m.strip()] if isinstance(modes, str)
        else [str(m) for m in modes]
    )  # fmt: skip
    ks = parse_levels(k, "-k") if any(m != "baseline" for m in mode_list) else []
    levels = parse_levels(concurrency, "--concurrency")
    configs = configurations(mode_list, ks)  # bad modes / K: refused before any AWS call
    opts = load_options(
        requests=requests, duration=duration, warmup=warmup, dataset=dataset,
        max_tokens=max_tokens, temperature=temperature, acceptance_wait=acceptance_wait,
    )  # fmt: skip
    opts.update(
        slo_options(
            slo=slo, search=search, share=slo_share, limit=search_limit, probes=max_probes,
            burstiness=1.0, rate=None,
        )
    )  # fmt: skip
    where = Path(out_dir) if out_dir is not None else None
    check_output_path(where, "--output", directory=True)
    export_path = check_output_path(requests_out, "--requests-out")
    for mode0, k0 in configs[:1]:  # a typo in MODEL: refused before any deploy or directory
        _plannable(model, mode=mode0, k=k0, instance_type=instance_type, role=role,
                   region=region)  # fmt: skip
    if opts["dataset"] is None:
        opts["dataset"] = default_sweep_dataset()  # HumanEval (the seed's set) when installed
    if not isinstance(opts["dataset"], Dataset):  # a bad or missing dataset: refused (exit 2)
        opts["dataset"] = load_dataset(opts["dataset"])  # before the first deploy
    where = where or Path(f"peagle-sweep-{time.strftime('%Y%m%d-%H%M%S')}")
    ctx = context(region, aws, on_connect)
    if export_path is not None:
        from ..benchmarking.export import RequestExporter

        opts["requests_out"] = RequestExporter(export_path)
    say(f"results go to {where}/")
    try:
        doc = run_sweep(
            model, modes=mode_list, ks=ks, concurrency=levels, out_dir=where,
            instance_type=instance_type, role=role, keep=keep, aws=ctx, say=say,
            deploy=deploy, **opts,
        )  # fmt: skip
    except BaseException:  # Ctrl-C: --requests-out keeps its previous file; say where
        exporter = opts.get("requests_out")  # the requests measured so far are
        where_left = exporter.abandon() if exporter is not None else None
        if where_left is not None:
            say(where_left)
        raise
    if export_path is not None:
        opts["requests_out"].finish()
    written = [save_document(doc, where / "sweep.json")]
    written += write_outputs(
        doc, say, csv=where / "sweep.csv", markdown=where / "sweep.md",
        plot=where / "sweep.png", plot_optional=True,
    )  # fmt: skip
    return SweepResult(doc, written, out_dir=where)
