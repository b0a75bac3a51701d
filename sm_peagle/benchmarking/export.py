"""`--requests-out FILE.jsonl`: one JSON line per measured request (as AIPerf's
`profile_export.jsonl` and llmeter's `responses.jsonl`), documented in docs/bench-schema.md.

Each line is self-describing: `schema` (`peagle.bench.request/1`), the endpoint and
configuration, the level (`concurrency`, `rate`), and the request as the client saw it:
send time, scheduled time (open loop), TTFT, TPOT, e2e, tokens (from `usage`), content
chunks, every inter-token latency (`itl_s`, one per token), `status` (`ok`/`error`),
`error` and `error_kind`; with an SLO, `slo_met` per objective and `all`. Lines are written
as each level ends into `.<name>.partial` beside the target, which is renamed over it when
the run completes (`finish`): an interrupted run keeps what it measured in the partial
file and leaves a previous file whole, never empty. Goodput can be recounted from the file
alone (`recount_goodput`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from .metrics import RequestRecord
from .slo import goodput, request_meets

__all__ = ["REQUEST_SCHEMA", "RequestExporter", "read_requests", "recount_goodput"]

REQUEST_SCHEMA = "peagle.bench.request/1"


class RequestExporter:
    """Appends request lines to `partial` as each level ends; `finish()` puts the complete
    file in place at `path`."""

    def __init__(self, path: Path) -> None:
        from .files import partial_path

        self.path = path
        self.partial = partial_path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        self.partial.write_text("", encoding="utf-8")
        self.lines = 0

    def finish(self) -> Path:
        """The run is complete: the lines replace `path` (atomically)."""
        import os

        from .files import OutputNotWritten

        try:
            os.replace(self.partial, self.path)
        except OSError as e:
            raise OutputNotWritten(
                f"cannot write {self.path}: {e.strerror or e}; the {self.lines} requests are "
                f"in {self.partial}",
                remedy="move that file where you want it",
            ) from None
        return self.path

    def write_level(
        self,
        records: Sequence[RequestRecord],
        *,
        endpoint: str,
        configuration: str | None,
        concurrency: int,
        rate: float | None,
        slo: dict[str, float] | None,
        probe: bool = False,
    ) -> None:
        with self.partial.open("a", encoding="utf-8") as f:
            for r in records:
                line: dict[str, Any] = {
                    "schema": REQUEST_SCHEMA,
                    "endpoint": endpoint,
                    "configuration": configuration,
                    "concurrency": concurrency,
                    "rate": rate,
                    "search_probe": probe,
                    "status": "ok" if r.ok else "error",
                    **r.export_dict(),
                }
                if slo:
                    met = request_meets(r, slo)
                    line["slo_met"] = {**met, "all": all(met.values())}
                f.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n")
                self.lines += 1


def read_requests(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def recount_goodput(
    lines: Iterable[dict[str, Any]], slo: dict[str, float], *, concurrency: int
) -> dict[str, Any]:
    """Goodput of one level recomputed from exported lines (wall = first send -> last end)."""
    level = [ln for ln in lines if ln["concurrency"] == concurrency]
    start = min(ln["sent_at"] for ln in level)
    end = max(ln["ended_at"] for ln in level)
    return goodput(level, slo, end - start)
