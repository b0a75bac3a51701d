"""Carry the deployed spec on the resources themselves, as tags.

`peagle update` and `peagle apply` need the spec an endpoint was deployed from. Keeping
it in tags (zlib + base64, split into 256-character values, which the tag alphabet
allows) means any machine with access can read it: no local state file to lose.
"""

from __future__ import annotations

import base64
import json
import zlib
from typing import Any

from ..errors import NotFound, SpecError
from ..planning.spec_loading import spec_from_data
from ..planning.specs import DeploymentSpec

PREFIX = "peagle:spec:"
CHUNK = 256
MAX_CHUNKS = 8  # leaves room for the user's tags within SageMaker's 50


def encode_spec(spec_data: dict[str, Any]) -> dict[str, str]:
    raw = json.dumps(spec_data, sort_keys=True, separators=(",", ":")).encode()
    text = base64.b64encode(zlib.compress(raw, 9)).decode()
    chunks = [text[i : i + CHUNK] for i in range(0, len(text), CHUNK)]
    if len(chunks) > MAX_CHUNKS:
        raise SpecError(f"spec is too large to carry in tags ({len(text)} characters encoded)")
    return {f"{PREFIX}{i}": c for i, c in enumerate(chunks)}


def decode_spec(tags: dict[str, str]) -> dict[str, Any] | None:
    keys = sorted((k for k in tags if k.startswith(PREFIX)), key=lambda k: int(k[len(PREFIX) :]))
    if not keys:
        return None
    text = "".join(tags[k] for k in keys)
    return json.loads(zlib.decompress(base64.b64decode(text)))


def tag_dict(tag_list: list[dict[str, str]]) -> dict[str, str]:
    """[{Key, Value}] -> {Key: Value}; the last value wins (moto may append duplicates)."""
    return {t["Key"]: t["Value"] for t in tag_list}


def deployed_spec(sm: Any, endpoint: str) -> DeploymentSpec:
    """The spec an endpoint was deployed from, read back from its tags."""
    try:
        arn = sm.describe_endpoint(EndpointName=endpoint)["EndpointArn"]
    except Exception as e:
        if "Could not find" in str(e):
            raise NotFound(
                f"endpoint {endpoint} does not exist", remedy="see `peagle ls`"
            ) from None
        raise
    data = decode_spec(tag_dict(sm.list_tags(ResourceArn=arn).get("Tags", [])))
    if data is None:
        raise SpecError(
            f"endpoint {endpoint} was not deployed by peagle (no spec tags)",
            remedy=f"`peagle adopt {endpoint}` takes it over (it was made elsewhere), or "
            "deploy it with peagle",
        )
    return spec_from_data(data)
