"""spec -> Plan: the exact SageMaker requests a deployment will send, and why.

`plan()` is pure: no boto3, no network. Given the same spec (and the same JumpStart
spec, when one is passed) it returns the same requests. `peagle plan`, `deploy
--dry-run`, the IaC exports and the lifecycle all start from it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..catalog.jumpstart import load_snapshot, resolve
from ..catalog.models import find_model
from ..errors import CheckFailed, SpecError
from ..version import __version__
from . import plan_checks as pc
from .aws_shapes import shape_enum, validate_request
from .checks import Check, failed, passed, warned
from .plan_result import DEFAULT_REGION, PLACEHOLDER_ROLE, Plan
from .scaling import add_fallback_pools, autoscaling_requests
from .sources import (
    DEFAULT_VLLM,
    env_number,
    local_drafter_prefix,
    model_data_source,
    resolve_image,
    whole_number,
)
from .specs import DeploymentSpec, Mode
from .speculative import build_speculative_config, to_env_value
from .vllm_versions import NEWEST_CHECKED, parse_image_tag

__all__ = ["Plan", "plan", "PLACEHOLDER_ROLE", "DEFAULT_REGION", "DEFAULT_VLLM"]

SPEC_ENV = "SM_VLLM_SPECULATIVE_CONFIG"


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


def plan(
    spec: DeploymentSpec, *, jumpstart_spec: dict | None = None, jumpstart_source: str = "snapshot"
) -> Plan:
    """Build the plan. Raises SpecError when no requests can be built at all."""
    checks: list[Check] = []
    region = spec.region or DEFAULT_REGION
    model = find_model(spec.model)
    if jumpstart_spec is None and model and model.jumpstart_snapshot:
        jumpstart_spec = load_snapshot(model.jumpstart_snapshot)
    if model is None and jumpstart_spec is None:
        raise SpecError(
            f"model: unknown model {spec.model!r}",
            remedy="see `peagle models`, or give a JumpStart id with AWS credentials",
        )
    checks.append(
        passed("model", f"{model.alias} ({model.hf_id})" if model else f"JumpStart {spec.model}")
    )

    instance_type = (
        spec.endpoint.instance_type
        or (jumpstart_spec or {}).get("default_inference_instance_type")
        or (model.default_instance if model else None)
    )
    inst, c = pc.check_instance(
        instance_type, shape_enum("sagemaker", "ProductionVariantInstanceType")
    )
    checks.append(c)
    if inst is None or c.status == "fail":  # nothing below means anything on a bad instance
        raise CheckFailed(checks)

    js = None
    if jumpstart_spec is not None:
        js = resolve(
            jumpstart_spec,
            region=region,
            instance_type=inst.name,
            config_name=spec.jumpstart_config,
            source=jumpstart_source,
        )
    image, version = resolve_image(spec, region, js, checks)
    if version > NEWEST_CHECKED:
        checks.append(
            warned(
                "container.vllm_version",
                f"vLLM {version} is newer than the "
                f"{NEWEST_CHECKED} peagle's key tables were checked against",
            )
        )
    _, cuda = parse_image_tag(image)

    engine = dict(spec.container.engine_args)
    tp_override = engine.pop("tensor_parallel_size", None)
    tp = (
        whole_number(tp_override, "container.engine_args.tensor_parallel_size")
        if tp_override is not None
        else inst.gpus
    )
    checks.append(pc.check_tensor_parallel(inst, tp, tp_override is not None))

    env: dict[str, str] = dict(js.env) if js else {}
    if model and (spec.model_data or js):
        for k, v in model.extra_env.items():
            env.setdefault(k, v)
    model_data = model_data_source(spec, js, model, env, checks)

    mode = spec.speculative.mode
    drafter = spec.drafter
    sha = spec.sha256()
    account = (spec.role or PLACEHOLDER_ROLE).split(":")[4]
    extra_sources: list[dict[str, Any]] = []
    drafter_push = None
    catalog_head = model.drafter if (model and drafter.source is None) else None
    if mode != Mode.BASELINE:
        if drafter.is_s3:
            uri = drafter.source
            checks.append(passed("drafter.source", uri))
        elif drafter.is_local:
            bucket = drafter.bucket or f"sagemaker-{region}-{account}"
            uri, c = local_drafter_prefix(drafter.source, bucket)
            checks.append(c)
            drafter_push = {"source": drafter.source, "destination": uri}
        elif js and js.additional_sources:
            uri = js.additional_sources[0]["S3DataSource"]["S3Uri"]
            checks.append(passed("drafter.source", f"JumpStart head {uri}"))
        else:
            uri = ""
            head = f" ({catalog_head.hf_id})" if catalog_head else ""
            checks.append(
                failed(
                    "drafter.source",
                    f"no S3 location of {spec.model}'s drafter head{head} is known offline",
                    "pass --drafter s3://bucket/prefix/ (upload with `peagle drafter push`)",
                )
            )
        if uri:
            extra_sources.append(
                {
                    "ChannelName": drafter.channel,
                    "S3DataSource": {
                        "S3Uri": uri,
                        "S3DataType": "S3Prefix",
                        "CompressionType": "None",
                    },
                }
            )

    default_k = model.default_k if model else 3
    if js and SPEC_ENV in js.env:
        import json

        default_k = json.loads(js.env[SPEC_ENV]).get("num_speculative_tokens", default_k)
    spec_result = build_speculative_config(
        spec.speculative,
        vllm_version=version,
        channel=drafter.channel,
        default_k=default_k,
        trained_k=drafter.trained_k or (catalog_head.trained_k if catalog_head else None),
        recommended_k=drafter.recommended_k
        or (catalog_head.recommended_k if catalog_head else None),
        target_tp=tp,
    )
    checks += spec_result.checks
    if mode != Mode.BASELINE and drafter.is_local and Path(drafter.source).expanduser().is_dir():
        # After the speculative config: the drafter's K rule needs the K actually planned.
        checks += pc.check_local_drafter(
            drafter.source,
            model=model,
            vllm_version=version,
            mode=mode.value,
            k=spec_result.k,
            trained_k=drafter.trained_k,
        )

    env["SM_VLLM_TENSOR_PARALLEL_SIZE"] = str(tp)
    for key, value in engine.items():
        text = ("true" if value else "false") if isinstance(value, bool) else str(value)
        env["SM_VLLM_" + key.upper().replace("-", "_")] = text
    if spec_result.config is not None:
        env[SPEC_ENV] = to_env_value(spec_result.config)
    else:
        env.pop(SPEC_ENV, None)
    if SPEC_ENV in spec.container.env:
        checks.append(
            failed(
                f"container.env.{SPEC_ENV}",
                "set by peagle from `speculative:`",
                "remove it from container.env",
            )
        )
    env.update({k: v for k, v in spec.container.env.items() if k != SPEC_ENV})
    checks += pc.check_environment(env)

    ami, c = pc.check_host_ami(
        cuda,
        spec.endpoint.inference_ami_version,
        shape_enum("sagemaker", "ProductionVariantInferenceAmiVersion"),
    )
    checks.append(c)

    max_len = (
        env_number(spec, env, "SM_VLLM_MAX_MODEL_LEN", int)
        if "SM_VLLM_MAX_MODEL_LEN" in env
        else 8192
    )
    util = (
        env_number(spec, env, "SM_VLLM_GPU_MEMORY_UTILIZATION", float)
        if "SM_VLLM_GPU_MEMORY_UTILIZATION" in env
        else pc.DEFAULT_GPU_MEMORY_UTILIZATION
    )
    head_bytes = catalog_head.bytes if catalog_head else None
    checks.append(
        pc.check_fit(
            model,
            inst,
            tp,
            drafter_bytes=head_bytes,
            speculative=mode != Mode.BASELINE,
            max_model_len=max_len,
            gpu_memory_utilization=util,
        )
    )

    ep = spec.endpoint
    set_fields = ep.model_fields_set
    if (ep.volume_size_gb is not None or spec.network.kms_key_id) and inst.local_nvme:
        checks.append(
            warned(
                "endpoint.volume_size_gb",
                f"{inst.name} has local NVMe storage; "
                "SageMaker may reject VolumeSizeInGB / a storage KMS key for it",
            )
        )
    if spec.role is None:
        checks.append(
            warned(
                "role",
                "no execution role given; the plan uses a placeholder ARN "
                "and deploy will refuse it",
                "pass --role or set PEAGLE_ROLE_ARN",
            )
        )

    alias = model.alias if model else spec.model
    names = default_names(spec, alias, sha)
    tags = dict(spec.tags)
    tags.update(
        {
            "peagle:managed": "true",
            "peagle:deployment": names["endpoint"],
            "peagle:spec-sha256": sha,
            "peagle:version": __version__,
        }
    )
    checks += pc.check_tags(tags)
    tag_list = [{"Key": k, "Value": v} for k, v in tags.items()]

    container: dict[str, Any] = {"Image": image, "Environment": env}
    if model_data:
        container["ModelDataSource"] = model_data
    if extra_sources:
        container["AdditionalModelDataSources"] = extra_sources
    isolation = spec.network.enable_network_isolation
    if js and "enable_network_isolation" not in spec.network.model_fields_set:
        isolation = js.network_isolation or isolation
    create_model: dict[str, Any] = {
        "ModelName": names["model"],
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

    def timeout(name: str, js_value: int | None) -> int:
        return js_value if (js_value and name not in set_fields) else getattr(ep, name)

    variant: dict[str, Any] = {
        "VariantName": ep.variant_name,
        "ModelName": names["model"],
        "InstanceType": inst.name,
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
    create_config: dict[str, Any] = {
        "EndpointConfigName": names["endpoint_config"],
        "ProductionVariants": [variant],
        "Tags": tag_list,
    }
    if spec.network.kms_key_id:
        create_config["KmsKeyId"] = spec.network.kms_key_id
    create_endpoint = {
        "EndpointName": names["endpoint"],
        "EndpointConfigName": names["endpoint_config"],
        "Tags": tag_list,
    }

    price = inst.usd_per_hour * ep.instance_count if inst.usd_per_hour is not None else None
    p = Plan(
        spec=spec,
        region=region,
        names=names,
        create_model=create_model,
        create_endpoint_config=create_config,
        create_endpoint=create_endpoint,
        speculative_config=spec_result.config,
        checks=checks,
        usd_per_hour=price,
        vllm_version=str(version),
        image=image,
        instance=inst,
        model=model,
        jumpstart=js,
        drafter_push=drafter_push,
        spec_sha256=sha,
    )
    add_fallback_pools(
        p, lambda sub: plan(sub, jumpstart_spec=jumpstart_spec, jumpstart_source=jumpstart_source)
    )
    p.autoscaling, scaling_checks = autoscaling_requests(p)
    p.checks += scaling_checks
    shape_errors = [
        *validate_request("sagemaker", "CreateModel", p.create_model),
        *[e for m in p.pool_models for e in validate_request("sagemaker", "CreateModel", m)],
        *validate_request("sagemaker", "CreateEndpointConfig", p.create_endpoint_config),
        *validate_request("sagemaker", "CreateEndpoint", p.create_endpoint),
    ]
    p.checks.append(
        failed("aws.request_shapes", "; ".join(shape_errors[:3]), "fix the field named above")
        if shape_errors
        else passed("aws.request_shapes", "all requests pass botocore's service model")
    )
    return p
