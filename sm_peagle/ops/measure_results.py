"""Typed results of the measurement operations (`bench`, `sweep`, `race`, `tune_k`,
`report`). Each wraps the JSON document the CLI prints with `--json` (`to_dict()`), and
reads like that document (`result["levels"]`), so code written against the dict the SDK
returned before keeps working. Pure: no AWS, no CLI.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
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


@dataclass
class MeasureResult(Mapping[str, Any]):
    """A results document (`document`) and the files written from it (`written`)."""

    document: dict[str, Any]
    written: list[Path] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The `--json` document."""
        return self.document

    def __getitem__(self, key: str) -> Any:
        return self.document[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.document)

    def __len__(self) -> int:
        return len(self.document)

    def render(self, con: Any, table: Any) -> None:
        """Print the document for people (tables on the rich Console `con`; `table` builds
        each table)."""
        from ..benchmarking.report import render_console

        render_console(self.document, con, table)


@dataclass
class BenchResult(MeasureResult):
    """`peagle bench`: one endpoint's peagle.bench/1 document (`kind: "bench"`)."""

    requests_out: Path | None = None  # the per-request JSONL, when asked for
    requests_written: int = 0
    commands: str | None = None  # locust_print_commands: the commands (nothing ran)


@dataclass
class SweepResult(MeasureResult):
    """`peagle sweep`: the combined sweep document; `out_dir` holds every run's JSON."""

    out_dir: Path = Path(".")

    @property
    def failed(self) -> bool:
        """Every configuration failed (the CLI exits 1)."""
        return not self.document["runs"]


@dataclass
class ReportResult(MeasureResult):
    """`peagle report`: stored results re-read, derived parts recomputed."""


@dataclass
class RaceResult(MeasureResult):
    """`peagle race`: both sides' numbers, texts and the verdict line."""

    @property
    def verdict(self) -> str:
        return str(self.document["verdict"])

    @property
    def simulated(self) -> bool:
        return bool(self.document.get("simulated"))


@dataclass
class TuneKResult(MeasureResult):
    """`peagle tune-k`: the ESTIMATED output tok/s at every K' <= K, per level.
    `notes` are caveats for people (not part of the JSON document)."""

    notes: list[str] = field(default_factory=list)

    @property
    def estimates(self) -> list[dict[str, Any]]:
        return list(self.document["estimates"])
