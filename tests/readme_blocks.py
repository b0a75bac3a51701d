"""The command blocks of README.md, and how each may be run: the one parser both the main
suite (`tests/e2e/test_readme.py`) and the conformance tier use.

Every ```bash, ```console and ```python block counts. A block runs as written unless an
HTML comment on the line right before it (blank lines allowed) says otherwise:

- `<!-- readme-test: skip: REASON -->`: it cannot run here (AWS, several machines, the
  suite itself); the reason is required.
- `<!-- readme-test: engine -->`: it needs the real vLLM engine; the main suite skips it
  and the conformance tier runs it (`blocks("engine")`).

README.md declares the counts in `<!-- readme-test: counts: run N, skip N, engine N -->`,
and the main suite checks them, so a block cannot be skipped without saying so twice.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["README", "Block", "blocks", "declared_counts"]

README = Path(__file__).resolve().parents[1] / "README.md"
LANGS = ("bash", "console", "python")
_FENCE = re.compile(r"^```(\w*)\s*$")
_MARKER = re.compile(r"^<!-- readme-test: (skip: (?P<reason>.+?)|engine) -->\s*$")
_COUNTS = re.compile(
    r"<!-- readme-test: counts: run (?P<run>\d+), skip (?P<skip>\d+), engine (?P<engine>\d+) -->"
)


@dataclass(frozen=True)
class Block:
    line: int  # 1-based line of the opening fence
    lang: str
    code: str
    kind: str  # "run" | "skip" | "engine"
    reason: str | None = None

    @property
    def id(self) -> str:
        return f"L{self.line}-{self.lang}"


def blocks(kind: str | None = None, text: str | None = None) -> list[Block]:
    """README's command blocks in order; only those of `kind` ("run", "skip", "engine")."""
    lines = (README.read_text(encoding="utf-8") if text is None else text).splitlines()
    out: list[Block] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        lang, start = m.group(1), i
        i += 1
        body: list[str] = []
        while i < len(lines) and lines[i].strip() != "```":
            body.append(lines[i])
            i += 1
        i += 1  # the closing fence
        if lang not in LANGS:
            continue
        j = start - 1
        while j >= 0 and not lines[j].strip():
            j -= 1
        marker = _MARKER.match(lines[j]) if j >= 0 else None
        block_kind = "run"
        reason = None
        if marker:
            block_kind = "engine" if marker.group(1) == "engine" else "skip"
            reason = marker.group("reason")
        out.append(Block(start + 1, lang, "\n".join(body) + "\n", block_kind, reason))
    return [b for b in out if kind is None or b.kind == kind]


def declared_counts(text: str | None = None) -> dict[str, int]:
    """What README.md says it has: {"run": N, "skip": N, "engine": N}."""
    m = _COUNTS.search(README.read_text(encoding="utf-8") if text is None else text)
    if m is None:
        raise AssertionError("README.md has no `<!-- readme-test: counts: ... -->` line")
    return {k: int(v) for k, v in m.groupdict().items()}
