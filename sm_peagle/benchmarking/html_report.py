"""`peagle report DIR --html page.html`: one self-contained HTML page a person wants to read.

No external file, script, font or stylesheet: the charts are inline SVG drawn by matplotlib
(the `plot` extra), the style is one inline <style>. Sections, each with a stable id (the
tests check them): provenance (`#provenance`: SIMULATED or real engine, endpoint, image,
dataset, load, client), output tokens/s vs concurrency per mode and K (`#throughput`, the
seed's chart), TTFT/TPOT percentiles (`#latency`), goodput under the SLO (`#goodput`),
max concurrency under the SLO (`#max-concurrency`), the K recommendation and its dynamic-K
schedule (`#recommendation`), and the tune-k estimate (`#k-estimate`) when present.
"""

from __future__ import annotations

import html
import io
import re
from pathlib import Path
from typing import Any

from .report import (
    comparison_rows,
    fmt_number,
    plot_unavailable,
    provenance_lines,
    recommendation_lines,
    run_config,
    runs_of,
    title_of,
)
from .results import from_target, provenance, target_of
from .slo import format_slo

__all__ = ["engine_of", "render_html", "write_html"]

_STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2rem auto;
max-width:1100px;color:#1d2433;line-height:1.45;padding:0 1rem}
h1{font-size:1.5rem;margin-bottom:.3rem}h2{font-size:1.15rem;margin-top:2rem;
border-bottom:1px solid #d8dde6;padding-bottom:.2rem}
.banner{padding:.6rem .9rem;border-radius:6px;font-weight:600;margin:.8rem 0}
.simulated{background:#fde8e8;color:#8a1c1c;border:1px solid #f3b4b4}
.measured{background:#e7f6ec;color:#17603a;border:1px solid #a9dcbc}
table{border-collapse:collapse;margin:.6rem 0;font-size:.88rem}
th,td{border:1px solid #d8dde6;padding:.25rem .55rem;text-align:right}
th{background:#f3f5f9}td:first-child,th:first-child{text-align:left}
ul.prov{font-size:.85rem;color:#3b4558}.chart svg{max-width:100%;height:auto}
.note{color:#5b6578;font-size:.85rem}code{background:#f3f5f9;padding:0 .25rem}
"""


def engine_of(doc: dict[str, Any]) -> tuple[str, bool]:
    """(what produced the numbers, not measured on AWS?) from the documents' own
    provenance: the second is true for any plugin target's engine (the banner's
    disclaimer)."""
    runs = runs_of(doc)
    # Not AWS (any target engine): up to /2 `simulated` said so; /3 on says it by label.
    off_aws = from_target(doc)
    named = {str(r.get("engine") or target_of(r).get("engine") or "") for r in runs}
    real = sorted(e for e in named if e and e.lower() not in ("simulated",))
    if real:  # a real vLLM engine made the tokens (on a target, or on SageMaker)
        return f"real vLLM engine: {', '.join(real)}", off_aws
    if off_aws:
        return f"{provenance(doc)}: no model ran, the tokens and timings were made up", True
    return "AWS: a SageMaker endpoint", False


def _table(cols: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in cols)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in row) + "</tr>" for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _table_section(sid: str, title: str, cols: list[str], rows: list[list[str]]) -> list[str]:
    """A <section> holding one table; no section at all when there are no rows."""
    if not rows:
        return []
    return [f'<section id="{sid}"><h2>{title}</h2>' + _table(cols, rows) + "</section>"]


def _svg(fig: Any) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    text = buf.getvalue()
    text = re.sub(r"<metadata>.*?</metadata>", "", text, flags=re.S)  # dates, licence URLs
    return text[text.index("<svg") :]


def _charts(doc: dict[str, Any]) -> tuple[str, str]:
    """(throughput chart, latency chart) as inline SVG."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise plot_unavailable("html") from None
    matplotlib.rcParams["svg.fonttype"] = "path"  # no font files needed to view it
    series = []
    for run in runs_of(doc):
        pts = sorted((lv["concurrency"], lv) for lv in run["levels"] if not lv.get("rate"))
        if pts:
            series.append((run_config(run), pts))
    fig, ax = plt.subplots(figsize=(8.5, 4.6), dpi=100)
    for label, pts in series:
        xs = [c for c, lv in pts if lv["output_tokens_per_s"] is not None]
        ys = [lv["output_tokens_per_s"] for _, lv in pts if lv["output_tokens_per_s"] is not None]
        ax.plot(xs, ys, marker="o", label=label)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("concurrency (closed loop)")
    ax.set_ylabel("output tokens/s")
    ax.set_title(f"output tokens/s vs concurrency [{provenance(doc)}]", fontsize=10)
    ax.grid(True, alpha=0.3)
    if series:
        ax.legend(fontsize=8)
    throughput = _svg(fig)
    plt.close(fig)
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.8), dpi=100)
    for label, pts in series:
        for ax, key in ((a1, "ttft_s"), (a2, "tpot_s")):
            got = [(c, lv[key]["p50"], lv[key]["p99"]) for c, lv in pts if lv[key]["p50"]]
            if got:
                line = ax.plot([g[0] for g in got], [g[1] * 1000 for g in got], marker="o",
                               label=f"{label} p50")[0]  # fmt: skip
                ax.plot([g[0] for g in got], [g[2] * 1000 for g in got], linestyle="--",
                        color=line.get_color(), label=f"{label} p99")  # fmt: skip
    for ax, what in ((a1, "TTFT ms"), (a2, "TPOT ms")):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("concurrency")
        ax.set_ylabel(what)
        ax.set_title(f"{what}: p50 (solid), p99 (dashed)", fontsize=9)
        ax.grid(True, alpha=0.3)
    if series:
        a2.legend(fontsize=6, ncol=1)
    latency = _svg(fig)
    plt.close(fig)
    return throughput, latency


def _ms(d: dict[str, Any], p: str) -> str:
    return fmt_number(d.get(p), "{:.1f}", 1000)


def _latency_rows(doc: dict[str, Any]) -> list[list[str]]:
    rows = []
    for run in runs_of(doc):
        for lv in run["levels"]:
            t, p, e = lv["ttft_s"], lv["tpot_s"], lv["e2e_s"]
            conc = str(lv["concurrency"]) + (f" @{lv['rate']:g}/s" if lv.get("rate") else "")
            rows.append(
                [
                    run_config(run),
                    conc,
                    *(_ms(t, q) for q in ("p50", "p90", "p99")),
                    *(_ms(p, q) for q in ("p50", "p90", "p99")),
                    fmt_number(e.get("p50"), "{:.2f}"),
                    fmt_number(e.get("p99"), "{:.2f}"),
                ]
            )
    return rows


def _goodput_rows(doc: dict[str, Any]) -> tuple[str, list[list[str]]]:
    rows, slos = [], set()
    for run in runs_of(doc):
        for lv in run["levels"]:
            gp = lv.get("goodput")
            if not gp:
                continue
            slos.add(format_slo(gp["slo_s"]))
            share = gp["share"]
            per = ", ".join(
                f"{k} {v:.0%}" for k, v in share.items() if k != "all" and v is not None
            )
            rows.append(
                [
                    run_config(run),
                    str(lv["concurrency"]),
                    fmt_number(share["all"], "{:.1%}"),
                    per,
                    fmt_number(gp["requests_per_s"], "{:.2f}"),
                    fmt_number(gp["output_tokens_per_s"]),
                    fmt_number(lv["output_tokens_per_s"]),
                ]
            )
    return "; ".join(sorted(slos)), rows


def _search_rows(doc: dict[str, Any]) -> list[list[str]]:
    rows = []
    for run in runs_of(doc):
        s = run.get("search")
        if not s:
            continue
        probes = " ".join(f"{p['concurrency']}{'✓' if p['passed'] else '✗'}" for p in s["probes"])
        rows.append(
            [
                run_config(run),
                fmt_number(s["max_concurrency"], "{}"),
                fmt_number(s["output_tokens_per_s"]),
                fmt_number(s["usd_per_million_output_tokens"], "${:.3f}"),
                f"{s['target_share']:.0%}",
                probes,
            ]
        )
    return rows


def _estimate_rows(doc: dict[str, Any]) -> list[list[str]]:
    rows = []
    for run in runs_of(doc):
        for lv in run["levels"]:
            est = lv.get("k_estimate")
            if not est:
                continue
            cells = ", ".join(f"K'={r['k']}: {r['output_tokens_per_s']:,.0f}" for r in est["by_k"])
            rows.append([run_config(run), str(lv["concurrency"]), cells, str(est["recommended_k"])])
    return rows


def render_html(doc: dict[str, Any]) -> str:
    throughput, latency = _charts(doc)
    engine, simulated = engine_of(doc)
    e = html.escape
    banner = (
        f'<div class="banner simulated">{e(engine)}. These numbers exercise the client and '
        "pipeline; they say nothing about GPU performance.</div>"
        if simulated
        else f'<div class="banner measured">{e(engine)}</div>'
    )
    parts = [
        f"<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>{e(title_of(doc))}"
        f"</title><style>{_STYLE}</style></head><body>",
        f"<h1>{e(title_of(doc))}</h1>{banner}",
        '<section id="provenance"><h2>Provenance</h2><ul class="prov">'
        + f"<li>engine: {e(engine)}</li>"
        + "".join(f"<li>{e(line)}</li>" for line in provenance_lines(doc))
        + "</ul></section>",
        '<section id="throughput"><h2>Output tokens/s vs concurrency, per mode and K</h2>'
        f'<div class="chart">{throughput}</div>',
    ]
    if doc.get("kind") == "sweep":
        cols, rows = comparison_rows(doc)
        parts.append(_table(cols, rows))
    parts.append("</section>")
    cols = ["config", "concurrency", "TTFT p50 ms", "TTFT p90 ms", "TTFT p99 ms", "TPOT p50 ms",
            "TPOT p90 ms", "TPOT p99 ms", "e2e p50 s", "e2e p99 s"]  # fmt: skip
    parts.append(
        '<section id="latency"><h2>TTFT and TPOT percentiles</h2>'
        f'<div class="chart">{latency}</div>{_table(cols, _latency_rows(doc))}</section>'
    )
    slo, rows = _goodput_rows(doc)
    parts.append('<section id="goodput"><h2>Goodput under the SLO</h2>')
    if rows:
        parts.append(f"<p>SLO: <code>{e(slo)}</code>; a request counts only if it met every "
                     "objective.</p>")  # fmt: skip
        parts.append(_table(["config", "concurrency", "met every SLO", "met each",
                             "goodput req/s", "goodput out tok/s", "out tok/s"], rows))  # fmt: skip
    else:
        parts.append('<p class="note">No SLO was given (<code>--slo</code>).</p>')
    parts.append("</section>")
    cols = ["config", "max concurrency", "out tok/s there", "$ / 1M out tokens",
            "target share", "probes (✓ met, ✗ missed)"]  # fmt: skip
    parts += _table_section("max-concurrency", "Max concurrency under the SLO", cols,
                            _search_rows(doc))  # fmt: skip
    rec = recommendation_lines(doc)
    parts.append('<section id="recommendation"><h2>Recommendation</h2>')
    if rec:
        parts.append("<ul>" + "".join(f"<li>{e(r)}</li>" for r in rec) + "</ul>")
    for mode, sched in (doc.get("k_schedule") or {}).items():
        if not sched.get("deployable", True):
            parts.append(f"<p>{e(mode)} as one dynamic-K deployment: refused: "
                         f"{e(str(sched.get('refused')))}</p>")  # fmt: skip
            continue
        parts.append(f"<p>{e(mode)} as one deployment (vLLM &ge; 0.24.0): <code>-k "
                     f"{sched['num_speculative_tokens']} --k-schedule {e(sched['k_schedule'])}"
                     "</code></p>")  # fmt: skip
    if not rec and not doc.get("k_schedule"):
        parts.append('<p class="note">One configuration: nothing to compare.</p>')
    parts.append("</section>")
    cols = ["config", "concurrency", "estimated out tok/s", "recommended K'"]
    parts += _table_section("k-estimate", "K from this deployment (ESTIMATE)", cols,
                            _estimate_rows(doc))  # fmt: skip
    parts.append("</body></html>\n")
    return "".join(parts)


def write_html(doc: dict[str, Any], path: Path) -> Path:
    from .files import write_atomic

    return write_atomic(path, render_html(doc))
