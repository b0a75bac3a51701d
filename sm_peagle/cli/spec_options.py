"""The options `plan`, `deploy` and `update` share, and how they become a spec."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

SpecFileOpt = Annotated[
    Path | None, typer.Option("--file", "-f", help="Deployment spec (YAML or JSON).")
]
InstanceTypeOpt = Annotated[
    str | None, typer.Option("--instance-type", "-t", help="e.g. ml.g7e.2xlarge.")
]
InstanceCountOpt = Annotated[int | None, typer.Option("--instance-count", help="Instances.")]
ModeOpt = Annotated[
    str | None, typer.Option("--mode", help="p-eagle (default), eagle3 or baseline.")
]
KOpt = Annotated[int | None, typer.Option("-k", "--num-speculative-tokens", help="K.")]
DrafterOpt = Annotated[
    str | None, typer.Option("--drafter", help="Drafter head: s3://bucket/prefix/ or a dir.")
]
ModelDataOpt = Annotated[
    str | None,
    typer.Option(
        "--model-data", help="Target weights: s3://…/, s3://…/model.tar.gz or hf://org/name."
    ),
]
ImageOpt = Annotated[str | None, typer.Option("--image", help="Container image URI.")]
VllmVersionOpt = Annotated[
    str | None, typer.Option("--vllm-version", help="vLLM version the image runs.")
]
NameOpt = Annotated[str | None, typer.Option("--name", help="Endpoint name.")]
RoleOpt = Annotated[
    str | None, typer.Option("--role", help="Execution role ARN (or PEAGLE_ROLE_ARN).")
]
RegionOpt = Annotated[str | None, typer.Option("--region", help="AWS region.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON document.")]


def build_spec(
    model: str | None,
    spec_file: Path | None,
    *,
    instance_type: str | None = None,
    instance_count: int | None = None,
    mode: str | None = None,
    k: int | None = None,
    drafter: str | None = None,
    model_data: str | None = None,
    image: str | None = None,
    vllm_version: str | None = None,
    name: str | None = None,
    role: str | None = None,
    region: str | None = None,
) -> Any:
    """Spec file (if any) overlaid with command-line options; SpecError on bad input."""
    from ..errors import SpecError
    from ..specs import load_spec, merge_overrides, spec_from_data

    overrides: dict[str, Any] = {
        "model": model,
        "endpoint.instance_type": instance_type,
        "endpoint.instance_count": instance_count,
        "speculative.mode": mode,
        "speculative.num_speculative_tokens": k,
        "drafter.source": drafter,
        "model_data": model_data,
        "container.image": image,
        "container.vllm_version": vllm_version,
        "endpoint.name": name,
        "role": role,
        "region": region,
    }
    if spec_file is not None:
        return load_spec(spec_file, overrides)
    if model is None:
        raise SpecError("model: give a MODEL argument or a spec file with -f")
    return spec_from_data(merge_overrides({}, overrides))
