"""`peagle bench` and `peagle sweep`: measure endpoints honestly and compare configurations
(`peagle report`, which re-renders stored results, is in report_cmd.py).

Progress goes to stderr; `--json` prints the one results document on stdout. Result files
(JSON first, then CSV, markdown, PNG) are written before anything is printed, so a missing
optional plotting library never costs the measurements.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from .bench_options import (
    BurstinessOpt,
    ComponentOpt,
    ProbesOpt,
    RequestsOutOpt,
    SearchLimitOpt,
    SearchOpt,
    ShareOpt,
    SloOpt,
    extra_options,
)
from .early_checks import require_plannable, require_plot
from .output import live_counter, note, print_json
from .spec_options import InstanceTypeOpt, JsonOpt, RegionOpt, RoleOpt

ConcurrencyOpt = Annotated[
    str, typer.Option("--concurrency", "-c", help="Comma-separated concurrency levels.")
]
RequestsOpt = Annotated[
    int | None,
    typer.Option("--requests", "-n", help="Requests per level (default: 4 x concurrency, >= 8)."),
]
DurationOpt = Annotated[
    str | None, typer.Option("--duration", help="Run each level this long instead (60s, 5m).")
]
WarmupOpt = Annotated[int, typer.Option("--warmup", help="Unmeasured requests before each level.")]
DatasetOpt = Annotated[
    str | None,
    typer.Option(
        "--dataset",
        help="peagle-builtin (default), FILE.jsonl ('prompt' or 'messages' per line), "
        "humaneval (offline with sm-peagle[humaneval]; the sweep's default then), "
        "mt-bench or speed-bench (need `datasets` and network).",
    ),
]
MaxTokensOpt = Annotated[int, typer.Option("--max-tokens", help="max_tokens per request.")]
TemperatureOpt = Annotated[
    float | None, typer.Option("--temperature", help="Sampling temperature (model default).")
]
AcceptanceWaitOpt = Annotated[
    str,
    typer.Option(
        "--acceptance-wait",
        help="How long to wait for vLLM's SpecDecoding log line after the last level "
        "(0: read the logs once, no wait).",
    ),
]
CsvOpt = Annotated[Path | None, typer.Option("--csv", help="Write a CSV (one row per level).")]
MarkdownOpt = Annotated[Path | None, typer.Option("--markdown", help="Write a markdown report.")]
PlotOpt = Annotated[
    Path | None, typer.Option("--plot", help="Write a PNG chart (needs sm-peagle[plot]).")
]


def _ints(text: str, flag: str) -> list[int]:
    from ..errors import SpecError

    try:
        vals = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise SpecError(f"{flag}: expected comma-separated integers, got {text!r}") from None
    if not vals or any(v < 1 for v in vals):
        raise SpecError(f"{flag}: expected positive integers, got {text!r}")
    return vals


def _rates(text: str | None) -> list[float | None]:
    from ..errors import SpecError

    if not text:
        return [None]
    try:
        vals = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise SpecError(f"--rate: expected requests/s, got {text!r}") from None
    if not vals or any(v <= 0 for v in vals):
        raise SpecError(f"--rate: expected positive requests/s, got {text!r}")
    return list(vals)


def _bench_options(
    requests: int | None, duration: str | None, warmup: int, dataset: str | None,
    max_tokens: int, temperature: float | None, acceptance_wait: str,
) -> dict[str, Any]:  # fmt: skip
    from ..errors import SpecError
    from ..lifecycle.waiter import parse_duration

    if requests is not None and duration is not None:
        raise SpecError("pass --requests or --duration, not both")
    if requests is not None and requests < 1:
        raise SpecError("--requests must be at least 1")
    if warmup < 0 or max_tokens < 1:
        raise SpecError("--warmup must be >= 0 and --max-tokens >= 1")
    return {
        "requests": requests,
        "duration_s": parse_duration(duration) if duration else None,
        "warmup": warmup,
        "dataset": dataset,
        "max_tokens": max_tokens,
        "temperature": temperature,
        "acceptance_wait_s": parse_duration(acceptance_wait),
    }


def _aws(region: str | None) -> Any:
    from ..aws import AwsContext
    from .context import describe_target

    aws = AwsContext(region)
    aws.check_credentials()
    note(describe_target(aws))
    return aws


def write_outputs(
    doc: dict[str, Any], *, out: Path | None = None, csv_path: Path | None = None,
    markdown: Path | None = None, plot_path: Path | None = None, plot_optional: bool = False,
) -> None:  # fmt: skip
    from ..bench import report
    from ..bench.results import save_document

    if out is not None:
        note(f"wrote {save_document(doc, out)}")
    for path, render in ((csv_path, report.to_csv), (markdown, report.to_markdown)):
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(render(doc), encoding="utf-8")
            note(f"wrote {path}")
    if plot_path is not None:
        try:
            note(f"wrote {report.plot(doc, plot_path)}")
        except report.PlotUnavailable as e:
            if not plot_optional:
                raise
            note(f"chart skipped: {e.one_line()}")


def _show(doc: dict[str, Any], json_out: bool) -> None:
    if json_out:
        print_json(doc)
    else:
        from ..bench.report import render_console

        render_console(doc)


def bench_command(
    name: Annotated[str, typer.Argument(help="Endpoint name.")],
    component: ComponentOpt = None,
    concurrency: ConcurrencyOpt = "1,4,8,32",
    requests: RequestsOpt = None,
    duration: DurationOpt = None,
    warmup: WarmupOpt = 0,
    rate: Annotated[
        str | None,
        typer.Option(
            "--rate",
            help="Open loop: Poisson arrivals, requests/s (comma list); "
            "--concurrency then caps requests in flight.",
        ),
    ] = None,
    workers: Annotated[
        int, typer.Option("--workers", help="Client processes (each with its own pool).")
    ] = 1,
    burstiness: BurstinessOpt = 1.0,
    slo: SloOpt = None,
    search: SearchOpt = False,
    slo_share: ShareOpt = 0.99,
    search_limit: SearchLimitOpt = 1024,
    max_probes: ProbesOpt = 16,
    requests_out: RequestsOutOpt = None,
    dataset: DatasetOpt = None,
    max_tokens: MaxTokensOpt = 256,
    temperature: TemperatureOpt = None,
    acceptance_wait: AcceptanceWaitOpt = "25s",
    out: Annotated[Path | None, typer.Option("--out", help="Write the results JSON.")] = None,
    csv_path: CsvOpt = None,
    markdown: MarkdownOpt = None,
    plot_path: PlotOpt = None,
    region: RegionOpt = None,
    json_out: JsonOpt = False,
    locust: Annotated[
        bool,
        typer.Option(
            "--locust",
            help="Send the load from Locust's distributed mode (a master and --locust-workers "
            "worker processes here): same client and metrics; needs sm-peagle[locust].",
        ),
    ] = False,
    locust_workers: Annotated[
        int, typer.Option("--locust-workers", help="Locust worker processes (with --locust).")
    ] = 2,
    locust_print_commands: Annotated[
        bool,
        typer.Option(
            "--locust-print-commands",
            help="Print the locust master and worker commands for several machines; run nothing.",
        ),
    ] = False,
) -> None:
    """Benchmark one endpoint at each concurrency level: tokens from usage, never chunks."""
    from ..bench.runner import bench_endpoint
    from ..errors import SpecError

    levels = _ints(concurrency, "--concurrency")
    if workers < 1:
        raise SpecError("--workers must be at least 1")
    opts = _bench_options(
        requests, duration, warmup, dataset, max_tokens, temperature, acceptance_wait
    )
    more = dict(
        slo=slo, search=search, share=slo_share, limit=search_limit, probes=max_probes,
        burstiness=burstiness, rate=rate, requests_out=None,
    )  # fmt: skip
    extra_options(**more)  # misuse: exit 2 before anything is sent or written
    require_plot(plot_path)
    if locust or locust_print_commands:
        if slo or search or burstiness != 1.0 or requests_out or component:
            raise SpecError(
                "--locust does not take --slo, --search-max-concurrency, --burstiness, "
                "--requests-out or --component"
            )
        if len(levels) > 1 or rate or duration or warmup or workers > 1 or locust_workers < 1:
            raise SpecError(
                "--locust runs one closed-loop level: one --concurrency (the users), "
                "--requests and --locust-workers >= 1; not --rate, --duration, --warmup, --workers"
            )
        _bench_locust(
            name, levels[0], locust_workers, locust_print_commands, opts, region, out=out,
            csv_path=csv_path, markdown=markdown, plot_path=plot_path, json_out=json_out,
        )  # fmt: skip
        return
    aws = _aws(region)
    from ..lifecycle.component_targets import resolve_component

    component = resolve_component(aws.client("sagemaker"), name, component)  # before traffic
    opts.update(extra_options(**{**more, "requests_out": requests_out}))
    doc = bench_endpoint(
        name, concurrency=levels, rates=_rates(rate), workers=workers, aws=aws, say=note,
        progress=live_counter(), component=component, **opts,
    )  # fmt: skip
    if requests_out is not None:
        note(f"wrote {requests_out} ({opts['requests_out'].lines} requests)")
    write_outputs(doc, out=out, csv_path=csv_path, markdown=markdown, plot_path=plot_path)
    _show(doc, json_out)


def _bench_locust(
    name: str, users: int, workers: int, print_only: bool, opts: dict[str, Any],
    region: str | None, *, out: Path | None, json_out: bool, **paths: Any,
) -> None:  # fmt: skip
    """`peagle bench --locust`: Locust master + workers here, or their commands printed."""
    from ..bench.distributed import commands_text, require_locust, run_locust

    common = {
        "users": users,
        "requests": opts["requests"] or max(8, 4 * users),  # as LoadSpec.planned_requests
        "dataset": opts["dataset"],
        "max_tokens": opts["max_tokens"],
        "temperature": opts["temperature"],
        "acceptance_wait_s": opts["acceptance_wait_s"],
    }
    if print_only:
        text = commands_text(
            name, workers=workers, region=region, out=str(out or "results.json"), **common
        )
        print(text)
        return
    require_locust()  # before any AWS call: one line, exit 2
    aws = _aws(region)
    doc = run_locust(name, workers=workers, region=aws.region, say=note, **common)
    write_outputs(doc, out=out, **paths)
    _show(doc, json_out)


def sweep_command(
    model: Annotated[str, typer.Argument(help="Catalog alias or JumpStart id.")],
    modes: Annotated[
        str, typer.Option("--modes", help="Comma-separated: baseline, eagle3, p-eagle.")
    ] = "baseline,eagle3,p-eagle",
    k: Annotated[str, typer.Option("-k", help="Comma-separated K values to try.")] = "3,7",
    concurrency: ConcurrencyOpt = "1,4,8,32,128",
    instance_type: InstanceTypeOpt = None,
    requests: RequestsOpt = None,
    duration: DurationOpt = None,
    warmup: WarmupOpt = 0,
    dataset: DatasetOpt = None,
    max_tokens: MaxTokensOpt = 256,
    temperature: TemperatureOpt = None,
    acceptance_wait: AcceptanceWaitOpt = "25s",
    slo: SloOpt = None,
    search: SearchOpt = False,
    slo_share: ShareOpt = 0.99,
    search_limit: SearchLimitOpt = 1024,
    max_probes: ProbesOpt = 16,
    requests_out: RequestsOutOpt = None,
    out_dir: Annotated[
        Path | None,
        typer.Option("--out-dir", help="Results directory (default: ./peagle-sweep-<time>)."),
    ] = None,
    keep: Annotated[
        bool, typer.Option("--keep", help="Keep the last configuration's endpoint.")
    ] = False,
    role: RoleOpt = None,
    region: RegionOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Deploy, benchmark and delete each mode x K in turn; compare; recommend K."""
    import time

    from ..bench.results import save_document
    from ..bench.sweep import configurations, run_sweep

    mode_list = [m.strip() for m in modes.split(",") if m.strip()]
    ks = _ints(k, "-k") if any(m != "baseline" for m in mode_list) else []
    levels = _ints(concurrency, "--concurrency")
    configs = configurations(mode_list, ks)  # bad --modes / -k: exit 2 before any AWS call
    for mode0, k0 in configs[:1]:  # a typo in MODEL: exit 2 before any deploy or directory
        require_plannable(
            model, mode=mode0, k=k0, instance_type=instance_type, role=role, region=region
        )
    if dataset is None:
        from ..bench.datasets import default_sweep_dataset

        dataset = default_sweep_dataset()  # HumanEval (the seed's set) when installed
    opts = _bench_options(
        requests, duration, warmup, dataset, max_tokens, temperature, acceptance_wait
    )
    more = dict(
        slo=slo, search=search, share=slo_share, limit=search_limit, probes=max_probes,
        burstiness=1.0, rate=None, requests_out=None,
    )  # fmt: skip
    extra_options(**more)
    out_dir = out_dir or Path(f"peagle-sweep-{time.strftime('%Y%m%d-%H%M%S')}")
    aws = _aws(region)
    opts.update(extra_options(**{**more, "requests_out": requests_out}))
    note(f"results go to {out_dir}/")
    doc = run_sweep(
        model, modes=mode_list, ks=ks, concurrency=levels, out_dir=out_dir,
        instance_type=instance_type, role=role, keep=keep, aws=aws, say=note, **opts,
    )  # fmt: skip
    save_document(doc, out_dir / "sweep.json")
    write_outputs(
        doc, csv_path=out_dir / "sweep.csv", markdown=out_dir / "sweep.md",
        plot_path=out_dir / "sweep.png", plot_optional=True,
    )  # fmt: skip
    note(f"sweep took {doc['elapsed_s']:.1f}s; left behind: {doc['cleanup']['kept'] or 'nothing'}")
    _show(doc, json_out)
    if not doc["runs"]:
        from ..errors import PeagleError

        raise PeagleError("every configuration failed", remedy=f"see {out_dir}/sweep.json")
