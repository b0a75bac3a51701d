"""A sweep's failed configuration prints its error in the CLI's words: the error names
`k=` in Python, and the console table the CLI draws says `-k`, as the error line does."""

from __future__ import annotations

import io

from rich.console import Console

from sm_peagle.errors import Param, SpecError, text
from sm_peagle.ops.measure_results import MeasureText


def test_a_failed_configuration_is_worded_by_the_cli() -> None:
    from sm_peagle.benchmarking.files import error_line
    from sm_peagle.cli.bench_render import render_text

    err = SpecError(text("{k}: above the trained K=10", k=Param("k", 11)), field="k")
    failures = [{"configuration": "p-eagle K=11", "error": error_line(err)}]
    doc = {
        "kind": "sweep",
        "model": "gpt-oss-20b",
        "runs": [],
        "failures": failures,
        "table": {"columns": [], "rows": []},
    }
    t = MeasureText.of(doc)
    assert [str(f) for f in t.failures] == ["p-eagle K=11: k=11: above the trained K=10"]
    out = io.StringIO()
    render_text(t, Console(file=out, width=200, color_system=None))
    assert "failed p-eagle K=11: -k 11: above the trained K=10" in out.getvalue()
