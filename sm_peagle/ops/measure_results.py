"""Typed results of the measurement operations (`bench`, `sweep`, `race`, `tune_k`,
`report`): frozen dataclasses holding the results document (`document`, the versioned
`peagle.bench/3` document the files hold too: docs/bench-schema.md), read by attribute
(`result.levels`, `result.label`); `to_dict()` is that document, the `--json` output.

They used to be the document itself (a dict): `result["levels"]` still works for one
release, with a FutureWarning naming the attribute. Pure: no AWS, no CLI, no rendering
(the CLI draws their tables: cli/bench_render.py).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..errors import text
from .result import DocumentResult, KeyAccess

__all__ = [
    "BenchResult",
    "KEstimate",
    "KRow",
    "MeasureResult",
    "MeasureText",
    "RaceResult",
    "RaceSide",
    "ReportResult",
    "SweepResult",
    "TuneKResult",
]


@dataclass(frozen=True)
class MeasureText:
    """A bench or sweep document in plain words (no markup): what a table or a report
    shows, for a face to draw (the CLI: cli/bench_render.py).

    Attributes:
        title: The title (says what produced the numbers when that was not AWS).
        from_target: True when the numbers did not come from AWS (a plugin's target).
        provenance: Where the numbers came from, in one line.
        provenance_lines: Endpoint, instance, image, vLLM, mode/K, dataset, client, time.
        comparison: A sweep's (columns, rows) of output tokens/s per configuration, or None.
        recommendations: A sweep's recommended K per level, one line each.
        failures: A sweep's failed configurations, `configuration: error` each.
        level_columns: The columns of the levels table.
        level_rows: One row per level (every statistic).
        acceptance_notes: Where acceptance came from, or why there is none.
        client_warnings: `c=N: ...` for each level whose client ran short of CPU.
    """

    title: str
    from_target: bool
    provenance: str
    provenance_lines: list[str]
    comparison: tuple[list[str], list[list[str]]] | None
    recommendations: list[str]
    failures: list[str]
    level_columns: list[str]
    level_rows: list[list[str]]
    acceptance_notes: list[str]
    client_warnings: list[str]

    @classmethod
    def of(cls, doc: dict[str, Any]) -> MeasureText:
        """The plain words of a bench or sweep document."""
        from ..benchmarking import report as r
        from ..benchmarking.results import from_target, provenance

        sweep = doc.get("kind") == "sweep"
        return cls(
            title=r.title_of(doc),
            from_target=from_target(doc),
            provenance=provenance(doc),
            provenance_lines=r.provenance_lines(doc),
            comparison=r.comparison_rows(doc) if sweep else None,
            recommendations=r.recommendation_lines(doc) if sweep else [],
            # text(): a failure's error keeps the keywords and calls it names (a Text while
            # the run's document is in memory), so the CLI words them with its flags.
            failures=[
                text("{c}: {e}", c=f["configuration"], e=f["error"])
                for f in doc.get("failures") or []
            ]
            if sweep
            else [],
            level_columns=list(r.LEVEL_COLUMNS),
            level_rows=r.level_rows(doc),
            acceptance_notes=r.acceptance_notes(doc),
            client_warnings=[
                f"c={lv['concurrency']}: {lv['client_cpu']['warning']}"
                for run in r.runs_of(doc)
                for lv in run["levels"]
                if lv["client_cpu"].get("warning")
            ],
        )

    def to_dict(self) -> dict[str, Any]:
        """The same words as a document."""
        return asdict(self)


@dataclass(frozen=True)
class MeasureResult(KeyAccess):
    """A results document and the files written from it.

    Attributes:
        document: The results document (`schema`, `kind`, `label`, ...; docs/bench-schema.md),
            exactly what `--json` prints and the JSON file holds.
        written: The files written from it (`out`, `csv`, `markdown`, `plot`), in order.
    """

    document: dict[str, Any]
    written: list[Path] = field(default_factory=list)
    _whole = ".document"

    def to_dict(self) -> dict[str, Any]:
        """The `--json` document."""
        return dict(self.document)

    def text(self) -> MeasureText:
        """The document in plain words (a bench or sweep document: tables and notes)."""
        return MeasureText.of(self.document)

    @property
    def kind(self) -> str | None:
        """What measured it: `bench`, `sweep` (None for a race or a tune-k estimate)."""
        return self.document.get("kind")

    @property
    def label(self) -> str | None:
        """Where the numbers came from: `AWS`, or the label of the plugin target that
        answered, e.g. `SANDBOX (SIMULATED)` (a tune-k estimate says ESTIMATED)."""
        return self.document.get("label")

    @property
    def simulated(self) -> bool:
        """True when no model ran: a target's SIMULATED engine made the numbers up (not
        for a real vLLM engine, nor AWS)."""
        return bool(self.document.get("simulated"))

    @property
    def caveat(self) -> str | None:
        """What the numbers mean when they are not AWS's, one sentence in the words of the
        plugin whose target made them (`contract.ResultLabel.caveat`); None for AWS's."""
        from ..benchmarking.results import caveat_of

        return caveat_of(self.document)

    @property
    def endpoint(self) -> str | None:
        """The endpoint measured (None for a sweep, which deploys one per configuration)."""
        return self.document.get("endpoint")

    @property
    def component(self) -> str | None:
        """The inference component measured, or None (the whole endpoint)."""
        return self.document.get("component")

    @property
    def mode(self) -> str | None:
        """The decoding mode measured (p-eagle, eagle3, baseline), or None."""
        return self.document.get("mode")

    @property
    def k(self) -> int | None:
        """The K measured, or None (baseline)."""
        return self.document.get("k")

    @property
    def levels(self) -> list[dict[str, Any]]:
        """One document per concurrency level or rate (`concurrency`, `output_tokens_per_s`,
        latency percentiles, acceptance, ...); empty for a sweep (see its `runs`)."""
        return list(self.document.get("levels") or [])


