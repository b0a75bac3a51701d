"""vLLM's Llama EAGLE-3 head class, modelled: the config it is built from, the parameters
it defines, and where each checkpoint tensor goes when it loads.

This is `model_executor/models/llama_eagle3.py` (`Eagle3LlamaForCausalLM`, the class of
`LlamaForCausalLMEagle3`, `Eagle3LlamaForCausalLM`, `PEagleDraftModel`, ...) as read in
the wheels `loader_facts` lists:

- config: a plain head's config.json goes through transformers' AutoConfig
  (`transformers_utils/config.py`), so its `model_type` picks the config class and a key
  it omits takes that class's default (for `llama`: `loader_facts.LLAMA_DEFAULTS`); a
  speculators-format head's sizes come from its `transformer_layer_config`;
- names (`Eagle3LlamaForCausalLM.load_weights`): a name containing `t2d` is skipped, one
  containing `d2t` becomes `draft_id_to_target_id`, one containing `mask_hidden` fills
  the mask_hidden buffer, one containing `lm_head` is kept as is, and every other name
  gets `model.` prepended: no prefix is ever stripped. Inside `model.` (`LlamaModel`),
  `midlayer.` becomes `layers.0.`;
- parameters: embed_tokens [vocab, hidden], one decoder layer per num_hidden_layers
  (q/k/v read 2 x hidden in layer 0, hidden after), fc, norm, lm_head [draft vocab,
  hidden], and the optional input_norm / fc_norm.

Pure: no I/O; `DrafterInspection` in, plain values out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .head_inspection import DrafterInspection
from .loader_facts import LLAMA_DEFAULTS, fact_present
from .versions import VllmVersion, speculative_architectures

__all__ = [
    "HeadConfig",
    "Param",
    "head_config",
    "is_llama_eagle3",
    "map_name",
    "parameters",
]

# Keys a speculators-format config keeps at its top level (algos.py copies them).
_SPECULATORS_TOP = ("draft_vocab_size", "target_hidden_size", "eagle_aux_hidden_state_layer_ids")


def is_llama_eagle3(arch: str | None, version: VllmVersion) -> bool:
    """Whether the registry name vLLM loads the head as maps to `llama_eagle3`."""
    entry = speculative_architectures(version).get(arch or "")
    return bool(entry) and entry[0] == "llama_eagle3"


@dataclass
class HeadConfig:
    """The config vLLM builds the head from: `values` as read, `defaulted` the keys that
    took the config class's default (None where no default is known)."""

    model_type: str | None
    values: dict[str, Any]
    defaulted: dict[str, Any] = field(default_factory=dict)

    def get(self, key: str) -> Any:
        return self.values.get(key, self.defaulted.get(key))

    def why(self, key: str) -> str:
        """'num_key_value_heads 4' or 'num_key_value_heads 4 (not in config.json:
        LlamaConfig's default)'."""
        val = self.get(key)
        if key in self.values:
            return f"{key} {val}"
        return f"{key} {val} (not in config.json: {self.model_type} config default)"


def head_config(ins: DrafterInspection) -> HeadConfig | None:
    """The head's effective config, or None without a readable config.json."""
    cfg = ins.config
    if cfg is None:
        return None
    if "speculators_model_type" in cfg and isinstance(cfg.get("transformer_layer_config"), dict):
        values = dict(cfg["transformer_layer_config"])
        values.update({k: cfg[k] for k in _SPECULATORS_TOP if k in cfg})
        model_type = values.get("model_type", "llama")
    else:
        values = dict(cfg)
        model_type = cfg.get("model_type") if isinstance(cfg.get("model_type"), str) else None
    defaulted: dict[str, Any] = {}
    if model_type == "llama":
        defaulted = {k: v for k, v in LLAMA_DEFAULTS.items() if k not in values}
        heads = values.get("num_attention_heads", LLAMA_DEFAULTS["num_attention_heads"])
        hidden = values.get("hidden_size", LLAMA_DEFAULTS["hidden_size"])
        if values.get("num_key_value_heads") is None:
            defaulted["num_key_value_heads"] = heads
        if values.get("head_dim") is None and _int(heads) and _int(hidden):
            defaulted["head_dim"] = hidden // heads
    return HeadConfig(model_type, values, defaulted)


def _int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v > 0


@dataclass(frozen=True)
class Param:
    """One parameter of the head class, by the name its checkpoint tensor has after the
    loader's renames (`layers.0.self_attn.q_proj.weight`). `dims` are the sizes vLLM
    builds, each with how it loads: 'exact' (must equal) or 'cut' (the loader narrows the
    checkpoint to it: larger is cut silently, smaller fails), and what sets it."""

    name: str
    dims: tuple[tuple[int, str, str], ...]
    layer: int | None = None


def _exact(size: int, why: str) -> tuple[int, str, str]:
    return (size, "exact", why)


def _cut(size: int, why: str) -> tuple[int, str, str]:
    return (size, "cut", why)


