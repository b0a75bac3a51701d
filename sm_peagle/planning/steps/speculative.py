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
from ...vllm.speculative import SPEC_ENV, SpeculativeResult, build_speculative_config
from ..spec.model import DeploymentSpec, Mode

if TYPE_CHECKING:  # annotations only
    from .sources import Sources

__all__ = ["plan_speculative"]


def plan_speculative(spec: DeploymentSpec, src: Sources, checks: list[Check]) -> SpeculativeResult:
    """Step 2 of `plan()`: the speculative config for the resolved image and head, and,
    for a local head, the drafter checks (its K rule needs the K actually planned)."""
    from .drafter_checks import check_local_drafter

    drafter, head = spec.drafter, src.catalog_head
    default_k = src.model.default_k if src.model else 3
    if src.jumpstart and SPEC_ENV in src.jumpstart.env:
        default_k = json.loads(src.jumpstart.env[SPEC_ENV]).get("num_speculative_tokens", default_k)
    result = build_speculative_config(
        spec.speculative,
        vllm_version=src.version,
        channel=drafter.channel,
        default_k=default_k,
        trained_k=drafter.trained_k or (head.trained_k if head else None),
        recommended_k=drafter.recommended_k or (head.recommended_k if head else None),
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

