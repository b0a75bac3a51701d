"""Measurement as SDK calls: `bench`, `race`, `tune_k`, `report` (`sweep`, which deploys,
is in measure_sweep.py).

Each validates every argument first (`SpecError`, exit 2, with a fix; through
`ops.measure_checks`, the one validation the CLI shares), before any request is sent or
any file written; then does the work and returns a typed result (`ops.measure_results`)
whose `to_dict()` is the `--json` document. Progress goes to callbacks (`say`,
`progress`, `on_update`, `on_connect`), never to stdout.

    r = sm_peagle.bench("my-endpoint", concurrency=2, requests=16)
    r.levels[0]["output_tokens_per_s"]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import BenchmarkFailed, PeagleError, SpecError
from .measure_checks import (
    check_error_rate,
    check_max_tokens,
    check_requests,
    check_temperature,
    parse_levels,
    parse_rates,
    parse_seconds,
)
from .measure_results import BenchResult, RaceResult, ReportResult, TuneKResult
from .session import OnConnect, Say, check_endpoint_name, check_output_path, context, quiet

if TYPE_CHECKING:
    from ..endpoint import Endpoint

__all__ = ["DEFAULT_RACE_PROMPT", "bench", "race", "report", "tune_k"]

Levels = int | Sequence[int] | str
Seconds = float | str

DEFAULT_RACE_PROMPT = (
    "Write a Python function `merge_intervals(intervals)` that merges overlapping closed "
    "intervals and returns them sorted, with a docstring and three doctests."
)
RACE_USAGE = "peagle race EP-A EP-B | EP/COMP-A EP/COMP-B | EP --component A --component B"


def _require_plot(**flags: Any) -> None:
    """`--plot` and `--html` need matplotlib (sm-peagle[plot]): refused (exit 2) before
    anything runs, a file is written or a request is sent. `flags`: name -> path or None."""
    from ..benchmarking.report import PLOT_HINT, require_matplotlib

    for key, path in flags.items():
        if path is not None:
            flag = "--" + key
            require_matplotlib(flag, remedy=f"{PLOT_HINT}, or drop {flag}")


def load_options(
    *, requests: Any, duration: Any, warmup: Any, dataset: Any, max_tokens: Any,
    temperature: Any, acceptance_wait: Any,
) -> dict[str, Any]:  # fmt: skip
    """The load keyword arguments of `bench_endpoint`, validated."""
    if requests is not None and duration is not None:
        raise SpecError(
            "pass --requests or --duration, not both",
            remedy="--requests N for a count per level, --duration 60s for a time",
        )
    check_requests(requests)
    if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
        raise SpecError(
            f"--warmup must be a whole number >= 0, got {warmup!r}",
            remedy="--warmup 0 measures from the first request",
        )
    check_max_tokens(max_tokens)
    return {
        "requests": requests,
        "duration_s": None if duration is None else parse_seconds(duration, "--duration",
                                                                  allow_zero=False),
        "warmup": warmup,
        "dataset": dataset,
        "max_tokens": max_tokens,
        "temperature": check_temperature(temperature),
        "acceptance_wait_s": parse_seconds(acceptance_wait, "--acceptance-wait", allow_zero=True),
    }  # fmt: skip


def slo_options(
    *, slo: Any, search: bool, share: float, limit: int, probes: int, burstiness: float,
    rate: Any,
) -> dict[str, Any]:  # fmt: skip
    """SLO, goodput, the max-concurrency search and bursty arrivals, validated."""
    from ..benchmarking.slo import parse_slo

    slo_s = dict(slo) if isinstance(slo, dict) else parse_slo(slo)
    if not burstiness > 0:
        raise SpecError(
            f"--burstiness must be positive, got {burstiness!r}",
            remedy="1 is Poisson arrivals, below 1 burstier, e.g. 0.5",
        )
    if burstiness != 1.0 and not rate:
        raise SpecError(
            "--burstiness shapes open-loop arrivals: give --rate too",
            remedy="add --rate 2 (requests/s), or drop --burstiness",
        )
    out: dict[str, Any] = {"slo": slo_s, "burstiness": burstiness}
    if search:
        if slo_s is None:
            raise SpecError(
                "--search-max-concurrency needs --slo (what must hold)",
                remedy="add e.g. --slo ttft=500ms,tpot=50ms",
            )
        if rate:
            raise SpecError(
                "--search-max-concurrency is closed loop: drop --rate",
                remedy="drop --rate, or drop --search-max-concurrency",
            )
        if not 0 < share <= 1 or limit < 1 or probes < 1:
            raise SpecError(
                "need 0 < --slo-share <= 1, --search-limit >= 1, --max-probes >= 1, got "
                f"{share!r}, {limit!r}, {probes!r}",
                remedy="e.g. --slo-share 0.99 --search-limit 1024 --max-probes 16",
            )
        out["search"] = {"target_share": share, "max_concurrency": limit, "max_probes": probes}
    return out


def write_outputs(
    doc: dict[str, Any], say: Say, *, out: Path | None = None, csv: Path | None = None,
    markdown: Path | None = None, plot: Path | None = None, plot_optional: bool = False,
) -> list[Path]:  # fmt: skip
    """Result files, JSON first (so a missing plotting library never costs the numbers)."""
    from ..benchmarking import report as rep
    from ..benchmarking.files import write_atomic
    from ..benchmarking.results import save_document

    written: list[Path] = []
    if out is not None:
        written.append(save_document(doc, out))
        say(f"wrote {written[-1]}")
    for path, render in ((csv, rep.to_csv), (markdown, rep.to_markdown)):
        if path is not None:
            written.append(write_atomic(path, render(doc)))
            say(f"wrote {path}")
    if plot is not None:
        try:
            written.append(rep.plot(doc, plot))
            say(f"wrote {written[-1]}")
        except rep.PlotUnavailable as e:
            if not plot_optional:
                raise
            say(f"chart skipped: {e.one_line()}")
    return written


def _endpoint_and_component(
    endpoint: str | Endpoint, component: str | None, region: str | None, aws: Any,
    on_connect: OnConnect | None,
) -> tuple[str, Any, str | None]:  # fmt: skip
    """(name, aws, InferenceComponentName), the component checked before any traffic."""
    if not isinstance(endpoint, str):  # an Endpoint handle: its session and its checks
        context(None, endpoint.aws, on_connect)
        return endpoint.name, endpoint.aws, endpoint.inference_component(component)
    from ..lifecycle.component_targets import resolve_component

    check_endpoint_name(endpoint)
    aws = context(region, aws, on_connect)
    return endpoint, aws, resolve_component(aws.client("sagemaker"), endpoint, component)


# The SDK's keyword -> the CLI's flag, where they differ (an error names the flag the user
# typed: `--out` was renamed `--output`).
_FLAG_OF = {"out": "--output"}


def _paths(**flags: Any) -> dict[str, Path | None]:
    return {
        key: check_output_path(value, _FLAG_OF.get(key) or "--" + key.replace("_", "-"))
        for key, value in flags.items()
    }


def bench(
    endpoint: str | Endpoint,
    *,
    component: str | None = None,
    concurrency: Levels = (1, 4, 8, 32),
    rate: float | Sequence[float] | str | None = None,
    requests: int | None = None,
    duration: Seconds | None = None,
    warmup: int = 0,
    workers: int = 1,
    burstiness: float = 1.0,
    slo: str | dict[str, float] | None = None,
    search: bool = False,
    slo_share: float = 0.99,
    search_limit: int = 1024,
    max_probes: int = 16,
    dataset: str | None = None,
    max_tokens: int = 256,
    temperature: float | None = None,
    acceptance_wait: Seconds = 25.0,
    requests_out: str | Path | None = None,
    out: str | Path | None = None,
    csv: str | Path | None = None,
    markdown: str | Path | None = None,
    plot: str | Path | None = None,
    max_error_rate: float | str = 0.05,
    locust: bool = False,
    locust_workers: int = 2,
    locust_print_commands: bool = False,
    region: str | None = None,
    aws: Any = None,
    say: Say | None = None,
    progress: Callable[[int, int | None], None] | None = None,
    on_connect: OnConnect | None = None,
) -> BenchResult:
    """Benchmark one endpoint at each concurrency level (`peagle bench`): tokens from vLLM's
    usage, never chunks; what the endpoint runs is read back from SageMaker.

    `concurrency`: an int, a list of ints or `"1,4,8"`. `rate`: open loop (Poisson
    arrivals, requests/s; `concurrency` then caps requests in flight). `requests` per level
    (default 4 x concurrency, >= 8) or `duration` ("60s", or seconds). `slo`
    ("ttft=500ms,tpot=50ms" or {"ttft": 0.5}) adds goodput; `search` finds the highest
    concurrency meeting it. `out`/`csv`/`markdown`/`plot`/`requests_out`: files to write
    (checked writable first); `requests_out` gets each request's line as it finishes and
    replaces the file only when the run completes (interrupted, the previous file is
    untouched and `say` names the partial file holding what was measured). `locust`: send
    the load from Locust's distributed mode; `locust_print_commands`: only the master and
    worker commands for several machines, in `.commands` (nothing runs, nothing is sent).

    `max_error_rate`: a fraction from 0 to 1, default 0.05. When more than that share of
    the run's measured requests failed, or a level was stopped because the endpoint
    stopped answering (max(10, 2 x concurrency) requests in a row could not connect; no
    later level runs; see benchmarking/breaker.py), every file is still written and
    `BenchmarkFailed` is raised with the result in `.result` (the CLI prints it, exit 1).

    The document is `peagle.bench/3` (docs/bench-schema.md): latencies as `vllm bench
    serve` defines them; each level's acceptance exact from vLLM's per-request metrics
    where the image reports them (`source: per-request`), else from its log lines
    (`windowed`, with a warning when other traffic is mixed in); `client_late` with a
    warning (also said) when the client sent late; the label of what produced it.

    Every argument is checked before any request (SpecError); `say` gets progress lines,
    `progress(done, planned)` each finished request, `on_connect(aws)` the AWS context
    once credentials are checked."""
    say = say or quiet
    limit = check_error_rate(max_error_rate)
    levels = parse_levels(concurrency, "--concurrency")
    rates = parse_rates(rate)
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise SpecError(
            f"--workers must be a whole number >= 1, got {workers!r}",
            remedy="--workers 1 (one client process) or more",
        )
    opts = load_options(
        requests=requests, duration=duration, warmup=warmup, dataset=dataset,
        max_tokens=max_tokens, temperature=temperature, acceptance_wait=acceptance_wait,
    )  # fmt: skip
    opts.update(
        slo_options(
            slo=slo, search=search, share=slo_share, limit=search_limit, probes=max_probes,
            burstiness=burstiness, rate=rate,
        )
    )  # fmt: skip
    _require_plot(plot=plot)
    if locust or locust_print_commands:
        _check_locust(levels, opts, locust_workers, slo=slo, search=search, rate=rate,
                      burstiness=burstiness, requests_out=requests_out, component=component,
                      workers=workers)  # fmt: skip
    if locust_print_commands:  # `out` is the master's path, maybe on another machine
        from ..benchmarking.distributed import commands_text

        name = endpoint if isinstance(endpoint, str) else endpoint.name
        text = commands_text(
            name,
            workers=locust_workers,
            region=region,
            out=str(out or "results.json"),
            **_locust_common(levels[0], opts),
        )
        return BenchResult({}, commands=text)  # fmt: skip
    paths = _paths(out=out, csv=csv, markdown=markdown, plot=plot, requests_out=requests_out)
    files = {k: paths[k] for k in ("out", "csv", "markdown", "plot")}
    if locust:
        from ..benchmarking.distributed import require_locust, run_locust

        require_locust()  # before any AWS call: one line, exit 2
        name = endpoint if isinstance(endpoint, str) else endpoint.name
        ctx = context(region, aws if isinstance(endpoint, str) else endpoint.aws, on_connect)
        doc = run_locust(name, workers=locust_workers, region=ctx.region, say=say,
                         **_locust_common(levels[0], opts))  # fmt: skip
        result = BenchResult(doc, [])
        return _judged(result, limit, lambda: write_outputs(doc, say, **files))
    from ..benchmarking.datasets import Dataset, load_dataset
    from ..benchmarking.runner import bench_endpoint

    ds = opts["dataset"]
    opts["dataset"] = ds if isinstance(ds, Dataset) else load_dataset(ds)  # before traffic
    name, ctx, ic = _endpoint_and_component(endpoint, component, region, aws, on_connect)
    exporter = None
    if paths["requests_out"] is not None:
        from ..benchmarking.export import RequestExporter

        exporter = RequestExporter(paths["requests_out"])
    try:
        doc = bench_endpoint(
            name, concurrency=levels, rates=rates, workers=workers, aws=ctx, say=say,
            progress=progress, component=ic, requests_out=exporter, **opts,
        )  # fmt: skip
    except BaseException:  # Ctrl-C, a kill signal, a failure: the previous file stays
        where = exporter.abandon() if exporter is not None else None
        if where is not None:
            say(where)
        raise
    lines = exporter.lines if exporter is not None else 0  # every level has run: final
    result = BenchResult(doc, [], requests_out=paths["requests_out"], requests_written=lines)

    def write() -> list[Path]:
        if exporter is not None:
            exporter.finish()
            say(f"wrote {exporter.path} ({exporter.lines} requests)")
        return write_outputs(doc, say, **files)

    return _judged(result, limit, write)


def _judged(result: BenchResult, limit: float, write: Callable[[], list[Path]]) -> BenchResult:
    """Write the result files, then judge the run: `BenchmarkFailed` (carrying the
    result) when its error rate is over `limit` or a level was stopped; a file that
    cannot be written is `OutputNotWritten`, also carrying it. The files come first:
    what was measured is never lost to the verdict."""
    from dataclasses import replace

    from ..benchmarking.breaker import run_verdict
    from ..benchmarking.files import OutputNotWritten

    try:
        result = replace(result, written=write())  # frozen: the result with its files
    except OutputNotWritten as e:
        e.result = result  # measured and complete: the caller still has every number
        raise
    verdict = run_verdict(result.document, limit)
    if verdict is not None:
        raise BenchmarkFailed(
            verdict["message"], remedy=verdict["remedy"], result=result,
            error_rate=verdict["error_rate"], max_error_rate=limit,
        )  # fmt: skip
    return result


def _check_locust(levels: list[int], opts: dict[str, Any], locust_workers: Any, *,
                  slo: Any, search: bool, rate: Any, burstiness: float, requests_out: Any,
                  component: Any, workers: int) -> None:  # fmt: skip
    if slo or search or burstiness != 1.0 or requests_out or component:
        raise SpecError(
            "--locust does not take --slo, --search-max-concurrency, --burstiness, "
            "--requests-out or --component"
        )
    bad_workers = isinstance(locust_workers, bool) or not isinstance(locust_workers, int)
    if (len(levels) > 1 or rate or opts["duration_s"] or opts["warmup"] or workers > 1
            or bad_workers or locust_workers < 1):  # fmt: skip
        raise SpecError(
            "--locust runs one closed-loop level: one --concurrency (the users), "
            "--requests and --locust-workers >= 1; not --rate, --duration, --warmup, --workers"
        )


def _locust_common(users: int, opts: dict[str, Any]) -> dict[str, Any]:
    return {
        "users": users,
        "requests": opts["requests"] or max(8, 4 * users),  # as LoadSpec.planned_requests
        "dataset": opts["dataset"],
        "max_tokens": opts["max_tokens"],
        "temperature": opts["temperature"],
        "acceptance_wait_s": opts["acceptance_wait_s"],
    }


def _race_targets(a: str, b: str | None, components: list[str]) -> list[tuple[str, str | None]]:
    """[(endpoint, component or None)] for sides A and B, from the arguments."""
    if components:
        if b is not None or "/" in a or len(components) != 2:
            raise SpecError(
                "--component races two components of one endpoint: give one endpoint and "
                f"--component twice (got {1 + (b is not None)} endpoint(s), "
                f"{len(components)} --component)",
                remedy=RACE_USAGE,
            )
        return [(a, components[0]), (a, components[1])]
    if b is None:
        raise SpecError("race needs two sides", remedy=RACE_USAGE)
    out: list[tuple[str, str | None]] = []
    for side in (a, b):
        endpoint, slash, component = side.partition("/")
        if not endpoint or (slash and (not component or "/" in component)):
            raise SpecError(
                f"race: {side!r} is not ENDPOINT or ENDPOINT/COMPONENT", remedy=RACE_USAGE
            )
        out.append((endpoint, component or None))
    return out


def race(
    a: str,
    b: str | None = None,
    *,
    components: Sequence[str] | None = None,
    prompt: str | None = None,
    max_tokens: int = 256,
    temperature: float | None = None,
    region: str | None = None,
    aws: Any = None,
    on_update: Callable[[list[Any]], None] | None = None,
) -> RaceResult:
    """Stream one prompt to two endpoints (`race("EP-A", "EP-B")`), two components
    (`race("EP/p-eagle", "EP/baseline")` or `race("EP", components=["p-eagle",
    "baseline"])`) at once; verdict on output tok/s. `on_update(lanes)` is called a few
    times a second with both sides' live state (`lane.snapshot()`).

    Before any traffic: the arguments (SpecError), each side's component, and that each
    endpoint exists (NotFound) and is serving (PeagleError)."""
    from ..benchmarking.race import RaceTarget
    from ..benchmarking.race import race as run_race
    from ..lifecycle.component_targets import resolve_component

    check_max_tokens(max_tokens)
    check_temperature(temperature)
    if prompt is not None and not prompt.strip():
        raise SpecError("--prompt: empty; give some text", remedy="drop --prompt for the default")
    sides = _race_targets(a, b, list(components or []))
    for ep, _ in sides:
        check_endpoint_name(ep)
    ctx = context(region, aws, None)
    sm = ctx.client("sagemaker")
    flag = "/" if "/" in a + (b or "") else "--component"  # as the user wrote it, for messages
    ta, tb = (RaceTarget(ep, resolve_component(sm, ep, c, flag=flag)) for ep, c in sides)
    from .measure_traffic import require_endpoint

    for ep in dict.fromkeys(ep for ep, _ in sides):  # both sides can answer, before traffic
        require_endpoint(ctx, ep, serving=True)
    doc = run_race(
        ta, tb, aws=ctx, prompt=prompt or DEFAULT_RACE_PROMPT, max_tokens=max_tokens,
        temperature=temperature, on_update=on_update,
    )  # fmt: skip
    from .. import settings
    from ..benchmarking.results import simulated_marker

    # Only the SIMULATED engine's answers say `simulated`; the sandbox's real vLLM engine
    # is named by the document's label (settings.source_label()), as AWS is.
    doc.update(simulated_marker(settings.source_label()))
    return RaceResult(doc)


def _estimates(doc: dict[str, Any], position_cost: float, tolerance: float) -> list[dict]:
    from ..benchmarking.tune_k import estimate_for_level

    if doc.get("mode") in (None, "baseline") or not doc.get("k"):
        raise PeagleError(
            f"{doc.get('endpoint')} runs no speculation: nothing to tune",
            remedy="give a p-eagle or eagle3 endpoint, or --component naming one that speculates",
        )
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


def tune_k(
    endpoint: str | Endpoint,
    *,
    component: str | None = None,
    concurrency: Levels = 1,
    requests: int = 16,
    max_tokens: int = 256,
    dataset: str | None = None,
    results: str | Path | None = None,
    position_cost: float = 0.0,
    tolerance: float = 0.02,
    acceptance_wait: Seconds = 25.0,
    max_error_rate: float | str = 0.05,
    region: str | None = None,
    aws: Any = None,
    say: Say | None = None,
) -> TuneKResult:
    """ESTIMATE output tok/s at every K' <= the deployed K from one deployment (`peagle
    tune-k`): vLLM's per-position acceptance rates plus the step cost measured at K,
    without redeploying, at each `concurrency` level (checked as `bench` checks it), for
    one inference `component` where the endpoint hosts several. `results`: a stored bench
    document instead (sends nothing). `max_error_rate` (default 0.05) judges the bench it
    runs, as `bench` does: over it, `BenchmarkFailed` and no estimate."""
    from ..benchmarking.results import is_simulated
    from ..benchmarking.tune_k import ESTIMATE_LABEL

    say = say or quiet
    check_error_rate(max_error_rate)
    if position_cost < 0 or not 0 <= tolerance < 1:
        raise SpecError(
            f"--position-cost must be >= 0 and --tolerance in [0, 1), got {position_cost!r} "
            f"and {tolerance!r}",
            remedy="e.g. --position-cost 0 --tolerance 0.02",
        )
    if results is not None:
        from ..benchmarking.results import load_document

        doc = load_document(Path(results))
        if doc["kind"] != "bench":
            raise SpecError(
                f"{results}: give one endpoint's bench document, not a sweep",
                remedy="pass one configuration's JSON from the sweep's directory",
            )
    else:
        check_requests(requests)
        if requests is None:
            raise SpecError(
                "--requests must be a whole number >= 1, got None", remedy="e.g. --requests 16"
            )
        doc = bench(
            endpoint, component=component, concurrency=concurrency, requests=requests,
            max_tokens=max_tokens, dataset=dataset, acceptance_wait=acceptance_wait,
            max_error_rate=max_error_rate, region=region, aws=aws, say=say,
        ).document  # fmt: skip
    ests = _estimates(doc, position_cost, tolerance)
    notes = []
    if doc.get("mode") == "eagle3" and position_cost == 0:
        notes.append(
            "EAGLE-3 drafts one position per pass: a flat step cost flatters large "
            "K; pass --position-cost (the share of a step one draft position costs)"
        )
        say(notes[-1])  # fmt: skip
    out = {
        "endpoint": doc.get("endpoint"),
        "label": ESTIMATE_LABEL,
        **({"simulated": True} if is_simulated(doc) else {}),  # the SIMULATED engine only
        "mode": doc.get("mode"),
        "k": doc.get("k"),
        "estimates": ests,
    }
    return TuneKResult(out, notes=notes)


# Sweep fields derived from `runs` only: recomputed on every load.
DERIVED = (
    "schema", "kind", "label", "simulated", "runs", "table", "recommendation", "k_schedule",
    "max_concurrency",
)  # fmt: skip


def load_results(path: str | Path) -> dict[str, Any]:
    """A results file, or a directory: its sweep.json, else its bench documents combined.
    Derived parts (comparison table, K recommendation) are recomputed from the runs."""
    from ..benchmarking.results import load_document
    from ..benchmarking.sweep import combine_runs

    path = Path(path)
    if path.is_dir():
        if (path / "sweep.json").exists():
            doc = load_document(path / "sweep.json")
        else:
            runs = [load_document(p) for p in sorted(path.glob("*.json"))]
            runs = [r for r in runs if r["kind"] == "bench"]
            if not runs:
                raise SpecError(
                    f"no peagle.bench results in {path}",
                    remedy="give a results JSON or a directory `peagle bench` / "
                    "`peagle sweep` wrote",
                )
            return combine_runs(runs)
    else:
        doc = load_document(path)
    if doc["kind"] != "sweep":
        return doc
    return combine_runs(doc["runs"], extra={k: v for k, v in doc.items() if k not in DERIVED})


def report(
    path: str | Path,
    *,
    markdown: str | Path | None = None,
    csv: str | Path | None = None,
    plot: str | Path | None = None,
    html: str | Path | None = None,
    say: Say | None = None,
) -> ReportResult:
    """Re-read stored results (a file, or a directory of them; no AWS access) and write
    them again as markdown, CSV, PNG or one self-contained HTML page (`peagle report`).
    Every output path, and matplotlib for `plot`/`html`, is checked before anything is
    read or written (SpecError, exit 2)."""
    say = say or quiet
    paths = _paths(markdown=markdown, csv=csv, plot=plot, html=html)
    _require_plot(plot=plot, html=html)  # before any file is read or written
    doc = load_results(path)
    written = write_outputs(
        doc, say, csv=paths["csv"], markdown=paths["markdown"], plot=paths["plot"]
    )
    if paths["html"] is not None:
        from ..benchmarking.html_report import write_html

        written.append(write_html(doc, paths["html"]))
        say(f"wrote {written[-1]}")
    return ReportResult(doc, written)
