"""Carry the deployed spec on the resources themselves, as tags.

`peagle update` and `peagle apply` need the spec an endpoint was deployed from. Keeping
it in tags means any machine with access can read it: no local state file to lose. The
encoding (pure) is planning/spec_tags.py; this module reads it back from AWS.
"""

from __future__ import annotations

from typing import Any

from ..errors import Call, NotFound, SpecError, text
from ..planning.spec.loading import spec_from_data
from ..planning.spec.model import DeploymentSpec
from ..planning.spec.tags import CHUNK, MAX_CHUNKS, PREFIX, decode_spec, encode_spec

# The encoding is pure and lives in planning/spec_tags.py (the exports write it too);
# these names stay importable from here.
__all__ = [
    "CHUNK",
    "MAX_CHUNKS",
    "PREFIX",
    "decode_spec",
    "deployed_spec",
    "encode_spec",
    "tag_dict",
]


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
                f"endpoint {endpoint} does not exist", remedy=text("see `{ls}`", ls=Call("ls"))
            ) from None
        raise
    data = decode_spec(tag_dict(sm.list_tags(ResourceArn=arn).get("Tags", [])))
    if data is None:
        raise SpecError(
            f"endpoint {endpoint} was not deployed by peagle (no spec tags)",
            remedy=text(
                "`{adopt}` takes it over (it was made elsewhere), or deploy it with peagle",
                adopt=Call("adopt", endpoint),
            ),
        )
    return spec_from_data(data)
