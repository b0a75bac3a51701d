"""How good is `peagle tune-k`'s estimate? Checked against a real sweep on the REAL vLLM engine.

The simulated engine draws acceptance as alpha**i, which makes the estimate exact by
construction; the real engine does not. Here: the tiny target + the aligned P-EAGLE head
at temperature 1 (the CPU sampling fix is loaded through the `vllm.general_plugins` entry
point, so acceptance decays with position: ~0.6, 0.36, 0.2, ...).

1. Deploy K = --k-max (default 4) and measure output tokens/s at concurrency 1 (sequential
   streams, `ignore_eos`, tokens from `usage`); read the `SpecDecoding metrics` lines the
   engine logged meanwhile with peagle's own parser and estimate tokens/s for every
   K' <= K (`sm_peagle.benchmarking.tune_k.estimate_k`, default position cost 0).
2. Deploy each K' < K in turn and measure the same way (the "real sweep").
3. Print estimated vs measured tokens/s and acceptance length, and the relative errors.

One engine at a time, each killed as a process group. Needs an engine home
(`python -m peagle_sandbox.vllm_engine.install`):

    python benchmarks/tune_k_real.py --home /work/engine-home [--vllm-version 0.31.0]
        [--k-max 4] [--seconds 40] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from peagle_sandbox.procs import kill_group  # noqa: E402
from peagle_sandbox.vllm_engine.install import (  # noqa: E402
    DEFAULT_VLLM_VERSION,
    default_home,
    engine_env,
)
from sm_peagle.benchmarking.acceptance import combine_per_position, per_position_rates  # noqa: E402
from sm_peagle.benchmarking.tune_k import estimate_k  # noqa: E402
from sm_peagle.lifecycle.endpoint_logs import parse_spec_decoding  # noqa: E402

PROMPT = "Explain how a parallel drafter proposes several tokens at once."
_OPEN = urllib.request.build_opener(urllib.request.ProxyHandler({})).open


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(env: Any, k: int, log: Path) -> tuple[subprocess.Popen, str]:
    port = _port()
    cfg = {"model": str(env.models / "p-eagle-aligned"), "method": "eagle3",
           "num_speculative_tokens": k, "parallel_drafting": True}  # fmt: skip
    argv = env.vllm_command(
        "serve", str(env.models / "tiny-llama"), "--host", "127.0.0.1", "--port", str(port),
        "--enforce-eager", "--max-model-len", "1024", "--served-model-name", "tiny",
        "--max-num-seqs", "8", "--speculative-config", json.dumps(cfg),
    )  # fmt: skip
    proc = subprocess.Popen(argv, stdout=log.open("w"), stderr=subprocess.STDOUT,
                            env=env.engine_environ(), start_new_session=True)  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 400
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"engine exited {proc.returncode}: see {log}")
        try:
            with _OPEN(url + "/health", timeout=2):
                return proc, url
        except OSError:
            time.sleep(0.5)
    stop(proc)
    raise RuntimeError("engine not ready")


def stop(proc: subprocess.Popen) -> None:
    kill_group(proc.pid, grace=20.0)


def stream(url: str, max_tokens: int, seed: int) -> tuple[int, float]:
    body = {"model": "tiny", "messages": [{"role": "user", "content": PROMPT}],
            "max_tokens": max_tokens, "temperature": 1.0, "ignore_eos": True, "seed": seed,
            "stream": True, "stream_options": {"include_usage": True,
                                               "continuous_usage_stats": True}}  # fmt: skip
    req = urllib.request.Request(url + "/v1/chat/completions", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})  # fmt: skip
    t0, tokens = time.monotonic(), 0
    with _OPEN(req, timeout=300) as r:
        for raw in r:
            line = raw.decode().strip()
            if line.startswith("data:") and line != "data: [DONE]":
                usage = json.loads(line[5:]).get("usage")
                if usage:
                    tokens = usage["completion_tokens"]
    return tokens, time.monotonic() - t0


def spec_lines(log: Path) -> list[dict[str, Any]]:
    out = []
    for text in log.read_text(errors="replace").splitlines():
        parsed = parse_spec_decoding(text)
        if parsed and "mean_acceptance_length" in parsed:
            m = text.split("Drafted: ")[-1].split(" tokens")[0] if "Drafted: " in text else None
            out.append({**parsed, "drafted": int(m) if m and m.isdigit() else None,
                        "per_position": per_position_rates(text)})  # fmt: skip
    return out


def measure(env: Any, k: int, seconds: float, max_tokens: int, tmp: Path) -> dict[str, Any]:
    log = tmp / f"k{k}.log"
    proc, url = start(env, k, log)
    try:
        stream(url, 16, seed=999)  # warm-up, unmeasured
        time.sleep(10.5)  # the warm-up's stats line goes out before we measure
        before = len(spec_lines(log))
        tokens, busy, seed = 0, 0.0, 0
        t_end = time.monotonic() + seconds
        while time.monotonic() < t_end:
            n, dt = stream(url, max_tokens, seed)
            tokens, busy, seed = tokens + n, busy + dt, seed + 1
        deadline = time.monotonic() + 15
        while len(spec_lines(log)) <= before and time.monotonic() < deadline:
            time.sleep(0.5)
        time.sleep(10.5)  # the line covering the end of the window
        lines = spec_lines(log)[before:]
    finally:
        stop(proc)
    rates = combine_per_position(lines, k) or []
    return {
        "k": k,
        "requests": seed,
        "tokens": tokens,
        "output_tokens_per_s": tokens / busy,
        "per_position": rates,
        "acceptance_length": 1 + sum(rates),
        "lines": len(lines),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--home", type=Path, default=None)
    p.add_argument("--vllm-version", default=DEFAULT_VLLM_VERSION)
    p.add_argument("--k-max", type=int, default=4)
    p.add_argument("--seconds", type=float, default=40.0)
    p.add_argument("--max-tokens", type=int, default=128)
    p.add_argument("--json", type=Path, default=None)
    a = p.parse_args(argv)
    env = engine_env(a.home or default_home(), a.vllm_version)
    if not env.python.exists():
        print(f"tune_k_real: no engine at {env.home}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="peagle-tune-k-") as d:
        tmp = Path(d)
        top = measure(env, a.k_max, a.seconds, a.max_tokens, tmp)
        print(f"K={a.k_max}: {json.dumps(top)}", flush=True)
        est = estimate_k(top["per_position"], a.k_max, top["output_tokens_per_s"])
        real = {a.k_max: top}
        for k in range(1, a.k_max):
            real[k] = measure(env, k, a.seconds, a.max_tokens, tmp)
            print(f"K={k}: {json.dumps(real[k])}", flush=True)
    rows = []
    print(f"\nvLLM {a.vllm_version}, p-eagle aligned pair, T=1, concurrency 1")
    print("K'  est tok/s  real tok/s  error   est AL  real AL  AL error")
    for r in est["by_k"]:
        m = real[r["k"]]
        err = r["output_tokens_per_s"] / m["output_tokens_per_s"] - 1
        al_err = r["acceptance_length"] / m["acceptance_length"] - 1
        rows.append({"k": r["k"], "estimate": r["output_tokens_per_s"],
                     "measured": m["output_tokens_per_s"], "error": err,
                     "estimated_al": r["acceptance_length"], "measured_al": m["acceptance_length"],
                     "al_error": al_err})  # fmt: skip
        print(f"{r['k']:>2}  {r['output_tokens_per_s']:9.1f}  {m['output_tokens_per_s']:10.1f}  "
              f"{err:+6.1%}  {r['acceptance_length']:6.2f}  {m['acceptance_length']:7.2f}  "
              f"{al_err:+7.1%}")  # fmt: skip
    best_real = max(real.values(), key=lambda m: m["output_tokens_per_s"])["k"]
    print(f"estimate recommends K'={est['recommended_k']}; the real sweep's best is K={best_real}")
    if a.json:
        doc = {"vllm_version": a.vllm_version, "estimate": est, "measured": real, "rows": rows}
        a.json.write_text(json.dumps(doc, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