@dataclass(frozen=True)
class BenchResult(MeasureResult):
    """`bench`: one endpoint's `peagle.bench/3` document (`kind: "bench"`).

    Attributes:
        document: The results document (`kind: "bench"`), exactly what `--json` prints.
        written: The files written from it, in order.
        requests_out: The per-request JSONL file, when asked for; else None.
        requests_written: How many request lines it holds.
        commands: With `locust_print_commands`: the commands that would run (nothing ran,
            and `document` is empty); else None.
    """

    requests_out: Path | None = None
    requests_written: int = 0
    commands: str | None = None

    @property
    def notes(self) -> list[str]:
        """Caveats about the numbers (where they came from, what was not measured)."""
        return list(self.document.get("notes") or [])


@dataclass(frozen=True)
class SweepResult(MeasureResult):
    """`sweep`: the combined document of every configuration deployed and measured.

    Attributes:
        document: The sweep document (`kind: "sweep"`, `runs`, `table`, `recommendation`,
            ...), exactly what `--json` prints.
        written: The files written from it, in order.
        out_dir: The directory holding every run's JSON and `sweep.json`.
    """

    out_dir: Path = field(kw_only=True)

    @property
    def runs(self) -> list[dict[str, Any]]:
        """Each configuration's bench document, in the order measured."""
        return list(self.document.get("runs") or [])

    @property
    def failures(self) -> list[dict[str, Any]]:
        """The configurations that failed (`configuration`, `error`)."""
        return list(self.document.get("failures") or [])

    @property
    def recommendation(self) -> Any:
        """The best K per concurrency level, as the document recommends it."""
        return self.document.get("recommendation")

    @property
    def elapsed_s(self) -> float:
        """How long the whole sweep took, in seconds."""
        return float(self.document.get("elapsed_s") or 0.0)

    @property
    def cleanup(self) -> dict[str, Any]:
        """What the sweep deleted and what it left behind (`kept`)."""
        return dict(self.document.get("cleanup") or {})

    @property
    def failed(self) -> bool:
        """Every configuration failed (the CLI exits 1)."""
        return not self.document["runs"]


@dataclass(frozen=True)
class ReportResult(MeasureResult):
    """`report`: stored results re-read, derived parts recomputed.

    Attributes:
        document: The bench or sweep document, as `--json` prints it.
        written: The files written from it (markdown, CSV, chart, HTML), in order.
    """

    @property
    def notes(self) -> list[str]:
        """Caveats about the numbers (where they came from, what was not measured)."""
        return list(self.document.get("notes") or [])


@dataclass(frozen=True, kw_only=True)
class RaceSide(DocumentResult):
    """One side of a race, as it streams and once done; `to_dict()` is its document (`a`
    or `b` in `peagle race --json`).

    Attributes:
        side: `A` or `B`.
        target: The side as named (`ENDPOINT` or `ENDPOINT/COMPONENT`).
        endpoint: Its endpoint.
        component: Its inference component, or None.
        done: Whether its stream ended.
        error: Why it failed, or None.
        ttft_s: Seconds to its first token, or None.
        e2e_s: Seconds from sending to its last token (so far), or None.
        output_tokens: Tokens received.
        content_chunks: Content chunks received.
        tokens_per_chunk: Tokens per chunk, or None.
        output_tokens_per_s: Tokens per second end to end, or None.
        decode_tokens_per_s: Tokens per second after the first, or None.
        finish_reason: Why generation stopped, or None.
        acceptance_length: Tokens per verify step by vLLM's count for this request, or None.
        draft_acceptance_rate: Accepted / drafted tokens by vLLM's count, or None.
        spec_decode: vLLM's per-request speculative-decoding metrics, verbatim, or None.
        text: The answer (so far).
    """

    side: str
    target: str | None = None
    endpoint: str | None = None
    component: str | None = None
    done: bool = False
    error: str | None = None
    ttft_s: float | None = None
    e2e_s: float | None = None
    output_tokens: int = 0
    content_chunks: int = 0
    tokens_per_chunk: float | None = None
    output_tokens_per_s: float | None = None
    decode_tokens_per_s: float | None = None
    finish_reason: str | None = None
    acceptance_length: float | None = None
    draft_acceptance_rate: float | None = None
    spec_decode: dict[str, Any] | None = None
    text: str = ""


