"""Whether two plans mean the same deployment: the requests they send, defaults filled in.

A spec with `num_speculative_tokens: 3` and one that leaves K to the catalog's default of
3 have different hashes, so their model and config names differ, but they send the same
CreateModel, CreateEndpointConfig and CreateEndpoint. `update`, `apply` and `diff` decide
"no change" here, not by the hash: what reaches AWS is what counts.

Pure: no I/O.
"""

from __future__ import annotations

import json
from typing import Any

from .plan_result import Plan

__all__ = ["resolved_requests", "same_meaning"]

# peagle's own tags (spec chunks, hash, version, deployment) are bookkeeping, not meaning;
# the user's tags (`spec.tags`) are kept: changing them is a change.
_OWN_TAG = "peagle:"
_HASH = "<spec-hash>"


def _strip_own_tags(value: Any) -> Any:
    if isinstance(value, dict):
        out = {k: _strip_own_tags(v) for k, v in value.items()}
        if isinstance(out.get("Tags"), list):
            out["Tags"] = sorted(
                (t for t in out["Tags"] if not str(t.get("Key", "")).startswith(_OWN_TAG)),
                key=lambda t: str(t.get("Key")),
            )
        return out
    if isinstance(value, list):
        return [_strip_own_tags(v) for v in value]
    return value


def resolved_requests(p: Plan) -> dict[str, Any]:
    """Every request the plan sends (models, config, endpoint, components, scaling, the
    head's push), with peagle's own tags left out and the spec hash in the names it derives
    (`…-35eda328-cfg`) replaced by a marker, so two specs that resolve to the same requests
    give equal views."""
    view = {
        "endpoint": p.names["endpoint"],
        "create_model": p.create_model,
        "pool_models": p.pool_models,
        "create_endpoint_config": p.create_endpoint_config,
        "create_endpoint": p.create_endpoint,
        "component_models": p.component_models,
        "inference_components": p.inference_components,
        "autoscaling": [[op, req] for op, req in p.autoscaling],
        "drafter_push": p.drafter_push,
    }
    text = json.dumps(_strip_own_tags(view), sort_keys=True)
    short = p.spec_sha256[:8]
    if short:
        text = text.replace(short, _HASH)
    return json.loads(text)


def same_meaning(a: Plan, b: Plan) -> bool:
    """True when `a` and `b` send the same requests (see `resolved_requests`)."""
    return resolved_requests(a) == resolved_requests(b)
