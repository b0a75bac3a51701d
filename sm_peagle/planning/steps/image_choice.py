"""Part of step 1 of `plan()`: the container image, the vLLM version it runs, its CUDA
level and the entrypoint rules it carries, from the published image list
(`catalog/images.py`, facts 3).

- `--vllm-version V` (or the model's default) becomes the published classic tag of V;
  a version AWS never published (0.14.1, 0.15.0, 0.27.0, 0.32.0, ...) is refused with
  the nearest published one (and the `server-sagemaker-cuda-v*` image carrying V, if
  any), so no plan points at a tag that does not exist.
- `--image` from the list: its vLLM version, CUDA level and entrypoint rules come from
  its row (both families, so a `server-sagemaker-cuda-v2.*` image gets the CUDA 13 host
  AMI too); a floating tag warns and asks for a pinned one.
- `--image` outside the list is allowed with a warning; its vLLM version and CUDA level
  are given (`--vllm-version`, `container.cuda`) or read from the tag.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...catalog.images import (
    ImageRow,
    classic_image,
    find_image,
    image_tag,
    nearest_classic,
    server_images,
)
from ...catalog.jumpstart import JumpStartResolution
from ...catalog.models import ModelEntry
from ...checks import Check, passed, warned
from ...errors import Param, SpecError, Text, text
from ...vllm.versions import VllmVersion, parse_image_tag
from ..spec.model import DeploymentSpec
from .version_gates import default_vllm

__all__ = ["DLC_ACCOUNT", "ResolvedImage", "resolve_image"]

DLC_ACCOUNT = "763104351884"
FIELD = "container.vllm_version"


@dataclass(frozen=True)
class ResolvedImage:
    image: str
    version: VllmVersion
    cuda: str | None
    entrypoint_rules: str | None  # None: a custom image, rules unknown


def resolve_image(
    spec: DeploymentSpec,
    region: str,
    js: JumpStartResolution | None,
    model: ModelEntry | None,
    checks: list[Check],
) -> ResolvedImage:
    explicit = VllmVersion(spec.container.vllm_version) if spec.container.vllm_version else None
    if spec.container.image:
        return _given_image(spec.container.image, explicit, spec.container.cuda, checks)
    if explicit or not js:
        if explicit:
            version, how = explicit, "given"
        else:
            version, how = default_vllm(model, spec.speculative.mode.value)
        account = js.image_uri.split(".", 1)[0] if js else DLC_ACCOUNT
        return _published_classic(version, how, region, account, checks)
    row = find_image(js.image_uri)
    parsed, parsed_cuda = parse_image_tag(js.image_uri)
    version = VllmVersion(js.vllm_version) if js.vllm_version else parsed
    if version is None:
        raise SpecError(
            f"{FIELD}: JumpStart image {js.image_uri} is not a vLLM image",
            remedy=text("pass {image} and {vllm_version}"),
            field="image",
        )
    checks.append(passed(FIELD, f"vLLM {version} (JumpStart {js.config_name or 'default'})"))
    return ResolvedImage(
        js.image_uri,
        version,
        row.cuda if row else parsed_cuda,
        row.entrypoint_rules if row else None,
    )


def _published_classic(
    version: VllmVersion, how: str, region: str, account: str, checks: list[Check]
) -> ResolvedImage:
    row = classic_image(str(version))
    if row is None:
        raise SpecError(
            f"{FIELD}: AWS published no SageMaker vLLM image for vLLM {version}",
            remedy=_fix_for(version, region),
            field="vllm_version",
            value=str(version),
        )
    suffix = ".cn" if region.startswith("cn-") else ""
    image = f"{account}.dkr.ecr.{region}.amazonaws.com{suffix}/vllm:{row.tag}"
    checks.append(passed(FIELD, f"vLLM {version} ({how}) -> AWS DLC {row.tag}"))
    return ResolvedImage(image, version, row.cuda, row.entrypoint_rules)


def _fix_for(version: VllmVersion, region: str) -> Text:
    parts: dict[str, Text] = {}
    near = nearest_classic(version)
    if near is not None:
        parts["near"] = text(
            "use {v} (the nearest published classic image)", v=Param("vllm_version", str(near))
        )
    for i, row in enumerate(server_images(str(version))):
        uri = f"{DLC_ACCOUNT}.dkr.ecr.{region}.amazonaws.com/vllm:{row.tag}"
        parts[f"row{i}"] = text(
            "{image} (the {tag} image carries vLLM {version})",
            image=Param("image", uri),
            tag=row.tag,
            version=version,
        )
    parts["own"] = text("or pass {image} with your own image")
    return text("; ".join(f"{{{key}}}" for key in parts), **parts)


def _pinned(row: ImageRow) -> str:
    if row.family == "server" and row.points_to:
        return f"server-sagemaker-cuda-{row.points_to}"
    pinned = classic_image(row.points_to or row.vllm_version or "")
    return pinned.tag if pinned else "a full version tag"


def _agreed_version(
    explicit: VllmVersion | None, from_tag: VllmVersion | None, tag: str
) -> VllmVersion | None:
    """--vllm-version if given, else the tag's; both given and different is an error."""
    if explicit and from_tag and explicit != from_tag:
        raise SpecError(
            text(
                "{field}: {v} contradicts image tag {tag} (vLLM {from_tag})",
                field=FIELD,
                v=Param("vllm_version", str(explicit)),
                tag=tag,
                from_tag=from_tag,
            ),
            field="vllm_version",
            value=str(explicit),
        )
    return explicit or from_tag


