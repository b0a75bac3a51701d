"""Settings vLLM itself calls lossy, and the model-runner rules a speculative config meets.

peagle promises that speculation does not change what the target model outputs (its
greedy-equivalence tests check that). vLLM offers settings that break the promise and
says so in its source: 0.33.0's `rejection_sample_method: fly` logs "FLy verification is
a lossy speculative decoding method and may degrade model outputs."
(`vllm/config/speculative.py`). Which settings, from which version, and vLLM's words are
read from the source data (`lossy_settings` per version); nothing is hand-listed here.

Model Runner V2 (0.33.0 `vllm/config/vllm.py`, `_get_v2_model_runner_unsupported_features`)
does not support parallel drafting for EAGLE, so P-EAGLE runs on V1; forcing V2 with
`VLLM_USE_V2_MODEL_RUNNER=1` raises where `_validate_v2_model_runner` raises for it.
A speculative key V1 does not support (`draft_lm_head_quantization`, "Model Runner V2
only") cannot run with P-EAGLE at all. V2 support for P-EAGLE is vllm PR #44816 (open as
of 2026-11).

Pure: reads this package's data only.
"""

from __future__ import annotations

from typing import Any

from ..checks import Check, failed, warned
from ..errors import Param
from ..errors import text as words
from . import facts as vf
from .versions import VllmVersion, facts_version

__all__ = [
    "V2_ENV",
    "V2_PEAGLE_PR",
    "check_lossy",
    "check_runner",
    "lossy_reason",
    "lossy_settings",
    "runner_unsupported",
]

V2_ENV = "VLLM_USE_V2_MODEL_RUNNER"
V2_PEAGLE_PR = "vllm PR #44816"


def _detail(version: VllmVersion) -> dict[str, Any]:
    return vf.by_version(facts_version(version))


def lossy_settings(version: VllmVersion) -> list[dict[str, Any]]:
    """[{'key', 'value', 'path', 'line', 'message', 'field_doc'}, ...]: the speculative
    settings `version`'s source calls lossy, with vLLM's own text."""
    return list(_detail(version).get("lossy_settings", ()))


def lossy_reason(speculative_config: dict[str, Any], vllm_version: str) -> str | None:
    """Why `speculative_config` (the SM_VLLM_SPECULATIVE_CONFIG dict) makes `vllm_version`
    decode lossily, quoting vLLM; None when it does not. A version outside the data is
    judged as the nearest covered one. Raises ValueError for a string that is not a
    vLLM version."""
    version = VllmVersion(vllm_version)
    for entry in lossy_settings(version):
        if speculative_config.get(entry["key"]) != entry["value"]:
            continue
        doc = " ".join(entry.get("field_doc") or ())
        return (
            f"{entry['key']}: {entry['value']} is lossy: vLLM {facts_version(version)} says "
            f'"{entry["message"]}" ({entry["path"]}:{entry["line"]})'
            + (f' and "{doc}"' if doc else "")
            + "; outputs may differ from the target model's"
        )
    return None


def check_lossy(config: dict[str, Any] | None, version: VllmVersion) -> list[Check]:
    """A plan warning (so --strict fails) for each lossy setting in `config`."""
    if not config:
        return []
    reason = lossy_reason(config, str(version))
    if reason is None:
        return []
    key = next(e["key"] for e in lossy_settings(version) if config.get(e["key"]) == e["value"])
    return [
        warned(
            f"speculative.{key}",
            reason.removeprefix(f"{key}: "),  # the check's name says the key already
            f"use {key}: standard to keep the target model's outputs",
        )
    ]


def runner_unsupported(runner: str, version: VllmVersion) -> list[dict[str, Any]]:
    """What Model Runner `runner` ('v1' or 'v2') does not support in `version`: entries
    {'feature', 'condition', 'condition_names', 'line'} from `vllm/config/vllm.py`."""
    runners = _detail(version).get("model_runners", {})
    return list(runners.get(runner, {}).get("unsupported", ()))


def _raises(runner: str, version: VllmVersion) -> dict[str, Any] | None:
    runners = _detail(version).get("model_runners", {})
    raises = runners.get(runner, {}).get("raises") or []
    return raises[0] if raises else None


def _parallel_drafting_feature(version: VllmVersion) -> str | None:
    return next(
        (
            e["feature"]
            for e in runner_unsupported("v2", version)
            if "parallel_drafting" in e["condition_names"]
        ),
        None,
    )


def _forced_v2(value: str) -> bool | None:
    """vLLM reads the variable as bool(int(value)) (`vllm/envs.py`, maybe_convert_bool);
    None for a value it cannot read."""
    try:
        return bool(int(value))
    except ValueError:
        return None


def check_runner(
    env: dict[str, str], config: dict[str, Any] | None, mode: str, version: VllmVersion
) -> list[Check]:
    """The model-runner rules for a P-EAGLE config: `VLLM_USE_V2_MODEL_RUNNER=1` in the
    container's environment, and speculative keys only V2 supports."""
    if mode != "p-eagle" or not config:
        return []
    checks: list[Check] = []
    feature = _parallel_drafting_feature(version)
    raw = env.get(V2_ENV)
    field = f"container.env.{V2_ENV}"
    if raw is not None and feature is not None:
        forced = _forced_v2(raw)
        if forced is None:
            checks.append(
                failed(
                    field,
                    f"{V2_ENV}={raw!r}: vLLM reads it with int() and fails at start-up",
                    f"remove {V2_ENV} (or set it to 0)",
                )
            )
        elif forced:
            raise_site = _raises("v2", version)
            said = (
                f'vLLM {facts_version(version)} raises "Model Runner V2 does not yet '
                f'support: {feature}" (vllm/config/vllm.py:{raise_site["line"]})'
                if raise_site
                else f"vLLM {facts_version(version)}'s Model Runner V2 does not support {feature}"
            )
            text = (
                f"{V2_ENV}={raw} with P-EAGLE: {said}; "
                f"V2 support is {V2_PEAGLE_PR} (open as of 2026-11)"
            )
            fix = f"remove {V2_ENV} (P-EAGLE runs on Model Runner V1)"
            checks.append(failed(field, text, fix) if raise_site else warned(field, text, fix))
    if feature is not None:  # P-EAGLE runs on V1: keys V1 does not support cannot work
        for entry in runner_unsupported("v1", version):
            key = next((k for k in entry["condition_names"] if k in config), None)
            if key is None or key in ("method", "parallel_drafting"):
                continue
            checks.append(
                failed(
                    f"speculative.{key}",
                    f"{key} needs Model Runner V2, and P-EAGLE runs on V1 in vLLM "
                    f'{facts_version(version)} ("Model Runner V1 does not support: '
                    f'{entry["feature"]}", vllm/config/vllm.py:{entry["line"]}; '
                    f"V2 does not support {feature}, {V2_PEAGLE_PR})",
                    words("remove {key}, or use {mode}", key=key, mode=Param("mode", "eagle3")),
                )
            )
    return checks
