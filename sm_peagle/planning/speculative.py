"""Build `SM_VLLM_SPECULATIVE_CONFIG` for one vLLM version.

The result must be exactly what the container's vLLM accepts: it parses the JSON into a
dataclass that forbids unknown keys, so one stray key costs an hour of SageMaker
download and health-check time before it fails. Hence: always set `method`, emit only
the keys that version knows, and refuse parallel drafting before 0.16.0.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .checks import Check, failed, passed, warned
from .specs import Mode, SpeculativeSpec
from .vllm_versions import PARALLEL_DRAFTING_MIN, VllmVersion, speculative_keys

__all__ = ["SpeculativeResult", "build_speculative_config", "drafter_mount_path", "to_env_value"]

MOUNT_ROOT = "/opt/ml/additional-model-data-sources"
# Keys always first, in this order, so the JSON reads like AWS's own examples.
_LEADING = ("model", "method", "num_speculative_tokens")


def drafter_mount_path(channel: str) -> str:
    return f"{MOUNT_ROOT}/{channel}"


@dataclass
class SpeculativeResult:
    config: dict[str, Any] | None
    k: int | None
    checks: list[Check] = field(default_factory=list)


def to_env_value(config: dict[str, Any]) -> str:
    """Compact, deterministic JSON: leading keys in a fixed order, the rest sorted."""
    ordered = {k: config[k] for k in _LEADING if k in config}
    ordered.update({k: config[k] for k in sorted(config) if k not in ordered})
    return json.dumps(ordered, separators=(",", ":"))


def build_speculative_config(
    spec: SpeculativeSpec,
    *,
    vllm_version: VllmVersion,
    channel: str,
    default_k: int,
    trained_k: int | None,
    recommended_k: int | None,
    target_tp: int | None = None,
) -> SpeculativeResult:
    """The speculative config dict (None for baseline) plus the checks that decided it."""
    if spec.mode == Mode.BASELINE:
        return SpeculativeResult(None, None, [passed("speculative", "baseline: no speculation")])

    checks: list[Check] = []
    k = spec.num_speculative_tokens or default_k
    field_k = "speculative.num_speculative_tokens"
    if trained_k is not None and k > trained_k:
        checks.append(
            failed(
                field_k,
                f"K={k} exceeds the drafter's trained K={trained_k}",
                f"use -k {recommended_k or trained_k} (at most {trained_k})",
            )
        )
    elif recommended_k is not None and k > recommended_k:
        checks.append(
            warned(
                field_k,
                f"K={k} is above the head card's recommended K={recommended_k}; "
                "acceptance falls off, measure with `peagle bench`",
            )
        )
    else:
        checks.append(passed(field_k, f"K={k}"))

    parallel = spec.mode == Mode.P_EAGLE
    if parallel and vllm_version < PARALLEL_DRAFTING_MIN:
        checks.append(
            failed(
                "speculative.mode",
                f"p-eagle needs parallel_drafting, first in vLLM {PARALLEL_DRAFTING_MIN}; "
                f"the image runs vLLM {vllm_version}",
                "use an image with vLLM >= 0.16.0, or --mode eagle3",
            )
        )
    if parallel and spec.disable_padded_drafter_batch:
        checks.append(
            failed(
                "speculative.disable_padded_drafter_batch",
                "must stay false for parallel drafting",
                "remove disable_padded_drafter_batch",
            )
        )
    if (
        spec.draft_tensor_parallel_size is not None
        and target_tp is not None
        and spec.draft_tensor_parallel_size not in (1, target_tp)
    ):
        checks.append(
            failed(
                "speculative.draft_tensor_parallel_size",
                f"must be 1 or the target's tensor-parallel size {target_tp} "
                f"(got {spec.draft_tensor_parallel_size})",
                "set it to 1" if target_tp == 1 else f"set it to 1 or {target_tp}",
            )
        )

    config: dict[str, Any] = {
        "model": drafter_mount_path(channel),
        "method": "eagle3",
        "num_speculative_tokens": k,
    }
    if parallel:
        config["parallel_drafting"] = True
    optional = {
        "draft_tensor_parallel_size": spec.draft_tensor_parallel_size,
        "max_model_len": spec.max_model_len,
        "quantization": spec.quantization,
        "enforce_eager": spec.enforce_eager,
        "disable_padded_drafter_batch": spec.disable_padded_drafter_batch,
        "disable_by_batch_size": spec.disable_by_batch_size,
    }
    allowed = speculative_keys(vllm_version)
    for key, value in optional.items():
        if value is None:
            continue
        if key not in allowed:
            checks.append(
                failed(
                    f"speculative.{key}",
                    f"vLLM {vllm_version} does not accept {key!r} in the speculative config "
                    "and would fail at start-up",
                    f"remove {key}, or use a vLLM version that accepts it",
                )
            )
            continue
        config[key] = value
    unknown = set(config) - allowed
    assert not unknown, f"builder emitted keys {unknown} unknown to vLLM {vllm_version}"
    return SpeculativeResult(config, k, checks)
