"""The real-engine command blocks of README.md and of every page under docs/ run as
written, on the installed engine.

The main suite counts these blocks (`<!-- docs-test: engine -->`) and does not run them;
here each runs from the repository root with the tier's engine home, a private sandbox
state directory (so the block's `peagle sandbox stop` stops only its own sandbox) and no
AWS settings. `peagle sandbox install-engine` in a block finds the engine already built
(one "ok" line per step), so the block proves the page's commands, not a second install.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from peagle_sandbox.vllm_engine.install import DEFAULT_VLLM_VERSION, EngineEnv
from tests.doc_blocks import ROOT, Block, blocks, pages

ENGINE_BLOCKS = [b for page in pages() for b in blocks(page, "engine")]


def test_the_pages_have_engine_blocks() -> None:
    # The README's real-engine section (or the guide that replaces it) keeps its block.
    assert ENGINE_BLOCKS, "no page has a real-engine (docs-test: engine) command block"


@pytest.mark.parametrize("block", ENGINE_BLOCKS, ids=[f"{b.page}:{b.id}" for b in ENGINE_BLOCKS])
def test_engine_block_runs_as_written(block: Block, engine: EngineEnv, tmp_path: Path) -> None:
    if engine.version != DEFAULT_VLLM_VERSION:
        # The pages' commands install and start the default version.
        pytest.skip(f"the pages' blocks use vLLM {DEFAULT_VLLM_VERSION}, not {engine.version}")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "PEAGLE_"))}
    env.update(
        PEAGLE_ENGINE_HOME=str(engine.home),
        PEAGLE_STATE_DIR=str(tmp_path / "state"),
        PEAGLE_CACHE_DIR=str(tmp_path / "cache"),
        COLUMNS="200",
        PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]),
    )
    cmd = (
        ["bash", "-eo", "pipefail", "-c", block.code]
        if block.lang in ("bash", "console")
        else [sys.executable, "-c", block.code]
    )
    proc = subprocess.run(
        cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800
    )  # fmt: skip
    detail = f"{block.where}:\n{block.code}\n--- stderr\n{proc.stderr[-4000:]}"
    assert proc.returncode == 0, detail
    assert "Traceback" not in proc.stderr, detail
    out = proc.stdout + proc.stderr
    if "peagle --sandbox bench" in block.code:
        # The acceptance length comes from vLLM's own SpecDecoding lines, and the results
        # name the real engine.
        assert f"vllm {engine.version} (CPU, tiny model)" in out, detail
    if "SpecDecoding metrics" in block.code:
        assert "SpecDecoding metrics" in proc.stdout, detail
