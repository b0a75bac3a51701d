"""`--requests-out FILE.jsonl`: one JSON line per measured request (as AIPerf's
`profile_export.jsonl` and llmeter's `responses.jsonl`), documented in docs/bench-schema.md.

Each line is self-describing: `schema` (`peagle.bench.request/2`), the endpoint and
configuration, the level (`concurrency`, `rate`), and the request as the client saw it:
send, scheduled and ready times, TTFT, TPOT, E2EL, tokens (from `usage`), content chunks,
every inter-chunk latency (`itl_s`, one per chunk gap, with `chunk_tokens`), vLLM's
per-request acceptance (`spec_decode`), `status` (`ok`/`error`),
`error` and `error_kind`; with an SLO, `slo_met` per objective and `all`. Each line is
written as its request finishes (`level(...)` gives the writer for one level), in one
`write` to `.<name>.partial` beside the target, which is renamed over it when the run
completes (`finish`): an interrupted run keeps every request it measured in the partial
file, as whole lines, and leaves a previous file whole, never empty (`abandon` says where
the records are). Goodput can be recounted from the file alone (`recount_goodput`).
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from .metrics import RequestRecord
from .slo import goodput, request_meets

__all__ = [
    "REQUEST_SCHEMA",
    "RequestExporter",
    "read_requests",
    "recount_goodput",
    "request_line",
]

# /2 (with peagle.bench/2): `itl_s` is one value per chunk gap (vLLM bench serve's ITL),
# with `chunk_tokens` the tokens of each of those chunks (was one value per token).
REQUEST_SCHEMA = "peagle.bench.request/2"


def request_line(
    r: RequestRecord, *, endpoint: str, configuration: str | None, concurrency: int,
    rate: float | None, slo: dict[str, float] | None, probe: bool = False,
) -> bytes:  # fmt: skip
    """One record as its `--requests-out` line (UTF-8, newline-terminated)."""
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
    return (json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


class RequestExporter:
    """Appends a line to `partial` as each request finishes (from any thread); `finish()`
    puts the complete file in place at `path`, `abandon()` leaves it where it is.

    A line is one `os.write` of the whole line to a file opened O_APPEND, under a lock:
    whatever stops the process between two requests (Ctrl-C, a kill), every line in the
    file is whole. A write that fails (a full disk) does not stop the measuring: the
    first error is kept and `finish()` reports it, after the results were printed."""

    def __init__(self, path: Path) -> None:
        from .files import partial_path

        self.path = path
        self.partial = partial_path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(self.partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o666)
        self._lock = threading.Lock()
        self.lines = 0
        self.error: OSError | None = None

    def _append(self, data: bytes) -> None:
        with self._lock:
            if self.error is not None or self._fd < 0:
                return
            try:
                view = memoryview(data)
                while view:  # a regular file takes it in one write; loop all the same
                    view = view[os.write(self._fd, view) :]
            except OSError as e:
                self.error = e
                return
            self.lines += 1

    def level(
        self, *, endpoint: str, configuration: str | None, concurrency: int,
        rate: float | None, slo: dict[str, float] | None, probe: bool = False,
    ) -> Callable[[RequestRecord], None]:  # fmt: skip
        """The writer for one level: call it with each record as its request finishes."""

        def write(r: RequestRecord) -> None:
            self._append(
                request_line(r, endpoint=endpoint, configuration=configuration,
                             concurrency=concurrency, rate=rate, slo=slo, probe=probe)
            )  # fmt: skip

        return write

    def write_level(self, records: Sequence[RequestRecord], **level: Any) -> None:
        """A whole level's records at once (keyword arguments as `level`)."""
        write = self.level(**level)
        for r in records:
            write(r)

    def _close(self) -> None:
        with self._lock:
            fd, self._fd = self._fd, -1
        if fd >= 0:
            os.close(fd)

    def finish(self) -> Path:
        """The run is complete: the lines replace `path` (atomically)."""
        from .files import NOT_WRITTEN_FIX, OutputNotWritten

        self._close()
        if self.error is not None:
            e = self.error
            raise OutputNotWritten(
                f"cannot write {self.path}: {e.strerror or e}; it was not changed, and the "
                f"{self.lines} requests written before are in {self.partial}",
                remedy=NOT_WRITTEN_FIX,
            )
        try:
            os.replace(self.partial, self.path)
        except OSError as e:
            raise OutputNotWritten(
                f"cannot write {self.path}: {e.strerror or e}; the {self.lines} requests are "
                f"in {self.partial}",
                remedy="move that file where you want it",
            ) from None
        return self.path

    def abandon(self) -> str | None:
        """The run did not complete: `path` stays as it was. The partial file keeps what
        was measured, and the line returned says where; an empty one is removed (None:
        nothing to say, the run's own error says what happened)."""
        self._close()
        if self.lines == 0:
            with contextlib.suppress(OSError):
                self.partial.unlink()
            return None
        return (
            f"{self.path} was not changed; the {self.lines} requests measured are in {self.partial}"
        )


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
