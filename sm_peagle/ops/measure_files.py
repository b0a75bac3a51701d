"""The files a measurement writes and reads back: result files (JSON first), stored
results re-read for `report` and `tune_k`, and the output paths checked before any work.
Shared by `MeasureOps` (measure.py) and `SweepOps` (measure_sweep.py).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import Call, Param, SpecError, text
from .session import check_output_path

__all__ = ["DERIVED", "check_paths", "load_results", "require_plot", "write_outputs"]


def check_paths(**paths: Any) -> dict[str, Path | None]:
    """Each output path (keyword -> path or None) as a Path, checked writable first."""
    # Checked under the keyword itself: the error's field is the caller's parameter (`out`),
    # and the CLI words it with its flag (cli/faces.py: `--output` on bench and sweep).
    return {key: check_output_path(value, key) for key, value in paths.items()}


def require_plot(**paths: Any) -> None:
    """`plot` and `html` need matplotlib (sm-peagle[plot]): refused (exit 2) before
    anything runs, a file is written or a request is sent. `paths`: keyword -> path or
    None."""
    from ..benchmarking.report import PLOT_HINT, require_matplotlib

    for key, path in paths.items():
        if path is not None:
            require_matplotlib(key, remedy=text("{hint}, or drop {p}", hint=PLOT_HINT,
                                                p=Param(key)))  # fmt: skip


def write_outputs(
    doc: dict[str, Any], say: Callable[[str], None], *, out: Path | None = None,
    csv: Path | None = None, markdown: Path | None = None, plot: Path | None = None,
    plot_optional: bool = False,
) -> list[Path]:  # fmt: skip
    """Result files, JSON first (so a missing plotting library never costs the numbers)."""
    from ..benchmarking import report as rep
    from ..benchmarking.files import error_line, write_atomic
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
            say(text("chart skipped: {m}", m=error_line(e)))
    return written


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
                    f"no peagle.bench results in {path}", field="path", value=str(path),
                    rule="a results JSON or a directory of them",
                    remedy=text("give a results JSON or a directory `{b}` / `{s}` wrote",
                                b=Call("bench"), s=Call("sweep")),
                )  # fmt: skip
            return combine_runs(runs)
    else:
        doc = load_document(path)
    if doc["kind"] != "sweep":
        return doc
    return combine_runs(doc["runs"], extra={k: v for k, v in doc.items() if k not in DERIVED})
