"""peagle's spec tags, written from the documented rule rather than from sm_peagle's
encoder: the spec's non-default fields as compact, key-sorted JSON, zlib-compressed at
level 9, base64-encoded, cut into 256-character values `peagle:spec:0`, `peagle:spec:1`, …
(the SageMaker tag-value limit is 256 characters, botocore's TagValue shape). Tests use it
to say what an export or a deploy must tag, and to read a spec back from a resource."""

from __future__ import annotations

import base64
import json
import zlib
from typing import Any

PREFIX = "peagle:spec:"


def documented_spec_tags(spec: Any) -> dict[str, str]:
    """The `peagle:spec:*` tags a resource deployed from `spec` carries."""
    data = spec.model_dump(mode="json", exclude_defaults=True)
    raw = json.dumps(data, sort_keys=True, separators=(",", ":")).encode()
    text = base64.b64encode(zlib.compress(raw, 9)).decode()
    return {f"{PREFIX}{i // 256}": text[i : i + 256] for i in range(0, len(text), 256)}


def spec_data_in(tags: dict[str, str]) -> dict[str, Any]:
    """The spec data a resource's tags carry (KeyError when it carries none)."""
    keys = sorted((k for k in tags if k.startswith(PREFIX)), key=lambda k: int(k[len(PREFIX) :]))
    if not keys:
        raise KeyError(f"no {PREFIX}* tags in {sorted(tags)}")
    return json.loads(zlib.decompress(base64.b64decode("".join(tags[k] for k in keys))))
