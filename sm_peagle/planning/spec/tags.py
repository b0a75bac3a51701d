"""The spec carried on the resources themselves, as tags, and the requests with them.

`peagle update` and `peagle apply` need the spec an endpoint was deployed from. Keeping
it in tags (zlib + base64 of the spec's compact, key-sorted JSON, split into 256-character
values `peagle:spec:0`, `peagle:spec:1`, …, which the tag alphabet allows) means any
machine with access can read it: no local state file to lose.

Pure, so every writer of peagle's requests sends the same tags: `peagle deploy`
(lifecycle) and the exports (iac: Terraform, CloudFormation, the sagemaker script). Reading
the tags back from AWS lives in `lifecycle/spec_tags.py`.
"""

from __future__ import annotations

import base64
import binascii
import json
import zlib
from typing import Any

from ...errors import SpecError
from ..plan_result import Plan
from .model import DeploymentSpec

__all__ = [
    "CHUNK",
    "COMPLETED",
    "MAX_CHUNKS",
    "OPERATION",
    "OPERATION_KEYS",
    "OWNER",
    "PREFIX",
    "UNTIL",
    "decode_spec",
    "deploy_requests",
    "encode_spec",
    "spec_tag_list",
    "tagged_requests",
]

PREFIX = "peagle:spec:"
CHUNK = 256
MAX_CHUNKS = 8  # leaves room for the user's tags within SageMaker's 50

# Written at run time by the lifecycle (`lifecycle/operation.py` says what they mean), not
# by the exports; counted here so a plan leaves room for them within SageMaker's 50 tags.
OPERATION = "peagle:operation"
OWNER = "peagle:operation-owner"
UNTIL = "peagle:operation-until"
COMPLETED = "peagle:completed"  # on the endpoint only
OPERATION_KEYS = frozenset({OPERATION, OWNER, UNTIL, COMPLETED})


def encode_spec(spec_data: dict[str, Any]) -> dict[str, str]:
    raw = json.dumps(spec_data, sort_keys=True, separators=(",", ":")).encode()
    text = base64.b64encode(zlib.compress(raw, 9)).decode()
    chunks = [text[i : i + CHUNK] for i in range(0, len(text), CHUNK)]
    if len(chunks) > MAX_CHUNKS:
        raise SpecError(f"spec is too large to carry in tags ({len(text)} characters encoded)")
    return {f"{PREFIX}{i}": c for i, c in enumerate(chunks)}


def decode_spec(tags: dict[str, str]) -> dict[str, Any] | None:
    """The spec data the `peagle:spec:*` tags carry (None without any).

    A re-tag adds the new chunks before it deletes the old ones (lifecycle/retag.py), so
    until its DeleteTags lands the tags may hold the new chunks 0..M followed by a longer
    old spec's chunks M+1..N. Every chunk but a stream's last is CHUNK characters, so the
    spec is the shortest prefix of chunks 0, 1, ... that is a complete zlib stream: the
    chunks after it are stale and ignored. Every spec peagle ever wrote is one such
    stream, so each decodes as before. ValueError when no prefix is complete."""
    keys = sorted((k for k in tags if k.startswith(PREFIX)), key=lambda k: int(k[len(PREFIX) :]))
    if not keys:
        return None
    chunks = [tags[k] for k in keys]
    for end in range(1, len(chunks) + 1):
        try:
            data = base64.b64decode("".join(chunks[:end]))
            stream = zlib.decompressobj()
            raw = stream.decompress(data)
        except (binascii.Error, zlib.error):
            continue  # not a stream's end here; a longer prefix may be one
        if stream.eof:
            return json.loads(raw)
    raise ValueError(f"the {PREFIX}* tags ({len(keys)}) do not hold a complete spec")


def spec_tag_list(spec: DeploymentSpec) -> list[dict[str, str]]:
    """The `peagle:spec:*` tags for `spec`, as [{Key, Value}]."""
    # Monitoring lives in CloudWatch (its alarm, filters and log group are its record); the
    # rollout says how the next update changes the endpoint, not what runs on it.
    data = spec.model_dump(mode="json", exclude_defaults=True, exclude={"monitoring"})
    endpoint = data.get("endpoint", {})
    for key in ("rollout", "ttl", "ttl_role"):  # how it changes and when it goes: not what runs
        endpoint.pop(key, None)
    if not endpoint:  # only the rollout was set there: tags as if it never was
        data.pop("endpoint", None)
    return [{"Key": k, "Value": v} for k, v in encode_spec(data).items()]


def tagged_requests(plan: Plan) -> tuple[list[dict], dict, dict]:
    """The plan's requests with the spec carried in tags: the models (primary first, then
    one per fallback pool), the endpoint config, the endpoint."""
    spec_tags = spec_tag_list(plan.spec)

    def tagged(req: dict) -> dict:
        return {**req, "Tags": req["Tags"] + spec_tags}

    models = [tagged(m) for m in (plan.create_model, *plan.pool_models)]
    return models, tagged(plan.create_endpoint_config), tagged(plan.create_endpoint)


def deploy_requests(plan: Plan) -> list[tuple[str, dict]]:
    """(operation, request) for every Create* `peagle deploy` sends, in its order, each
    with the spec tags: the models, the config, the endpoint, then (with
    `endpoint.hosting: inference-components`) the components once it is in service."""
    spec_tags = spec_tag_list(plan.spec)
    models, config, endpoint = tagged_requests(plan)
    components = [{**ic, "Tags": ic["Tags"] + spec_tags} for ic in plan.inference_components]
    if components:
        models = [{**m, "Tags": m["Tags"] + spec_tags} for m in plan.component_models]
    return [
        *(("CreateModel", m) for m in models),
        ("CreateEndpointConfig", config),
        ("CreateEndpoint", endpoint),
        *(("CreateInferenceComponent", ic) for ic in components),
    ]
