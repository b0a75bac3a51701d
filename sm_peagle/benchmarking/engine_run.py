"""What the engine says it ran, from its own start-up log: the model runner and the
speculative sampling methods, and whether that configuration is lossy.

A comparison across modes can only be trusted when both sides ran the same way: vLLM's
Model Runner V2 does not support P-EAGLE, so EAGLE-3 and P-EAGLE can end up on different
runners, and a lossy rejection method (`rejection_sample_method: "fly"`, vLLM 0.33) changes
outputs. Read from vLLM 0.31.0's start-up lines (seen on the sandbox's real engine):

- `Model Runner V2 requires Triton; using the V1 model runner instead.` -> V1, and
  `Using V2 Model Runner` -> V2 (`v1/worker/*_worker.py`); failing both, a line logged from
  `gpu_model_runner.py` or `cpu_model_runner.py` (the V1 runners' modules) -> V1;
- `non-default args: {...}` (`entrypoints/serve/utils/api_utils.py`): the speculative
  config as the engine received it; a `rejection_sample_method` or `draft_sample_method` it
  does not set is the default of the engine's own vLLM version, as its
  `config/speculative.py` declares it (the facts data: 0.31.0 "standard" and "greedy",
  0.18.0 "strict" and no draft method at all). Another version's default would be a
  claim about a different engine, so without a version the value is null.

Whether that config is lossy is the facts' per-version rule (`vllm/lossy.py`), quoting vLLM.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from typing import Any

__all__ = ["METHOD_KEYS", "engine_run_from_lines", "read_engine_run"]

# The sampling-method keys recorded; what a log that does not set one means depends on
# the engine's vLLM version (`_unset`).
METHOD_KEYS = ("rejection_sample_method", "draft_sample_method")
_V2 = re.compile(r"Using V2 Model Runner")
_V1_FALLBACK = re.compile(r"using the V1 model runner instead")
_V1_MODULE = re.compile(r"\[(?:gpu|cpu)_model_runner\.py:\d+\]")
_ARGS = re.compile(r"non-default args: (\{.*\})\s*$")
_PER_REQUEST = re.compile(r"per_request_spec_decode_metrics='(\w+)'")
MAX_EVENTS = 5000  # the start-up lines come first; never page through a long-lived log


def _runner(messages: list[str]) -> tuple[str | None, str | None]:
    for pattern, runner in ((_V2, "V2"), (_V1_FALLBACK, "V1"), (_V1_MODULE, "V1")):
        for m in messages:
            if pattern.search(m):
                return runner, m.strip()[-300:]
    return None, None


def _engine_spec(messages: list[str]) -> dict[str, Any] | None:
    """The speculative config in the last `non-default args` line (the latest start)."""
    for m in reversed(messages):
        found = _ARGS.search(m)
        if not found:
            continue
        try:
            args = ast.literal_eval(found.group(1))  # a Python dict repr, never code
        except (ValueError, SyntaxError):
            continue
        spec = args.get("speculative_config") if isinstance(args, dict) else None
        return spec if isinstance(spec, dict) else {}
    return None


def _unset(key: str, version: str | None) -> tuple[Any, str]:
    """(value, `<key>_from`) for a method the engine's config does not set: the default
    its vLLM version declares, null when that version has no such setting or the version
    is unknown."""
    from ..vllm.versions import (
        VllmVersion,
        facts_version,
        speculative_field_default,
        speculative_field_values,
    )

    try:
        parsed = VllmVersion(version) if version else None
    except ValueError:  # not a vLLM version string
        parsed = None
    if parsed is None:
        return None, "not set; vLLM version unknown"
    read_as = facts_version(parsed)
    # A version the facts do not cover is answered by the nearest covered one: say which.
    source = f"vLLM {parsed}" if read_as == str(parsed) else f"vLLM {parsed} (read as {read_as})"
    if key not in speculative_field_values(parsed):
        return None, f"not set; {source} has no {key} setting"
    return speculative_field_default(parsed, key), f"{source} default (not set)"


def _lossy(spec: dict[str, Any], version: str | None) -> tuple[bool | None, str | None]:
    """The facts' per-version lossy rule (`vllm.lossy.lossy_reason`, vLLM's own words) on
    the config the engine ran; unknown without a version or a config."""
    from ..vllm.lossy import lossy_reason

    if version is None or not spec:
        return None, None
    try:
        why = lossy_reason(spec, version)
    except ValueError:  # not a vLLM version string: unknown, the method is still recorded
        return None, None
    return (True, why) if why else (False, None)


def engine_run_from_lines(
    messages: Iterable[str],
    *,
    speculative_config: dict[str, Any] | None = None,
    vllm_version: str | None = None,
    where: str = "the engine's log",
) -> dict[str, Any]:
    """The `engine_run` provenance from the engine's log messages. `speculative_config`
    (what the endpoint was deployed with) fills in only when the log shows none."""
    lines = [str(m) for m in messages]
    runner, evidence = _runner(lines)
    from_log = _engine_spec(lines)
    out: dict[str, Any] = {
        "model_runner": runner,
        "model_runner_line": evidence,
        "from": where,
    }
    spec = from_log if from_log is not None else speculative_config
    for key in METHOD_KEYS:
        if spec is None:
            out[key], out[f"{key}_from"] = None, "unknown: no speculative config in the log"
        elif key in spec:
            out[key] = spec[key]
            out[f"{key}_from"] = "engine log" if from_log is not None else "deployed config"
        else:
            out[key], out[f"{key}_from"] = _unset(key, vllm_version)
    per_request = [m.group(1) for line in lines if (m := _PER_REQUEST.search(line))]
    out["per_request_spec_decode_metrics"] = per_request[-1] if per_request else None
    ran = {**(spec or {}), **{k: out[k] for k in METHOD_KEYS if out[k] is not None}}
    lossy, why = _lossy(ran if spec is not None else {}, vllm_version)
    out["lossy"] = lossy
    if why:
        out["lossy_reason"] = why
    return out


def read_engine_run(
    aws: Any,
    endpoint: str,
    *,
    since: float,
    speculative_config: dict[str, Any] | None,
    vllm_version: str | None,
    component: str | None = None,
) -> dict[str, Any]:
    """`engine_run_from_lines` over the endpoint's log from `since` (epoch seconds: when
    its current containers started); a log that cannot be read gives the reason."""
    from ..lifecycle.endpoint_logs import log_group

    group = log_group(endpoint, component)
    messages: list[str] = []
    try:
        pages = (
            aws.client("logs")
            .get_paginator("filter_log_events")
            .paginate(logGroupName=group, startTime=int(since * 1000))
        )
        for page in pages:
            messages += [e.get("message", "") for e in page.get("events", [])]
            if len(messages) >= MAX_EVENTS:
                break
    except Exception as e:  # no logs permission, no group: the run still has its numbers
        return {
            "model_runner": None,
            "rejection_sample_method": None,
            "lossy": None,
            "from": f"unavailable: cannot read {group}: {type(e).__name__}",
        }
    return engine_run_from_lines(
        messages, speculative_config=speculative_config, vllm_version=vllm_version,
        where=f"the engine's log ({group})",
    )  # fmt: skip
