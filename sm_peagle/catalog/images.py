"""The published SageMaker vLLM images, as data (`data/published_images.json`).

One row per tag AWS published in `vllm` (written by `scripts/published_images.py` from
the DLC repo's `docs/src/data/vllm/*-sagemaker.yml` files and its changelog, facts 3):
the classic `<version>-gpu-py312-<cuda>-<os>-sagemaker` family and the
`server-sagemaker-cuda-v*` family, each with its vLLM version, CUDA level, whether the
tag floats, and the date of the entrypoint rules the image carries. Plan uses it to
refuse a tag that was never published, to know CUDA 13 (and so the host AMI) for both
families, and to know which entrypoint rules an image has. Pure: one package-data read.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from ..vllm.versions import VllmVersion

__all__ = [
    "DATA_FILE",
    "ImageRow",
    "OLD_RULES",
    "classic_image",
    "classic_versions",
    "find_image",
    "image_tag",
    "is_cuda13",
    "nearest_classic",
    "rows",
    "server_images",
]

DATA_FILE = "published_images.json"
# Entrypoint rules of the DLC builds before 2026-03-17 (0.13.0-0.17.1 classic): no
# true/false handling and no /opt/ml/model -> HF_MODEL_ID ladder (facts 3).
OLD_RULES = "pre-2026-03-17"
_REPO = "vllm"


@dataclass(frozen=True)
class ImageRow:
    tag: str
    family: str  # classic | server
    tag_kind: str
    vllm_version: str | None  # None: built from a vLLM commit, or a floating tag
    cuda: str  # cu129 | cu130
    os: str
    floating: bool
    moves_with: str | None  # patch | minor | any, for a floating tag
    points_to: str | None
    entrypoint_rules: str  # pre-2026-03-17 | 2026-03-17 | 2026-08-19
    source: str

    @property
    def cuda13(self) -> bool:
        return is_cuda13(self.cuda)

    @property
    def old_entrypoint(self) -> bool:
        return self.entrypoint_rules == OLD_RULES


@lru_cache(maxsize=1)
def _data() -> dict[str, Any]:
    text = resources.files("sm_peagle.catalog").joinpath("data", DATA_FILE).read_text("utf-8")
    return json.loads(text)


@lru_cache(maxsize=1)
def rows() -> tuple[ImageRow, ...]:
    fields = ImageRow.__dataclass_fields__
    return tuple(ImageRow(**{k: r[k] for k in fields}) for r in _data()["images"])


@lru_cache(maxsize=1)
def _by_tag() -> dict[str, ImageRow]:
    return {r.tag: r for r in rows()}


def is_cuda13(cuda: str | None) -> bool:
    m = re.fullmatch(r"cu(\d+)", cuda or "")
    return bool(m) and int(m.group(1)) >= 130


def image_tag(image: str) -> tuple[str | None, str | None]:
    """(repository name, tag) of an image URI: '…/vllm:0.18.0-gpu-…' -> ('vllm', '0.18.0-…')."""
    last = image.rsplit("/", 1)[-1]
    if ":" not in last:
        return last or None, None
    repo, tag = last.split(":", 1)
    return repo, tag


def find_image(image: str) -> ImageRow | None:
    """The published row of an image URI (or a bare tag), else None."""
    repo, tag = image_tag(image) if "/" in image or ":" in image else (_REPO, image)
    if repo != _REPO or tag is None:
        return None
    return _by_tag().get(tag)


def classic_image(version: str) -> ImageRow | None:
    """The pinned full classic tag of vLLM `version`, if AWS published one."""
    return next(
        (
            r
            for r in rows()
            if r.family == "classic" and r.tag_kind == "full" and r.vllm_version == version
        ),
        None,
    )


def classic_versions() -> list[VllmVersion]:
    """vLLM versions with a published (pinned, full) classic tag, oldest first."""
    found = {r.vllm_version for r in rows() if r.family == "classic" and r.tag_kind == "full"}
    return sorted(VllmVersion(v) for v in found if v)


def server_images(version: str) -> list[ImageRow]:
    """Pinned `server-sagemaker-cuda-v*` tags that carry vLLM `version`."""
    return [
        r for r in rows() if r.family == "server" and not r.floating and r.vllm_version == version
    ]


def nearest_classic(version: VllmVersion) -> VllmVersion | None:
    """The published classic version nearest `version`: the same minor first (closest
    patch, the newer on a tie), else the newest below, else the oldest above."""
    published = classic_versions()
    same = [v for v in published if v.parts[:2] == version.parts[:2]]
    if same:
        return min(same, key=lambda v: (abs(v.parts[2] - version.parts[2]), -v.parts[2]))
    below = [v for v in published if v < version]
    if below:
        return below[-1]
    return published[0] if published else None
