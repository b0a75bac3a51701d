"""The command blocks of README.md and of every page under docs/, and how each may be run:
the one parser the page-block tests (`tests/e2e/doc_pages/`), the README's own test and
the conformance tier use.

Every ```bash, ```console and ```python block counts (fences may be indented, inside a
list or an admonition, and may carry attributes: ```bash title="x"). A block runs as
written unless an HTML comment on the line right before it (blank lines allowed) says
otherwise:

- `<!-- docs-test: skip: REASON -->`: it cannot run here (AWS, several machines, the
  suite itself); the reason is required.
- `<!-- docs-test: engine -->`: it needs the real vLLM engine; the main suite skips it
  and the conformance tier runs it (`blocks(page, "engine")`).

A page with command blocks declares their counts in
`<!-- docs-test: counts: run N, skip N, engine N -->`, and the page's test checks them, so a
block cannot be skipped without saying so twice. A shell or Python block under another
language name (```sh, ```shell, ```py, ...) would go untested silently, so `misnamed()`
finds them and a test refuses them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "DOCS",
    "OLD_MARKER",
    "README",
    "ROOT",
    "Block",
    "blocks",
    "declared_counts",
    "misnamed",
    "pages",
    "rel",
    "runner_module",
]

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
RUNNERS = ROOT / "tests" / "e2e" / "doc_pages"
LANGS = ("bash", "console", "python")
# Names under which a command block would not be collected: refused, never ignored.
MISNAMED = ("sh", "shell", "zsh", "shell-session", "bash-session", "py", "python3", "pycon")
_FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>[\w-]*)(?:[ \t]+[^`]*)?\s*$")
_MARKER = re.compile(r"^\s*<!-- docs-test: (skip: (?P<reason>.+?)|engine) -->\s*$")
# The README's spelling before the docs site; refused (tests/e2e/doc_pages/
# test_pages_covered.py), so a page cannot keep a marker the parser no longer reads.
OLD_MARKER = "<!-- readme-test:"
_COUNTS = re.compile(
    r"<!-- docs-test: counts: "
    r"run (?P<run>\d+), skip (?P<skip>\d+), engine (?P<engine>\d+) -->"
)


@dataclass(frozen=True)
class Block:
    page: str  # the page's path from the repository root, e.g. "docs/aws.md"
    line: int  # 1-based line of the opening fence
    lang: str
    code: str
    kind: str  # "run" | "skip" | "engine"
    reason: str | None = None

    @property
    def id(self) -> str:
        return f"L{self.line}-{self.lang}"

    @property
    def where(self) -> str:
        return f"{self.page} line {self.line}"


def pages() -> list[Path]:
    """README.md and every Markdown page under docs/, in a stable order."""
    return [README, *sorted(DOCS.rglob("*.md"))]


def rel(page: Path | str) -> str:
    """A page's path from the repository root ("README.md", "docs/guides/deploy.md")."""
    path = Path(page)
    return str((path if path.is_absolute() else ROOT / path).relative_to(ROOT))


def runner_module(page: Path | str) -> Path:
    """The test module that runs a page's blocks: README.md's is tests/e2e/test_readme.py,
    docs/guides/deploy.md's tests/e2e/doc_pages/test_guides_deploy.py."""
    name = rel(page)
    if name == "README.md":
        return ROOT / "tests" / "e2e" / "test_readme.py"
    stem = name.removeprefix("docs/").removesuffix(".md")
    return RUNNERS / f"test_{re.sub(r'[^a-z0-9]+', '_', stem.lower()).strip('_')}.py"


def _fences(lines: list[str]) -> list[tuple[int, str, list[str]]]:
    """(index of the opening fence, language, body dedented by the fence's indent)."""
    out = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, lang, start = m.group("indent"), m.group("lang"), i
        i += 1
        body: list[str] = []
        while i < len(lines) and lines[i].strip() != "```":
            line = lines[i]
            body.append(line[len(indent) :] if line.startswith(indent) else line.lstrip())
            i += 1
        i += 1  # the closing fence
        out.append((start, lang, body))
    return out


def _text(page: Path | str | None, text: str | None) -> tuple[str, str]:
    if text is not None:
        return (rel(page) if page is not None else "<text>"), text
    path = README if page is None else Path(page)
    path = path if path.is_absolute() else ROOT / path
    return rel(path), path.read_text(encoding="utf-8")


def blocks(
    page: Path | str | None = None, kind: str | None = None, text: str | None = None
) -> list[Block]:
    """A page's command blocks in order (README.md when no page is given); only those of
    `kind` ("run", "skip", "engine") when given."""
    name, body = _text(page, text)
    lines = body.splitlines()
    out: list[Block] = []
    for start, lang, code in _fences(lines):
        if lang not in LANGS:
            continue
        j = start - 1
        while j >= 0 and not lines[j].strip():
            j -= 1
        marker = _MARKER.match(lines[j]) if j >= 0 else None
        block_kind, reason = "run", None
        if marker:
            block_kind = "engine" if marker.group(1) == "engine" else "skip"
            reason = marker.group("reason")
        out.append(Block(name, start + 1, lang, "\n".join(code) + "\n", block_kind, reason))
    return [b for b in out if kind is None or b.kind == kind]


def misnamed(page: Path | str | None = None, text: str | None = None) -> list[str]:
    """Fenced blocks under a shell or Python name the tests do not collect: "L12 ```sh"."""
    _, body = _text(page, text)
    return [
        f"L{start + 1} ```{lang}"
        for start, lang, _ in _fences(body.splitlines())
        if lang.lower() in MISNAMED
    ]


def declared_counts(page: Path | str | None = None, text: str | None = None) -> dict[str, int]:
    """What a page says it has: {"run": N, "skip": N, "engine": N} (README.md by default)."""
    name, body = _text(page, text)
    m = _COUNTS.search(body)
    if m is None:
        raise AssertionError(
            f"{name} has command blocks and no `<!-- docs-test: counts: run N, skip N, "
            "engine N -->` line"
        )
    return {k: int(v) for k, v in m.groupdict().items()}
