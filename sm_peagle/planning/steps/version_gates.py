"""The vLLM version gates (`sm_peagle.vllm.gates`) bound to the catalog's published
images: the default version and the fix a gate names come from `classic_versions()`.
`plan` and `peagle drafter check` both call `check_version_gates` from here.
"""

from __future__ import annotations

from ...catalog.images import classic_versions
from ...catalog.models import ModelEntry
from ...checks import Check
from ...vllm import gates
from ...vllm.versions import VllmVersion

__all__ = ["check_version_gates", "default_vllm"]


def default_vllm(model: ModelEntry | None, mode: str) -> tuple[VllmVersion, str]:
    """`vllm.gates.default_vllm` over the published classic image versions."""
    return gates.default_vllm(model, mode, classic_versions())


def check_version_gates(
    version: VllmVersion,
    mode: str,
    model: ModelEntry | None,
    *,
    field: str,
    parallel_drafting: bool = True,
) -> list[Check]:
    """`vllm.gates.check_version_gates` over the published classic image versions."""
    return gates.check_version_gates(
        version,
        mode,
        model,
        field=field,
        published=classic_versions(),
        parallel_drafting=parallel_drafting,
    )
