"""Write a benchmark's result table into README.md between its markers.

Every benchmark script here owns one block, `<!-- bench:NAME:start -->` …
`<!-- bench:NAME:end -->`; a README without both markers is left untouched.
"""

from __future__ import annotations

from pathlib import Path


def markers(name: str) -> tuple[str, str]:
    return f"<!-- bench:{name}:start -->", f"<!-- bench:{name}:end -->"


def replace_block(path: Path, name: str, text: str) -> bool:
    """Replace the block's content; False (file untouched) when the file or a marker is
    missing."""
    start_mark, end_mark = markers(name)
    try:
        doc = path.read_text()
    except OSError:
        return False
    start, end = doc.find(start_mark), doc.find(end_mark)
    if start < 0 or end < start:
        return False
    path.write_text(doc[: start + len(start_mark)] + "\n" + text + "\n" + doc[end:])
    return True
