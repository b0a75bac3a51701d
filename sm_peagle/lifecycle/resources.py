"""What create, update and delete share: the resource kinds, the result of a run, the
tagged requests (built in planning/spec_tags.py, re-exported here), and how a botocore
error becomes a typed peagle error.

The lowest module of the lifecycle: `manager` and `update` both import it, and it
imports neither, so the dependency runs one way.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ..errors import DeploymentFailed, NotFound, PeagleError, QuotaExceeded
from ..planning.spec.tags import tagged_requests  # pure: the exports send the same tags
from .spec_tags import tag_dict

__all__ = [
    "ARNS",
    "deployment_resources",
    "endpoints_of_deployment",
    "KINDS",
    "MANAGED",
    "DeployResult",
    "as_error",
    "is_managed",
    "models_of",
    "not_found",
    "tagged_requests",
]

MANAGED = "peagle:managed"
# Written by `adopt` on everything it tags: the resource was made outside peagle.
ORIGIN = "peagle:origin"
ADOPTED = "adopted"

# kind -> (delete operation, describe operation, name argument)
KINDS = {
    "endpoint": ("delete_endpoint", "describe_endpoint", "EndpointName"),
    "endpoint_config": ("delete_endpoint_config", "describe_endpoint_config", "EndpointConfigName"),
    "model": ("delete_model", "describe_model", "ModelName"),
    "inference_component": (
        "delete_inference_component",
        "describe_inference_component",
        "InferenceComponentName",
    ),
}

# kind -> the ARN field of its describe answer
ARNS = {
    "endpoint": "EndpointArn",
    "endpoint_config": "EndpointConfigArn",
    "model": "ModelArn",
    "inference_component": "InferenceComponentArn",
}


def not_found(e: Exception) -> bool:
    """True when a SageMaker error says the resource does not exist."""
    return "Could not find" in str(e) or "does not exist" in str(e)


def is_managed(sm: Any, arn: str) -> bool:
    """True when the resource carries the peagle:managed tag (peagle created or adopted it)."""
    return tag_dict(sm.list_tags(ResourceArn=arn).get("Tags", [])).get(MANAGED) == "true"


def is_collectable(tags: dict[str, str]) -> bool:
    """May gc (or a delete of a gone endpoint) remove it? Managed by peagle and made by
    peagle: an adopted resource (`peagle:origin=adopted`) was someone else's first, so
    only a delete of its live endpoint removes it, never a sweep of orphans."""
    return tags.get(MANAGED) == "true" and tags.get(ORIGIN) != ADOPTED


def describe_existing(sm: Any, name: str) -> dict[str, Any]:
    """DescribeEndpoint for an endpoint that must already exist (to update it)."""
    try:
        return sm.describe_endpoint(EndpointName=name)
    except Exception as e:
        if not_found(e):
            raise NotFound(f"endpoint {name} does not exist", remedy="deploy it first") from None
        raise


@dataclass
class DeployResult:
    endpoint: str
    status: str
    created: list[tuple[str, str]]
    elapsed: float
    description: dict[str, Any] = field(default_factory=dict)
    rollout: Any = None  # an update's RolloutReport (lifecycle/rollout.py), when it had one


def as_error(exc: BaseException) -> PeagleError:
    """The typed error to raise for whatever stopped a create or an update: a
    DeploymentFailed (QuotaExceeded for a quota) whose message and remedy come from the
    one botocore translation, `aws.as_peagle_error` (AccessDenied names `peagle
    iam-policy`, expired credentials say to refresh them, ...)."""
    from botocore.exceptions import ClientError

    from ..aws import as_peagle_error

    if isinstance(exc, PeagleError):
        return exc
    if isinstance(exc, KeyboardInterrupt):
        return DeploymentFailed("interrupted; rolled back")
    if isinstance(exc, ClientError):
        code = exc.response.get("Error", {}).get("Code", "")
        msg = exc.response.get("Error", {}).get("Message", str(exc))
        if code == "ResourceLimitExceeded":
            return QuotaExceeded(
                f"SageMaker quota exceeded: {msg}",
                remedy="request an increase in Service Quotas for the "
                "instance type's 'for endpoint usage' quota",
            )
    translated = as_peagle_error(exc)
    if isinstance(translated, PeagleError):
        return DeploymentFailed(translated.message, remedy=translated.remedy)
    return DeploymentFailed(f"{type(exc).__name__}: {exc}")


def models_of(sm: Any, config: str) -> list[str]:
    """The models an endpoint config uses: each variant's, and each fallback pool's."""
    from botocore.exceptions import ClientError

    try:
        cfg = sm.describe_endpoint_config(EndpointConfigName=config)
    except ClientError as e:
        if not_found(e):
            return []
        raise
    names = []
    for v in cfg.get("ProductionVariants", []):
        if v.get("ModelName"):
            names.append(v["ModelName"])
        names += [
            p["ModelNameOverride"]
            for p in v.get("InstancePools", []) or []
            if p.get("ModelNameOverride")
        ]
    return names


def deployment_resources(sm: Any, endpoint: str) -> tuple[list[str], list[str]]:
    """(configs, models) peagle created for `endpoint`: tagged `peagle:managed` and
    `peagle:deployment` = endpoint, and not adopted (`resources.is_collectable`). Their
    names start with the endpoint's (cut to fit AWS's 63 characters), which narrows the
    listing first."""
    prefix = endpoint[:40]
    found: tuple[list[str], list[str]] = ([], [])
    listings = (
        (found[0], "list_endpoint_configs", "EndpointConfigs", "EndpointConfig"),
        (found[1], "list_models", "Models", "Model"),
    )
    for out, op, key, kind in listings:
        for item, values in _listed_with_tags(sm, op, key, kind, NameContains=prefix):
            if is_collectable(values) and values.get("peagle:deployment") == endpoint:
                out.append(item[f"{kind}Name"])
    return sorted(found[0]), sorted(found[1])


def _listed_with_tags(
    sm: Any, operation: str, key: str, kind: str, **params: Any
) -> Iterator[tuple[dict[str, Any], dict[str, str]]]:
    """(item, its tags) for every item a SageMaker List* call pages through; an item gone
    between the listing and its ListTags is skipped."""
    pages = sm.get_paginator(operation).paginate(**params)
    for item in (i for page in pages for i in page.get(key, [])):
        try:
            tags = sm.list_tags(ResourceArn=item[f"{kind}Arn"]).get("Tags", [])
        except Exception as e:
            if not_found(e):
                continue
            raise
        yield item, tag_dict(tags)


def endpoints_of_deployment(sm: Any, deployment: str) -> list[str]:
    """Live endpoints peagle manages whose `peagle:deployment` tag is `deployment`, whatever
    their names: a stack from `peagle export --format cloudformation` carries the plan's
    tags, but a CloudFormation that names resources itself (moto's) gives the endpoint
    another name. The tags are what make it this deployment."""
    found = []
    for ep, tags in _listed_with_tags(sm, "list_endpoints", "Endpoints", "Endpoint"):
        if tags.get(MANAGED) == "true" and tags.get("peagle:deployment") == deployment:
            found.append(ep["EndpointName"])
    return sorted(found)
