"""Drafter rules on real (tiny) heads, case by case, from vLLM's rules: a mask-token id
indexes the vocabulary (a non-negative integer, never a JSON boolean); fc is
Linear(aux x target hidden -> head hidden), so its rows are the head's hidden size; vLLM
>= 0.22 sizes fc and mask_hidden by the aux count of the class it loads; a real
safetensors header is read exactly."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sm_peagle.drafter import HeaderError, check_drafter, inspect_drafter, read_local_header
from sm_peagle.drafter.safetensors_header import parse_header
from sm_peagle.errors import SpecError
from tests.drafter_fixtures import TARGET_HIDDEN, edit_config, make_head, resave
from tests.unit.test_drafter_check import V18, V28, all_pass, assert_only_fail, run


@pytest.mark.parametrize("value", [True, False, -1, 1.0])
def test_boolean_negative_or_float_mask_token_is_not_a_token_id(tmp_path: Path, value) -> None:
    # A token id indexes the vocabulary: an integer in 0..vocab-1 (JSON true is not one,
    # though Python's bool is an int).
    d = make_head(tmp_path / "h")
    edit_config(d, ptd_token_id=value)
    assert_only_fail(run(d), "drafter.mask_token", f"ptd_token_id is {value!r}, not a token id")


def test_mask_token_zero_is_a_token_id(tmp_path: Path) -> None:
    d = make_head(tmp_path / "h")
    edit_config(d, ptd_token_id=0)
    assert "ptd_token_id = 0" in run(d)["drafter.mask_token"].message
    all_pass(run(d))


def test_fc_rows_must_be_the_heads_hidden_size(tmp_path: Path) -> None:
    # fc is Linear(3 x target hidden -> head hidden): weight [64, 192] for hidden 64. Rows
    # of 48 with the right 192 columns are still a head saved with another config.json.
    d = make_head(tmp_path / "h")
    resave(d, replace={"fc.weight": np.zeros((48, 192), np.float16)})
    c = assert_only_fail(run(d), "drafter.fc_shape", "but config.json hidden_size is 64")
    assert "[48, 192]" in c.message


def test_header_parser_reads_a_real_header_exactly(tmp_path: Path) -> None:
    from safetensors.numpy import save_file

    path = tmp_path / "w.safetensors"
    save_file(
        {"a": np.zeros((2, 3), np.float16), "b": np.zeros(4, np.int64)},
        str(path),
        metadata={"format": "pt"},
    )
    h = read_local_header(path)
    # safetensors writes the widest dtype first: b = 4 x 8 bytes = 32, then a = 2 x 3 x 2 = 12.
    assert {k: (t.dtype, t.shape, t.begin, t.end) for k, t in h.tensors.items()} == {
        "a": ("F16", (2, 3), 32, 44),
        "b": ("I64", (4,), 0, 32),
    }
    assert h.metadata == {"format": "pt"}


def test_sizes_follow_the_class_vllm_loads(tmp_path: Path) -> None:
    # vLLM >= 0.22 sizes fc and mask_hidden by the aux hidden-state count; its Qwen3
    # EAGLE-3 class reads num_aux_layers first (qwen3_eagle3.py), the Llama one does not.
    d = make_head(tmp_path / "h")
    edit_config(d, architectures=["Eagle3Qwen3ForCausalLM"], num_aux_layers=2)
    resave(
        d,
        replace={
            "fc.weight": np.zeros((TARGET_HIDDEN, 2 * TARGET_HIDDEN), np.float16),
            "mask_hidden": np.zeros((1, 1, 2 * TARGET_HIDDEN), np.float16),
        },
    )
    checks = run(d, vllm_version=V28)
    assert checks["drafter.fc_shape"].status == "pass", checks["drafter.fc_shape"].message
    assert checks["drafter.mask_hidden"].status == "pass", checks["drafter.mask_hidden"].message


def test_mode_defaults_to_p_eagle(tmp_path: Path) -> None:
    d = make_head(tmp_path / "h", "eagle3-llama")  # no mask token, no mask_hidden
    checks = {c.name: c for c in check_drafter(inspect_drafter(str(d)), vllm_version=V18)}
    assert checks["drafter.mask_token"].status == "fail"
    with pytest.raises(SpecError) as e:
        check_drafter(inspect_drafter(str(d)), vllm_version=V18, mode="medusa")
    assert e.value.remedy == "use p-eagle or eagle3"


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 2**40) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)
_spec = st.fixed_dictionaries(
    {
        "dtype": st.sampled_from(["F32", "BF16", "I64", "X9", 3]),
        "shape": st.lists(st.integers(-1, 4), max_size=3) | _json,
        "data_offsets": st.lists(st.integers(-1, 64), max_size=3) | _json,
    }
)


@settings(max_examples=300, deadline=None)
@given(
    st.binary(max_size=64)
    | st.dictionaries(st.text(max_size=4), _spec | _json, max_size=4).map(
        lambda d: json.dumps(d).encode()
    )
)
def test_header_parser_only_raises_header_error(raw: bytes) -> None:
    # Whatever the bytes, a bad header is reported as HeaderError naming the file; a
    # header the safetensors loader accepts, peagle accepts too, with the same tensors.
    from safetensors.numpy import load

    try:
        real = {k: list(v.shape) for k, v in load(struct.pack("<Q", len(raw)) + raw).items()}
    except Exception:
        real = None
    try:
        header = parse_header(len(raw), raw, name="fuzz.safetensors", file_size=8 + len(raw))
    except HeaderError as e:
        assert "fuzz.safetensors" in str(e)
        assert real is None, f"the safetensors loader accepts what peagle refused: {e}"
        return
    # No data bytes follow the header, so every tensor it declares is empty.
    assert all(t.begin == t.end == 0 for t in header.tensors.values())
    if real is not None:
        assert {k: list(t.shape) for k, t in header.tensors.items()} == real
