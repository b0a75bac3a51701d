"""Bench provenance on the REAL vLLM engine (issue 28's conformance acceptance): the result
records the model runner and the rejection method the engine actually used.

What the engine used is read here from its own log (`peagle --sandbox logs`), with vLLM
0.31.0's words: "Model Runner V2 requires Triton; using the V1 model runner instead." or
"Using V2 Model Runner"; and the rejection method from the engine's `non-default args`
line, or, when that line does not set it, vLLM's default as the installed vLLM's own
`config/speculative.py` declares it. Whether that is lossy is the facts' rule
(`sm_peagle.vllm.lossy.lossy_reason`).
"""

from __future__ import annotations

import json
import re

from peagle_sandbox.vllm_engine.install import EngineEnv
from sm_peagle.vllm.lossy import lossy_reason
from tests.e2e.test_sandbox_engine_host import Cli

P_EAGLE = "peagle-tiny-llama-p-eagle"


def vllm_default_rejection_method(engine: EngineEnv) -> str:
    [source] = engine.home.glob(
        f"venv-{engine.version}/lib/python3*/site-packages/vllm/config/speculative.py"
    )
    m = re.search(r'^\s*rejection_sample_method: \w+ = "(\w+)"', source.read_text(), re.M)
    assert m, "vLLM's speculative config declares no rejection_sample_method default"
    return m.group(1)


def test_the_bench_result_records_the_runner_and_rejection_method_used(
    sandbox: Cli, engine: EngineEnv
) -> None:
    try:
        out = sandbox("--sandbox", "deploy", "tiny-llama", "--mode", "p-eagle", "-k", "3", "--yes")
        assert f"{P_EAGLE} is InService" in out.stdout
        bench = sandbox("--sandbox", "bench", P_EAGLE, "-c", "1", "--requests", "2",
                        "--max-tokens", "16", "--acceptance-wait", "0", "--json")  # fmt: skip
        doc = json.loads(bench.stdout)
        logs = sandbox("--sandbox", "logs", P_EAGLE).stdout
    finally:
        sandbox("--sandbox", "delete", P_EAGLE, "--yes", code=None)
    run = doc["engine_run"]
    if "Using V2 Model Runner" in logs:
        runner = "V2"
    else:
        assert "using the V1 model runner instead" in logs, logs[-3000:]
        runner = "V1"
    assert run["model_runner"] == runner
    [args] = [ln for ln in logs.splitlines() if "non-default args:" in ln][-1:]
    spec = re.search(r"'speculative_config': (\{[^}]*\})", args)
    assert spec, args
    logged = re.search(r"'rejection_sample_method': '(\w+)'", spec.group(1))
    method = logged.group(1) if logged else vllm_default_rejection_method(engine)
    assert run["rejection_sample_method"] == method
    assert run["rejection_sample_method_from"] == (
        "engine log" if logged else f"vLLM {engine.version} default (not set)"
    )
    assert run["lossy"] is (
        lossy_reason({"rejection_sample_method": method}, engine.version) is not None
    )
    print(
        f"engine_run: {run['model_runner']}, {run['rejection_sample_method']}, lossy {run['lossy']}"
    )
