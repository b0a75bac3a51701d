"""Step 1 of `plan()`: resolve the sources. The model and instance, the JumpStart
resolution, the container image and the vLLM version it runs, the tensor-parallel size,
where the weights and the drafter head come from (and where a local head will be
pushed), and numbers read from engine args / env. Pure: local file reads only."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...catalog.instances import InstanceType
from ...catalog.jumpstart import JumpStartResolution, load_snapshot, resolve
from ...catalog.models import DrafterInfo, ModelEntry, find_model
from ...checks import Check, failed, passed
from ...errors import Call, CheckFailed, Param, text
from ...vllm.versions import VllmVersion
from ..plan_result import DEFAULT_REGION, PLACEHOLDER_ROLE
from ..spec.model import DeploymentSpec, Mode
from . import checks as pc
from .aws_shapes import shape_enum
from .environment import whole_number
from .image_choice import resolve_image
from .version_gates import check_version_gates


@dataclass
class Sources:
    """Everything the later steps read that is not in the spec itself."""

    region: str
    model: ModelEntry | None
    instance: InstanceType
    jumpstart: JumpStartResolution | None
    image: str
    version: VllmVersion
    cuda: str | None
    tp: int
    engine_args: dict[str, Any]  # the spec's engine_args without tensor_parallel_size
    env: dict[str, str]  # the environment so far: JumpStart's and the catalog's
    model_data: dict[str, Any] | None
    drafter_channels: list[dict[str, Any]] = field(default_factory=list)
    drafter_push: dict[str, str] | None = None
    catalog_head: DrafterInfo | None = None
    # Date of the DLC entrypoint rules the image carries (catalog/images.py); None for
    # an image outside the published list.
    entrypoint_rules: str | None = None


def resolve_sources(
    spec: DeploymentSpec,
    jumpstart_spec: dict | None,
    jumpstart_source: str,
    checks: list[Check],
) -> Sources:
    """Resolve what the spec names; appends its checks. Raises SpecError when no request
    can be built, CheckFailed on an instance nothing else means anything on."""
    region = spec.region or DEFAULT_REGION
    model = find_model(spec.model)
    if jumpstart_spec is None and model and model.jumpstart_snapshot:
        jumpstart_spec = load_snapshot(model.jumpstart_snapshot)
    if model is None and jumpstart_spec is None:
        from ...catalog.names import unknown_model

        raise unknown_model(spec.model)
    checks.append(
        passed("model", f"{model.alias} ({model.hf_id})" if model else f"JumpStart {spec.model}")
    )
    inst = resolve_instance(spec, model, jumpstart_spec, checks)
    js = None
    if jumpstart_spec is not None:
        js = resolve(
            jumpstart_spec,
            region=region,
            instance_type=inst.name,
            config_name=spec.jumpstart_config,
            source=jumpstart_source,
        )
    chosen = resolve_image(spec, region, js, model, checks)
    # The same gates `peagle drafter check` applies (version_gates.py); the parallel-
    # drafting one is reported by plan_speculative, next to the config.
    checks += check_version_gates(
        chosen.version,
        spec.speculative.mode.value,
        model,
        field="container.vllm_version",
        parallel_drafting=False,
    )
    engine = dict(spec.container.engine_args)
    tp = resolve_tensor_parallel(engine, inst, checks)
    env: dict[str, str] = dict(js.env) if js else {}
    if model and (spec.model_data or js):
        for k, v in model.extra_env.items():
            env.setdefault(k, v)
    src = Sources(
        region=region,
        model=model,
        instance=inst,
        jumpstart=js,
        image=chosen.image,
        version=chosen.version,
        cuda=chosen.cuda,
        entrypoint_rules=chosen.entrypoint_rules,
        tp=tp,
        engine_args=engine,
        env=env,
        model_data=model_data_source(spec, js, model, env, checks),
    )
    resolve_drafter_source(spec, src, checks)
    return src


def resolve_instance(
    spec: DeploymentSpec, model: ModelEntry | None, jumpstart_spec: dict | None, checks: list
) -> InstanceType:
    """The instance type: the spec's, else JumpStart's default, else the catalog's."""
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
    return inst


def resolve_tensor_parallel(engine: dict[str, Any], inst: InstanceType, checks: list) -> int:
    """TP = every GPU of the instance unless engine_args overrides it (popped from
    `engine`: the container reads it from SM_VLLM_TENSOR_PARALLEL_SIZE)."""
    tp_override = engine.pop("tensor_parallel_size", None)
    tp = (
        whole_number(tp_override, "container.engine_args.tensor_parallel_size")
        if tp_override is not None
        else inst.gpus
    )
    checks.append(pc.check_tensor_parallel(inst, tp, tp_override is not None))
    return tp


