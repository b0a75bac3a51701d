"""What is worked out from a bench document, as SDK calls: `tune_k` (the output tok/s
each K' <= the deployed K would give, estimated from one bench, run for it or stored)
and `report` (stored results written again as markdown, CSV, PNG or HTML), the methods
of `AnalysisOps`, a mixin of `sm_peagle.Client`. Apart from measure.py, which sends the
traffic: `tune_k` runs its bench through the client's own `bench`, and `report` sends
nothing.

Each validates every argument first (`SpecError`, exit 2, with a fix), before any request
is sent or any file written, and returns a typed result (`ops.measure_results`) whose
`to_dict()` is the `--json` document.

    client = sm_peagle.Client(region="us-east-1")
    client.tune_k("my-endpoint", concurrency=1, requests=16).estimates
    client.report("results/", html="report.html")
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import Param, PeagleError, SpecError, text
from .measure import Levels, Seconds
from .measure_checks import EndpointHandle, check_error_rate, check_requests
from .measure_files import check_paths, load_results, require_plot, write_outputs
from .measure_results import ReportResult, TuneKResult
from .session import Session

__all__ = ["AnalysisOps"]


def _estimates(doc: dict[str, Any], position_cost: float, tolerance: float) -> list[dict]:
    from ..benchmarking.tune_k import estimate_for_level

    if doc.get("mode") in (None, "baseline") or not doc.get("k"):
        raise PeagleError(
            f"{doc.get('endpoint')} runs no speculation: nothing to tune",
            remedy=text("give a p-eagle or eagle3 endpoint, or {component} naming one that "
                        "speculates"),
        )  # fmt: skip
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
            remedy=text("vLLM >= 0.16 logs them; run with traffic and {w}",
                        w=Param("acceptance_wait", "25s")),
        )  # fmt: skip
    return out


class AnalysisOps(Session):
    """Working from bench documents: `tune_k`, `report` (a mixin of `sm_peagle.Client`;
    `bench` and `race` are `MeasureOps`)."""

    # The client's bench (MeasureOps): tune_k measures through it.
    bench: Any

    def tune_k(
        self,
        endpoint: str | EndpointHandle,
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
    ) -> TuneKResult:
        """ESTIMATE output tok/s at every K' <= the deployed K from one deployment: vLLM's
        per-position acceptance rates plus the step cost measured at K, without
        redeploying, at each concurrency level.

        Args:
            endpoint: the endpoint's name (deployed with K), or an `Endpoint` handle.
            component: the inference component to tune, where the endpoint hosts several.
            concurrency: the levels to measure at (checked as `bench` checks it).
            requests: requests per level, 1 to 100,000.
            max_tokens: max_tokens per request.
            dataset: as `bench`.
            results: a stored bench document to estimate from instead (sends nothing).
            position_cost: the share of one step each draft position costs (0: flat).
            tolerance: pick the smallest K' within this share of the best, in [0, 1).
            acceptance_wait: how long to wait for vLLM's SpecDecoding log line.
            max_error_rate: judges the bench it runs, as `bench` does (default 0.05):
                over it, `BenchmarkFailed` and no estimate.

        Returns:
            TuneKResult: the estimate at each K' per level, and its caveats (`notes`).

        Raises:
            SpecError: a bad argument, before any request.
            PeagleError: the endpoint runs no speculation, or reports no per-position
                acceptance rates.
            BenchmarkFailed: the bench it ran failed its `max_error_rate` bar.
        """
        from ..benchmarking.results import is_simulated
        from ..benchmarking.tune_k import ESTIMATE_LABEL

        check_error_rate(max_error_rate)
        if position_cost < 0 or not 0 <= tolerance < 1:
            raise SpecError(
                text("{position_cost} must be >= 0 and {tolerance} in [0, 1), got {p!r} and "
                     "{t!r}", p=float(position_cost), t=float(tolerance)),
                field="position_cost" if position_cost < 0 else "tolerance",
                value=position_cost if position_cost < 0 else tolerance,
                rule="position_cost >= 0, 0 <= tolerance < 1",
                remedy=text("e.g. {p} {t}", p=Param("position_cost", 0),
                            t=Param("tolerance", 0.02)),
            )  # fmt: skip
        if results is not None:
            from ..benchmarking.results import load_document

            doc = load_document(Path(results), field="results")
            if doc["kind"] != "bench":
                raise SpecError(
                    f"{results}: give one endpoint's bench document, not a sweep",
                    field="results", value=str(results), rule="one bench document",
                    remedy="pass one configuration's JSON from the sweep's directory",
                )  # fmt: skip
        else:
            check_requests(requests)
            if requests is None:
                raise SpecError(text("{requests} must be a whole number >= 1, got None"),
                                field="requests", value=None, rule="a whole number >= 1",
                                remedy=text("e.g. {r}", r=Param("requests", 16)))  # fmt: skip
            doc = self.bench(
                endpoint, component=component, concurrency=concurrency, requests=requests,
                max_tokens=max_tokens, dataset=dataset, acceptance_wait=acceptance_wait,
                max_error_rate=max_error_rate,
            ).document  # fmt: skip
        ests = _estimates(doc, position_cost, tolerance)
        notes = []
        if doc.get("mode") == "eagle3" and position_cost == 0:
            notes.append(
                text("EAGLE-3 drafts one position per pass: a flat step cost flatters large "
                     "K; pass {position_cost} (the share of a step one draft position costs)")
            )  # fmt: skip
            self._say(notes[-1])
        out = {
            "endpoint": doc.get("endpoint"),
            "label": ESTIMATE_LABEL,
            **({"simulated": True} if is_simulated(doc) else {}),  # the SIMULATED engine only
            "mode": doc.get("mode"),
            "k": doc.get("k"),
            "estimates": ests,
        }
        return TuneKResult(out, notes=notes)

    def report(
        self,
        path: str | Path,
        *,
        markdown: str | Path | None = None,
        csv: str | Path | None = None,
        plot: str | Path | None = None,
        html: str | Path | None = None,
    ) -> ReportResult:
        """Re-read stored results (a file, or a directory of them; no AWS access) and
        write them again as markdown, CSV, PNG or one self-contained HTML page.

        Args:
            path: a results JSON, or a directory `bench` or `sweep` wrote.
            markdown: write a markdown report here.
            csv: write a CSV here.
            plot: write a PNG chart here (needs sm-peagle[plot]).
            html: write one self-contained HTML page here (needs sm-peagle[plot]).

        Returns:
            ReportResult: the document (derived parts recomputed) and the files written.

        Raises:
            SpecError: an output path that cannot be written, matplotlib missing for
                `plot`/`html`, or no results at `path`; checked before anything is read
                or written.
        """
        paths = check_paths(markdown=markdown, csv=csv, plot=plot, html=html)
        require_plot(plot=plot, html=html)  # before any file is read or written
        doc = load_results(path)
        written = write_outputs(
            doc, self._say, csv=paths["csv"], markdown=paths["markdown"], plot=paths["plot"]
        )
        if paths["html"] is not None:
            from ..benchmarking.html_report import write_html

            written.append(write_html(doc, paths["html"]))
            self._say(f"wrote {written[-1]}")
        return ReportResult(doc, written)
