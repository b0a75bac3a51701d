"""Step 2 of `plan()`: the speculative config for the resolved image and head.

The config itself is `sm_peagle.vllm.speculative.build_speculative_config` (what one vLLM
version accepts); this step feeds it the plan's sources (the catalog's default and trained
K, the JumpStart config's K, the target's tensor-parallel size) and, for a local head,
runs the drafter checks with the K actually planned.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from ...checks import Check
from ...errors import text
from ...vllm.speculative import SPEC_ENV, SpeculativeResult, build_speculative_config
from ..plan_result import KOrigin
from ..spec.model import DeploymentSpec, Mode

if TYPE_CHECKING:  # annotations only
    from .sources import Sources

__all__ = ["k_origin", "plan_speculative"]


def plan_speculative(spec: DeploymentSpec, src: Sources, checks: list[Check]) -> SpeculativeResult:
    """Step 2 of `plan()`: the speculative config for the resolved image and head, and,
    for a local head, the drafter checks (its K rule needs the K actually planned)."""
    from .drafter_checks import check_local_drafter

    drafter = spec.drafter
    default_k, _ = _default_k(src)
    trained_k, recommended_k = _head_ks(spec, src)
    result = build_speculative_config(
        spec.speculative,
        vllm_version=src.version,
        channel=drafter.channel,
        default_k=default_k,
        trained_k=trained_k,
        recommended_k=recommended_k,
        target_tp=src.tp,
    )
    checks += result.checks
    mode = spec.speculative.mode
    if mode != Mode.BASELINE and drafter.is_local and Path(drafter.source).expanduser().is_dir():
        checks += check_local_drafter(
            drafter.source,
            model=src.model,
            vllm_version=src.version,
            mode=mode.value,
            k=result.k,
            trained_k=drafter.trained_k,
        )
    return result


# Used when neither the JumpStart config nor the catalog gives a K.
PEAGLE_DEFAULT_K = 3


def _default_k(src: Sources) -> tuple[int, tuple[str, str]]:
    """The K a deployment without -k gets, and (source, reason) for `KOrigin`. The
    JumpStart config's own SM_VLLM_SPECULATIVE_CONFIG wins over the catalog, as it is what
    JumpStart itself deploys."""
    if src.jumpstart and SPEC_ENV in src.jumpstart.env:
        k = json.loads(src.jumpstart.env[SPEC_ENV]).get("num_speculative_tokens")
        if k is not None:
            return int(k), ("jumpstart", "JumpStart's default for this model")
    if src.model is None:
        return PEAGLE_DEFAULT_K, ("peagle", "peagle's default; no catalog entry for this model")
    return src.model.default_k, src.model.default_k_origin()


def _head_ks(spec: DeploymentSpec, src: Sources) -> tuple[int | None, int | None]:
    """(trained K, recommended K) of the head: the spec's, else the catalog head's."""
    drafter, head = spec.drafter, src.catalog_head
    return (
        drafter.trained_k or (head.trained_k if head else None),
        drafter.recommended_k or (head.recommended_k if head else None),
    )


def k_origin(spec: DeploymentSpec, src: Sources, k: int | None) -> KOrigin | None:
    """Where the planned K came from (None for baseline): the spec, the K schedule, or the
    default `_default_k` names."""
    if k is None:
        return None
    trained_k, recommended_k = _head_ks(spec, src)
    if spec.speculative.num_speculative_tokens is not None:
        source, reason = "spec", text("given with {k} or in the spec")
    elif spec.speculative.num_speculative_tokens_per_batch_size:
        source, reason = "k_schedule", "the largest K of the K schedule"
    else:
        _, (source, reason) = _default_k(src)
    return KOrigin(k, source, reason, trained_k, recommended_k)
