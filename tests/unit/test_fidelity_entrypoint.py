"""Fidelity, item 4/6: the container entrypoint's argv equals the current AWS vLLM DLC's.

Mirrors aws/deep-learning-containers `scripts/docker/vllm/sagemaker_args.py`, the rules of
2026-08-19 (commit dceae13291, DLC v2.4; facts 3). Expected argv written from those
rules, case for case.
"""

from __future__ import annotations

import pytest

from sm_peagle.container.entrypoint import build_argv

BASE = ["vllm", "serve", "m", "--port", "8080"]

# (id, SM_VLLM_* variable, value, arguments after `vllm serve m --port 8080`)
CASES: list[tuple[str, str, str, list[str]]] = [
    ("true-bare-flag", "SM_VLLM_ENFORCE_EAGER", "true", ["--enforce-eager"]),
    ("false-drops", "SM_VLLM_ENFORCE_EAGER", "false", []),
    ("array-one-per-element", "SM_VLLM_API_KEY", '["a", "b"]', ["--api-key", "a", "b"]),
    ("array-null-is-empty-string", "SM_VLLM_X", '["a", null]', ["--x", "a", ""]),
    (
        "array-object-compact-json",
        "SM_VLLM_X",
        '[{"a": 1, "b": [2, 3]}]',
        ["--x", '{"a":1,"b":[2,3]}'],
    ),
    ("array-booleans-lower", "SM_VLLM_X", "[true, false]", ["--x", "true", "false"]),
    ("array-numbers-str", "SM_VLLM_X", "[1, 2.5]", ["--x", "1", "2.5"]),
    ("empty-array-drops", "SM_VLLM_X", "[]", []),
    (
        "single-object-one-argument",
        "SM_VLLM_SPECULATIVE_CONFIG",
        '{"method": "eagle3", "num_speculative_tokens": 3}',
        ["--speculative-config", '{"method": "eagle3", "num_speculative_tokens": 3}'],
    ),
    (
        "objects-separated-by-spaces-split",
        "SM_VLLM_LORA_MODULES",
        '{"name": "a", "path": "/a"} {"name": "b", "path": "/b"}',
        ["--lora-modules", '{"name": "a", "path": "/a"}', '{"name": "b", "path": "/b"}'],
    ),
    ("allowed-origins-one", "SM_VLLM_ALLOWED_ORIGINS", '["*"]', ["--allowed-origins", '["*"]']),
    (
        "allowed-methods-one",
        "SM_VLLM_ALLOWED_METHODS",
        '["GET", "POST"]',
        ["--allowed-methods", '["GET", "POST"]'],
    ),
    ("allowed-headers-one", "SM_VLLM_ALLOWED_HEADERS", '["*"]', ["--allowed-headers", '["*"]']),
    ("middleware-one", "SM_VLLM_MIDDLEWARE", '["a.b", "c.d"]', ["--middleware", '["a.b", "c.d"]']),
    ("not-json-passes-through", "SM_VLLM_X", "[not json", ["--x", "[not json"]),
    ("plain-string", "SM_VLLM_DTYPE", "bfloat16", ["--dtype", "bfloat16"]),
    ("number", "SM_VLLM_MAX_MODEL_LEN", "8192", ["--max-model-len", "8192"]),
]


@pytest.mark.parametrize(
    ("var", "value", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_argv_matches_the_dlc_v2_4(var: str, value: str, expected: list[str]) -> None:
    argv = build_argv({"HF_MODEL_ID": "m", var: value}, model_dir_nonempty=lambda: False)
    assert argv == BASE + expected


def test_docstring_names_the_dlc_rules() -> None:
    import sm_peagle.container.entrypoint as ep

    assert "2026-08-19" in (ep.__doc__ or "") and "v2.4" in (ep.__doc__ or "")
