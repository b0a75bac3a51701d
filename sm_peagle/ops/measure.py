"""Measurement as SDK calls: `bench` and `race`, the traffic that measures endpoints
(`tune_k` and `report`, which work from a bench document, are in measure_analysis.py;
`sweep`, which deploys, is in measure_sweep.py), the methods of `MeasureOps`, a mixin of
`sm_peagle.Client`.

Each validates every argument first (`SpecError`, exit 2, with a fix; through
`ops.measure_checks`, the one validation the CLI shares), before any request is sent or
any file written; then does the work and returns a typed result (`ops.measure_results`)
whose `to_dict()` is the `--json` document. Progress goes to the client's callbacks
(`progress`, `on_connect`) and the per-call ones (`progress=` of `bench`, `on_update=` of
`race`), never to stdout.

    client = sm_peagle.Client(region="us-east-1")
    r = client.bench("my-endpoint", concurrency=2, requests=16)
    r.levels[0]["output_tokens_per_s"]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..errors import BenchmarkFailed, Param, SpecError, text
from .measure_checks import (
    EndpointHandle,
    check_error_rate,
    check_locust,
    check_max_tokens,
    check_temperature,
    load_options,
    locust_common,
    parse_levels,
    parse_rates,
    race_targets,
    slo_options,
)
from .measure_files import check_paths, require_plot, write_outputs
from .measure_results import BenchResult, RaceResult
from .session import Session, check_endpoint_name

__all__ = ["DEFAULT_RACE_PROMPT", "Levels", "MeasureOps", "Seconds"]

Levels = int | Sequence[int] | str
Seconds = float | str

DEFAULT_RACE_PROMPT = (
    "Write a Python function `merge_intervals(intervals)` that merges overlapping closed "
    "intervals and returns them sorted, with a docstring and three doctests."
)


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


class MeasureOps(Session):
    """Measuring endpoints: `bench`, `race` (a mixin of `sm_peagle.Client`; `tune_k` and
    `report` are `AnalysisOps`, `sweep` is `SweepOps`, `invoke`/`chat` are `TrafficOps`)."""

    def _target(self, endpoint: str | EndpointHandle, component: str | None) -> tuple[
        str, Any, str | None
    ]:  # fmt: skip
        """(name, AWS context, InferenceComponentName), the component checked before any
        traffic. An Endpoint handle brings its own session."""
        if not isinstance(endpoint, str):
            if self.on_connect is not None:
                self.on_connect(endpoint.aws)
            return endpoint.name, endpoint.aws, endpoint.inference_component(component)
        from ..lifecycle.component_targets import resolve_component

        check_endpoint_name(endpoint, field="endpoint")
        ctx = self._connect()
        return endpoint, ctx, resolve_component(ctx.client("sagemaker"), endpoint, component)

    def bench(
        self,
        endpoint: str | EndpointHandle,
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
        progress: Callable[[int, int | None], None] | None = None,
    ) -> BenchResult:
        """Benchmark one endpoint at each concurrency level: tokens from vLLM's usage,
        never chunks; what the endpoint runs is read back from SageMaker.

        The document is `peagle.bench/3` (docs/bench-schema.md): latencies as `vllm bench
        serve` defines them; each level's acceptance exact from vLLM's per-request metrics
        where the image reports them (`source: per-request`), else from its log lines
        (`windowed`, with a warning when other traffic is mixed in); `client_late` with a
        warning (also said) when the client sent late; the label of what produced it.
        Every argument is checked before any request.

        Args:
            endpoint: the endpoint's name, or an `Endpoint` handle (its session is used).
            component: the inference component to benchmark, where the endpoint hosts
                several (its short name is enough); checked before any traffic.
            concurrency: the levels: an int, a list of ints or `"1,4,8"`.
            rate: open loop: Poisson arrivals in requests/s (a number, a list or
                `"0.5,2"`); `concurrency` then caps the requests in flight.
            requests: requests per level (default 4 x concurrency, at least 8).
            duration: run each level this long instead (`"60s"`, or seconds).
            warmup: unmeasured requests before each level.
            workers: client processes, each with its own connection pool.
            burstiness: with `rate`, gamma inter-arrivals of this shape (1 is Poisson).
            slo: service-level objectives (`"ttft=500ms,tpot=50ms"` or `{"ttft": 0.5}`):
                each level then reports goodput.
            search: find the highest concurrency meeting `slo` instead of `concurrency`.
            slo_share: the share of requests that must meet the SLO in the search.
            search_limit: the highest concurrency the search may probe.
            max_probes: the most levels the search runs.
            dataset: `peagle-builtin` (default), a JSONL file, `humaneval`, `mt-bench` or
                `speed-bench`.
            max_tokens: max_tokens per request.
            temperature: sampling temperature, 0 (greedy) to 2; None: the model's default.
            acceptance_wait: how long to wait for vLLM's SpecDecoding log line after the
                last level, for images without per-request acceptance.
            requests_out: write each request as a JSON line as it finishes; the file is
                replaced only when the run completes (interrupted, the previous file is
                untouched and a progress line names the partial file).
            out: write the results JSON here.
            csv: write a CSV, one row per level.
            markdown: write a markdown report.
            plot: write a PNG chart (needs sm-peagle[plot]).
            max_error_rate: a fraction from 0 to 1, default 0.05. When more than that
                share of the measured requests failed, or a level was stopped because the
                endpoint stopped answering (max(10, 2 x concurrency) requests in a row
                could not connect; no later level runs), every file is still written and
                `BenchmarkFailed` is raised with the result in `.result`.
            locust: send the load from Locust's distributed mode (needs sm-peagle[locust]).
            locust_workers: Locust worker processes, with `locust`.
            locust_print_commands: only the master and worker commands for several
                machines, in `.commands`; nothing runs, nothing is sent.
            progress: called with (done, planned) after each request of this run (a
                per-run counter, not the client's progress lines).

        Returns:
            BenchResult: the document, the files written, `requests_out` and
            `requests_written`; `.commands` with `locust_print_commands`.

        Raises:
            SpecError: a bad argument, before any request or file.
            NotFound: no such endpoint or component.
            BenchmarkFailed: the run failed its `max_error_rate` bar (files written).
            OutputNotWritten: a result file could not be written (result in `.result`).
        """
        limit = check_error_rate(max_error_rate)
        levels = parse_levels(concurrency, "concurrency")
        rates = parse_rates(rate)
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise SpecError(
                text("{workers} must be a whole number >= 1, got {v!r}", v=workers),
                field="workers", value=workers, rule="a whole number >= 1",
                remedy=text("{w} (one client process) or more", w=Param("workers", 1)),
            )  # fmt: skip
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
        require_plot(plot=plot)
        if locust or locust_print_commands:
            check_locust(levels, opts, locust_workers, slo=slo, search=search, rate=rate,
                         burstiness=burstiness, requests_out=requests_out,
                         component=component, workers=workers)  # fmt: skip
        name = endpoint if isinstance(endpoint, str) else endpoint.name
        if locust_print_commands:  # `out` is the master's path, maybe on another machine
            from ..benchmarking.distributed import commands_text

            commands = commands_text(
                name, workers=locust_workers, region=self.region,
                out=str(out or "results.json"), **locust_common(levels[0], opts),
            )  # fmt: skip
            return BenchResult({}, commands=commands)
        paths = check_paths(out=out, csv=csv, markdown=markdown, plot=plot,
                            requests_out=requests_out)  # fmt: skip
        files = {k: paths[k] for k in ("out", "csv", "markdown", "plot")}
        if locust:
            return self._bench_locust(endpoint, levels, opts, locust_workers, limit, files)
        from ..benchmarking.datasets import Dataset, load_dataset
        from ..benchmarking.runner import bench_endpoint

        ds = opts["dataset"]
        opts["dataset"] = ds if isinstance(ds, Dataset) else load_dataset(ds)  # before traffic
        name, ctx, ic = self._target(endpoint, component)
        exporter = None
        if paths["requests_out"] is not None:
            from ..benchmarking.export import RequestExporter

            exporter = RequestExporter(paths["requests_out"])
        try:
            doc = bench_endpoint(
                name, concurrency=levels, rates=rates, workers=workers, aws=ctx,
                say=self._say, progress=progress, component=ic, requests_out=exporter, **opts,
            )  # fmt: skip
        except BaseException:  # Ctrl-C, a kill signal, a failure: the previous file stays
            where = exporter.abandon() if exporter is not None else None
            if where is not None:
                self._say(where)
            raise
        lines = exporter.lines if exporter is not None else 0  # every level has run: final
        result = BenchResult(doc, [], requests_out=paths["requests_out"], requests_written=lines)

        def write() -> list[Path]:
            if exporter is not None:
                exporter.finish()
                self._say(f"wrote {exporter.path} ({exporter.lines} requests)")
            return write_outputs(doc, self._say, **files)

        return _judged(result, limit, write)

    def _bench_locust(
        self, endpoint: str | EndpointHandle, levels: list[int], opts: dict[str, Any],
        locust_workers: int, limit: float, files: dict[str, Path | None],
    ) -> BenchResult:  # fmt: skip
        """`bench(locust=True)`: one closed-loop level from Locust's distributed mode."""
        from ..benchmarking.distributed import require_locust, run_locust

        require_locust()  # before any AWS call: one line, exit 2
        if isinstance(endpoint, str):
            name, ctx = endpoint, self._connect()
        else:
            name, ctx = endpoint.name, endpoint.aws
            if self.on_connect is not None:
                self.on_connect(ctx)
        doc = run_locust(name, workers=locust_workers, region=ctx.region, say=self._say,
                         **locust_common(levels[0], opts))  # fmt: skip
        result = BenchResult(doc, [])
        return _judged(result, limit, lambda: write_outputs(doc, self._say, **files))

    def race(
        self,
        a: str,
        b: str | None = None,
        *,
        components: Sequence[str] | None = None,
        prompt: str | None = None,
        max_tokens: int = 256,
        temperature: float | None = None,
        on_update: Callable[[list[Any]], None] | None = None,
    ) -> RaceResult:
        """Stream one prompt to two endpoints (`race("EP-A", "EP-B")`) or two inference
        components (`race("EP/p-eagle", "EP/baseline")`, or `race("EP",
        components=["p-eagle", "baseline"])`) at once; the verdict is on output tok/s.

        Before any traffic: the arguments, each side's component, and that each endpoint
        exists and is serving.

        Args:
            a: side A: `ENDPOINT` or `ENDPOINT/COMPONENT` (the one endpoint with
                `components`).
            b: side B, likewise (None with `components`).
            components: two inference components of endpoint `a` to race.
            prompt: the prompt both sides get (default: a short coding task).
            max_tokens: max_tokens for both sides.
            temperature: sampling temperature, 0 (greedy) to 2; None: the model's default.
            on_update: called a few times a second with both sides' live state (each
                lane's `snapshot()`): a per-call view, not the client's progress lines.

        Returns:
            RaceResult: both sides' numbers and texts, and the verdict line.

        Raises:
            SpecError: a bad argument or component, before any traffic.
            NotFound: an endpoint does not exist.
            PeagleError: an endpoint is not serving.
        """
        from ..benchmarking.race import RaceTarget
        from ..benchmarking.race import race as run_race
        from ..lifecycle.component_targets import resolve_component

        check_max_tokens(max_tokens)
        check_temperature(temperature)
        if prompt is not None and not prompt.strip():
            raise SpecError(text("{prompt}: empty; give some text"), field="prompt",
                            value=prompt, rule="non-empty text",
                            remedy=text("drop {prompt} for the default"))  # fmt: skip
        sides = race_targets(a, b, list(components or []))
        for (ep, _), side in zip(sides, ("a", "b"), strict=False):
            # The side's parameter: `b` when the second endpoint was given as b
            check_endpoint_name(ep, field=side if b is not None else "a")
        ctx = self._connect()
        sm = ctx.client("sagemaker")
        flag = "/" if "/" in a + (b or "") else "component"  # as the user wrote it
        ta, tb = (RaceTarget(ep, resolve_component(sm, ep, c, flag=flag)) for ep, c in sides)
        from .measure_traffic import require_endpoint

        for ep in dict.fromkeys(ep for ep, _ in sides):  # both sides can answer, before traffic
            require_endpoint(ctx, ep, serving=True)
        doc = run_race(
            ta, tb, aws=ctx, prompt=prompt or DEFAULT_RACE_PROMPT, max_tokens=max_tokens,
            temperature=temperature, on_update=on_update,
        )  # fmt: skip
        from .. import plugins
        from ..benchmarking.results import simulated_marker

        # Only made-up answers say `simulated`; a target's real engine is named by its
        # label (plugins.source_label()), as AWS is.
        doc.update(simulated_marker(plugins.source_label()))
        return RaceResult(doc)
