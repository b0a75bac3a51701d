"""Typed results of the measurement operations (`bench`, `sweep`, `race`, `tune_k`,
`report`). Each wraps the JSON document the CLI prints with `--json` (`to_dict()`), and
reads like that document (`result["levels"]`), so code written against the dict the SDK
returned before keeps working. Pure: no AWS, no CLI.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = [
    "BenchResult",
    "MeasureResult",
    "RaceResult",
    "ReportResult",
    "SweepResult",
    "TuneKResult",
]


class MeasureResult(dict):  # type: ignore[type-arg]
    """A results document that is itself the JSON document (a dict: `result["levels"]`,
    `json.dumps(result)`), plus the files written from it (`written`)."""

    def __init__(self, document: dict[str, Any], written: list[Path] | None = None) -> None:
        super().__init__(document)
        self.written: list[Path] = list(written or [])

    @property
    def document(self) -> dict[str, Any]:
        return dict(self)

    def to_dict(self) -> dict[str, Any]:
        """The `--json` document."""
        return dict(self)

    def render(self, con: Any, table: Any) -> None:
        """Print the document for people (tables on the rich Console `con`; `table` builds
        each table)."""
        from ..benchmarking.report import render_console

        render_console(self.document, con, table)


class BenchResult(MeasureResult):
    """`peagle bench`: one endpoint's peagle.bench/3 document (`kind: "bench"`)."""

    def __init__(
        self,
        document: dict[str, Any],
        written: list[Path] | None = None,
        *,
        requests_out: Path | None = None,  # the per-request JSONL, when asked for
        requests_written: int = 0,
        commands: str | None = None,  # locust_print_commands: the commands (nothing ran)
    ) -> None:
        super().__init__(document, written)
        self.requests_out = requests_out
        self.requests_written = requests_written
        self.commands = commands


class SweepResult(MeasureResult):
    """`peagle sweep`: the combined sweep document; `out_dir` holds every run's JSON."""

    def __init__(
        self, document: dict[str, Any], written: list[Path] | None = None, *, out_dir: Path
    ) -> None:
        super().__init__(document, written)
        self.out_dir = out_dir

    @property
    def failed(self) -> bool:
        """Every configuration failed (the CLI exits 1)."""
        return not self.document["runs"]


class ReportResult(MeasureResult):
    """`peagle report`: stored results re-read, derived parts recomputed."""


class RaceResult(MeasureResult):
    """`peagle race`: both sides' numbers, texts and the verdict line."""

    @property
    def verdict(self) -> str:
        """The one-line verdict comparing the two sides."""
        return str(self.document["verdict"])

    @property
    def simulated(self) -> bool:
        """True when the sandbox's SIMULATED engine made the answers up (not for its real
        vLLM engine, nor AWS)."""
        return bool(self.document.get("simulated"))


class TuneKResult(MeasureResult):
    """`peagle tune-k`: the ESTIMATED output tok/s at every K' <= K, per level.
    `notes` are caveats for people (not part of the JSON document)."""

    def __init__(self, document: dict[str, Any], *, notes: list[str] | None = None) -> None:
        super().__init__(document)
        self.notes = list(notes or [])

    @property
    def estimates(self) -> list[dict[str, Any]]:
        """One estimate per concurrency level (its `concurrency` and `recommended_k`)."""
        return list(self.document["estimates"])
