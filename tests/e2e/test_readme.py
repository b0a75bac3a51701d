"""Every command block of README.md runs as written, against a private sandbox (the page
runner of `tests/doc_blocks_run.py`, as for every page under docs/), and the README's two
set-up commands agree with what CI installs and runs.

The blocks come from `tests/doc_blocks.py` (also used by the conformance tier for the
`engine` blocks); the parser's own rules are checked here too.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

from tests.doc_blocks import README, ROOT, blocks, declared_counts, misnamed
from tests.doc_blocks_run import PageBlocks, check_ran, page_env

pytestmark = pytest.mark.e2e


class TestReadme(PageBlocks):
    PAGE = "README.md"


def test_the_two_setup_commands_are_consistent() -> None:
    """The first installs the product and the sandbox distribution and runs the lifecycle;
    the second installs the test extra (and the sandbox, whose harness the tests use) before
    running the tests; .ci/run installs the same and runs that same test command."""
    first, second = blocks(README)[:2]
    assert first.kind == "run"
    assert first.code.startswith("pip install -e . -e ./sandbox\n")
    assert "peagle sandbox stop" in first.code and "mktemp -d" in first.code
    test_command = "python -m pytest -q -n auto --dist loadfile"
    assert second.code.strip() == f'pip install -e ".[test]" -e ./sandbox && {test_command}'
    sandbox_deps = tomllib.loads((ROOT / "sandbox" / "pyproject.toml").read_text())["project"][
        "dependencies"
    ]
    optional = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    sandbox = {re.split(r"[\[<>=]", r)[0] for r in sandbox_deps} - {"sm-peagle"}
    test = {re.split(r"[\[<>=]", r)[0] for r in optional["test"]}
    assert sandbox <= test  # the tests start sandboxes too
    ci = (ROOT / ".ci" / "run").read_text()
    installed = re.search(r'pip install [^\n]*-e "\.\[([a-z,]+)\]" -e \./sandbox', ci)
    assert installed and "test" in installed.group(1).split(",")
    assert re.search(rf"(?m)^run_pytest {test_command.removeprefix('python -m pytest ')}$", ci)


def test_parser_marks_and_counts() -> None:
    text = textwrap.dedent(
        """\
        ```bash
        echo run
        ```
        <!-- docs-test: skip: needs AWS credentials -->

        ```python
        print("skip")
        ```
        <!-- docs-test: engine -->
        ```console
        peagle --sandbox-engine vllm deploy x
        ```
        ```yaml
        not: counted
        ```
        1. in a list, with a title:

            ```bash title="two lines"
            echo one
              echo indented
            ```
        <!-- docs-test: counts: run 2, skip 1, engine 1 -->
        """
    )
    found = blocks("docs/x.md", text=text)
    assert [(b.lang, b.kind, b.line) for b in found] == [
        ("bash", "run", 1),
        ("python", "skip", 6),
        ("console", "engine", 10),
        ("bash", "run", 18),
    ]
    assert found[1].reason == "needs AWS credentials"
    assert found[3].code == "echo one\n  echo indented\n"
    assert found[0].where == "docs/x.md line 1"
    assert declared_counts(text=text) == {"run": 2, "skip": 1, "engine": 1}


def test_a_command_block_under_another_name_is_found() -> None:
    text = "```sh\nls\n```\n\n```text\nplain\n```\n\n    ```py\nprint(1)\n    ```\n"
    assert misnamed(text=text) == ["L1 ```sh", "L9 ```py"]
    assert blocks(text=text) == []


def test_a_page_without_counts_is_named() -> None:
    with pytest.raises(AssertionError, match=r"docs/y\.md has command blocks and no"):
        declared_counts("docs/y.md", text="```bash\necho\n```\n")


def _anchors(page: Path) -> set[str]:
    """The ids MkDocs gives a page's headings (Python-Markdown's toc slugs of their text,
    code spans and link syntax dropped), outside code blocks."""
    from markdown.extensions.toc import slugify

    out, fenced = set(), False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced and (m := re.match(r"#{1,6} (.+?)\s*#*$", line)):
            text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", m.group(1)).replace("`", "")
            out.add(slugify(text, "-"))
    return out


def test_the_readmes_relative_links_resolve() -> None:
    """GitHub shows README.md and the strict docs build does not read it: its links into
    the repository (docs pages, LICENSE) and their anchors are checked here."""
    links = re.findall(r"\]\((?!https?:|mailto:|#)([^)#\s]+)(?:#([\w-]+))?\)", README.read_text())
    assert len(links) >= 10
    broken = []
    for target, anchor in links:
        path = ROOT / target
        if not path.exists():
            broken.append(target)
        elif anchor and path.suffix == ".md" and anchor not in _anchors(path):
            broken.append(f"{target}#{anchor}")
    assert broken == []


def test_the_anchor_reader_can_fail(tmp_path: Path) -> None:
    page = tmp_path / "p.md"
    page.write_text("# Top\n\n## The `peagle` CLI\n\n```bash\n# not a heading\n```\n")
    assert _anchors(page) == {"top", "the-peagle-cli"}


# Run before the README's Python block: marks on stdout where `Endpoint.stream`'s chunks end.
_STREAM_END = "<<end of stream>>"
_MARK_STREAM_END = f"""
import sys as _sys, sm_peagle as _sm
_stream = _sm.Endpoint.stream
def _marked(self, *args, **kwargs):
    yield from _stream(self, *args, **kwargs)
    _sys.stdout.write({_STREAM_END!r})
