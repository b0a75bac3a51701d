"""Sweep: deploy each configuration (baseline, EAGLE-3 x K, P-EAGLE x K) in turn, benchmark
it, tear it down, then compare them and recommend K per concurrency range.

Every deploy goes through `sm_peagle.deploy` (Lifecycle: a failed or interrupted deploy rolls
back what it created); every benchmarked endpoint is deleted in a `finally`, including on
Ctrl-C, so a sweep leaves nothing behind (`keep=True` keeps only the last configuration).
Results are written as they arrive, so an interrupted sweep keeps what it measured.
"""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..errors import Call, Param, PeagleError, SpecError, text
from .files import error_line
from .results import (
    LABELLED,
    SCHEMA,
    client_info,
    from_target,
    iso,
    label_of,
    legacy_label,
    save_document,
    simulated_marker,
    target_record,
)

__all__ = [
    "combine_runs",
    "comparison",
    "config_label",
    "configurations",
    "k_schedules",
    "max_concurrency_table",
    "recommend_k",
    "run_sweep",
]

MODES = ("baseline", "eagle3", "p-eagle")


def configurations(modes: Sequence[str], ks: Sequence[int]) -> list[tuple[str, int | None]]:
    """baseline once (it has no K), then each speculative mode with each K."""
    bad = [m for m in modes if m not in MODES]
    if bad:
        use = ", ".join(MODES)
        raise SpecError(text("{modes}: unknown mode(s) {bad}; use {use}", bad=bad, use=use),
                        field="modes", value=list(modes), rule=f"of {use}")  # fmt: skip
    out: list[tuple[str, int | None]] = []
    for mode in MODES:  # a fixed order, so tables read the same whatever the flag order
        if mode not in modes:
            continue
        if mode == "baseline":
            out.append((mode, None))
        else:
            if not ks:
                raise SpecError(text("{k}: {mode} needs at least one K", mode=mode), field="k",
                                value=list(ks), rule="at least one K")  # fmt: skip
            out += [(mode, k) for k in sorted(set(ks))]
    return out


def config_label(mode: str | None, k: int | None) -> str:
    return "baseline" if mode in (None, "baseline") or not k else f"{mode} K={k}"


