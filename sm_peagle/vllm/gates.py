"""The vLLM version gates, in one place: `plan` and `peagle drafter check` both call
`check_version_gates`, so they refuse exactly the same (version, mode, model) triples.

Gates, each read from vLLM's source data (`versions.py`):
- a version whose source was not read: checked as the nearest covered one, with a warning;
- P-EAGLE needs `parallel_drafting` (vLLM >= 0.16.0, `vllm/config/speculative.py`);
- the target's architecture must be registered (`model_executor/models/registry.py`):
  Gemma-4 (`Gemma4*`) first in 0.19.0;
- parallel drafting on a multimodal target raises NotImplementedError up to 0.20.x
  (`v1/spec_decode/eagle.py`), so P-EAGLE on Gemma-4 needs >= 0.21.0.

`default_vllm` picks a model's default image version from the published versions the
caller passes (the catalog's `classic_versions()`; `planning/version_gates.py` binds it).
The model is anything with a catalog entry's `alias`, `architecture`, `multimodal` and
`vllm_version` (`TargetModel`): this package does not import the catalog.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ..checks import Check, failed, passed, warned
from ..errors import Param, text
from . import facts as vf
from .versions import (
    DEFAULT_VLLM,
    PARALLEL_DRAFTING_MIN,
    VllmVersion,
    first_version,
    multimodal_parallel_drafting_raises,
    not_checked,
    speculative_methods,
    target_registered,
)

__all__ = [
    "TargetModel",
    "check_version_gates",
    "default_vllm",
    "method_gate",
    "model_min_vllm",
    "parallel_drafting_gate",
]

P_EAGLE = "p-eagle"


class TargetModel(Protocol):
    """What the gates read of a target model (a `catalog.models.ModelEntry`)."""

    @property
    def alias(self) -> str: ...

    @property
    def architecture(self) -> str | None: ...

    @property
    def multimodal(self) -> bool: ...

    @property
    def vllm_version(self) -> str | None: ...


def model_min_vllm(model: TargetModel | None, mode: str) -> tuple[VllmVersion, str] | None:
    """The oldest vLLM that can serve `model` in `mode`, with the reason; None when the
    sources set no floor beyond the versions peagle covers."""
    if model is None or model.architecture is None:
        return None
    floor: tuple[VllmVersion, str] | None = None
    arch = model.architecture
    first = first_version(lambda v: bool(target_registered(arch, v)))
    if first is not None and not _registered_at_start(arch):
        floor = (
            first,
            f"vLLM registers {arch} first in {first} (model_executor/models/registry.py)",
        )
    if mode == P_EAGLE and model.multimodal:
        ok = first_version(lambda v: not multimodal_parallel_drafting_raises(v))
        if ok is not None and (floor is None or ok > floor[0]):
            floor = (
                ok,
                f"parallel drafting on a multimodal target ({arch}) raises "
                f"NotImplementedError before vLLM {ok} (v1/spec_decode/eagle.py)",
            )
    return floor


def _registered_at_start(arch: str) -> bool:
    first = first_version(lambda v: True)
    return first is not None and bool(target_registered(arch, first))


def default_vllm(
    model: TargetModel | None, mode: str, published: Sequence[VllmVersion]
) -> tuple[VllmVersion, str]:
    """The vLLM version of the default image for `model` in `mode`, and why; `published`:
    the vLLM versions with a published classic image, oldest first.

    JumpStart's P-EAGLE config pins 0.18.0 (GPT-OSS-20B): the version AWS itself runs
    P-EAGLE on, so it stays the default wherever it can serve the model. A model that
    needs more (Gemma-4) gets the *oldest* published classic version at or above its
    minimum: the smallest step away from the validated pin, a pinned tag whose
    entrypoint rules and CUDA level the published list records, and no newer vLLM
    behaviour than the model needs."""
    if model is not None and model.vllm_version:  # a plugin model: its target's engine's
        where = getattr(model, "served_by", None) or "plugin target"
        return VllmVersion(model.vllm_version), f"{model.alias}: the {where} engine's vLLM"
    base = VllmVersion(DEFAULT_VLLM)
    need = model_min_vllm(model, mode)
    if need is None or need[0] <= base:
        return base, "peagle default (JumpStart's pinned version)"
    pick = next((v for v in sorted(published) if v >= need[0]), None)
    if pick is None:  # no published image can serve it: keep the floor, plan refuses
        return need[0], need[1]
    return pick, f"oldest published DLC for {model.alias if model else 'the model'}: {need[1]}"


def parallel_drafting_gate(version: VllmVersion, mode: str) -> Check | None:
    """P-EAGLE needs `parallel_drafting` (`vllm/config/speculative.py`, >= 0.16.0)."""
    if mode == P_EAGLE and version < PARALLEL_DRAFTING_MIN:
        return failed(
            "speculative.mode",
            f"p-eagle needs parallel_drafting, first in vLLM {PARALLEL_DRAFTING_MIN}; "
            f"the image runs vLLM {version}",
            text(
                "use an image with vLLM >= {v}, or {mode}",
                v=PARALLEL_DRAFTING_MIN,
                mode=Param("mode", "eagle3"),
            ),
            field="mode",
        )
    return None


def method_gate(method: str, version: VllmVersion, *, field: str = "speculative.method") -> Check:
    """Whether `version` knows speculative `method` (`vllm/config/speculative.py`'s
    method Literal, read per version): vLLM 0.33.0 drops `medusa` and `mlp_speculator`
    and adds `step5_mtp`. A refusal names the versions that have it."""
    if method in speculative_methods(version):
        return passed(field, f"vLLM {version} knows method {method!r}")
    seen = vf.summary_names("speculative_methods").get(method)
    if seen is None:
        why, fix = "no vLLM peagle read has it", "use method eagle3"
    elif VllmVersion(seen["last"]) < version:
        why = f"vLLM removed it after {seen['last']}"
        fix = f"use an image with vLLM {seen['first']}-{seen['last']}, or method eagle3"
    else:
        why = f"it is first in vLLM {seen['first']}"
        fix = f"use an image with vLLM >= {seen['first']}"
    return failed(field, f"vLLM {version} does not know method {method!r}: {why}", fix)


def check_version_gates(
    version: VllmVersion,
    mode: str,
    model: TargetModel | None,
    *,
    field: str,
    published: Sequence[VllmVersion],
    parallel_drafting: bool = True,
) -> list[Check]:
    """The gates for (`version`, `mode`, `model`); `field` names where the version came
    from (the spec field plan reports, or --vllm-version); `published` as `default_vllm`
    takes it (the fix names the oldest published version that serves). Plan passes
    `parallel_drafting=False` only because its speculative-config step reports that
    same gate (`parallel_drafting_gate`) next to the config it refuses."""
    checks: list[Check] = []
    if (warning := not_checked(version)) is not None:
        checks.append(warned(field, warning))
    if parallel_drafting and (gate := parallel_drafting_gate(version, mode)) is not None:
        checks.append(gate)
    need = model_min_vllm(model, mode)
    if need is not None and version < need[0] and model is not None:
        checks.append(
            failed(
                field,
                f"{model.alias} in mode {mode} needs vLLM >= {need[0]} ({need[1]}); "
                f"the image runs vLLM {version}",
                text(
                    "use {v} (a published DLC >= {need})",
                    v=Param("vllm_version", str(default_vllm(model, mode, published)[0])),
                    need=need[0],
                ),
                field="vllm_version",
            )
        )
    elif need is not None and model is not None:
        checks.append(passed(field, f"vLLM {version} >= {need[0]} for {model.alias} ({mode})"))
    return checks
