"""The inputs a plan resolves before it assembles requests: the container image and
the vLLM version it runs, where the weights come from, where a local drafter head will
be pushed, and numbers read from engine args / env. Pure: local file reads only."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from ..catalog.jumpstart import JumpStartResolution
from ..catalog.models import ModelEntry
from ..errors import SpecError
from .checks import Check, failed, passed
from .specs import DeploymentSpec
from .vllm_versions import DEFAULT_VLLM, VllmVersion, cuda_for_version, parse_image_tag

DLC_ACCOUNT = "763104351884"


def whole_number(value: Any, field_: str) -> int:
    """An engine arg that must be an integer: 8 or "8", never 2.5, true or "abc"."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    raise SpecError(f"{field_}: {value!r} is not a whole number")


def env_number(spec: DeploymentSpec, env: dict[str, str], key: str, kind: type) -> Any:
    """A numeric SM_VLLM_* setting as the container will read it: an int >= 1, or a float
    in (0, 1]. Bad values raise SpecError naming where the user set them."""
    field_ = f"container.env.{key}"
    if key not in spec.container.env:
        for arg in spec.container.engine_args:
            if "SM_VLLM_" + arg.upper().replace("-", "_") == key:
                field_ = f"container.engine_args.{arg}"
    try:
        value = kind(env[key].strip())
    except ValueError:
        value = None
    if kind is int and (value is None or value < 1):
        raise SpecError(f"{field_}: {env[key]!r} is not a positive whole number")
    if kind is float and (value is None or not 0 < value <= 1):
        raise SpecError(f"{field_}: {env[key]!r} is not a fraction between 0 and 1")
    return value


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


def resolve_image(
    spec: DeploymentSpec, region: str, js: JumpStartResolution | None, checks: list[Check]
) -> tuple[str, VllmVersion]:
    field_ = "container.vllm_version"
    explicit = VllmVersion(spec.container.vllm_version) if spec.container.vllm_version else None
    if spec.container.image:
        image = spec.container.image
        parsed, _ = parse_image_tag(image)
        if explicit and parsed and explicit != parsed:
            raise SpecError(
                f"{field_}: --vllm-version {explicit} contradicts image tag "
                f"{image.rsplit(':', 1)[1]} (vLLM {parsed})"
            )
        version = explicit or parsed
        if version is None:
            raise SpecError(
                f"{field_}: cannot tell which vLLM image {image} runs", remedy="pass --vllm-version"
            )
        checks.append(passed(field_, f"vLLM {version} ({'given' if explicit else 'image tag'})"))
        return image, version
    if explicit or not js:
        version = explicit or VllmVersion(DEFAULT_VLLM)
        dlc = cuda_for_version(version)
        if dlc is None:
            raise SpecError(
                f"{field_}: no AWS vLLM DLC is known for vLLM {version}",
                remedy="pass --image with your own image",
            )
        account = DLC_ACCOUNT
        if js:  # JumpStart knows the DLC account of regions outside the common one
            account = js.image_uri.split(".", 1)[0]
        suffix = ".cn" if region.startswith("cn-") else ""
        image = (
            f"{account}.dkr.ecr.{region}.amazonaws.com{suffix}/vllm:{version}-gpu-py312-"
            f"{dlc[0]}-{dlc[1]}-sagemaker"
        )
        how = "given" if explicit else "peagle default (JumpStart's pinned version)"
        checks.append(passed(field_, f"vLLM {version} ({how}) -> AWS DLC"))
        return image, version
    parsed, _ = parse_image_tag(js.image_uri)
    version = VllmVersion(js.vllm_version) if js.vllm_version else parsed
    if version is None:
        raise SpecError(
            f"{field_}: JumpStart image {js.image_uri} is not a vLLM image",
            remedy="pass --image and --vllm-version",
        )
    checks.append(passed(field_, f"vLLM {version} (JumpStart {js.config_name or 'default'})"))
    return js.image_uri, version


def model_data_source(
    spec: DeploymentSpec,
    js: JumpStartResolution | None,
    model: ModelEntry | None,
    env: dict[str, str],
    checks: list[Check],
) -> dict[str, Any] | None:
    md = spec.model_data
    if md and md.startswith("hf://"):
        env["HF_MODEL_ID"] = md[len("hf://") :]
        if spec.network.enable_network_isolation:
            checks.append(
                failed(
                    "network.enable_network_isolation",
                    f"the container must download {md} from the Hugging Face Hub, which network "
                    "isolation forbids",
                    "pass --model-data s3://…/ or set network.enable_network_isolation: false",
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
            "pass --model-data s3://bucket/prefix/, or run with AWS credentials to resolve it live",
        )
    )
    return None