def parameters(hc: HeadConfig, version: VllmVersion, aux: int) -> dict[str, Param] | None:
    """Every parameter vLLM's head class defines for this config (None when a size it
    needs is unknown: a key missing with no known default)."""
    need = ("hidden_size", "num_attention_heads", "num_key_value_heads", "head_dim")
    need += ("intermediate_size", "num_hidden_layers", "vocab_size")
    if not all(_int(hc.get(k)) for k in need):
        return None
    h, n_heads, kv, d = (hc.get(k) for k in need[:4])
    inter, layers, vocab = (hc.get(k) for k in need[4:])
    dv = hc.get("draft_vocab_size") if _int(hc.get("draft_vocab_size")) else vocab
    th = hc.get("target_hidden_size") if _int(hc.get("target_hidden_size")) else h
    w = hc.why
    q_rows, kv_rows = (
        f"{w('num_attention_heads')} x {w('head_dim')}",
        f"{w('num_key_value_heads')} x {w('head_dim')}",
    )
    out: dict[str, Param] = {
        "embed_tokens.weight": Param(
            "embed_tokens.weight", (_exact(vocab, w("vocab_size")), _exact(h, w("hidden_size")))
        ),
        "norm.weight": Param("norm.weight", (_exact(h, w("hidden_size")),)),
        "lm_head.weight": Param(
            "lm_head.weight", (_exact(dv, f"draft_vocab_size {dv}"), _exact(h, w("hidden_size")))
        ),
    }
    for i in range(layers):
        width = 2 * h if i == 0 else h
        wide = (
            f"2 x {w('hidden_size')} (layer 0 reads embeddings and hidden states)"
            if i == 0
            else w("hidden_size")
        )
        p = f"layers.{i}."
        table = {
            "self_attn.q_proj.weight": (_cut(n_heads * d, q_rows), _exact(width, wide)),
            "self_attn.k_proj.weight": (_cut(kv * d, kv_rows), _exact(width, wide)),
            "self_attn.v_proj.weight": (_cut(kv * d, kv_rows), _exact(width, wide)),
            "self_attn.o_proj.weight": (_exact(h, w("hidden_size")), _cut(n_heads * d, q_rows)),
            "mlp.gate_proj.weight": (
                _cut(inter, w("intermediate_size")),
                _exact(h, w("hidden_size")),
            ),
            "mlp.up_proj.weight": (
                _cut(inter, w("intermediate_size")),
                _exact(h, w("hidden_size")),
            ),
            "mlp.down_proj.weight": (
                _exact(h, w("hidden_size")),
                _cut(inter, w("intermediate_size")),
            ),
            "input_layernorm.weight": (_exact(h, w("hidden_size")),),
            "post_attention_layernorm.weight": (_exact(h, w("hidden_size")),),
            "hidden_norm.weight": (_exact(h, w("hidden_size")),),
        }
        if hc.get("attention_bias"):
            table["self_attn.q_proj.bias"] = (_cut(n_heads * d, q_rows),)
            table["self_attn.k_proj.bias"] = (_cut(kv * d, kv_rows),)
            table["self_attn.v_proj.bias"] = (_cut(kv * d, kv_rows),)
            table["self_attn.o_proj.bias"] = (_exact(h, w("hidden_size")),)
        for name, dims in table.items():
            out[p + name] = Param(p + name, dims, i)
    eagle = hc.get("eagle_config") if isinstance(hc.get("eagle_config"), dict) else {}
    if eagle.get("use_aux_hidden_state", True):
        out["fc.weight"] = Param(
            "fc.weight",
            (_exact(h, w("hidden_size")), _exact(aux * th, f"{aux} x target_hidden_size {th}")),
        )
        if eagle.get("norm_before_fc", hc.get("norm_before_fc")):
            out["input_norm.weight"] = Param(
                "input_norm.weight", (_exact(aux * th, f"{aux} x target_hidden_size {th}"),)
            )
        if hc.get("fc_norm") and fact_present("eagle3_fc_norm", version):
            for i in range(aux):
                out[f"fc_norm.{i}.weight"] = Param(
                    f"fc_norm.{i}.weight", (_exact(th, f"target_hidden_size {th}"),)
                )
    return out


def map_name(name: str) -> tuple[str, str]:
    """(what the loader does with a checkpoint tensor name, the name it looks up):
    ('skip', ''), ('d2t', ''), ('mask_hidden', ''), ('param', canonical name), or
    ('unmapped', the name vLLM looks for, as in its error message)."""
    if "t2d" in name:
        return "skip", ""
    if "d2t" in name:
        renamed = name.replace("d2t", "draft_id_to_target_id")
        return ("d2t", "") if renamed == "draft_id_to_target_id" else ("unmapped", renamed)
    if "mask_hidden" in name:
        return "mask_hidden", ""
    if "lm_head" in name:
        return ("param", name) if name.startswith("lm_head.") else ("unmapped", name)
    inner = name.replace("midlayer.", "layers.0.", 1)  # LlamaModel's substitution
    return "param", inner