def _given_image(
    image: str, explicit: VllmVersion | None, cuda: str | None, checks: list[Check]
) -> ResolvedImage:
    row = find_image(image)
    tag = image_tag(image)[1] or image
    if row is None:
        return _unlisted_image(image, explicit, cuda, checks)
    listed = VllmVersion(row.vllm_version) if row.vllm_version else None
    version = _agreed_version(explicit, listed, tag)
    if version is None:
        raise SpecError(
            f"{FIELD}: the published list gives no vLLM release for {tag} "
            "(built from a vLLM commit, or a floating tag)",
            remedy=text("pass {vllm_version}"),
            field="vllm_version",
        )
    if row.floating:
        checks.append(
            warned(
                "container.image",
                f"{tag} is a floating tag (it moves with each {row.moves_with} release): its "
                "vLLM version and entrypoint rules can change under this plan",
                f"pin a tag, e.g. {_pinned(row)}",
            )
        )
    how = "given" if explicit else f"published image {tag}"
    checks.append(passed(FIELD, f"vLLM {version} ({how}), {row.cuda}"))
    return ResolvedImage(image, version, row.cuda, row.entrypoint_rules)


def _unlisted_image(
    image: str, explicit: VllmVersion | None, cuda: str | None, checks: list[Check]
) -> ResolvedImage:
    parsed, parsed_cuda = parse_image_tag(image)
    tag = image_tag(image)[1] or image
    version = _agreed_version(explicit, parsed, tag)
    if version is None:
        raise SpecError(
            f"{FIELD}: cannot tell which vLLM image {image} runs",
            remedy=text("pass {vllm_version}"),
            field="vllm_version",
        )
    level = cuda or parsed_cuda
    where = "given" if cuda else ("image tag" if parsed_cuda else "unknown")
    fix = None if level else "set container.cuda (cu129 or cu130) so plan can pick the host AMI"
    checks.append(
        warned(
            "container.image",
            f"{tag} is not a published SageMaker vLLM image: vLLM {version} "
            f"({'given' if explicit else 'image tag'}), CUDA {level or 'unknown'} ({where}); "
            "its entrypoint rules are not known",
            fix,
        )
    )
    checks.append(passed(FIELD, f"vLLM {version} ({'given' if explicit else 'image tag'})"))
    return ResolvedImage(image, version, level, None)