_sm.Endpoint.stream = _marked
"""


def test_the_python_snippet_leaves_nothing_running_and_ends_its_stream_with_a_newline(
    tmp_path: Path,
) -> None:
    """A newcomer runs the README's Python as a script: no sandbox may outlive it (it has
    no `peagle sandbox stop` after it), and what it prints after the stream starts on a
    line of its own."""
    (block,) = [b for b in blocks(README, "run") if b.lang == "python"]
    env = page_env(tmp_path)

    def sandbox_status() -> dict:
        cmd = [sys.executable, "-m", "sm_peagle.cli", "sandbox", "status", "--json"]
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
        return json.loads(proc.stdout)

    try:
        proc = subprocess.run(
            [sys.executable, "-c", _MARK_STREAM_END + block.code],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        check_ran(block, proc)
        assert proc.stdout.count(_STREAM_END) == 1, proc.stdout
        assert f"{_STREAM_END}\n" in proc.stdout, proc.stdout
        assert sandbox_status()["running"] is False
    finally:  # never leave a sandbox behind, even when the test fails
        subprocess.run(
            [sys.executable, "-m", "sm_peagle.cli", "sandbox", "stop"],
            env=env, capture_output=True, timeout=60,
        )  # fmt: skip


def test_the_tours_logs_step_shows_a_spec_decoding_line(tmp_path: Path) -> None:
    """The tour runs `logs` right after `invoke`; vLLM (and the sandbox, at its default
    10 s interval) writes the SpecDecoding metrics line at its next tick, so the step as
    written must wait for it rather than show the lines before it."""
    (tour,) = [b for b in blocks(README, "run") if "peagle --sandbox logs" in b.code]
    lines = [line.split("  #")[0] for line in tour.code.splitlines()]
    steps = [
        next(line for line in lines if line.startswith(f"peagle --sandbox {command} "))
        for command in ("deploy", "invoke", "logs")
    ]
    env = page_env(tmp_path)
    try:
        proc = subprocess.run(
            ["bash", "-eo", "pipefail", "-c", " && ".join(steps)],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        logs_out = proc.stdout.splitlines()[-3:]  # the tour's `| tail -3`
        assert any("SpecDecoding metrics:" in line for line in logs_out), proc.stdout
    finally:
        subprocess.run(
            [sys.executable, "-m", "sm_peagle.cli", "sandbox", "stop"],
            env=env, capture_output=True, timeout=60,
        )  # fmt: skip
