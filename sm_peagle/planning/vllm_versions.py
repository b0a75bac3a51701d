"""What each vLLM version accepts, and how AWS vLLM DLC image tags encode it.

Every rule here is a fact with a version range (see the README's "Sources" section).
The speculative config is parsed by vLLM into a pydantic dataclass that forbids unknown
keys, so emitting a key the running version does not know kills the server at start-up,
after SageMaker has already spent the download time. Keep these tables exact.
"""

from __future__ import annotations

import re
from functools import total_ordering

__all__ = [
    "VllmVersion",
    "PARALLEL_DRAFTING_MIN",
    "speculative_keys",
    "eagle3_architectures",
    "mask_token_keys",
    "parse_image_tag",
    "cuda_for_version",
    "needs_cuda13_ami",
    "CUDA13_AMI",
    "MAX_K",
]


@total_ordering
class VllmVersion:
    """A vLLM release number such as 0.18.0 (pre-release suffixes are ignored)."""

    __slots__ = ("parts",)

    def __init__(self, text: str) -> None:
        m = re.fullmatch(r"v?(\d+)\.(\d+)(?:\.(\d+))?(?:[.+\-].*)?", text.strip())
        if not m:
            raise ValueError(f"not a vLLM version: {text!r} (expected e.g. 0.18.0)")
        self.parts = (int(m.group(1)), int(m.group(2)), int(m.group(3) or 0))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            other = VllmVersion(other)
        return isinstance(other, VllmVersion) and self.parts == other.parts

    def __lt__(self, other: VllmVersion | str) -> bool:
        if isinstance(other, str):
            other = VllmVersion(other)
        return self.parts < other.parts

    def __hash__(self) -> int:
        return hash(self.parts)

    def __str__(self) -> str:
        return ".".join(map(str, self.parts))

    def __repr__(self) -> str:
        return f"VllmVersion('{self}')"


PARALLEL_DRAFTING_MIN = VllmVersion("0.16.0")
# JumpStart's own P-EAGLE config pins this version (GPT-OSS-20B, lmi-optimized): the
# default wherever no image or version says otherwise.
DEFAULT_VLLM = "0.18.0"
# Newest version the key tables below were checked against; newer versions are allowed
# (the tables are assumed to still hold) but plan warns.
NEWEST_CHECKED = VllmVersion("0.33.0")
# The rejection sampler asserts K <= 128 at run time.
MAX_K = 128

_COMMON_KEYS = frozenset(
    {
        "model",
        "method",
        "num_speculative_tokens",
        "draft_tensor_parallel_size",
        "quantization",
        "max_model_len",
        "revision",
        "code_revision",
        "enforce_eager",
        "disable_padded_drafter_batch",
        "parallel_drafting",
    }
)


def speculative_keys(version: VllmVersion) -> frozenset[str]:
    """Keys of the speculative config that `version` accepts (checked 0.16.0-0.33.0)."""
    keys = set(_COMMON_KEYS)
    if version == VllmVersion("0.16.0"):
        keys.add("disable_by_batch_size")
    if version < VllmVersion("0.21.0"):
        keys.add("speculative_token_tree")
    return frozenset(keys)


def eagle3_architectures(version: VllmVersion) -> frozenset[str]:
    """EAGLE-3 / P-EAGLE head architectures that `version` registers."""
    names = {
        "Eagle3LlamaForCausalLM",
        "LlamaForCausalLMEagle3",
        "Eagle3Qwen2_5vlForCausalLM",
        "Eagle3Qwen3vlForCausalLM",
    }
    if version >= VllmVersion("0.22.0"):
        names |= {"PEagleDraftModel", "PeagleLlamaForCausalLM"}
    if version >= VllmVersion("0.25.0"):
        names |= {"PeagleQwen3ForCausalLM", "Eagle3Qwen3ForCausalLM"}
    return frozenset(names)


def mask_token_keys(version: VllmVersion) -> tuple[str, ...]:
    """config.json keys (dotted for nested) from which `version` reads the mask-token id."""
    keys = ["pard_token", "ptd_token_id"]
    if version >= VllmVersion("0.20.0"):
        keys.append("dflash_config.mask_token_id")
    if version >= VllmVersion("0.28.0"):
        keys.append("mask_token_id")
    return tuple(keys)


# <account>.dkr.ecr.<region>.amazonaws.com[.cn]/vllm:<ver>-gpu-py312-<cuda>-<os>-sagemaker
_IMAGE_RE = re.compile(
    r"^(?P<account>\d{12})\.dkr\.ecr\.(?P<region>[a-z0-9-]+)\.amazonaws\.com(?:\.cn)?/"
    r"(?P<repo>[a-z0-9._/-]+):(?P<tag>[A-Za-z0-9._-]+)$"
)
_VLLM_TAG_RE = re.compile(
    r"^(?P<version>\d+\.\d+(?:\.\d+)?)-gpu-(?P<py>py\d+)-(?P<cuda>cu\d+)-(?P<os>[a-z0-9.]+)"
)
# Official vLLM image on Docker Hub / a mirror: vllm/vllm-openai:v0.18.0
_OPENAI_TAG_RE = re.compile(r"^v?(?P<version>\d+\.\d+(?:\.\d+)?)$")


def parse_image_tag(image: str) -> tuple[VllmVersion | None, str | None]:
    """Return (vLLM version, CUDA tag such as 'cu129') read from an image URI, if it says."""
    tag = image.rsplit(":", 1)[1] if ":" in image.rsplit("/", 1)[-1] else ""
    m = _VLLM_TAG_RE.match(tag)
    if m and "vllm" in image.rsplit("/", 1)[-1].split(":")[0]:
        return VllmVersion(m.group("version")), m.group("cuda")
    m = _OPENAI_TAG_RE.match(tag)
    if m and "vllm" in image:
        return VllmVersion(m.group("version")), None
    return None, None


def is_ecr_image(image: str) -> bool:
    return bool(_IMAGE_RE.match(image))


def cuda_for_version(version: VllmVersion) -> tuple[str, str] | None:
    """(cuda, os) of AWS's vLLM DLC for `version`, or None where no DLC is known."""
    if VllmVersion("0.13.0") <= version <= VllmVersion("0.19.1"):
        return "cu129", "ubuntu22.04"
    if VllmVersion("0.20.0") <= version <= VllmVersion("0.27.1"):
        return "cu130", "ubuntu22.04"
    if VllmVersion("0.28.0") <= version <= VllmVersion("0.30.0"):
        return "cu130", "ubuntu24.04"
    return None


# CUDA 13 images need driver 580, which only this host AMI has.
CUDA13_AMI = "al2023-ami-sagemaker-inference-gpu-4-1"


def needs_cuda13_ami(cuda: str | None) -> bool:
    if not cuda:
        return False
    m = re.fullmatch(r"cu(\d+)", cuda)
    return bool(m) and int(m.group(1)) >= 130
