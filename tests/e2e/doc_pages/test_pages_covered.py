"""No page's command blocks go untested: every page with a ```bash, ```console or ```python
block (README.md and docs/**/*.md) has its runner module (`tests.doc_blocks.runner_module`,
a `PageBlocks` subclass naming the page), no runner names a page that is gone, and no page
hides a command block under a name the parser does not collect (```sh, ```py, ...) or keeps
the README's old `readme-test` marker.
"""

from __future__ import annotations

import re

from tests.doc_blocks import OLD_MARKER, RUNNERS, blocks, misnamed, pages, rel, runner_module

_PAGE = re.compile(r'^\s+PAGE = "([^"]+)"\s*$', re.M)


def test_every_page_with_command_blocks_has_a_runner() -> None:
    missing = {}
    for page in pages():
        if not blocks(page):
            continue
        module = runner_module(page)
        if not module.exists() or rel(page) not in _PAGE.findall(module.read_text()):
            missing[rel(page)] = str(module.relative_to(module.parents[3]))
    assert missing == {}, (
        "pages with command blocks and no runner (page: module to add, a PageBlocks "
        f"subclass with PAGE = the page): {missing}"
    )


def test_every_runner_names_a_page_with_command_blocks() -> None:
    stale = {}
    for module in sorted(RUNNERS.glob("test_*.py")):
        for name in _PAGE.findall(module.read_text()):
            if runner_module(name) != module or not (
                (path := module.parents[3] / name).exists() and blocks(path)
            ):
                stale[module.name] = name
    assert stale == {}, f"runners whose page is gone, misnamed or has no command block: {stale}"


def test_no_page_uses_another_name_for_a_command_block() -> None:
    found = {rel(p): bad for p in pages() if (bad := misnamed(p))}
    assert found == {}, "use ```bash, ```console or ```python so the block is run"


def test_no_page_uses_the_old_marker() -> None:
    old = [rel(p) for p in pages() if OLD_MARKER in p.read_text(encoding="utf-8")]
    assert old == [], "<!-- readme-test: … --> is now <!-- docs-test: … -->"


def test_runner_paths() -> None:
    assert runner_module("README.md").name == "test_readme.py"
    assert runner_module("docs/guides/ci-moto.md") == RUNNERS / "test_guides_ci_moto.py"
    assert runner_module("docs/index.md") == RUNNERS / "test_index.py"
