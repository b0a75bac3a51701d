"""`peagle bench` and `peagle sweep`: measure endpoints honestly and compare configurations
(`peagle report`, which re-renders stored results, is in report_cmd.py).

Each command parses its options, makes one SDK call (the client's `bench` /
`sweep`, which validate every value and write the result files, JSON first, before
returning) and renders the typed result. Progress goes to stderr; `--json` prints the one
results document on stdout.
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
)
from .bench_render import render_measurement
from .options import (
    AcceptanceWaitOpt,
    DatasetOpt,
    MaxTokensOpt,
    TemperatureOpt,
    concurrency_option,
    k_list_option,
    output_option,
    requests_option,
)
from .output import current, live_counter, note
from .spec_options import InstanceTypeOpt, JsonOpt, RegionOpt, RoleOpt

ConcurrencyOpt = concurrency_option("Comma-separated concurrency levels.")
# The bound is measure_checks.MAX_REQUESTS (written out: --help imports no SDK module).
RequestsOpt = requests_option(
    "Requests per level, 1 to 100,000 (default: 4 x concurrency, >= 8); --duration for longer runs."
)
BenchOutputOpt = output_option("Write the results JSON here (was --out).")
SweepOutputOpt = output_option("Results directory (default: ./peagle-sweep-<time>; was --out-dir).")
SweepKOpt = k_list_option("Comma-separated K values to try.")
DurationOpt = Annotated[
    str | None, typer.Option("--duration", help="Run each level this long instead (60s, 5m).")
]
WarmupOpt = Annotated[int, typer.Option("--warmup", help="Unmeasured requests before each level.")]
CsvOpt = Annotated[Path | None, typer.Option("--csv", help="Write a CSV (one row per level).")]
MarkdownOpt = Annotated[Path | None, typer.Option("--markdown", help="Write a markdown report.")]
PlotOpt = Annotated[
    Path | None, typer.Option("--plot", help="Write a PNG chart (needs sm-peagle[plot]).")
]
# Text, not float: the SDK checks it, so a bad value gets the same one-line error as there.
MaxErrorRateOpt = Annotated[
    str,
    typer.Option(
        "--max-error-rate",
        help="Exit 1 (after printing and writing the results) when more than this share "
        "of requests fail, 0 to 1 (default 0.05). A level also stops, failing the run, "
        "after max(10, 2 x concurrency) requests in a row could not connect.",
    ),
]


def _target(aws: Any) -> None:
    """The "talking to: ..." line, once the SDK has checked the credentials."""
    from ..ops.target import talking_to

    note(talking_to(aws.region))


def measure_client(region: str | None, *, say_where: bool = True) -> Any:
    """The client a measurement command runs on: `region`, progress lines on stderr and,
    with `say_where`, the "talking to: ..." line once the credentials are checked.
    (Until `cli/context.py` builds the one client of every command from the global
    options.)"""
    from ..client import Client

    return Client(region=region, progress=note, on_connect=_target if say_where else None)


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
    out: BenchOutputOpt = None,
    csv_path: CsvOpt = None,
    markdown: MarkdownOpt = None,
    plot_path: PlotOpt = None,
    max_error_rate: MaxErrorRateOpt = "0.05",
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
    from ..errors import BenchmarkFailed, OutputNotWritten

    try:
        result = measure_client(region).bench(
            name, component=component, concurrency=concurrency, rate=rate,
            requests=requests, duration=duration, warmup=warmup, workers=workers,
            burstiness=burstiness, slo=slo, search=search, slo_share=slo_share,
            search_limit=search_limit, max_probes=max_probes, dataset=dataset,
            max_tokens=max_tokens, temperature=temperature, acceptance_wait=acceptance_wait,
            requests_out=requests_out, out=out, csv=csv_path, markdown=markdown,
            plot=plot_path, max_error_rate=max_error_rate, locust=locust,
            locust_workers=locust_workers,
            locust_print_commands=locust_print_commands, progress=live_counter(),
        )  # fmt: skip
    except (OutputNotWritten, BenchmarkFailed) as e:  # measured: show it, then fail
        current().result(e.result, render=render_measurement)
        raise
    if result.commands is not None:
        print(result.commands)
        return
    current().result(result, render=render_measurement)


def sweep_command(
    model: Annotated[str, typer.Argument(help="Catalog alias or JumpStart id.")],
    modes: Annotated[
        str, typer.Option("--modes", help="Comma-separated: baseline, eagle3, p-eagle.")
    ] = "baseline,eagle3,p-eagle",
    k: SweepKOpt = "3,7",
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
    out_dir: SweepOutputOpt = None,
    keep: Annotated[
        bool, typer.Option("--keep", help="Keep the last configuration's endpoint.")
    ] = False,
    role: RoleOpt = None,
    region: RegionOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Deploy, benchmark and delete each mode x K in turn; compare; recommend K."""
    from ..errors import PeagleError

    result = measure_client(region).sweep(
        model, modes=modes, k=k, concurrency=concurrency, instance_type=instance_type,
        requests=requests, duration=duration, warmup=warmup, dataset=dataset,
        max_tokens=max_tokens, temperature=temperature, acceptance_wait=acceptance_wait,
        slo=slo, search=search, slo_share=slo_share, search_limit=search_limit,
        max_probes=max_probes, requests_out=requests_out, out_dir=out_dir, keep=keep,
        role=role,
    )  # fmt: skip
    kept = result.cleanup.get("kept")
    note(f"sweep took {result.elapsed_s:.1f}s; left behind: {kept or 'nothing'}")
    current().result(result, render=render_measurement)
    if result.failed:
        raise PeagleError("every configuration failed", remedy=f"see {result.out_dir}/sweep.json")
