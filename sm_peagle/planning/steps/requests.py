"""Step 5 of `plan()`: the requests. Resource names (from the spec's hash), peagle's
tags, and the CreateModel / CreateEndpointConfig / CreateEndpoint requests assembled from
the resolved sources, the environment and the host AMI."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ...checks import Check
from ...version import __version__
from ..plan_result import PLACEHOLDER_ROLE
from ..spec.model import DeploymentSpec
from .checks import check_tags

if TYPE_CHECKING:  # annotations only
    from .sources import Sources

__all__ = ["Requests", "build_requests", "default_names", "peagle_tags"]

# (names, create_model, create_endpoint_config, create_endpoint)
Requests = tuple[dict[str, str], dict[str, Any], dict[str, Any], dict[str, Any]]


def _name_part(text: str) -> str:
    return re.sub(r"-+", "-", re.sub(r"[^a-zA-Z0-9-]", "-", text)).strip("-").lower()


def default_names(spec: DeploymentSpec, alias: str, sha: str) -> dict[str, str]:
    endpoint = (
        spec.endpoint.name or f"peagle-{_name_part(alias)[:36]}-{spec.speculative.mode.value}"
    )
    endpoint = endpoint[:63].rstrip("-")
    base = endpoint[:45].rstrip("-")
    return {
        "endpoint": endpoint,
        "endpoint_config": f"{base}-{sha[:8]}-cfg",
        "model": f"{base}-{sha[:8]}-mdl",
    }


def peagle_tags(spec: DeploymentSpec, endpoint: str, sha: str) -> dict[str, str]:
    """The user's tags plus peagle's own (`peagle gc` and drift detection read these)."""
    tags = dict(spec.tags)
    tags.update(
        {
            "peagle:managed": "true",
            "peagle:deployment": endpoint,
            "peagle:spec-sha256": sha,
            "peagle:version": __version__,
        }
    )
    return tags


def _deploy_time_tags(spec: DeploymentSpec) -> int:
    """How many tags deploy adds to the plan's: the spec's chunks and the operation's
    (the endpoint carries the most: `peagle:completed` too)."""
    from ..spec.tags import OPERATION_KEYS, encode_spec

    data = spec.model_dump(mode="json", exclude_defaults=True, exclude={"monitoring"})
    return len(encode_spec(data)) + len(OPERATION_KEYS)


def build_requests(
    spec: DeploymentSpec,
    src: Sources,
    env: dict[str, str],
    ami: str | None,
    checks: list[Check],
) -> Requests:
    """Names and the three create requests; appends the tag checks."""
    sha = spec.sha256()
    names = default_names(spec, src.model.alias if src.model else spec.model, sha)
    tags = peagle_tags(spec, names["endpoint"], sha)
    checks += check_tags(tags, reserved=_deploy_time_tags(spec))
    tag_list = [{"Key": k, "Value": v} for k, v in tags.items()]
    create_model = model_request(spec, src, env, names["model"], tag_list)
    create_config: dict[str, Any] = {
        "EndpointConfigName": names["endpoint_config"],
        "ProductionVariants": [variant_request(spec, src, ami, names["model"])],
        "Tags": tag_list,
    }
    if spec.network.kms_key_id:
        create_config["KmsKeyId"] = spec.network.kms_key_id
    create_endpoint = {
        "EndpointName": names["endpoint"],
        "EndpointConfigName": names["endpoint_config"],
        "Tags": tag_list,
    }
    return names, create_model, create_config, create_endpoint


def model_request(
    spec: DeploymentSpec, src: Sources, env: dict[str, str], name: str, tag_list: list
) -> dict[str, Any]:
    """CreateModel: the image, its environment, the weights and the drafter channel."""
    container: dict[str, Any] = {"Image": src.image, "Environment": env}
    if src.model_data:
        container["ModelDataSource"] = src.model_data
    if src.drafter_channels:
        container["AdditionalModelDataSources"] = src.drafter_channels
    isolation = spec.network.enable_network_isolation
    if src.jumpstart and "enable_network_isolation" not in spec.network.model_fields_set:
        isolation = src.jumpstart.network_isolation or isolation
    create_model: dict[str, Any] = {
        "ModelName": name,
        "ExecutionRoleArn": spec.role or PLACEHOLDER_ROLE,
        "PrimaryContainer": container,
        "EnableNetworkIsolation": isolation,
        "Tags": tag_list,
    }
    if spec.network.subnets:
        create_model["VpcConfig"] = {
            "Subnets": spec.network.subnets,
            "SecurityGroupIds": spec.network.security_group_ids,
        }
    return create_model


def variant_request(
    spec: DeploymentSpec, src: Sources, ami: str | None, model_name: str
) -> dict[str, Any]:
    """The ProductionVariant; JumpStart's timeouts apply unless the spec sets its own."""
    ep, js = spec.endpoint, src.jumpstart

    def timeout(name: str, js_value: int | None) -> int:
        return js_value if (js_value and name not in ep.model_fields_set) else getattr(ep, name)

    variant: dict[str, Any] = {
        "VariantName": ep.variant_name,
        "ModelName": model_name,
        "InstanceType": src.instance.name,
        "InitialInstanceCount": ep.instance_count,
        "ContainerStartupHealthCheckTimeoutInSeconds": timeout(
            "container_startup_health_check_timeout",
            js.startup_health_check_timeout if js else None,
        ),
        "ModelDataDownloadTimeoutInSeconds": timeout(
            "model_data_download_timeout", js.model_data_download_timeout if js else None
        ),
    }
    if ep.volume_size_gb is not None:
        variant["VolumeSizeInGB"] = ep.volume_size_gb
    if ep.routing_strategy:
        variant["RoutingConfig"] = {"RoutingStrategy": ep.routing_strategy}
    if ami:
        variant["InferenceAmiVersion"] = ami
    return variant
