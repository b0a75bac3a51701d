"""Smoke-benchmark the REAL vLLM CPU engine: baseline, EAGLE-3 and P-EAGLE on the tiny pair.

Needs an engine home made by ``python -m peagle_sandbox.vllm_engine.install``. Starts
``vllm serve`` (through peagle's launcher) on 127.0.0.1, one engine at a time, with
``--enforce-eager`` and a 1 GiB KV cache, streams chat completions with
``continuous_usage_stats``, and reports per engine: start-up time, peak RSS of the whole
process group, output tok/s, and acceptance (from the ``SpecDecoding metrics`` log lines
and from the ``/metrics`` counters of each phase) at temperature 0 and 1. Speculative
modes run at temperature 1 twice: with peagle's CPU sampling fix and with it disabled
(``PEAGLE_DISABLE_CPU_SAMPLING_FIX=1``). Every engine's process group is killed at the end.

    python benchmarks/engine_smoke.py --home /work/engine-home [--vllm-version 0.31.0]
        [--modes baseline,eagle3,p-eagle] [--dynamic-k] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from peagle_sandbox.procs import kill_group  # noqa: E402
from peagle_sandbox.vllm_engine.install import (  # noqa: E402
    DEFAULT_VLLM_VERSION,
    EngineEnv,
    default_home,
    engine_env,
)

K = 3
PROMPTS = [
    "Explain parallel drafting.",
    "How many tokens does the drafter propose?",
    "Write a short answer about the verifier.",
]
SPEC_LINE = re.compile(
    r"SpecDecoding metrics: Mean acceptance length: ([\d.]+).*?"
    r"Accepted: (\d+) tokens, Drafted: (\d+) tokens.*?"
    r"Per-position acceptance rate: ([\d., ]+?), Avg Draft acceptance rate: ([\d.]+)%"
)


def spec_config(mode: str, models: Path) -> dict[str, Any] | None:
    if mode == "baseline":
        return None
    head = "eagle3-aligned" if mode.startswith("eagle3") else "p-eagle-aligned"
    cfg: dict[str, Any] = {
        "model": str(models / head),
        "method": "eagle3",
        "num_speculative_tokens": K,
    }
    if mode.startswith("p-eagle"):
        cfg["parallel_drafting"] = True
    if mode.endswith("dynamic-k"):
        cfg["num_speculative_tokens_per_batch_size"] = [[1, 4, 3], [5, 256, 2]]
    return cfg


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _group_rss_mb(pgid: int) -> float:
    total = 0
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
            if int(stat.rsplit(")", 1)[1].split()[2]) != pgid:
                continue
            for line in (d / "status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except (OSError, ValueError, IndexError):
            continue
    return total / 1024


class Engine:
    """One `vllm serve` process group, its log, and a peak-RSS sampler."""

    def __init__(self, env: EngineEnv, mode: str, fix: bool, log_dir: Path) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log_dir / f"{mode}{'' if fix else '-nofix'}.log"
        argv = env.vllm_command(
            "serve",
            str(env.models / "tiny-llama"),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--enforce-eager",
            "--max-model-len",
            "1024",
            "--served-model-name",
            "tiny",
            "--max-num-seqs",
            "8",
        )
        cfg = spec_config(mode, env.models)
        if cfg:
            argv += ["--speculative-config", json.dumps(cfg)]
        environ = env.engine_environ()
        if not fix:
            environ["PEAGLE_DISABLE_CPU_SAMPLING_FIX"] = "1"
        self.log = self.log_path.open("w")
        self.t0 = time.monotonic()
        self.proc = subprocess.Popen(
            argv, stdout=self.log, stderr=subprocess.STDOUT, env=environ, start_new_session=True
        )
        self.peak_mb = 0.0
        self._stop = threading.Event()
        threading.Thread(target=self._sample, daemon=True).start()

    def _sample(self) -> None:
        while not self._stop.wait(0.5):
            self.peak_mb = max(self.peak_mb, _group_rss_mb(self.proc.pid))

    def wait_ready(self, timeout: float = 300) -> float:
        while time.monotonic() - self.t0 < timeout:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"engine exited with {self.proc.returncode}: {self.last_error()}"
                )
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=2) as r:
                    if r.status == 200:
                        return time.monotonic() - self.t0
            except OSError:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"engine not ready after {timeout} s")

    def last_error(self) -> str:
        """The root cause: the first `SomethingError: message` line (later ones are echoes)."""
        lines = self.log_path.read_text(errors="replace").splitlines()
        errs = [x for x in lines if "WARNING" not in x and re.search(r"\w+(Error|Exception): ", x)]
        line = (errs or lines or ["(no output)"])[0] if errs else (lines or ["(no output)"])[-1]
        return re.sub(r"^.*?\] ", "", line)[-400:]

    def spec_lines(self) -> list[tuple[float, int, int, str, float]]:
        text = self.log_path.read_text(errors="replace")
        return [
            (float(a), int(b), int(c), pos, float(d)) for a, b, c, pos, d in SPEC_LINE.findall(text)
        ]

    def counters(self) -> dict[str, float]:
        with urllib.request.urlopen(self.url + "/metrics", timeout=10) as r:
            text = r.read().decode()
        out: dict[str, float] = {}
        for name in ("num_drafts", "num_draft_tokens", "num_accepted_tokens"):
            m = re.search(rf"^vllm:spec_decode_{name}_total{{[^}}]*}} ([\d.e+]+)", text, re.M)
            out[name] = float(m.group(1)) if m else 0.0
        return out

    def stop(self) -> None:
        self._stop.set()
        kill_group(self.proc.pid, grace=20.0)
        self.log.close()


def stream_chat(url: str, prompt: str, temperature: float, max_tokens: int) -> dict[str, float]:
    body = {
        "model": "tiny",
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": max_tokens,
        "temperature": temperature,
        "ignore_eos": True,
        "stream": True,
        "seed": 0,
        "stream_options": {"include_usage": True, "continuous_usage_stats": True},
    }
    req = urllib.request.Request(
        url + "/v1/chat/completions",
        json.dumps(body).encode(),
        {"Content-Type": "application/json"},
    )
    t0 = time.monotonic()
    first = None
    tokens = 0
    with urllib.request.urlopen(req, timeout=300) as r:
        for raw in r:
            line = raw.decode().strip()
            if not line.startswith("data:") or line == "data: [DONE]":
                continue
            ev = json.loads(line[5:])
            if first is None and any(
                c.get("delta", {}).get("content") for c in ev.get("choices", [])
            ):
                first = time.monotonic()
            if ev.get("usage"):
                tokens = ev["usage"]["completion_tokens"]  # usage, not chunks (facts §8)
    end = time.monotonic()
    if tokens < max_tokens:  # ignore_eos: a short stream means the engine failed mid-way
        raise RuntimeError(f"stream ended after {tokens}/{max_tokens} tokens")
    return {"tokens": tokens, "seconds": end - t0, "ttft": (first or end) - t0}


def _concurrent(url: str, n: int, temperature: float, max_tokens: int) -> list[dict[str, float]]:
    """n streams at once (batch size n): dynamic K then picks its per-batch-size K."""
    runs: list[dict[str, float]] = []
    errors: list[str] = []

    def one(i: int) -> None:
        try:
            runs.append(stream_chat(url, PROMPTS[i % len(PROMPTS)], temperature, max_tokens))
        except Exception as exc:  # noqa: BLE001 - collected and raised below
            errors.append(f"{type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise RuntimeError(f"{len(errors)}/{n} concurrent streams failed: {errors[0]}")
    return runs


def run_phase(
    eng: Engine, temperature: float, max_tokens: int, spec: bool, concurrency: int = 1
) -> dict[str, Any]:
    before = eng.counters() if spec else {}
    n_lines = len(eng.spec_lines())
    t0 = time.monotonic()
    if concurrency > 1:
        runs = _concurrent(eng.url, concurrency, temperature, max_tokens)
    else:
        runs = [stream_chat(eng.url, p, temperature, max_tokens) for p in PROMPTS]
    wall = time.monotonic() - t0
    tokens = sum(r["tokens"] for r in runs)
    out: dict[str, Any] = {
        "temperature": temperature,
        "concurrency": concurrency,
        "tokens": tokens,
        "tok_per_s": round(tokens / wall, 1),
        "ttft_ms": round(1000 * sum(r["ttft"] for r in runs) / len(runs)),
    }
    if not spec:
        return out
    after = eng.counters()
    d = {k: after[k] - before[k] for k in after}
    if d["num_drafts"]:
        out["acceptance_length"] = round(1 + d["num_accepted_tokens"] / d["num_drafts"], 2)
        out["draft_acceptance_rate"] = round(d["num_accepted_tokens"] / d["num_draft_tokens"], 3)
        out["draft_tokens_per_draft"] = round(d["num_draft_tokens"] / d["num_drafts"], 2)
    deadline = time.monotonic() + 12  # the log line comes every 10 s
    while len(eng.spec_lines()) <= n_lines and time.monotonic() < deadline:
        time.sleep(0.5)
    lines = eng.spec_lines()[n_lines:]
    if lines:
        acc, drafted = sum(x[1] for x in lines), sum(x[2] for x in lines)
        out["log_lines"] = [f"MAL {x[0]:.2f}, per-position {x[3]}, rate {x[4]:.1f}%" for x in lines]
        out["log_acceptance_rate"] = round(acc / drafted, 3) if drafted else None
    time.sleep(10.5)  # let the next interval start clean so lines don't mix phases
    return out


def print_table(results: list[dict[str, Any]]) -> None:
    """One row per engine phase: what the brief asks to see at a glance."""
    head = (
        f"{'engine':<30} {'start s':>7} {'RSS MB':>7} {'T':>3} {'conc':>4} {'tok/s':>7} "
        f"{'acc len':>7} {'acc rate':>8}  per-position (log)"
    )
    print(head)
    for r in results:
        label = r["mode"] + ("" if r["fix"] else " (fix off)")
        for ph in r.get("phases", []):
            pos = ph.get("log_lines", ["-"])[-1].split("per-position ")[-1].split(", rate")[0]
            print(
                f"{label:<30} {r.get('startup_s', '-'):>7} {r['peak_rss_mb']:>7} "
                f"{ph['temperature']:>3.0f} {ph['concurrency']:>4} {ph['tok_per_s']:>7} "
                f"{ph.get('acceptance_length', '-'):>7} {ph.get('draft_acceptance_rate', '-'):>8}"
                f"  {pos if 'acceptance_length' in ph else '-'}"
            )
        if "error" in r:
            print(f"{label:<30} ERROR: {r['error'][:200]}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--home", type=Path, default=None)
    p.add_argument("--vllm-version", default=DEFAULT_VLLM_VERSION)
    p.add_argument("--modes", default="baseline,eagle3,p-eagle")
    p.add_argument("--no-nofix", action="store_true", help="skip the fix-disabled runs")
    p.add_argument(
        "--dynamic-k",
        action="store_true",
        help="also try num_speculative_tokens_per_batch_size with parallel drafting",
    )
    p.add_argument("--max-tokens", type=int, default=192)
    p.add_argument(
        "--concurrency", type=int, default=0, help="add a T=0 phase with N concurrent streams"
    )
    p.add_argument("--json", type=Path, default=None)
    a = p.parse_args(argv)
    env = engine_env(a.home or default_home(), a.vllm_version)
    if not env.python.exists() or not (env.models / "manifest.json").exists():
        print(f"engine_smoke: no engine at {env.home} (run the installer first)", file=sys.stderr)
        return 2
    log_dir = env.home / "smoke-logs" / a.vllm_version
    log_dir.mkdir(parents=True, exist_ok=True)
    plan: list[tuple[str, bool, tuple[float, ...]]] = []
    for mode in a.modes.split(","):
        plan.append((mode, True, (0.0, 1.0)))
        if mode != "baseline" and not a.no_nofix:
            plan.append((mode, False, (1.0,)))
    if a.dynamic_k:
        plan.append(("p-eagle-dynamic-k", True, (0.0, 1.0)))
        plan.append(("eagle3-dynamic-k", True, (0.0,)))
    results = []
    for mode, fix, temps in plan:
        label = f"{mode}{'' if fix else ' (fix disabled)'}"
        eng = Engine(env, mode, fix, log_dir)
        rec: dict[str, Any] = {"mode": mode, "fix": fix, "log": str(eng.log_path)}
        try:
            rec["startup_s"] = round(eng.wait_ready(), 1)
            rec["phases"] = [run_phase(eng, t, a.max_tokens, mode != "baseline") for t in temps]
            conc = a.concurrency or (6 if mode.endswith("dynamic-k") else 0)
            if conc > 1:  # with dynamic K, batch size 6 falls in the K=2 range
                rec["phases"].append(
                    run_phase(eng, 0.0, a.max_tokens, mode != "baseline", concurrency=conc)
                )
        except Exception as exc:  # noqa: BLE001 - report and go on to the next engine
            rec["error"] = f"{exc}; engine: {eng.last_error()}"
        finally:
            eng.stop()
            rec["peak_rss_mb"] = round(eng.peak_mb)
        results.append(rec)
        print(f"{label}: " + json.dumps({k: v for k, v in rec.items() if k != "log"}), flush=True)
    print_table(results)
    if a.json:
        a.json.write_text(
            json.dumps({"vllm_version": a.vllm_version, "results": results}, indent=2) + "\n"
        )
    return 0 if all("error" not in r for r in results if not r["mode"].endswith("dynamic-k")) else 1


if __name__ == "__main__":
    raise SystemExit(main())
