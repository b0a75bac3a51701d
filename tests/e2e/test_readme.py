"""Every command block of README.md runs as written, against a private sandbox.

The blocks come from `tests/readme_blocks.py` (also used by the conformance tier for the
`engine` blocks). Each ```bash block runs in `bash -eo pipefail` from the repository root
(the README's commands assume a clone), each ```python block in `python -c`, with:

- a private `PEAGLE_STATE_DIR` (so the sandbox started here is this test's alone; it is
  stopped at the end), its own HOME and cache, and no AWS_* or PEAGLE_* settings from the
  caller, so nothing can reach AWS;
- `pip` replaced by a checker on PATH: `pip install -e ".[extra]"` verifies that every
  requirement of that extra in pyproject.toml is installed in this interpreter instead of
  installing (no network, no change to the shared venv). A fresh venv with only
  `.[sandbox]` was also checked by hand to run the first block.

Skipped blocks carry a reason in the README, and the run/skip/engine counts must equal
what README.md declares.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

from tests.readme_blocks import README, Block, blocks, declared_counts

pytestmark = pytest.mark.e2e

ROOT = README.parent
RUN = blocks("run")

PIP_SHIM = """#!{python}
import importlib.metadata as md, re, sys, tomllib
args = sys.argv[1:]
pairs = list(zip(args[1::2], args[2::2]))
if args[:1] != ["install"] or len(args) % 2 != 1 or any(flag != "-e" for flag, _ in pairs):
    sys.exit(f"readme-test pip shim: expected `pip install -e PATH[extras] ...`, got {{args}}")
missing = []
for _, target in pairs:
    m = re.fullmatch(r"(\\.(?:/[a-z_]+)?)(?:\\[([a-z,]+)\\])?", target)
    if not m:
        sys.exit(f"readme-test pip shim: unexpected install target {{target!r}}")
    project = tomllib.load(open(f"{{m.group(1)}}/pyproject.toml", "rb"))["project"]
    reqs = [project["name"], *project.get("dependencies", [])]
    for extra in (m.group(2) or "").split(",") if m.group(2) else []:
        if extra not in project.get("optional-dependencies", {{}}):
            sys.exit(f"readme-test pip shim: {{project['name']}} has no extra {{extra!r}}")
        reqs += project["optional-dependencies"][extra]
    for req in reqs:
        name = re.split(r"[\\[<>=!~ ;]", req, maxsplit=1)[0]
        try:
            md.version(name)
        except md.PackageNotFoundError:
            missing.append(req)
if missing:
    sys.exit(f"readme-test pip shim: not installed: {{missing}}")
print(f"readme-test pip shim: {{' '.join(t for _, t in pairs)}} is installed")
"""


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("readme")
    shims = root / "bin"
    shims.mkdir()
    pip = shims / "pip"
    pip.write_text(PIP_SHIM.format(python=sys.executable))
    pip.chmod(0o755)
    (root / "home").mkdir()
    base = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "PEAGLE_"))}
    base.update(
        HOME=str(root / "home"),
        PEAGLE_STATE_DIR=str(root / "state"),
        PEAGLE_CACHE_DIR=str(root / "cache"),
        PEAGLE_POLL_SECONDS="0.2",
        COLUMNS="200",
        PATH=os.pathsep.join([str(shims), str(Path(sys.executable).parent), base["PATH"]]),
    )
    yield base
    subprocess.run(
        [sys.executable, "-m", "sm_peagle.cli", "sandbox", "stop"],
        env=base,
        capture_output=True,
        timeout=60,
    )


def run_block(block: Block, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    cmd = (
        ["bash", "-eo", "pipefail", "-c", block.code]
        if block.lang in ("bash", "console")
        else [sys.executable, "-c", block.code]
    )
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize("block", RUN, ids=[b.id for b in RUN])
def test_readme_block_runs_as_written(block: Block, env: dict[str, str]) -> None:
    proc = run_block(block, env)
    detail = f"README.md line {block.line}:\n{block.code}\n--- stderr\n{proc.stderr[-3000:]}"
    assert proc.returncode == 0, detail
    assert "Traceback" not in proc.stderr, detail
    if "peagle --sandbox bench" in block.code:  # progress: each level says it started
        assert re.search(r"level concurrency \d+: sending \d+ requests \.\.\.", proc.stderr), detail


def test_block_counts_are_the_declared_ones() -> None:
    counts = {kind: len(blocks(kind)) for kind in ("run", "skip", "engine")}
    assert counts == declared_counts()
    assert all(b.reason and len(b.reason) > 10 for b in blocks("skip"))


def test_the_two_setup_commands_are_consistent() -> None:
    """The first installs the product and the sandbox distribution and runs the lifecycle;
    the second installs the test extra (and the sandbox, whose harness the tests use) before
    running the tests; .ci/run installs the same and runs that same test command."""
    first, second = blocks()[:2]
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
        <!-- readme-test: skip: needs AWS credentials -->

        ```python
        print("skip")
        ```
        <!-- readme-test: engine -->
        ```console
        peagle --sandbox-engine vllm deploy x
        ```
        ```yaml
        not: counted
        ```
        <!-- readme-test: counts: run 1, skip 1, engine 1 -->
        """
    )
    found = blocks(text=text)
    assert [(b.lang, b.kind) for b in found] == [
        ("bash", "run"),
        ("python", "skip"),
        ("console", "engine"),
    ]
    assert found[1].reason == "needs AWS credentials"
    assert declared_counts(text) == {"run": 1, "skip": 1, "engine": 1}
