"""The drafter rules that depend on the vLLM version: head architecture and mask token.

Both follow vLLM's own code as recorded in `data/vllm_source_facts.json`:
- architecture: with method eagle3 vLLM rewrites `architectures[0]` to `Eagle3<name>`
  unless it starts or ends with `Eagle3` (`transformers_utils/configs/eagle.py`) and
  looks the result up in the registry (`model_executor/models/registry.py`); a config
  in the speculators format (`speculators_model_type`) is translated by vLLM, which sets
  the architecture itself (`transformers_utils/configs/speculators/algos.py`);
- mask token: the keys `v1/spec_decode/llm_base_proposer.py` reads, in its order; in
  the speculators format `peagle` (0.22.0+) a top-level `mask_token_id` becomes
  `pard_token`.
"""

from __future__ import annotations

from typing import Any

from ..checks import Check, failed, passed, warned
from .head_inspection import DrafterInspection, lookup
from .versions import (
    VllmVersion,
    eagle3_architectures,
    first_version,
    head_registered,
    mask_token_keys,
    speculative_architectures,
    speculators_detail,
    speculators_types,
)

__all__ = ["check_architecture", "check_mask_token", "effective_architecture", "speculators_kind"]

_PLAIN_FIX = '"architectures": ["LlamaForCausalLMEagle3"]'


def speculators_kind(config: dict[str, Any] | None) -> str | None:
    """The `speculators_model_type` of a speculators-format config, else None."""
    if not isinstance(config, dict):
        return None
    kind = config.get("speculators_model_type")
    if kind is None and isinstance(config.get("speculators_config"), dict):
        kind = config["speculators_config"].get("speculators_model_type")
    return str(kind) if kind is not None else None


def effective_architecture(ins: DrafterInspection, version: VllmVersion) -> str | None:
    """The registry name vLLM loads the head as (after the rewrite or the speculators
    translation), or None when it cannot tell."""
    kind = speculators_kind(ins.config)
    if kind is not None:
        detail = speculators_detail(kind, version)
        return detail["architectures"][0] if detail and detail["architectures"] else None
    if ins.architecture is None:
        return None
    return head_registered(ins.architecture, version)[0]


def check_architecture(ins: DrafterInspection, version: VllmVersion) -> Check:
    name = "drafter.architecture"
    if ins.config is None:
        return warned(
            name, "not checked: config.json is missing or unreadable (see drafter.config)"
        )
    kind = speculators_kind(ins.config)
    if kind is not None:
        return _speculators(kind, version)
    arch = ins.architecture
    if arch is None:
        return failed(name, "config.json has no architectures list", fix=f"set {_PLAIN_FIX}")
    resolved, ok = head_registered(arch, version)
    seen = f"{arch}" if resolved == arch else f"{arch} (vLLM looks up {resolved})"
    if ok:
        return passed(name, f"{seen} is an EAGLE-3 head in vLLM {version}")
    later = first_version(lambda v: head_registered(arch, v)[1])
    if later is not None and later > version:
        return failed(
            name,
            f"config.json architectures[0] {seen} needs vLLM >= {later} "
            f"(target image has {version})",
            fix=f"use a vLLM >= {later} image, or set {_PLAIN_FIX}",
        )
    speculators_only = later is None and _registered_somewhere(arch)
    why = (
        f"; {arch} is loaded only through the speculators format "
        '(speculators_model_type "peagle", vLLM >= 0.22.0)'
        if speculators_only
        else ""
    )
    return failed(
        name,
        f"config.json architectures[0] {arch} becomes {resolved} "
        f"(transformers_utils/configs/eagle.py), which vLLM {version} does not register{why}",
        fix=f"use the speculators format, or set {_PLAIN_FIX}"
        if speculators_only
        else f"set {_PLAIN_FIX} (or the target's <Name>, which vLLM rewrites to Eagle3<Name>)",
    )


def _registered_somewhere(arch: str) -> bool:
    return first_version(lambda v: arch in eagle3_architectures(v)) is not None


def _speculators(kind: str, version: VllmVersion) -> Check:
    name = "drafter.architecture"
    detail = speculators_detail(kind, version) if kind in speculators_types(version) else None
    if detail is None:
        later = first_version(lambda v: kind in speculators_types(v))
        need = f"needs vLLM >= {later}" if later else "is not known to any vLLM peagle read"
        return failed(
            name,
            f'speculators_model_type "{kind}" {need} (target image has {version})',
            fix=f"use a vLLM >= {later} image" if later else f"set {_PLAIN_FIX}",
        )
    archs = list(detail["architectures"])
    registry = speculative_architectures(version)
    missing = [a for a in archs if a not in registry]
    if missing:
        return failed(
            name,
            f'speculators "{kind}" maps to {", ".join(missing)}, unregistered in vLLM {version}',
            fix="use a newer vLLM image",
        )
    return passed(
        name,
        f'speculators format "{kind}": vLLM {version} sets the architecture '
        f"({', '.join(archs)}; {detail['path']})",
    )


def _mask_config(config: dict[str, Any], version: VllmVersion) -> dict[str, Any]:
    """config.json as vLLM sees it: a speculators config has its top-level mask_token_id
    copied to the key vLLM maps it to (`pard_token` for peagle)."""
    kind = speculators_kind(config)
    detail = speculators_detail(kind, version) if kind else None
    if not detail or "mask_token_id" not in config:
        return config
    seen = dict(config)
    for key in detail.get("mask_token_id_mapped_to", ()):
        if "." not in key:
            seen.setdefault(key, config["mask_token_id"])
    return seen


def check_mask_token(ins: DrafterInspection, version: VllmVersion, mode: str) -> Check:
    name = "drafter.mask_token"
    if mode == "eagle3":
        return passed(name, "eagle3 mode does not use a mask token")
    if ins.config is None:
        return warned(
            name, "not checked: config.json is missing or unreadable (see drafter.config)"
        )
    accepted = mask_token_keys(version)
    seen = _mask_config(ins.config, version)
    mapped = seen is not ins.config
    for key in accepted:  # vLLM's read order: the first key present wins
        val = lookup(seen, key)
        if val is None:
            continue
        if not isinstance(val, int) or isinstance(val, bool) or val < 0:
            return failed(
                name,
                f"config.json {key} is {val!r}, not a token id",
                fix=f"set {key} to the integer mask-token id the head was trained with",
            )
        via = " (speculators mask_token_id)" if mapped and key not in ins.config else ""
        return passed(name, f"config.json {key} = {val}{via} (read by vLLM {version})")
    keys = ", ".join(accepted)
    for key, val in ins.mask_tokens.items():
        later = first_version(lambda v, key=key: key in mask_token_keys(v))
        return failed(
            name,
            f"config.json has only {key}, which vLLM {version} does not read "
            f"(it reads {keys}; {key} needs vLLM >= {later})",
            fix=f'add "ptd_token_id": {val!r} to config.json, or use vLLM >= {later}',
        )
    return failed(
        name,
        f"config.json has no mask-token id; P-EAGLE needs one of {keys} (vLLM {version})",
        fix='add "ptd_token_id": <mask-token id the head was trained with> to '
        "config.json (e.g. 201020 for the GPT-OSS-20B head)",
    )
