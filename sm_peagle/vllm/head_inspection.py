"""What an inspection of a drafter head records: the facts vLLM reads when it loads a head
(config.json, the mask token, the `mask_hidden` / `fc` / `d2t` tensors and their shapes,
the weight files) and the problems met while reading them.

The drafter readers (`sm_peagle.drafter.readers`, `.inspect`) fill a `DrafterInspection`
in; the head rules (`head_rules.py`, `head_shapes.py`) judge it against a vLLM version.
Nothing here does I/O.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from .versions import covered_versions, mask_token_keys

__all__ = [
    "NO_CONFIG",
    "WEIGHT_PROBLEMS",
    "DrafterInspection",
    "FileEntry",
    "Problem",
    "all_mask_token_keys",
    "lookup",
]


# The Problem kinds that leave the weights unreadable: every rule that reads tensors is
# "not checked" under them, and drafter.weights says why (one list for all those rules).
WEIGHT_PROBLEMS = (
    "missing_weights",
    "pickled_weights",
    "bad_index",
    "missing_shard",
    "corrupt_header",
)
# What a rule that reads config.json says when drafter.config could not read it.
NO_CONFIG = "not checked: config.json is missing or unreadable (see drafter.config)"


@dataclass(frozen=True)
class FileEntry:
    name: str
    size: int


@dataclass(frozen=True)
class Problem:
    """Something that stopped inspection reading a fact; kind is one of:
    missing_config, bad_config, missing_weights, pickled_weights, bad_index,
    missing_shard, corrupt_header."""

    kind: str
    file: str
    message: str


@dataclass
class DrafterInspection:
    source: str
    files: list[FileEntry] = field(default_factory=list)
    config: dict[str, Any] | None = None
    architecture: str | None = None
    hidden_size: int | None = None
    num_hidden_layers: int | None = None
    num_attention_heads: int | None = None
    vocab_size: int | None = None
    draft_vocab_size: int | None = None  # as read, defaulted to vocab_size like vLLM does
    target_hidden_size: int | None = None
    mask_token_key: str | None = None  # first mask-token key found (any vLLM version)
    mask_token_value: Any = None
    mask_tokens: dict[str, Any] = field(default_factory=dict)  # every mask-token key found
    weight_files: list[str] = field(default_factory=list)
    mask_hidden: bool = False
    mask_hidden_shape: list[int] | None = None
    fc_name: str | None = None
    fc_shape: list[int] | None = None
    d2t: bool = False
    d2t_shape: list[int] | None = None
    tensor_count: int = 0
    total_tensor_bytes: int = 0
    dtypes: list[str] = field(default_factory=list)
    parameter_count: int = 0
    folder_keys: list[str] = field(default_factory=list)
    bad_names: list[str] = field(default_factory=list)
    # Every tensor of the weight files vLLM reads: name -> {"dtype", "shape"} (headers only).
    tensors: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Pickled weight files (pytorch_model*.bin, *.pt): vLLM loads them when there is no
    # safetensors file; peagle never unpickles them.
    pickled_weights: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    bytes_read: int = 0  # bytes fetched from safetensors files (headers only)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["mask_token"] = (
            {"key": self.mask_token_key, "value": self.mask_token_value}
            if self.mask_token_key
            else None
        )
        del d["mask_token_key"], d["mask_token_value"]
        return d

    def problem(self, *kinds: str) -> Problem | None:
        return next((p for p in self.problems if p.kind in kinds), None)


def all_mask_token_keys() -> tuple[str, ...]:
    """Union of the mask-token keys of every covered vLLM version, oldest key first."""
    keys: list[str] = []
    for version in covered_versions():
        for k in mask_token_keys(version):
            if k not in keys:
                keys.append(k)
    return tuple(keys)


def lookup(config: dict[str, Any], dotted: str) -> Any:
    node: Any = config
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node
