"""The drafter checks' second pass (issue 25): what vLLM's EAGLE-3 loader does with each
tensor and config value of a head, on real (tiny) safetensors heads written here.

Each expectation comes from vLLM's source as cited in the test, never from peagle:
- `llama_eagle3.py` `Eagle3LlamaForCausalLM.load_weights`: a name holding `t2d` is
  skipped, `d2t` becomes `draft_id_to_target_id`, `mask_hidden` fills the buffer, a name
  holding `lm_head` stays as it is, every other gets `model.` prepended; `LlamaModel`
  turns `midlayer.` into `layers.0.`; a name without a parameter refuses the head at
  start; the method returns None, so `default_loader.py` never checks for unloaded
  parameters (0.16.0-0.32.0);
- `parameter.py` narrows q/k/v, gate/up rows and o/down columns to the parameter: a larger
  checkpoint is cut, a smaller one fails (`start + length exceeds dimension size`);
- transformers' LlamaConfig: num_key_value_heads defaults to num_attention_heads,
  head_dim to hidden_size // num_attention_heads; AutoConfig needs model_type;
- `vocab_parallel_embedding.py` pads the embedding to a multiple of 64 rows;
- the target keeps an aux state for ids 0..L from 0.18.0 (`_maybe_add_hidden_state`
  after each layer), 0..L-1 before; the runner reads the nested eagle_config ids from
  0.22.0 (`gpu_model_runner.py`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from safetensors.numpy import save_file

from sm_peagle.checks import Check
from sm_peagle.cli.faces import cli_text
from sm_peagle.drafter import inspect_local
from sm_peagle.drafter.check import LOADING_CHECKS, check_drafter, check_drafter_loading
from sm_peagle.planning.steps.drafter_checks import STRICT, strict_checks
from sm_peagle.vllm.loader_facts import aux_id_keys, aux_max_id, cite, fact_present
from sm_peagle.vllm.versions import VllmVersion

V31 = VllmVersion("0.31.0")
H, HEADS, KV, D, INTER, VOCAB, DRAFT, LAYERS = 64, 4, 2, 16, 128, 512, 128, 4
TARGET = {"target_hidden_size": H, "target_vocab_size": VOCAB, "target_num_layers": LAYERS}
REFUSES = "refuses it at start"
FIRST = "starts and passes the health check, then fails every request"
SILENT = "loads it silently wrong"


def tensors() -> dict[str, np.ndarray]:
    """Every tensor of a one-layer Llama EAGLE-3 P-EAGLE head, under the names vLLM maps."""
    rng = np.random.default_rng(0)

    def w(*shape: int) -> np.ndarray:
        return rng.standard_normal(shape).astype(np.float16)

    return {
        "embed_tokens.weight": w(VOCAB, H),
        "midlayer.self_attn.q_proj.weight": w(HEADS * D, 2 * H),
        "midlayer.self_attn.k_proj.weight": w(KV * D, 2 * H),
        "midlayer.self_attn.v_proj.weight": w(KV * D, 2 * H),
        "midlayer.self_attn.o_proj.weight": w(H, HEADS * D),
        "midlayer.mlp.gate_proj.weight": w(INTER, H),
        "midlayer.mlp.up_proj.weight": w(INTER, H),
        "midlayer.mlp.down_proj.weight": w(H, INTER),
        "midlayer.input_layernorm.weight": np.ones(H, np.float16),
        "midlayer.post_attention_layernorm.weight": np.ones(H, np.float16),
        "midlayer.hidden_norm.weight": np.ones(H, np.float16),
        "norm.weight": np.ones(H, np.float16),
        "fc.weight": w(H, 3 * H),
        "lm_head.weight": w(DRAFT, H),
        "d2t": np.arange(DRAFT, dtype=np.int64),
        "t2d": np.zeros(VOCAB, dtype=bool),
        "mask_hidden": w(1, 1, 3 * H),
    }


def config() -> dict[str, Any]:
    return {
        "architectures": ["LlamaForCausalLMEagle3"],
        "model_type": "llama",
        "hidden_size": H,
        "intermediate_size": INTER,
        "num_hidden_layers": 1,
        "num_attention_heads": HEADS,
        "num_key_value_heads": KV,
        "head_dim": D,
        "rms_norm_eps": 1e-5,
        "torch_dtype": "float16",
        "vocab_size": VOCAB,
        "draft_vocab_size": DRAFT,
        "target_hidden_size": H,
        "ptd_token_id": 3,
        "eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 2, 3]},
    }


def head(
    d: Path,
    *,
    cfg: dict[str, Any] | None = None,
    drop: tuple[str, ...] = (),
    rename: dict[str, str] | None = None,
    add: dict[str, np.ndarray] | None = None,
) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    c = config()
    for k, v in (cfg or {}).items():
        if v is None:
            c.pop(k, None)
        else:
            c[k] = v
    t = {k: v for k, v in tensors().items() if k not in drop}
    for old, new in (rename or {}).items():
        t[new] = t.pop(old)
    t.update(add or {})
    (d / "config.json").write_text(json.dumps(c))
    save_file(t, str(d / "model.safetensors"), metadata={"format": "pt"})
    return d


def judge(d: Path, version: VllmVersion = V31, **target: Any) -> dict[str, Check]:
    ins = inspect_local(str(d))
    checks = check_drafter_loading(ins, vllm_version=version, **{**TARGET, **target})
    assert [c.name for c in checks] == list(LOADING_CHECKS)
    return {c.name: c for c in checks}


def only(checks: dict[str, Check], name: str, status: str, *words: str) -> Check:
    """`name` has `status` and every other check passes; its message holds `words`."""
    others = {n: c.status for n, c in checks.items() if n != name and c.status != "pass"}
    assert others == {}, {n: checks[n].message for n in others}
    c = checks[name]
    assert c.status == status, c
    for w in words:
        assert w in c.message, (w, c.message)
    assert c.fix, "every finding says what to change"
    return c


# -- a whole head ------------------------------------------------------------------------
def test_a_whole_head_passes_every_check(tmp_path: Path) -> None:
    checks = judge(head(tmp_path / "h"))
    assert {n: c.status for n, c in checks.items()} == dict.fromkeys(LOADING_CHECKS, "pass"), {
        n: c.message for n, c in checks.items() if c.status != "pass"
    }
    ins = inspect_local(str(tmp_path / "h"))
    first = check_drafter(
        ins,
        vllm_version=V31,
        mode="p-eagle",
        k=3,
        trained_k=5,
        **{k: v for k, v in TARGET.items() if k != "target_num_layers"},
    )
    assert {c.status for c in first} == {"pass"}, [c.message for c in first if c.status != "pass"]


# -- tensor names ----------------------------------------------------------------------------
def test_a_model_prefix_is_not_stripped_and_refuses_the_head(tmp_path: Path) -> None:
    d = head(tmp_path / "h", rename={k: f"model.{k}" for k in tensors()})
    c = judge(d)["drafter.tensor_names"]
    assert c.status == "fail" and "'model.' prefix" in c.message and REFUSES in c.message
    # model.fc.weight gets a second model. (load_weights prepends it); model.d2t becomes
    # model.draft_id_to_target_id, which LlamaModel does not have
    assert "model.model.fc.weight" in c.message and "model.draft_id_to_target_id" in c.message
    assert "without the 'model.' prefix" in c.fix
    assert cite("eagle3_prefixes_model", V31) in c.message


def test_names_vllm_keeps_or_skips_as_they_are_pass(tmp_path: Path) -> None:
    # mask_hidden and t2d load under any name containing them; lm_head keeps its name
    d = head(tmp_path / "h", rename={"mask_hidden": "model.mask_hidden", "t2d": "model.t2d"})
    assert judge(d)["drafter.tensor_names"].status == "pass"


def test_an_extra_tensor_the_class_has_no_parameter_for_refuses(tmp_path: Path) -> None:
    d = head(tmp_path / "h", add={"midlayer.self_attn.q_norm.weight": np.ones(D, np.float16)})
    checks = judge(d)
    c = checks["drafter.tensor_names"]
    assert c.status == "fail" and "q_norm" in c.message and REFUSES in c.message
    # what depends on every name loading is not judged on a head that does not load
    assert "see drafter.tensor_names" in checks["drafter.unloaded"].message


def test_a_layer_past_num_hidden_layers_has_no_parameter(tmp_path: Path) -> None:
    extra = {"layers.1.input_layernorm.weight": np.ones(H, np.float16)}
    c = judge(head(tmp_path / "h", add=extra))["drafter.tensor_names"]
    assert c.status == "fail" and "model.layers.1.input_layernorm.weight" in c.message


def test_an_unexpected_bias_depends_on_the_loader(tmp_path: Path) -> None:
    # 0.18.0's LlamaModel.load_weights looks names up in params_dict (KeyError); 0.26.0+
    # load through AutoWeightsLoader, which ignores an unexpected .bias
    d = head(
        tmp_path / "h", add={"midlayer.self_attn.q_proj.bias": np.zeros(HEADS * D, np.float16)}
    )
    assert judge(d, VllmVersion("0.18.0"))["drafter.tensor_names"].status == "fail"
    new = judge(d)["drafter.tensor_names"]
    assert new.status == "warn" and SILENT in new.message
    between = judge(d, VllmVersion("0.24.0"))["drafter.tensor_names"]
    assert between.status == "warn" and "not read" in between.message
    assert "attention_bias" in new.fix


# -- config keys the class reads, and their defaults ----------------------------------------
def test_no_model_type_refuses(tmp_path: Path) -> None:
    only(judge(head(tmp_path / "h", cfg={"model_type": None})), "drafter.config_keys", "fail",
         "model_type", REFUSES)  # fmt: skip


def test_no_num_key_value_heads_takes_the_default_and_refuses(tmp_path: Path) -> None:
    # LlamaConfig: num_key_value_heads = num_attention_heads = 4 -> k_proj 64 rows needed,
    # the weights hold 32: narrowing 64 rows out of 32 fails at load
    c = only(judge(head(tmp_path / "h", cfg={"num_key_value_heads": None})),
             "drafter.tensor_shapes", "fail", "num_key_value_heads 4", "[32, 128]", "[64, 128]",
             REFUSES)  # fmt: skip
    assert '"num_key_value_heads": 2' in c.fix


def test_a_head_dim_smaller_than_the_weights_is_cut(tmp_path: Path) -> None:
    # head_dim 8: vLLM builds q 32 rows, keeps the first 32 of the weights' 64
    c = only(judge(head(tmp_path / "h", cfg={"head_dim": 8})), "drafter.tensor_shapes", "warn",
             "keeps the first 32 of its 64 rows", SILENT)  # fmt: skip
    assert '"head_dim": 16' in c.fix
    wide = judge(head(tmp_path / "w", cfg={"head_dim": 32}))["drafter.tensor_shapes"]
    assert wide.status == "fail"  # 128 rows needed, 64 held: narrowing fails


def test_a_wrong_width_is_refused_not_cut(tmp_path: Path) -> None:
    # the input dimension of q_proj is exact: 2 x hidden for layer 0
    bad = {"midlayer.self_attn.q_proj.weight": np.zeros((HEADS * D, H), np.float16)}
    d = head(tmp_path / "h", add=bad)
    only(judge(d), "drafter.tensor_shapes", "fail", "2 x hidden_size 64", REFUSES)


# -- token ids ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("token", "status"),
    [(511, "pass"), (512, "fail"), (10**6, "fail"), (-1, "fail")],
)
def test_the_mask_token_must_index_the_heads_embedding(
    tmp_path: Path, token: int, status: str
) -> None:
    checks = judge(head(tmp_path / "h", cfg={"ptd_token_id": token}))
    c = checks["drafter.token_ids"]
    assert c.status == status, c
    if status == "fail":
        assert FIRST in c.message and str(token) in c.message


def test_a_mask_token_in_the_padding_rows_warns(tmp_path: Path) -> None:
    # vocab 500 pads to 512 rows (multiples of 64), zero-filled: 505 embeds as zeros
    d = head(tmp_path / "h", cfg={"vocab_size": 500, "ptd_token_id": 505},
             add={"embed_tokens.weight": np.zeros((500, H), np.float16)})  # fmt: skip
    c = judge(d, target_vocab_size=500)["drafter.token_ids"]
    assert c.status == "warn" and "512 rows" in c.message and SILENT in c.message


def test_without_embed_tokens_the_mask_indexes_the_target_vocab(tmp_path: Path) -> None:
    d = head(tmp_path / "h", cfg={"ptd_token_id": 600}, drop=("embed_tokens.weight",))
    assert judge(d, target_vocab_size=1024)["drafter.token_ids"].status == "pass"
    assert judge(d, target_vocab_size=512)["drafter.token_ids"].status == "fail"


def test_eagle3_mode_embeds_no_mask_token(tmp_path: Path) -> None:
    ins = inspect_local(str(head(tmp_path / "h", cfg={"ptd_token_id": 10**6})))
    checks = check_drafter_loading(ins, vllm_version=V31, mode="eagle3", **TARGET)
    assert next(c for c in checks if c.name == "drafter.token_ids").status == "pass"


# -- aux layers ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("ids", "status"),
    [([1, 2, 3], "pass"), ([0, 2, 4], "pass"), ([1, 2, 5], "fail"), ([1, 1, 2], "fail"),
     ([-1, 2, 3], "fail")],
)  # fmt: skip
def test_aux_layer_ids_against_the_targets_depth(
    tmp_path: Path, ids: list[int], status: str
) -> None:
    d = head(tmp_path / "h", cfg={"eagle_config": {"eagle_aux_hidden_state_layer_ids": ids}})
    c = judge(d)["drafter.aux_layers"]
    assert c.status == status, c.message
    if status == "fail":
        assert FIRST in c.message and "2 hidden state(s)" in c.message
        assert "128 values where its fc reads 192" in c.message


def test_layer_id_l_is_kept_from_0_18_only(tmp_path: Path) -> None:
    # up to 0.17.x the state entering layer i is id i: ids 0..3 for 4 layers
    assert aux_max_id(VllmVersion("0.17.1"), 4) == 3 and aux_max_id(VllmVersion("0.18.0"), 4) == 4
    d = head(tmp_path / "h", cfg={"eagle_aux_hidden_state_layer_ids": [1, 2, 4]})
    assert judge(d, VllmVersion("0.18.0"))["drafter.aux_layers"].status == "pass"
    assert judge(d, VllmVersion("0.17.1"))["drafter.aux_layers"].status == "fail"


def test_nested_ids_are_not_read_before_0_22(tmp_path: Path) -> None:
    assert aux_id_keys(VllmVersion("0.21.0")) == ("eagle_aux_hidden_state_layer_ids",)
    assert "eagle_config.eagle_aux_hidden_state_layer_ids" in aux_id_keys(VllmVersion("0.22.0"))
    d = head(tmp_path / "h")  # nested ids [1, 2, 3]; the default for 24 layers is 2, 12, 21
    c = judge(d, VllmVersion("0.21.0"), target_num_layers=24)["drafter.aux_layers"]
    assert c.status == "warn" and "[2, 12, 21]" in c.message and SILENT in c.message
    assert (
        judge(d, VllmVersion("0.22.0"), target_num_layers=24)["drafter.aux_layers"].status == "pass"
    )


def test_unknown_target_depth_is_a_warning(tmp_path: Path) -> None:
    c = judge(head(tmp_path / "h"), target_num_layers=None)["drafter.aux_layers"]
    assert c.status == "warn" and "target_num_layers=" in (c.fix or "")
    assert "--target-layers" in (cli_text(c.fix, "drafter") or "")  # the CLI's flag for it


# -- silent partial loads -----------------------------------------------------------------------
def test_layers_declared_without_weights_warn(tmp_path: Path) -> None:
    c = only(judge(head(tmp_path / "h", cfg={"num_hidden_layers": 2})), "drafter.unloaded",
             "warn", "num_hidden_layers 2", "layer(s) 1", "returns None", SILENT)  # fmt: skip
    assert cite("eagle3_load_weights", V31) in c.message
    assert cite("weights_tracked_only_if_returned", V31) in c.message
    assert "num_hidden_layers to 1" in c.fix


def test_a_head_without_its_decoder_layer_is_told_to_save_it(tmp_path: Path) -> None:
    # The old fix said "set num_hidden_layers to 0": a head with no layer does not load.
    layer = tuple(k for k in tensors() if k.startswith("midlayer."))
    c = only(judge(head(tmp_path / "h", drop=layer)), "drafter.unloaded", "warn",
             "layer(s) none", "builds layer(s) 0", SILENT)  # fmt: skip
    assert "num_hidden_layers to 0" not in c.fix and "midlayer.*" in c.fix


def test_a_missing_tensor_of_a_loaded_layer_warns(tmp_path: Path) -> None:
    d = head(tmp_path / "h", drop=("norm.weight",))
    only(judge(d), "drafter.unloaded", "warn", "norm.weight", SILENT)


def test_no_lm_head_borrows_the_targets(tmp_path: Path) -> None:
    d = head(tmp_path / "h", cfg={"tie_word_embeddings": True}, drop=("lm_head.weight",))
    c = only(judge(d), "drafter.borrowed", "warn", "tie_word_embeddings", "target's lm_head",
             "512 rows where d2t maps 128", SILENT)  # fmt: skip
    assert cite("share_lm_head", V31) in c.message


def test_no_embed_tokens_borrows_the_targets(tmp_path: Path) -> None:
    d = head(tmp_path / "h", drop=("embed_tokens.weight",))
    only(judge(d), "drafter.borrowed", "warn", "target's embeddings", SILENT)
    other = judge(d, target_hidden_size=128)["drafter.borrowed"]
    assert "stays uninitialised" in other.message


# -- dtypes and weight formats ---------------------------------------------------------------
def _dtype(path: Path, old: bytes, new: bytes) -> None:
    data = bytearray(path.read_bytes())
    n = int.from_bytes(data[:8], "little")
    data[8 : 8 + n] = bytes(data[8 : 8 + n]).replace(old, new, 1)
    path.write_bytes(bytes(data))


def test_an_unknown_safetensors_dtype_refuses(tmp_path: Path) -> None:
    d = head(tmp_path / "h")
    _dtype(d / "model.safetensors", b'"dtype":"F16"', b'"dtype":"F33"')
    c = judge(d)["drafter.dtypes"]
    assert c.status == "fail" and "F33" in c.message and REFUSES in c.message


@pytest.mark.parametrize(
    ("value", "status"),
    [("float33", "fail"), ("bfloat16", "pass"), ("torch.float16", "pass"), (16, "fail")],
)
def test_the_config_dtype_must_name_a_torch_dtype(tmp_path: Path, value: Any, status: str) -> None:
    c = judge(head(tmp_path / "h", cfg={"torch_dtype": value}))["drafter.dtypes"]
    assert c.status == status, c.message


def test_pickled_weights_are_refused_saying_vllm_would_load_them(tmp_path: Path) -> None:
    d = head(tmp_path / "h")
    (d / "model.safetensors").rename(d / "pytorch_model.bin")  # a name is all it takes here
    ins = inspect_local(str(d))
    assert ins.pickled_weights == ["pytorch_model.bin"] and not ins.weight_files
    weights = next(c for c in check_drafter(ins, vllm_version=V31) if c.name == "drafter.weights")
    assert weights.status == "fail"
    assert "vLLM 0.31.0 would load them" in weights.message and "unpickling" in weights.message
    assert "save_file" in weights.fix and "pytorch_model.bin" in weights.fix


def test_training_state_files_are_not_weights(tmp_path: Path) -> None:
    d = head(tmp_path / "h")
    (d / "model.safetensors").rename(d / "training_args.bin")
    ins = inspect_local(str(d))
    assert ins.pickled_weights == [] and ins.problem("missing_weights") is not None


def test_every_top_level_safetensors_file_is_read_without_an_index(tmp_path: Path) -> None:
    d = head(tmp_path / "h", drop=("norm.weight",))
    save_file({"norm.weight": np.ones(H, np.float16)}, str(d / "extra.safetensors"))
    ins = inspect_local(str(d))
    assert ins.weight_files == ["extra.safetensors", "model.safetensors"]
    assert judge(d)["drafter.unloaded"].status == "pass"


# -- strict, facts ---------------------------------------------------------------------------
def test_strict_turns_warnings_into_failures_and_says_so() -> None:
    from sm_peagle.checks import failed, passed, warned

    out = strict_checks([passed("a", "ok"), warned("b", "hmm", "do x"), failed("c", "no", "y")])
    assert [(c.name, c.status) for c in out] == [("a", "pass"), ("b", "fail"), ("c", "fail")]
    assert out[1].message == f"hmm {STRICT}" and out[1].fix == "do x"
    assert out[2].message == "no"


def test_facts_cite_the_version_read_or_the_one_below() -> None:
    assert cite("eagle3_prefixes_model", V31) == "model_executor/models/llama_eagle3.py:443"
    assert cite("eagle3_prefixes_model", VllmVersion("0.29.0")).endswith(" in 0.26.0")
    assert fact_present("eagle3_fc_norm", VllmVersion("0.18.0")) is False
    assert fact_present("eagle3_fc_norm", VllmVersion("0.22.0")) is True
    assert fact_present("eagle3_mapper", VllmVersion("0.24.0")) is None  # 0.22.0 and 0.26.0 differ


@pytest.mark.parametrize("target", [(2880, 201088, 24), (256, 512, 4)])
def test_the_synthetic_head_passes_every_check(tmp_path: Path, target: tuple[int, ...]) -> None:
    from peagle_sandbox.synthetic_head import synthetic_head

    hidden, vocab, layers = target
    files = synthetic_head(target_hidden=hidden, target_vocab=vocab, mask_token_id=3,
                           vllm_version="0.31.0", aux_layer_ids=[1, 2, 3])  # fmt: skip
    for rel, data in files.items():
        (tmp_path / rel).write_bytes(data)
    checks = judge(tmp_path, target_hidden_size=hidden, target_vocab_size=vocab,
                   target_num_layers=layers)  # fmt: skip
    assert {c.status for c in checks.values()} == {"pass"}, {
        n: c.message for n, c in checks.items() if c.status != "pass"
    }
    assert not any(n.startswith("model.") for n in inspect_local(str(tmp_path)).tensors)


def test_the_synthetic_head_refuses_a_mask_token_outside_its_vocab() -> None:
    from peagle_sandbox.synthetic_head import synthetic_head

    with pytest.raises(ValueError, match="outside the vocab"):
        synthetic_head(target_hidden=256, target_vocab=512)  # the default 201020 is not in 512
