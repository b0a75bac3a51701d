"""How a page's command blocks run, for the page-block tests: one small module per page
(`tests/e2e/test_readme.py` for README.md, `tests/e2e/doc_pages/test_<page>.py` for each
page under docs/), each a subclass of `PageBlocks` naming its page. One module per page
lets `pytest -n auto --dist loadfile` run the pages in parallel, each on one worker, in
order, with one sandbox of its own.

Each ```bash (or ```console) block runs in `bash -eo pipefail` from the repository root (the
pages' commands assume a clone), each ```python block in `python -c`, with:

- a private `PEAGLE_STATE_DIR` per page (so the sandbox a page starts is its own; it is
  stopped when the page's tests end), its own HOME and cache, and no AWS_* or PEAGLE_*
  settings from the caller, so nothing can reach AWS;
- `pip` replaced by a checker on PATH: `pip install -e ".[extra]"` verifies that every
  requirement of that extra in pyproject.toml is installed in this interpreter instead of
  installing (no network, no change to the shared venv).

A block passes when it exits 0 and prints no Python traceback, and every command that
each `peagle` it ran printed for pasting (`next:`, `(fix: …)`, backquoted `peagle …`)
targets what that `peagle` targeted: `--sandbox` after a sandbox command, never after one
that talked to AWS (tests/printed_commands.py). To see each invocation's argv and output,
`peagle` on the block's PATH is a shim that tees them to files, then runs peagle as is.
Skipped blocks carry a reason on the page, and the run/skip/engine counts must equal what
the page declares.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.doc_blocks import ROOT, Block, blocks, declared_counts, misnamed
from tests.printed_commands import off_target

__all__ = ["PIP_SHIM", "PageBlocks", "page_env", "run_block"]

PIP_SHIM = """#!{python}
import importlib.metadata as md, re, sys, tomllib
args = sys.argv[1:]
pairs = list(zip(args[1::2], args[2::2]))
if args[:1] != ["install"] or len(args) % 2 != 1 or any(flag != "-e" for flag, _ in pairs):
    sys.exit(f"docs-test pip shim: expected `pip install -e PATH[extras] ...`, got {{args}}")
missing = []
for _, target in pairs:
    m = re.fullmatch(r"(\\.(?:/[a-z_]+)?)(?:\\[([a-z,]+)\\])?", target)
    if not m:
        sys.exit(f"docs-test pip shim: unexpected install target {{target!r}}")
    project = tomllib.load(open(f"{{m.group(1)}}/pyproject.toml", "rb"))["project"]
    reqs = [project["name"], *project.get("dependencies", [])]
    for extra in (m.group(2) or "").split(",") if m.group(2) else []:
        if extra not in project.get("optional-dependencies", {{}}):
            sys.exit(f"docs-test pip shim: {{project['name']}} has no extra {{extra!r}}")
        reqs += project["optional-dependencies"][extra]
    for req in reqs:
        name = re.split(r"[\\[<>=!~ ;]", req, maxsplit=1)[0]
        try:
            md.version(name)
        except md.PackageNotFoundError:
            missing.append(req)
if missing:
    sys.exit(f"docs-test pip shim: not installed: {{missing}}")
print(f"docs-test pip shim: {{' '.join(t for _, t in pairs)}} is installed")
"""


# `peagle` for the blocks: records each run's argv, whether the sandbox was chosen by the
# environment, and its stdout and stderr (tee: still streamed to the block), then is peagle.
PEAGLE_SHIM = """#!/usr/bin/env bash
log="$DOCS_TEST_PEAGLE_LOG/$(date +%s%N)-$$"
printf '%s\\n' "$@" > "$log.argv"
if [ "${{PEAGLE_SANDBOX:-}}" = 1 ] || [ -n "${{PEAGLE_SANDBOX_URL:-}}" ]; then
  : > "$log.sandbox"
fi
exec {python} -m sm_peagle.cli "$@" > >(tee "$log.out") 2> >(tee "$log.err" >&2)
"""


def page_env(root: Path) -> dict[str, str]:
    """The environment a page's blocks run in, with its private directories under `root`."""
    shims = root / "bin"
    shims.mkdir(parents=True, exist_ok=True)
    pip = shims / "pip"
    pip.write_text(PIP_SHIM.format(python=sys.executable))
    pip.chmod(0o755)
    peagle = shims / "peagle"
    peagle.write_text(PEAGLE_SHIM.format(python=sys.executable))
    peagle.chmod(0o755)
    (root / "peagle-runs").mkdir(exist_ok=True)
    (root / "home").mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "PEAGLE_"))}
    env.update(
        HOME=str(root / "home"),
        PEAGLE_STATE_DIR=str(root / "state"),
        PEAGLE_CACHE_DIR=str(root / "cache"),
        PEAGLE_POLL_SECONDS="0.2",
        # The sandbox's control plane at 10x (its default 3 s of Creating and of Updating
        # last 0.3 s): what the blocks show does not depend on the rate, and an invocation
        # holds the clock at real time, so token timings are unchanged.
        PEAGLE_SANDBOX_CLOCK_RATE=TEST_CLOCK_RATE,
        COLUMNS="200",
        DOCS_TEST_PEAGLE_LOG=str(root / "peagle-runs"),
        PATH=os.pathsep.join([str(shims), str(Path(sys.executable).parent), env["PATH"]]),
    )
    return env