def resolve_drafter_source(spec: DeploymentSpec, src: Sources, checks: list[Check]) -> None:
    """Where the drafter head comes from: an S3 prefix, a local directory (pushed at
    deploy to a content-addressed prefix), or JumpStart's head; sets the channel."""
    drafter = spec.drafter
    model, js = src.model, src.jumpstart
    src.catalog_head = model.drafter if (model and drafter.source is None) else None
    if spec.speculative.mode == Mode.BASELINE:
        return
    if drafter.is_s3:
        uri = drafter.source
        checks.append(passed("drafter.source", uri))
    elif drafter.is_local:
        account = (spec.role or PLACEHOLDER_ROLE).split(":")[4]
        bucket = drafter.bucket or f"sagemaker-{src.region}-{account}"
        uri, c = local_drafter_prefix(drafter.source, bucket)
        checks.append(c)
        src.drafter_push = {"source": drafter.source, "destination": uri}
    elif js and js.additional_sources:
        uri = js.additional_sources[0]["S3DataSource"]["S3Uri"]
        checks.append(passed("drafter.source", f"JumpStart head {uri}"))
    elif model and model.drafter_source:  # a plugin model's head, seeded by its target
        uri = model.drafter_source
        where = model.served_by or "its plugin target"
        checks.append(passed("drafter.source", f"{uri} ({where} only)"))
    else:
        uri = ""
        head = f" ({src.catalog_head.hf_id})" if src.catalog_head else ""
        checks.append(
            failed(
                "drafter.source",
                f"no S3 location of {spec.model}'s drafter head{head} is known offline",
                text(
                    "pass {d} (upload with `{push}`)",
                    d=Param("drafter", "s3://bucket/prefix/"),
                    push=Call("drafter_push"),
                ),
                field="drafter",
            )
        )
    if uri:
        src.drafter_channels.append(
            {
                "ChannelName": drafter.channel,
                "S3DataSource": {
                    "S3Uri": uri,
                    "S3DataType": "S3Prefix",
                    "CompressionType": "None",
                },
            }
        )


def local_drafter_prefix(src: str, bucket: str) -> tuple[str, Check]:
    """Content-addressed S3 prefix for a local head: names and sizes only (no hashing of
    gigabytes here; `peagle drafter push` checksums every file)."""
    root = Path(src).expanduser()
    if not root.is_dir():
        return "", failed(
            "drafter.source",
            f"local drafter directory {src!r} does not exist",
            "pass an existing directory or an s3:// prefix",
        )
    digest = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.is_file() and not p.name.startswith("."):
            digest.update(f"{p.relative_to(root).as_posix()}\0{p.stat().st_size}\n".encode())
    uri = f"s3://{bucket}/peagle/drafters/{digest.hexdigest()[:16]}/"
    return uri, passed("drafter.source", f"{src} will be pushed to {uri} at deploy")


def model_data_source(
    spec: DeploymentSpec,
    js: JumpStartResolution | None,
    model: ModelEntry | None,
    env: dict[str, str],
    checks: list[Check],
) -> dict[str, Any] | None:
    md = spec.model_data or (model.model_data if model else None)  # sandbox models
    if md and md.startswith("hf://"):
        env["HF_MODEL_ID"] = md[len("hf://") :]
        if spec.network.enable_network_isolation:
            checks.append(
                failed(
                    "network.enable_network_isolation",
                    f"the container must download {md} from the Hugging Face Hub, which network "
                    "isolation forbids",
                    # "s3://…/" as written: a placeholder, not a value to quote
                    text(
                        "pass {model_data} s3://…/ or set network.enable_network_isolation: false"
                    ),
                    field="model_data",
                )
            )
        return None
    if md:
        gz = md.endswith(".tar.gz")
        checks.append(passed("model_data", md))
        return {
            "S3DataSource": {
                "S3Uri": md,
                "S3DataType": "S3Object" if gz else "S3Prefix",
                "CompressionType": "Gzip" if gz else "None",
            }
        }
    if js:
        checks.append(
            passed("model_data", f"JumpStart {js.model_data_source['S3DataSource']['S3Uri']}")
        )
        return js.model_data_source
    name = model.jumpstart_id if model else spec.model
    checks.append(
        failed(
            "model_data",
            f"where {spec.model}'s weights live is not known offline"
            + (
                f" (JumpStart id {name}: its spec was not read)"
                if name
                else " (no JumpStart id known)"
            ),
            text(
                "pass {md}, or run with AWS credentials to resolve it live",
                md=Param("model_data", "s3://bucket/prefix/"),
            ),
            field="model_data",
        )
    )
    return None
