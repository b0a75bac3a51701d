"""The one rule for what a row of `drafter train` data is, and how the rows split into
training and validation. Both sides read it: the training job's entrypoint
(`peagle_train.py`, beside this file in the job's source dir) and peagle's preflight
(`sm_peagle/training/checks.py`), so data that preflight accepts is data the job accepts.

Standard library only: it ships in the job's source dir, where peagle is not installed.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["NOT_A_ROW", "NOT_JSON", "RowError", "min_rows", "parse_row", "split_counts"]

NOT_JSON = "is not JSON"
NOT_A_ROW = 'is neither {"prompt": "..."} nor {"messages": [{"role": ..., "content": ...}]}'


class RowError(ValueError):
    """A line that is not a data row; the message completes "<file> line <n> ..."."""


def parse_row(line: str) -> dict[str, Any] | None:
    """One jsonl line as a row: `{"prompt": str}` or `{"messages": [...]}` (a non-empty list
    whose every turn has a string `role` and a string `content`). None for a line to skip
    (blank, or a blank prompt). RowError for anything else: a `content` that is null (a
    tool call) or a list of parts, a `{"text": ...}` row, a JSON array."""
    if not line.strip():
        return None
    try:
        doc = json.loads(line)
    except ValueError:
        raise RowError(NOT_JSON) from None
    if isinstance(doc, dict) and isinstance(doc.get("prompt"), str):
        return {"prompt": doc["prompt"]} if doc["prompt"].strip() else None
    messages = doc.get("messages") if isinstance(doc, dict) else None
    if (
        isinstance(messages, list)
        and messages
        and all(
            isinstance(m, dict)
            and isinstance(m.get("role"), str)
            and isinstance(m.get("content"), str)
            for m in messages
        )
    ):
        return {"messages": messages}
    raise RowError(NOT_A_ROW)


def split_counts(rows: int, val_fraction: float) -> tuple[int, int] | None:
    """speculators' split (ArrowDataset's split_idx): the first int(rows * (1 -
    val_fraction)) rows train, the rest validate. None when either part would be empty."""
    n_train = int(rows * (1.0 - val_fraction))
    if n_train < 1 or rows - n_train < 1:
        return None
    return n_train, rows - n_train


def min_rows(val_fraction: float) -> int | None:
    """The fewest rows `split_counts` splits (None if no count up to 10,000 does)."""
    for rows in range(1, 10_001):
        if split_counts(rows, val_fraction) is not None:
            return rows
    return None
