"""Result files are replaced whole or not at all.

Every bench output (`--output`, `--csv`, `--markdown`, plots, HTML) is written to a
temporary file beside its target and renamed over it only once complete, so a Ctrl-C, a
full disk or a read-only directory never leaves a half file or an empty one where the
previous results were. A write that fails raises `OutputNotWritten` (exit 1, one line
naming the path and why), after the results were measured and are still in hand.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

from ..errors import OutputNotWritten, Phrase, Text, text

__all__ = ["OutputNotWritten", "error_line", "partial_path", "write_atomic"]

# The remedy of a result file that could not be written: the numbers are still in hand.
NOT_WRITTEN_FIX = text(
    "free space or pick another path; the results above are complete ({json} prints them whole)",
    json=Phrase("json"),
)


def error_line(e: Any) -> Text:
    """A PeagleError as one line, `message (fix: remedy)`, kept a Text: a progress line
    or a results note quoting it is worded by each face as the error itself is."""
    if not getattr(e, "remedy", None):
        return text("{m}", m=e.message)
    return text("{m} (fix: {r})", m=e.message, r=e.remedy)


def partial_path(path: Path) -> Path:
    """Where a file being written lives until it is complete (same directory, so the
    rename is atomic)."""
    return path.with_name(f".{path.name}.partial")


def write_atomic(path: Path, data: str | bytes) -> Path:
    """Write `data` to `path`: into `partial_path(path)`, then renamed over `path`."""
    tmp = partial_path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, bytes):
            tmp.write_bytes(data)
        else:
            tmp.write_text(data, encoding="utf-8")
        os.replace(tmp, path)
    except OSError as e:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise OutputNotWritten(
            f"cannot write {path}: {e.strerror or e}; it was not changed",
            remedy=NOT_WRITTEN_FIX,
        ) from None
    return path
