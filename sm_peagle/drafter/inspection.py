"""What an inspection of a drafter head records, and the pure helpers that read it.

Inspection only records facts and the problems met while reading them; judging them
against a target model and vLLM version is `check.py`'s job. Reading a local directory
is `readers.py`; reading S3 is `inspect.py`. Nothing here does I/O.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

from sm_peagle.errors import SpecError
from sm_peagle.planning.vllm_versions import covered_versions, mask_token_keys

__all__ = [
    "CONFIG",
    "INDEX",
    "SINGLE",
    "DrafterInspection",
    "FileEntry",
    "Problem",
    "all_mask_token_keys",
    "find_tensor",
    "lookup",
    "name_problems",
    "parse_s3_uri",
]

CONFIG = "config.json"
INDEX = "model.safetensors.index.json"
SINGLE = "model.safetensors"
_S3_URI = re.compile(r"^s3://(?P<bucket>[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9])(?:/(?P<prefix>.*))?$")
# Names SageMaker can mount unambiguously as file paths (see push.py).
_SAFE_NAME = re.compile(r"^[A-Za-z0-9._\-/]+$")


@dataclass(frozen=True)
class FileEntry:
    name: str
    size: int


@dataclass(frozen=True)
class Problem:
    """Something that stopped inspection reading a fact; kind is one of:
    missing_config, bad_config, missing_weights, bad_index, missing_shard, corrupt_header."""

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


def parse_s3_uri(uri: str) -> tuple[str, str]:
    """('bucket', 'prefix/') from s3://bucket/prefix; the prefix always ends with '/' or is ''."""
    m = _S3_URI.match(uri.strip())
    if not m:
        raise SpecError(f"malformed S3 URI {uri!r}", remedy="use s3://bucket/prefix/")
    prefix = (m.group("prefix") or "").strip("/")
    if "//" in prefix:
        raise SpecError(
            f"malformed S3 URI {uri!r}: empty path segment", remedy="use s3://bucket/prefix/"
        )
    return m.group("bucket"), (prefix + "/" if prefix else "")


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


def name_problems(names: list[str]) -> list[str]:
    """Relative names that would mount ambiguously under /opt/ml/additional-model-data-sources."""
    bad: list[str] = []
    seen: dict[str, str] = {}
    for n in names:
        if (
            n.startswith("/")
            or "\\" in n
            or ".." in n
            or not _SAFE_NAME.match(n)
            or "//" in n
            or n.endswith("/")
        ):
            bad.append(n)
            continue
        other = seen.setdefault(n.lower(), n)
        if other != n:
            bad.append(f"{n} (same as {other} ignoring case)")
    return bad


def find_tensor(tensors: dict[str, Any], suffix: str) -> str | None:
    """Name of the tensor called `suffix`, possibly prefixed (model.fc.weight for fc.weight)."""
    if suffix in tensors:
        return suffix
    return next((n for n in sorted(tensors) if n.endswith("." + suffix)), None)