@dataclass(frozen=True)
class RaceResult(MeasureResult):
    """`race`: both sides' numbers, texts and the verdict line.

    Attributes:
        document: The race document (`prompt`, `max_tokens`, `temperature`, `a`, `b`,
            `ratio_a_over_b`, `verdict`), exactly what `--json` prints.
        written: Always empty (a race writes no file).
    """

    @property
    def a(self) -> RaceSide:
        """Side A's numbers and text (`target`, `ttft_s`, `output_tokens_per_s`, ...)."""
        return RaceSide.from_dict(self.document["a"])

    @property
    def b(self) -> RaceSide:
        """Side B's numbers and text."""
        return RaceSide.from_dict(self.document["b"])

    @property
    def ratio_a_over_b(self) -> float | None:
        """A's output tokens/s over B's, or None when either has none."""
        return self.document.get("ratio_a_over_b")

    @property
    def verdict(self) -> str:
        """The one-line verdict comparing the two sides."""
        return str(self.document["verdict"])


@dataclass(frozen=True, kw_only=True)
class KRow(DocumentResult):
    """The estimate at one K' (a row of `KEstimate.by_k`).

    Attributes:
        k: The K' estimated.
        acceptance_length: Tokens per verify step at K', from the per-position rates.
        marginal_rate: The acceptance rate of draft position K'.
        output_tokens_per_s: The ESTIMATED output tokens/s at K'.
    """

    k: int
    acceptance_length: float | None = None
    marginal_rate: float | None = None
    output_tokens_per_s: float | None = None


@dataclass(frozen=True, kw_only=True)
class KEstimate(DocumentResult):
    """`tune_k`'s estimate at one concurrency level (an entry of `TuneKResult.estimates`).

    Attributes:
        concurrency: The level estimated at.
        label: Says it is an ESTIMATE, not a measurement.
        measured_k: The K measured.
        measured_output_tokens_per_s: The output tokens/s measured at that K.
        per_position_acceptance_rate: The acceptance rate of each draft position.
        position_cost: The share of a step one draft position costs.
        tolerance: How close to the best a smaller K' may be and still be picked.
        by_k: The estimate at every K' <= K (`KRow`).
        recommended_k: The smallest K' within `tolerance` of the best.
        rates_from: Where the per-position rates came from, or None.
    """

    concurrency: int
    label: str | None = None
    measured_k: int | None = None
    measured_output_tokens_per_s: float | None = None
    per_position_acceptance_rate: list[float] | None = None
    position_cost: float | None = None
    tolerance: float | None = None
    by_k: list[KRow] | None = None
    recommended_k: int | None = None
    rates_from: str | None = None

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> KEstimate:
        """The estimate of `doc`, its rows typed."""
        if doc.get("by_k") is not None:
            doc = {**doc, "by_k": [KRow.from_dict(r) for r in doc["by_k"]]}
        return super().from_dict(doc)

    def to_dict(self) -> dict[str, Any]:
        """The estimate's document (an entry of `estimates` in `peagle tune-k --json`)."""
        doc = super().to_dict()
        if doc.get("by_k") is not None:
            doc["by_k"] = [r.to_dict() for r in doc["by_k"]]
        return doc


@dataclass(frozen=True)
class TuneKResult(MeasureResult):
    """`tune_k`: the ESTIMATED output tok/s at every K' <= K, per level.

    Attributes:
        document: The estimate document (`endpoint`, `label`, `mode`, `k`, `estimates`),
            exactly what `--json` prints.
        written: Always empty.
        notes: Caveats for people (not part of the document).
    """

    notes: list[str] = field(default_factory=list)

    @property
    def estimates(self) -> list[KEstimate]:
        """One estimate per concurrency level (`concurrency`, `measured_k`, `recommended_k`,
        `by_k`, ...)."""
        return [KEstimate.from_dict(e) for e in self.document["estimates"]]
