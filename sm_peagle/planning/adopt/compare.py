"""Compare what an endpoint runs with what a plan would send, field by field.

`peagle adopt` reconstructs a spec from Describe* answers; this module says whether that
spec plans to the same requests. Both sides become the same view: the CreateModel and
CreateEndpointConfig fields that decide what runs (image, weights, channels, environment,
role, isolation, VPC, instance type and count, timeouts, host AMI, volume, routing, KMS),
without names and tags, which differ by construction. The speculative config is
compared as JSON (the container parses it), so key order and spacing do not count.
Pure: dicts in, differences out.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from typing import Any

from ...vllm.speculative import SPEC_ENV

__all__ = ["Difference", "compare", "deployed_view", "plan_view"]

# Variant fields that describe identity or the live state, not what to deploy.
_VARIANT_SKIP = {"ModelName", "VariantName"}
# Fields describe answers carry that a create request does not send.
_MODEL_SKIP = {
    "ModelName",
    "ModelArn",
    "CreationTime",
    "Containers",
    "DeploymentRecommendation",
    "ResponseMetadata",
}


@dataclass(frozen=True)
class Difference:
    """One field where the endpoint and the plan disagree (None = absent on that side)."""

    path: str
    deployed: Any
    planned: Any

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "deployed": self.deployed, "planned": self.planned}

    def __str__(self) -> str:
        return f"{self.path}: endpoint has {_show(self.deployed)}, peagle would send " + _show(
            self.planned
        )


def _show(value: Any) -> str:
    return "nothing" if value is None else json.dumps(value)


def _container_view(container: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in container.items() if v not in (None, {}, [])}
    env = dict(out.get("Environment") or {})
    if SPEC_ENV in env:
        with contextlib.suppress(ValueError):  # else compared as the string it is
            env[SPEC_ENV] = json.loads(env[SPEC_ENV])
    if env:
        out["Environment"] = env
    if out.get("Mode") == "SingleModel":  # the default: a request that omits it gets it
        out.pop("Mode")
    return out


def _variant_view(variant: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in variant.items() if k not in _VARIANT_SKIP and v is not None}
    if out.get("InitialVariantWeight") in (1, 1.0):  # the default with one variant
        out.pop("InitialVariantWeight")
    return out


def _view(model: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
    body = {k: v for k, v in model.items() if k not in _MODEL_SKIP and k != "Tags"}
    body["PrimaryContainer"] = _container_view(body.get("PrimaryContainer") or {})
    if not body.get("VpcConfig"):
        body.pop("VpcConfig", None)
    body["EnableNetworkIsolation"] = bool(body.get("EnableNetworkIsolation", False))
    variants = config.get("ProductionVariants") or []
    view: dict[str, Any] = {
        "model": body,
        "variant": _variant_view(variants[0]) if variants else {},
    }
    if config.get("KmsKeyId"):
        view["KmsKeyId"] = config["KmsKeyId"]
    return view


def deployed_view(model: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
    """The view of a DescribeModel + DescribeEndpointConfig pair."""
    config_body = {k: v for k, v in config.items() if k in ("ProductionVariants", "KmsKeyId") and v}
    return _view(model, config_body)


def plan_view(p: Any) -> dict[str, Any]:
    """The view of a plan's CreateModel + CreateEndpointConfig requests."""
    return _view(p.create_model, p.create_endpoint_config)


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """{"a": {"b": 1}, "l": [x]} -> {"a.b": 1, "l[0]": x}; JSON strings stay strings.

    The one flatten of peagle (adopt's comparison and apply/diff's): an empty dict or list
    contributes no leaf, so it equals an absent field. SageMaker treats an omitted request
    field and an empty one alike (describe calls drop empty Environment/Tags/lists), so a
    difference between {} and absent is no change anyone could make; emptying a field
    that had values still shows, as each of its leaves going to None."""
    out: dict[str, Any] = {}
    if isinstance(value, dict):
        for k, v in value.items():
            out.update(flatten(v, f"{prefix}.{k}" if prefix else str(k)))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out.update(flatten(v, f"{prefix}[{i}]"))
    else:
        out[prefix] = value
    return out


def compare(deployed: dict[str, Any], planned: dict[str, Any]) -> list[Difference]:
    """Every leaf that differs between two views, in path order."""
    a, b = flatten(deployed), flatten(planned)
    return [
        Difference(k, a.get(k), b.get(k)) for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)
    ]