# The clock rate of the sandboxes the tests start (tests/e2e/test_sandbox.py uses it too).
TEST_CLOCK_RATE = "10"


def run_block(
    block: Block, env: dict[str, str], timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    cmd = (
        ["bash", "-eo", "pipefail", "-c", block.code]
        if block.lang in ("bash", "console")
        else [sys.executable, "-c", block.code]
    )
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


def check_ran(block: Block, proc: subprocess.CompletedProcess[str]) -> None:
    """What every runnable block must show: exit 0, no traceback, and a bench block's
    progress line for each level it starts."""
    detail = f"{block.where}:\n{block.code}\n--- stderr\n{proc.stderr[-3000:]}"
    assert proc.returncode == 0, detail
    assert "Traceback" not in proc.stderr, detail
    if "peagle --sandbox bench" in block.code:  # progress: each level says it started
        assert re.search(r"level concurrency \d+: sending \d+ requests \.\.\.", proc.stderr), detail


def targeted(runs: Path) -> list[str]:
    """Each `peagle` run (recorded by the shim) whose printed commands miss its target,
    as `peagle ARGV: COMMAND`; the runs are then forgotten (one block's, not the next's)."""
    bad = []
    for argv_file in sorted(runs.glob("*.argv")):
        stem = argv_file.with_suffix("")
        argv = argv_file.read_text().splitlines()
        printed = "".join(
            Path(f"{stem}.{kind}").read_text() if Path(f"{stem}.{kind}").exists() else ""
            for kind in ("out", "err")
        )
        head = argv[: next((i for i, a in enumerate(argv) if not a.startswith("-")), len(argv))]
        sandbox = Path(f"{stem}.sandbox").exists() or any(
            a == "--sandbox" or a.startswith("--sandbox-engine") for a in head
        )
        bad += [f"peagle {' '.join(argv)}: {c}" for c in off_target(printed, sandbox=sandbox)]
        for kind in ("argv", "out", "err", "sandbox"):
            Path(f"{stem}.{kind}").unlink(missing_ok=True)
    return bad


class PageBlocks:
    """One page's block tests. A subclass sets PAGE (its path from the repository root) and
    is collected by pytest as `Test…`."""

    PAGE: str = ""

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        if "block" in metafunc.fixturenames:
            run: list[Block | None] = [*blocks(self.PAGE, "run")]
            # A page whose blocks are all skipped or engine ones still gets a test here (its
            # declared run count must be 0), never pytest's silent skip of an empty set.
            ids = [b.id for b in run if b] or ["no-runnable-block"]
            metafunc.parametrize("block", run or [None], ids=ids)

    @pytest.fixture(scope="class")
    @classmethod
    def env(cls, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
        env = page_env(tmp_path_factory.mktemp("page"))
        yield env
        # The page's own sandbox (if a block started one and did not stop it).
        subprocess.run(
            [sys.executable, "-m", "sm_peagle.cli", "sandbox", "stop"],
            env=env, capture_output=True, timeout=60,
        )  # fmt: skip

    def test_block_runs_as_written(self, block: Block | None, env: dict[str, str]) -> None:
        if block is None:
            assert declared_counts(self.PAGE)["run"] == 0, f"{self.PAGE} lost its run blocks"
            return
        proc = run_block(block, env)
        off = targeted(Path(env["DOCS_TEST_PEAGLE_LOG"]))
        check_ran(block, proc)
        assert off == [], f"{block.where}: printed commands that miss their target: {off}"

    def test_block_counts_are_the_declared_ones(self) -> None:
        found = blocks(self.PAGE)
        assert found, f"{self.PAGE} has no command block: it needs no runner module"
        counts = {k: len([b for b in found if b.kind == k]) for k in ("run", "skip", "engine")}
        assert counts == declared_counts(self.PAGE), self.PAGE
        short = [b.where for b in found if b.kind == "skip" and len(b.reason or "") <= 10]
        assert short == [], "a skip needs its reason (more than ten characters)"
        assert misnamed(self.PAGE) == [], f"{self.PAGE}: use ```bash, ```console or ```python"
