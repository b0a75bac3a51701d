"""Read JumpStart model specs and resolve an inference config into SageMaker requests.

Three sources, in the order plan uses them:
1. a spec fetched live from `jumpstart-cache-prod-<region>` (manifest -> spec_key), cached
   on disk with a TTL (`sm_peagle.lifecycle.jumpstart_live.fetch_spec`, needs credentials);
2. the on-disk cache of an earlier fetch (`jumpstart_live.read_cached_spec`);
3. the snapshot bundled with peagle (`catalog/data/`), trimmed from a real spec, so that
   `peagle plan gpt-oss-20b` works offline.

This module is the pure reader: a spec document in, requests out; no network.

`resolve()` is pure: spec dict in, requests out. It mirrors what the SageMaker Python SDK
does for a JumpStart model (config components override the base spec; `$alias` image
substitution per region; env = container-scope variables required for the model class,
plus instance-specific variables), without importing the 800 MB SDK.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..errors import SpecError, text
from .instances import instance_family

__all__ = [
    "JumpStartResolution",
    "resolve",
    "load_snapshot",
    "public_bucket",
    "private_bucket",
]


def public_bucket(region: str) -> str:
    return f"jumpstart-cache-prod-{region}"


def private_bucket(region: str) -> str:
    return f"jumpstart-private-cache-prod-{region}"


@dataclass
class JumpStartResolution:
    model_id: str
    version: str
    config_name: str | None
    region: str
    instance_type: str
    image_uri: str
    vllm_version: str | None
    model_data_source: dict[str, Any]
    additional_sources: list[dict[str, Any]]
    env: dict[str, str]
    startup_health_check_timeout: int | None
    model_data_download_timeout: int | None
    network_isolation: bool
    default_instance_type: str | None
    supported_instance_types: list[str] = field(default_factory=list)
    source: str = "snapshot"

    def to_dict(self) -> dict:
        return asdict(self)


def _view(spec: dict, config_name: str | None) -> tuple[dict, str | None]:
    """The spec as seen through an inference config: its components override the base."""
    configs = spec.get("inference_configs") or {}
    if config_name is None:
        ranking = (spec.get("inference_config_rankings") or {}).get("overall", {})
        ranked = ranking.get("rankings") or []
        config_name = next((c for c in ranked if c in configs), None)
    if config_name is None:
        return dict(spec), None
    if config_name not in configs:
        raise SpecError(
            f"jumpstart_config: {spec.get('model_id')} has no inference config {config_name!r}",
            remedy=f"use one of: {', '.join(sorted(configs)) or '(none)'}",
        )
    view = dict(spec)
    components = spec.get("inference_config_components") or {}
    for name in configs[config_name].get("component_names", []):
        view.update(components.get(name, {}))
    return view, config_name


def _image_for(view: dict, instance_type: str, region: str) -> str:
    variants = view.get("hosting_instance_type_variants") or {}
    aliases = (variants.get("regional_aliases") or {}).get(region)
    table = variants.get("variants") or {}
    # An exact instance entry may carry only env/resources; fall back to the family entry.
    image = None
    for key in (instance_type, instance_family(instance_type)):
        props = (table.get(key) or {}).get("regional_properties") or {}
        if "image_uri" in props:
            image = props["image_uri"]
            break
    if image is None:
        raise SpecError(
            f"endpoint.instance_type: JumpStart lists no image for {instance_type} "
            f"(families: {', '.join(sorted(k for k in table if not k.startswith('ml.')))})",
            remedy=text("pick a supported instance family or pass {image}"),
            field="instance_type",
            value=instance_type,
        )
    if image.startswith("$"):
        if not aliases or image[1:] not in aliases:
            offered = sorted(
                r for r, a in (variants.get("regional_aliases") or {}).items() if image[1:] in a
            )
            raise SpecError(
                f"region: JumpStart does not offer this model's image in {region}"
                + (f" (offered in {', '.join(offered)})" if offered else ""),
                remedy=text("use a region the model is offered in, or pass {image}"),
                field="region",
                value=region,
            )
        image = aliases[image[1:]]
    return image


def _instance_env(view: dict, instance_type: str) -> dict[str, str]:
    table = (view.get("hosting_instance_type_variants") or {}).get("variants") or {}
    env: dict[str, str] = {}
    for key in (instance_family(instance_type), instance_type):
        props = (table.get(key) or {}).get("properties") or {}
        env.update({k: str(v) for k, v in (props.get("environment_variables") or {}).items()})
    return env


def _bucket_for(classification: str | None, gated: bool, region: str) -> str:
    if gated or (classification or "").lower() == "gated":
        return private_bucket(region)
    return public_bucket(region)


def resolve(
    spec: dict,
    *,
    region: str,
    instance_type: str | None = None,
    config_name: str | None = None,
    source: str = "snapshot",
) -> JumpStartResolution:
    """Resolve `spec` (a JumpStart specs JSON) for one region and instance type."""
    view, chosen = _view(spec, config_name)
    instance_type = instance_type or view.get("default_inference_instance_type")
    if not instance_type:
        raise SpecError(
            "endpoint.instance_type: JumpStart spec names no default; pass one",
            field="instance_type",
        )
    gated = bool(view.get("gated_bucket"))
    bucket = _bucket_for(None, gated, region)

    key = view.get("hosting_prepacked_artifact_key") or view.get("hosting_artifact_key")
    model_data = {
        "S3DataSource": {
            "S3Uri": f"s3://{bucket}/{key}",
            "S3DataType": view.get("hosting_artifact_s3_data_type", "S3Prefix"),
            "CompressionType": view.get("hosting_artifact_compression_type", "None"),
        }
    }

    extra: list[dict[str, Any]] = []
    for entry in (view.get("hosting_additional_data_sources") or {}).get(
        "speculative_decoding", []
    ):
        ds = entry["s3_data_source"]
        b = _bucket_for((entry.get("provider") or {}).get("classification"), False, region)
        extra.append(
            {
                "ChannelName": entry["channel_name"],
                "S3DataSource": {
                    "S3Uri": f"s3://{b}/{ds['s3_uri']}",
                    "S3DataType": ds.get("s3_data_type", "S3Prefix"),
                    "CompressionType": ds.get("compression_type", "None"),
                },
            }
        )

    env = {
        v["name"]: str(v["default"])
        for v in view.get("inference_environment_variables") or []
        if v.get("scope") == "container" and v.get("required_for_model_class")
    }
    env.update(_instance_env(view, instance_type))

    ecr = view.get("hosting_ecr_specs") or {}
    deploy = view.get("deploy_kwargs") or {}
    return JumpStartResolution(
        model_id=spec["model_id"],
        version=spec.get("version", "?"),
        config_name=chosen,
        region=region,
        instance_type=instance_type,
        image_uri=_image_for(view, instance_type, region),
        vllm_version=ecr.get("framework_version") if ecr.get("framework") == "vllm" else None,
        model_data_source=model_data,
        additional_sources=extra,
        env=env,
        startup_health_check_timeout=deploy.get("container_startup_health_check_timeout"),
        model_data_download_timeout=deploy.get("model_data_download_timeout"),
        network_isolation=bool(view.get("inference_enable_network_isolation", False)),
        default_instance_type=view.get("default_inference_instance_type"),
        supported_instance_types=list(view.get("supported_inference_instance_types") or []),
        source=source,
    )


def load_snapshot(filename: str) -> dict:
    """A spec snapshot bundled in the package (no I/O beyond the wheel). A plain path
    read: importlib.resources alone costs ~17 ms of start-up on the `peagle plan` path."""
    return json.loads((Path(__file__).parent / "data" / filename).read_text())
