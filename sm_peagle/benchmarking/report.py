"""Render results documents: markdown, CSV, a PNG chart, and the plain-text parts the
CLI's terminal tables are made of (cli/bench_render.py draws those).

Every rendering starts with where the numbers came from (endpoint, instance type, image,
vLLM version, mode/K, dataset and its hash, client, time) and says SIMULATED when no model
made them; numbers from a plugin's target carry the caveat the plugin declares for their
label. Everything else is computed from the document alone, so `peagle report` re-renders a
results directory without any AWS access.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from ..errors import Param, SpecError, text
from .results import caveat_of, from_target, is_simulated, iso, provenance, simulated_caveat

__all__ = [
    "PlotUnavailable",
    "acceptance_notes",
    "plot_unavailable",
    "provenance_lines",
    "require_matplotlib",
    "to_csv",
    "to_markdown",
]

PLOT_HINT = "pip install 'sm-peagle[plot]'"


class PlotUnavailable(SpecError):
    """matplotlib (the `plot` extra) is not installed. A SpecError, exit 2, as every
    missing optional dependency is (--locust, --from-hf, a dataset's package): the fix is
    on the user's side, and a command that needs it refuses before doing anything."""


def require_matplotlib(field: str, remedy: str = PLOT_HINT) -> None:
    """The one check of the `plot` extra, before any work (`bench(plot=)`, `report(plot=,
    html=)`): PlotUnavailable naming the keyword `field` when matplotlib cannot be found."""
    import importlib.util

    if importlib.util.find_spec("matplotlib") is None:
        raise plot_unavailable(field, remedy)


def plot_unavailable(field: str, remedy: str = PLOT_HINT) -> PlotUnavailable:
    """PlotUnavailable for keyword `field` (`plot`, `html`): matplotlib is missing."""
    return PlotUnavailable(
        text("{p} needs matplotlib, which is not installed", p=Param(field)),
        field=field, rule="needs matplotlib (sm-peagle[plot])", remedy=remedy,
    )  # fmt: skip


def fmt_number(v: Any, fmt: str = "{:,.0f}", scale: float = 1.0) -> str:
    return "-" if v is None else fmt.format(v * scale)


def runs_of(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return doc["runs"] if doc.get("kind") == "sweep" else [doc]


def run_config(run: dict[str, Any]) -> str:
    from .sweep import config_label

    return config_label(run.get("mode"), run.get("k"))


def title_of(doc: dict[str, Any]) -> str:
    what = "sweep" if doc.get("kind") == "sweep" else "bench"
    subject = doc.get("model") or doc.get("endpoint") or "?"
    return f"peagle {what}: {subject} on {doc.get('instance_type')} [{provenance(doc)}]"


def provenance_lines(doc: dict[str, Any]) -> list[str]:
    """Where the numbers came from, one fact per line."""
    lines = []
    if is_simulated(doc):
        lines.append(caveat_of(doc) or simulated_caveat())
    elif from_target(doc):
        # A real engine not on AWS: what is real in its numbers, in its plugin's words
        # (its label's caveat), else in the words its runs were written with (their first
        # note is that caveat), for a document read where its plugin is not installed.
        said = {caveat_of(r) or next(iter(r.get("notes") or ()), "") for r in runs_of(doc)}
        said.discard("")
        lines.extend(sorted(said) or [f"{provenance(doc)}: not measured on AWS"])
    ds = doc.get("dataset") or {}
    if ds:
        src = str(ds.get("source"))
        what = src if src.startswith(str(ds.get("name"))) else f"{ds.get('name')} ({src})"
        lines.append(
            f"dataset: {what}, {ds.get('count')} prompts, sha256 {str(ds.get('sha256'))[:16]}"
        )
    runs = runs_of(doc)
    shared = ("instance_type", "usd_per_hour", "image", "vllm_version")
    common = len({tuple(r.get(k) for k in shared) for r in runs}) == 1

    def where(run: dict[str, Any]) -> str:
        usd = run.get("usd_per_hour")
        price = "price unknown" if usd is None else f"${usd:.2f}/h"
        if usd is not None and run.get("usd_per_hour_note"):
            price += f": {run['usd_per_hour_note']}"
        return (
            f"{run.get('instance_type')} ({price}), image "
            f"{run.get('image')}, vLLM {run.get('vllm_version') or '?'}"
        )

    if common and len(runs) > 1:
        lines.append(f"every configuration: {where(runs[0])}")
    for run in runs:
        spec = json.dumps(run.get("speculative_config"), sort_keys=True)
        at = "" if common and len(runs) > 1 else f", {where(run)}"
        lines.append(
            f"{run_config(run)}: endpoint {run.get('endpoint')}{at}, speculative_config {spec}"
        )
    load = doc.get("load") or (runs_of(doc)[0].get("load") if runs_of(doc) else None) or {}
    if load:
        amount = (
            f"{load['duration_s']:g}s per level"
            if load.get("duration_s")
            else f"{load.get('requests') or 'max(8, 4 x concurrency)'} requests per level"
        )
        rates = f", Poisson arrivals {load['rates']} req/s" if load.get("rates") else ""
        temp = load.get("temperature")  # 0.0 is greedy, not "unset"
        temp = "model default" if temp is None else f"{temp:g}"
        lines.append(
            f"load: {load.get('kind')} loop{rates}, {amount}, warm-up {load.get('warmup')}, "
            f"{load.get('workers')} client process(es), max_tokens {load.get('max_tokens')}, "
            f"temperature {temp}, no retries"
        )
    for run in runs:
        lines.extend(runner_lines(run))
    client = doc.get("client") or (runs_of(doc)[0].get("client") if runs_of(doc) else None) or {}
    if client:
        lines.append(
            f"client: {client.get('host')}, {client.get('platform')}, Python "
            f"{client.get('python')}, {client.get('cpus')} CPUs, peagle "
            f"{client.get('peagle_version')}, botocore {client.get('botocore_version')}"
        )
    lines.append(f"started {doc.get('started_at')}, ended {doc.get('ended_at')}")
    return lines


def runner_lines(run: dict[str, Any]) -> list[str]:
    """What the engine said it ran (peagle.bench/2 `engine_run`): model runner, rejection
    method, lossy or not."""
    er = run.get("engine_run")
    if not er:
        return []
    lossy = er.get("lossy")
    verdict = {True: ", LOSSY: outputs may differ from the target model's", False: ", lossless"}
    return [
        f"{run_config(run)}: model runner {er.get('model_runner') or 'unknown'}, rejection "
        f"sampling {er.get('rejection_sample_method') or 'unknown'}"
        + verdict.get(lossy, "")
        + f" (from {er.get('from')})"
    ]


LEVEL_COLUMNS = [
    "config", "concurrency", "ok/failed", "out tok/s", "req/s", "TTFT p50/p90/p99 ms",
    "TPOT p50 ms", "ITL p50/p99 ms", "e2e p50 s", "tok/chunk", "accept len", "client CPU",
    "$/1M out",
]  # fmt: skip


def level_rows(doc: dict[str, Any]) -> list[list[str]]:
    rows = []
    for run in runs_of(doc):
        for lv in run["levels"]:
            req, t, it = lv["requests"], lv["ttft_s"], lv["itl_s"]
            acceptance = lv.get("acceptance") or {}
            acc = acceptance.get("mean_acceptance_length")
            windowed = acceptance.get("source") == "windowed" and acc is not None
            conc = str(lv["concurrency"]) + (f" @{lv['rate']:g}/s" if lv.get("rate") else "")
            rows.append(
                [
                    run_config(run),
                    conc,
                    f"{req['ok']}/{req['failed']}",
                    fmt_number(lv["output_tokens_per_s"]),
                    fmt_number(lv["request_throughput_per_s"], "{:.2f}"),
                    "/".join(fmt_number(t[p], "{:.1f}", 1000) for p in ("p50", "p90", "p99")),
                    fmt_number(lv["tpot_s"]["p50"], "{:.2f}", 1000),
                    "/".join(fmt_number(it[p], "{:.2f}", 1000) for p in ("p50", "p99")),
                    fmt_number(lv["e2e_s"]["p50"], "{:.2f}"),
                    fmt_number(lv["mean_tokens_per_chunk"], "{:.2f}"),
                    fmt_number(acc, "{:.2f}") + (" (windowed)" if windowed else ""),
                    fmt_number(lv["client_cpu"]["max_process_core_fraction"], "{:.0%}"),
                    fmt_number(lv["usd_per_million_output_tokens"], "{:.3f}"),
                ]
            )
    return rows


def acceptance_notes(doc: dict[str, Any]) -> list[str]:
    """Why a level's `accept len` reads `-`: one line per reason, naming its levels, printed
    under the table that shows the `-`. A `-` nobody explains reads as a failure, and the
    usual cause (the README tour's `--acceptance-wait 0`) is a choice with a remedy."""
    levels_by_reason: dict[str, list[str]] = {}
    for run in runs_of(doc):
        for lv in run["levels"]:
            acceptance = lv.get("acceptance") or {}
            if acceptance.get("mean_acceptance_length") is not None:
                continue
            why = acceptance.get("reason") or "not measured"
            if why.startswith("no SpecDecoding"):
                # vLLM logs the line every DEFAULT_INTERVAL_S (10 s): waiting finds it.
                why += "; vLLM logs one every 10 s, and `--acceptance-wait 25s` waits for it"
            where = f"{run_config(run)} c={lv['concurrency']}"
            levels_by_reason.setdefault(why, []).append(where)
    return [
        f"accept len - ({', '.join(levels)}): {why}" for why, levels in levels_by_reason.items()
    ]


def comparison_rows(doc: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    table = doc["table"]
    cols = ["concurrency", *table["columns"], "best P-EAGLE / best EAGLE-3", "best P-EAGLE / base"]
    rows = []
    for row in table["rows"]:
        vals = [fmt_number(row["output_tokens_per_s"].get(c)) for c in table["columns"]]
        ratios = [
            fmt_number(row[k], "{:.2f}x")
            for k in ("best_p_eagle_vs_best_eagle3", "best_p_eagle_vs_baseline")
        ]
        rows.append([str(row["concurrency"]), *vals, *ratios])
    return cols, rows


def recommendation_lines(doc: dict[str, Any]) -> list[str]:
    out = []
    for mode, ranges in (doc.get("recommendation") or {}).items():
        parts = [
            f"concurrency {r['from']}" + (f"-{r['to']}" if r["to"] != r["from"] else "")
            + f": K={r['k']}"
            for r in ranges
        ]  # fmt: skip
        line = f"{mode}: " + "; ".join(parts)
        sched = (doc.get("k_schedule") or {}).get(mode)
        if sched and sched.get("deployable", True):
            line += (
                f" (one deployment, vLLM >= 0.24.0: -k {sched['num_speculative_tokens']} "
                f"--k-schedule {sched['k_schedule']})"
            )
        elif sched:
            line += f" (as one dynamic-K deployment: refused for {mode}, see `peagle plan`)"
        out.append(line)
    return out


def _md_table(cols: list[str], rows: list[list[str]]) -> str:
    head = "| " + " | ".join(cols) + " |\n|" + "|".join("---:" for _ in cols) + "|\n"
    return head + "".join("| " + " | ".join(r) + " |\n" for r in rows)


def to_markdown(doc: dict[str, Any]) -> str:
    out = [f"## {title_of(doc)}\n"]
    if is_simulated(doc):  # not a real engine's numbers: no model made these tokens
        out.append("**SIMULATED** — not a measurement of any GPU or model.\n\n")
    out.append("".join(f"- {line}\n" for line in provenance_lines(doc)))
    if doc.get("kind") == "sweep":
        cols, rows = comparison_rows(doc)
        out.append(f"\n### Output tokens/s by concurrency ({provenance(doc)})\n\n")
        out.append(_md_table(cols, rows))
        rec = recommendation_lines(doc)
        if rec:
            out.append("\n### Recommended K\n\n" + "".join(f"- {r}\n" for r in rec))
        if doc.get("failures"):
            out.append("\n### Failed configurations\n\n")
            out.append("".join(f"- {f['configuration']}: {f['error']}\n" for f in doc["failures"]))
    out.append(f"\n### Levels ({provenance(doc)})\n\n")
    out.append(_md_table(LEVEL_COLUMNS, level_rows(doc)))
    out.append("".join(f"\n{note}\n" for note in acceptance_notes(doc)))
    warnings = {
        lv["client_cpu"]["warning"]
        for run in runs_of(doc)
        for lv in run["levels"]
        if lv["client_cpu"].get("warning")
    }
    out.append("".join(f"\n> warning: {w}\n" for w in sorted(warnings)))
    return "".join(out)


CSV_FIELDS = [
    "label", "configuration", "endpoint", "model", "instance_type", "image", "vllm_version",
    "mode", "k", "dataset", "dataset_sha256", "concurrency", "rate", "requests", "ok", "failed",
    "wall_s", "input_tokens", "output_tokens", "output_tokens_per_s",
    "request_throughput_per_s", "ttft_p50_s", "ttft_p90_s", "ttft_p99_s", "ttft_mean_s",
    "tpot_p50_s", "tpot_p90_s", "tpot_p99_s", "tpot_mean_s", "itl_p50_s", "itl_p90_s",
    "itl_p99_s", "e2e_p50_s", "e2e_p90_s", "e2e_p99_s", "mean_tokens_per_chunk",
    "mean_acceptance_length", "client_cpu_core_fraction", "usd_per_million_output_tokens",
    "started_at",
]  # fmt: skip


def to_csv(doc: dict[str, Any]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=CSV_FIELDS, lineterminator="\n")
    w.writeheader()
    for run in runs_of(doc):
        ds = run.get("dataset") or {}
        for lv in run["levels"]:
            row: dict[str, Any] = {
                "label": run.get("label"),
                "configuration": run_config(run),
                **{k: run.get(k) for k in ("endpoint", "model", "instance_type", "image")},
                **{k: run.get(k) for k in ("vllm_version", "mode", "k")},
                "dataset": ds.get("name"),
                "dataset_sha256": ds.get("sha256"),
                "requests": lv["requests"]["total"],
                "ok": lv["requests"]["ok"],
                "failed": lv["requests"]["failed"],
                "mean_acceptance_length": (lv.get("acceptance") or {}).get(
                    "mean_acceptance_length"
                ),
                "client_cpu_core_fraction": lv["client_cpu"]["max_process_core_fraction"],
                "started_at": iso(lv["started_at"]),
            }
            for key in ("concurrency", "rate", "wall_s", "input_tokens", "output_tokens"):
                row[key] = lv[key]
            for key in ("output_tokens_per_s", "request_throughput_per_s"):
                row[key] = lv[key]
            row["mean_tokens_per_chunk"] = lv["mean_tokens_per_chunk"]
            row["usd_per_million_output_tokens"] = lv["usd_per_million_output_tokens"]
            for metric in ("ttft", "tpot", "itl", "e2e"):
                for p in ("p50", "p90", "p99", "mean"):
                    if f"{metric}_{p}_s" in CSV_FIELDS:
                        row[f"{metric}_{p}_s"] = lv[f"{metric}_s"][p]
            w.writerow(row)
    return buf.getvalue()


def plot(doc: dict[str, Any], path: Path) -> Path:
    """Output tokens/s vs concurrency, one line per configuration (PNG)."""
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only: never needs a display
        import matplotlib.pyplot as plt
    except ImportError:
        raise plot_unavailable("plot") from None
    fig, ax = plt.subplots(figsize=(8, 5), dpi=120)
    for run in runs_of(doc):
        pts = sorted(
            (lv["concurrency"], lv["output_tokens_per_s"])
            for lv in run["levels"]
            if lv["output_tokens_per_s"] is not None and not lv.get("rate")
        )
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=run_config(run))
    ax.set_xscale("log", base=2)
    ax.set_xlabel("concurrency (closed loop)")
    ax.set_ylabel("output tokens/s")
    ax.set_title(title_of(doc), fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    ds = doc.get("dataset") or {}
    fig.text(
        0.01,
        0.01,
        f"{provenance(doc)} · dataset {ds.get('name')} ({str(ds.get('sha256'))[:12]}) · "
        f"{doc.get('started_at')}",
        fontsize=7,
    )
    import io

    from .files import write_atomic

    buf = io.BytesIO()
    fig.savefig(buf, format=path.suffix.lstrip(".") or "png")
    plt.close(fig)
    write_atomic(path, buf.getvalue())
    return path
