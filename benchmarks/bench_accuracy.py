"""How close peagle's benchmark timings come to the sandbox's ground truth.

    python benchmarks/bench_accuracy.py                          # print the table
    python benchmarks/bench_accuracy.py --write-readme README.md

A fresh in-process sandbox (SIMULATED engine, its own state dir) serves gpt-oss-20b with
P-EAGLE K=3, EAGLE-3 K=3 and no speculation. Each runs at concurrency 1, 8, 64 and 128 with
~1,500-word chat prompts (so prefill dominates the client's fixed ~0.5 ms per request), and
each level's TTFT, TPOT and output tokens/s are compared with what the sandbox recorded for
the same requests (`peagle_sandbox.groundtruth.level_truth`). Token counts are exact by
construction and asserted by tests/e2e/test_bench_accuracy.py; this script reports only the
timing errors, which depend on the machine's load, so they are measured here rather than
asserted in the suite.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import urllib.request
from pathlib import Path

CONFIGS = [("p-eagle", 3), ("eagle3", 3), ("baseline", None)]
LEVELS = [1, 8, 64, 128]
TIMED = ("ttft", "tpot", "otps")


def long_prompt_dataset():
    """Chat prompts of ~1,500 words: ~55 ms of simulated prefill, as a code-review or RAG
    request would have, so a fixed ~0.5 ms client cost is well under 2% of TTFT. Shared
    with tests/e2e/test_bench_accuracy.py, which asserts the exact counts on the same load."""
    from sm_peagle.benchmarking.datasets import Dataset

    words = ("def", "return", "self", "value", "index", "buffer", "parse", "token", "cache")
    items = []
    for i in range(12):
        body = " ".join(words[(i + j) % len(words)] for j in range(1500))
        items.append({"messages": [{"role": "user", "content": f"Review #{i}: {body}"}]})
    return Dataset("accuracy-long", "written for this benchmark", tuple(items))


def ground_truth(url: str, endpoint: str) -> dict[str, dict]:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(f"{url}/_peagle/ground-truth?endpoint={endpoint}", timeout=10) as resp:
        return {r["request_id"]: r for r in json.loads(resp.read())["requests"]}


def measure(requests_per_level: int) -> list[dict]:
    import sm_peagle
    from peagle_sandbox import manager
    from peagle_sandbox.groundtruth import level_truth
    from sm_peagle.benchmarking.load import LoadSpec, bench_client, run_level
    from sm_peagle.benchmarking.metrics import summarize_level

    for name in [n for n in os.environ if n.startswith("AWS_")]:
        del os.environ[name]
    os.environ["PEAGLE_STATE_DIR"] = tempfile.mkdtemp(prefix="peagle-accuracy-")
    info = manager.start(creating_seconds=1.0, metrics_interval=1.0)
    rows = []
    try:
        manager.activate(info)
        ds = long_prompt_dataset()
        for mode, k in CONFIGS:
            name = f"acc-{mode}-{k or 0}"
            sm_peagle.deploy("gpt-oss-20b", mode=mode, name=name, role=info.role_arn,
                             **({"k": k} if k else {}))  # fmt: skip
            rt = bench_client(None, name, max(LEVELS))
            try:
                for c in LEVELS:
                    n = max(c, requests_per_level)
                    run = run_level(rt, ds, LoadSpec(concurrency=c, requests=n, max_tokens=96))
                    level = summarize_level(run.records, concurrency=c,
                                            cpu_seconds=run.cpu_seconds)  # fmt: skip
                    truth = level_truth(level["records"], ground_truth(info.url, name))
                    got = {"ttft": level["ttft_s"]["mean"], "tpot": level["tpot_s"]["mean"],
                           "otps": level["output_tokens_per_s"]}  # fmt: skip
                    err = {key: (got[key] - truth[key]) / truth[key] for key in TIMED}
                    rows.append({"mode": mode, "k": k, "c": c, "requests": n, "got": got,
                                 "truth": truth, "error": err})  # fmt: skip
                    print(f"{mode:8} c={c:<3} " + " ".join(
                        f"{key} {err[key]:+.2%}" for key in TIMED), flush=True)  # fmt: skip
            finally:
                rt.close()
            sm_peagle.Endpoint.attach(name).delete()
    finally:
        manager.stop()
    return rows


def table(rows: list[dict]) -> str:
    out = [
        "| mode | concurrency | requests | TTFT error | TPOT error | output tok/s error |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        label = r["mode"] + (f" K={r['k']}" if r["k"] else "")
        e = r["error"]
        out.append(f"| {label} | {r['c']} | {r['requests']} | {e['ttft']:+.2%} | "
                   f"{e['tpot']:+.2%} | {e['otps']:+.2%} |")  # fmt: skip
    cpu = os.cpu_count()
    out.append("")
    out.append(
        f"Error = (peagle's mean - the sandbox's truth) / truth, one run per level; "
        f"Python {platform.python_version()}, {cpu} CPUs, {platform.machine()}. "
        "Measured by `benchmarks/bench_accuracy.py`."
    )
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=16, help="requests per level (at least c)")
    ap.add_argument("--write-readme", type=Path, help="replace the README's accuracy block")
    args = ap.parse_args()
    text = table(measure(args.requests))
    print(text)
    if args.write_readme:
        # Imported here so the test suite can import this module's helpers from the repo
        # root (readme_block is found only when this file runs as a script).
        from readme_block import markers, replace_block

        if not replace_block(args.write_readme, "accuracy", text):
            start, end = markers("accuracy")
            raise SystemExit(f"{args.write_readme}: no {start} … {end} block")


if __name__ == "__main__":
    main()
