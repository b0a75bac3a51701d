"""The per-request spec-decode metrics gate, read from vLLM's source (issue 28; facts 13).

Expected values are written from vLLM's own files, not computed by the code under test:
`vllm/config/observability.py` gains `per_request_spec_decode_metrics:
Literal["none", "summary", "detailed"] = "none"` in 0.29.0 (absent from the 0.28.0
wheel), and `vllm/config/vllm.py` refuses it without a speculative config.
"""

from __future__ import annotations

import json
from importlib import resources

import pytest

from sm_peagle.vllm import versions as vv
from sm_peagle.vllm.versions import VllmVersion as V

DATA = json.loads(
    resources.files("sm_peagle.vllm").joinpath("data", "vllm_source_facts.json").read_text()
)


def test_first_version_with_per_request_metrics_is_0_29_0() -> None:
    first = vv.per_request_metrics_min()
    assert isinstance(first, V)
    assert str(first) == "0.29.0"
    assert first == "0.29.0"  # compares with a plain string too


@pytest.mark.parametrize(
    ("version", "values"),
    [
        ("0.16.0", ()),
        ("0.28.0", ()),
        ("0.29.0", ("none", "summary", "detailed")),
        ("0.31.0", ("none", "summary", "detailed")),
    ],
)
def test_values_per_version(version: str, values: tuple[str, ...]) -> None:
    assert vv.per_request_metrics_values(V(version)) == values


def test_data_file_records_where_and_why_vllm_refuses_it() -> None:
    entry = DATA["by_version"]["0.29.0"]["per_request_spec_decode_metrics"]
    assert entry["path"] == "vllm/config/observability.py"
    assert entry["class"] == "ObservabilityConfig"
    assert entry["default"] == "none"
    assert entry["cli_flag"] == "--per-request-spec-decode-metrics"
    messages = [r["message"] for r in entry["raises"] if r["path"] == "vllm/config/vllm.py"]
    assert any("requires speculative decoding to be enabled" in m for m in messages)
    assert DATA["by_version"]["0.28.0"]["per_request_spec_decode_metrics"] == {"found": False}