def _slug(label: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-")


def _otps(run: dict[str, Any]) -> dict[int, float]:
    return {
        lv["concurrency"]: lv["output_tokens_per_s"]
        for lv in run["levels"]
        if lv.get("output_tokens_per_s") is not None and not lv.get("rate")
    }


def comparison(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The seed-style table: rows = concurrency, columns = configurations (output tok/s),
    then best P-EAGLE / best EAGLE-3 and best P-EAGLE / baseline."""
    cols = [config_label(r.get("mode"), r.get("k")) for r in runs]
    by_col = {c: _otps(r) for c, r in zip(cols, runs, strict=True)}
    conc = sorted({c for v in by_col.values() for c in v})
    rows = []
    for c in conc:
        values = {col: by_col[col].get(c) for col in cols}

        def best(prefix: str, values: dict[str, float | None] = values) -> float | None:
            vals = [v for col, v in values.items() if col.startswith(prefix) and v is not None]
            return max(vals) if vals else None

        pe, e3, base = best("p-eagle"), best("eagle3"), values.get("baseline")
        rows.append(
            {
                "concurrency": c,
                "output_tokens_per_s": values,
                "best_p_eagle_vs_best_eagle3": pe / e3 if pe and e3 else None,
                "best_p_eagle_vs_baseline": pe / base if pe and base else None,
            }
        )
    return {"columns": cols, "rows": rows, "unit": "output tokens/s"}


def recommend_k(runs: Sequence[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Per speculative mode: the K with the highest output tok/s at each concurrency,
    merged into ranges of consecutive concurrency levels with the same best K."""
    out: dict[str, list[dict[str, Any]]] = {}
    for mode in ("p-eagle", "eagle3"):
        per_k = {r["k"]: _otps(r) for r in runs if r.get("mode") == mode and r.get("k")}
        if not per_k:
            continue
        ranges: list[dict[str, Any]] = []
        for c in sorted({c for v in per_k.values() for c in v}):
            cands = {k: v[c] for k, v in per_k.items() if c in v}
            k = max(cands, key=lambda kk: (cands[kk], -kk))  # a tie goes to the smaller K
            if ranges and ranges[-1]["k"] == k:
                ranges[-1]["to"] = c
            else:
                ranges.append({"from": c, "to": c, "k": k})
            ranges[-1].setdefault("output_tokens_per_s", {})[str(c)] = cands[k]
        out[mode] = ranges
    return out


def max_concurrency_table(runs: Sequence[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """Per configuration that ran the search: its max concurrency under the SLO, the output
    tokens/s there and the cost per 1M output tokens at that point."""
    rows = []
    for r in runs:
        s = r.get("search")
        if not s:
            continue
        rows.append(
            {
                "configuration": config_label(r.get("mode"), r.get("k")),
                "max_concurrency": s["max_concurrency"],
                "output_tokens_per_s": s["output_tokens_per_s"],
                "goodput_output_tokens_per_s": s["goodput_output_tokens_per_s"],
                "usd_per_million_output_tokens": s["usd_per_million_output_tokens"],
                "bounded": s["bounded"],
                "probes": len(s["probes"]),
            }
        )
    return rows or None


def k_schedules(recommendation: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """The best K per concurrency as a dynamic-K schedule, per mode (deployable with
    `--k-schedule`, vLLM >= 0.24.0): batch size ~ concurrency in a closed loop."""
    from ..vllm.dynamic_k import P_EAGLE_DYNAMIC_K, schedule_from_ranges, schedule_text

    out = {}
    for mode, ranges in recommendation.items():
        sched = schedule_from_ranges(ranges)
        if len({k for _, _, k in sched}) < 2:
            continue  # one K everywhere: a fixed -k says the same
        allowed, why = P_EAGLE_DYNAMIC_K if mode == "p-eagle" else (True, "")
        out[mode] = {
            "num_speculative_tokens": max(k for _, _, k in sched),
            "num_speculative_tokens_per_batch_size": sched,
            "k_schedule": schedule_text(sched),
            "deployable": allowed,
            "refused": None if allowed else why,
        }
    return out


def _label(runs: list[dict[str, Any]], off_aws: bool) -> str:
    """The runs' one label (peagle.bench/2 and later); for peagle.bench/1 runs, the label
    /2 gave their one engine; else what the sweep ran against."""
    labelled = [r for r in runs if r.get("schema") in LABELLED]
    labels = {str(r.get("label")) for r in labelled}
    if len(labels) == 1 and len(runs) == len(labelled):
        return labels.pop()
    engines = {str(r.get("engine") or "") for r in runs}
    if off_aws and len(engines) == 1:
        return legacy_label(engines.pop())
    return label_of(off_aws)


def combine_runs(
    runs: list[dict[str, Any]], *, extra: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The sweep document; its table and recommendation are derived from `runs` only, so
    `peagle report` recomputes them identically from the stored runs."""
    extra = dict(extra or {})
    # A live sweep says where it ran (`simulated` in `extra`: it talked to a plugin target,
    # either engine), so such a sweep is never "measured", even when every configuration
    # failed (no runs to read it from).
    off_aws = bool(extra.pop("simulated", False)) or any(from_target(r) for r in runs)
    label = _label(runs, off_aws)
    first = runs[0] if runs else {}
    doc: dict[str, Any] = {
        "schema": SCHEMA,
        "kind": "sweep",
        "label": label,
        **simulated_marker(label),  # a real engine's numbers carry no `simulated`
        "model": extra.pop("model", first.get("model")),
        "instance_type": extra.pop("instance_type", first.get("instance_type")),
        "dataset": first.get("dataset"),
    }
    engines = sorted({str(r["engine"]) for r in runs if r.get("engine")})
    if engines:  # which engine produced the runs (one, unless a sweep mixed targets)
        doc["engine"] = ", ".join(engines)
    doc.update(extra)
    doc["runs"] = runs
    doc["table"] = comparison(runs)
    doc["recommendation"] = recommend_k(runs)
    doc["k_schedule"] = k_schedules(doc["recommendation"])
    if (table := max_concurrency_table(runs)) is not None:
        doc["max_concurrency"] = table
    return doc


def _teardown(aws: Any, name: str, say: Callable[[str], None]) -> bool:
    """Delete `name` (endpoint, config, models); a Ctrl-C during it deletes anyway once."""
    from ..lifecycle.manager import Lifecycle

    for attempt in (1, 2):
        try:
            result = Lifecycle(aws, say=say).delete(name)
            return bool(result.get("deleted"))
        except KeyboardInterrupt:
            if attempt == 2:
                raise
            say(f"interrupted while deleting {name}: deleting anyway (Ctrl-C again to abort)")
    return False


def run_sweep(
    model: str,
    *,
    modes: Sequence[str] = MODES,
    ks: Sequence[int] = (3, 7),
    concurrency: Sequence[int] = (1, 4, 8, 32),
    out_dir: Path,
    instance_type: str | None = None,
    role: str | None = None,
    region: str | None = None,
    keep: bool = False,
    aws: Any = None,
    say: Callable[[str], None] = lambda _m: None,
    deploy: Callable[..., Any],
    **bench: Any,
) -> dict[str, Any]:
    """Deploy -> bench -> delete, per configuration; writes per-config JSON as it goes and
    returns the combined sweep document (also written as sweep.json by the caller).
    `deploy` is the calling client's `deploy`, bound to the same session as `aws`
    (`Client.sweep` passes it in), so bench stays below the SDK's top layer."""
    from ..aws import AwsContext
    from .runner import bench_endpoint

    configs = configurations(modes, ks)
    aws = aws or AwsContext(region)
    run_id = secrets.token_hex(3)
    overrides = {k: v for k, v in (("instance_type", instance_type), ("role", role)) if v}
    runs: list[dict[str, Any]] = []
    failures: list[dict[str, str]] = []
    deleted: list[str] = []
    kept: list[str] = []
    started = time.time()
    for i, (mode, k) in enumerate(configs):
        label = config_label(mode, k)
        name = f"peagle-sweep-{run_id}-{_slug(label)}"
        say(f"[{i + 1}/{len(configs)}] {label}: deploying {name}")
        keep_this = keep and i == len(configs) - 1
        try:
            spec_k = {"k": k} if k else {}
            deploy(model, mode=mode, name=name, **spec_k, **overrides)
            doc = bench_endpoint(
                name, concurrency=concurrency, aws=aws, say=say, configuration=label, **bench
            )
            doc["configuration"] = label
            save_document(doc, out_dir / f"{_slug(label)}.json")
            runs.append(doc)
        except PeagleError as e:  # this configuration failed; the others still run
            failures.append({"configuration": label, "error": error_line(e)})
            say(text("{label} failed: {e}", label=label, e=error_line(e)))
        finally:
            # Always by name: also covers an interrupt between deploy() and its return.
            if keep_this:
                kept.append(name)
                say(text("kept {name} ({keep}): remove with `{delete}`", name=name,
                         keep=Param("keep", True), delete=Call("delete", name)))  # fmt: skip
            elif _teardown(aws, name, say):
                deleted.append(name)
    return combine_runs(
        runs,
        extra={
            "model": model,
            "simulated": target_record() is not None,
            "instance_type": runs[0]["instance_type"] if runs else instance_type,
            "matrix": {
                "modes": [m for m in MODES if m in modes],
                "k": sorted(set(ks)),
                "concurrency": list(concurrency),
                "configurations": [config_label(m, k) for m, k in configs],
            },
            "client": client_info(),
            "started_at": iso(started),
            "ended_at": iso(time.time()),
            "elapsed_s": round(time.time() - started, 3),
            "failures": failures,
            "cleanup": {"deleted": deleted, "kept": kept},
        },
    )
