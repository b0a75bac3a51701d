"""Build `SM_VLLM_SPECULATIVE_CONFIG` for one vLLM version.

The result must be exactly what the container's vLLM accepts: it parses the JSON into a
dataclass that forbids unknown keys, so one stray key costs an hour of SageMaker
download and health-check time before it fails. Hence: always set `method`, emit only
the keys that version knows, and refuse parallel drafting before 0.16.0.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..checks import Check, failed, passed, warned
from ..errors import Call, Param, text
from . import facts as vf
from .gates import parallel_drafting_gate
from .versions import VllmVersion, dynamic_k_supported, speculative_field_values, speculative_keys

__all__ = [
    "MOUNT_ROOT",
    "PASSTHROUGH_KEYS",
    "SPEC_ENV",
    "SpeculativeOptions",
    "SpeculativeResult",
    "VERSION_GATED_KEYS",
    "build_speculative_config",
    "drafter_mount_path",
    "to_env_value",
]

SPEC_ENV = "SM_VLLM_SPECULATIVE_CONFIG"

MOUNT_ROOT = "/opt/ml/additional-model-data-sources"
# Keys always first, in this order, so the JSON reads like AWS's own examples.
_LEADING = ("model", "method", "num_speculative_tokens")
# vLLM's own speculative-config keys the spec passes through as given; each is emitted
# only where the image's vLLM has the field, and a Literal-typed one only with a value
# that version lists (both read from its source, `versions.speculative_field_values`).
# The keys the spec learned with vLLM 0.33.0's facts, each accepted from the vLLM version
# that has it (the spec hashes them only when set: planning/spec/model.py).
VERSION_GATED_KEYS = (
    "rejection_sample_method",
    "disable_lookahead_block_hashes",
    "draft_lm_head_quantization",
    "xpress_topc",
    "fly_window_size",
    "fly_entropy_threshold",
    "fly_entropy_top_k",
)
PASSTHROUGH_KEYS = (
    "draft_tensor_parallel_size",
    "max_model_len",
    "quantization",
    "enforce_eager",
    "disable_padded_drafter_batch",
    "disable_by_batch_size",
    *VERSION_GATED_KEYS,
)


BASELINE, P_EAGLE = "baseline", "p-eagle"


class SpeculativeOptions(Protocol):
    """What the builder reads of the speculative options (`planning.specs.SpeculativeSpec`);
    `mode` is "p-eagle", "eagle3" or "baseline" (a str enum is fine)."""

    @property
    def mode(self) -> str: ...

    @property
    def num_speculative_tokens(self) -> int | None: ...

    @property
    def num_speculative_tokens_per_batch_size(self) -> list[list[int]] | None: ...

    @property
    def draft_tensor_parallel_size(self) -> int | None: ...

    @property
    def max_model_len(self) -> int | None: ...

    @property
    def quantization(self) -> str | None: ...

    @property
    def enforce_eager(self) -> bool | None: ...

    @property
    def disable_padded_drafter_batch(self) -> bool | None: ...

    @property
    def disable_by_batch_size(self) -> int | None: ...


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
    spec: SpeculativeOptions,
    *,
    vllm_version: VllmVersion,
    channel: str,
    default_k: int,
    trained_k: int | None,
    recommended_k: int | None,
    target_tp: int | None = None,
) -> SpeculativeResult:
    """The speculative config dict (None for baseline) plus the checks that decided it."""
    if spec.mode == BASELINE:
        return SpeculativeResult(None, None, [passed("speculative", "baseline: no speculation")])
    schedule = spec.num_speculative_tokens_per_batch_size
    top = max((e[2] for e in schedule or () if isinstance(e, list) and len(e) == 3), default=0)
    # With a K schedule and no -k, K (the most any batch size drafts) is the schedule's max.
    k = spec.num_speculative_tokens or (top if top > 0 else default_k)
    checks = [_check_k(k, trained_k, recommended_k)]
    checks += _check_mode(spec, vllm_version, target_tp)
    config, key_checks = _config_for(spec, k, channel, vllm_version)
    if schedule is not None:
        from .dynamic_k import check_k_schedule  # only for a schedule: `plan`'s cold start

        checks += check_k_schedule(schedule, k=k, version=vllm_version, mode=str(spec.mode))
        if dynamic_k_supported(vllm_version):
            config["num_speculative_tokens_per_batch_size"] = schedule
    return SpeculativeResult(config, k, checks + key_checks)


def _check_k(k: int, trained_k: int | None, recommended_k: int | None) -> Check:
    field_k = "speculative.num_speculative_tokens"
    if trained_k is not None and k > trained_k:
        return failed(
            field_k,
            f"K={k} exceeds the drafter's trained K={trained_k}",
            text(
                "use {k} (at most {trained_k})",
                k=Param("k", recommended_k or trained_k),
                trained_k=trained_k,
            ),
            field="k",
        )
    if recommended_k is not None and k > recommended_k:
        return warned(
            field_k,
            text(
                "K={k} is above the head card's recommended K={rk}; "
                "acceptance falls off, measure with `{bench}`",
                k=k,
                rk=recommended_k,
                bench=Call("bench"),
            ),
            field="k",
        )
    return passed(field_k, f"K={k}", field="k")


def _check_mode(
    spec: SpeculativeOptions, vllm_version: VllmVersion, target_tp: int | None
) -> list[Check]:
    checks: list[Check] = []
    parallel = spec.mode == P_EAGLE
    if (gate := parallel_drafting_gate(vllm_version, str(spec.mode))) is not None:
        checks.append(gate)  # the gate `peagle drafter check` applies too
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
    return checks


def _config_for(
    spec: SpeculativeOptions, k: int, channel: str, vllm_version: VllmVersion
) -> tuple[dict[str, Any], list[Check]]:
    """The config with only the keys `vllm_version` accepts; a check per refused key."""
    checks: list[Check] = []
    config: dict[str, Any] = {
        "model": drafter_mount_path(channel),
        "method": "eagle3",
        "num_speculative_tokens": k,
    }
    if spec.mode == P_EAGLE:
        config["parallel_drafting"] = True
    allowed = speculative_keys(vllm_version)
    values = speculative_field_values(vllm_version)
    for key in PASSTHROUGH_KEYS:
        # getattr: the newer keys are optional on the SpeculativeOptions protocol
        value = getattr(spec, key, None)
        if value is None:
            continue
        if key not in allowed:
            checks.append(_refused_key(key, vllm_version))
            continue
        if key in values and value not in values[key]:
            checks.append(
                failed(
                    f"speculative.{key}",
                    f"vLLM {vllm_version} accepts {key} {' | '.join(values[key])}, "
                    f"not {value!r} (vllm/config/speculative.py)",
                    f"use one of {', '.join(values[key])}",
                )
            )
            continue
        config[key] = value
    unknown = set(config) - allowed
    assert not unknown, f"builder emitted keys {unknown} unknown to vLLM {vllm_version}"
    return config, checks


def _refused_key(key: str, vllm_version: VllmVersion) -> Check:
    first = vf.first_version_of("speculative_config_fields", key)
    since = f" (first in vLLM {first})" if first and VllmVersion(first) > vllm_version else ""
    return failed(
        f"speculative.{key}",
        f"vLLM {vllm_version} does not accept {key!r} in the speculative config{since} "
        "and would fail at start-up",
        f"remove {key}, or use a vLLM version that accepts it"
        + (f" (>= {first})" if since else ""),
    )
