"""The pure helpers the drafter readers share: the file names a head holds, S3 URIs, and
the names SageMaker can mount. Nothing here does I/O.

What an inspection records (`DrafterInspection`, `FileEntry`, `Problem`) lives in
`sm_peagle.vllm.head_inspection`, next to the vLLM head rules that judge it; it is
re-exported here for the readers that fill it in and for `sm_peagle.drafter`'s names.
"""

from __future__ import annotations

import re
from typing import Any

from sm_peagle.errors import SpecError
from sm_peagle.vllm.head_inspection import (
    DrafterInspection,
    FileEntry,
    Problem,
    all_mask_token_keys,
    lookup,
)

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
