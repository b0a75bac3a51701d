"""The GPU backend of peagle_train.py (the default, in the stock AWS PyTorch training image).

Upstream's GPU path: vLLM generates the continuations, and a vLLM server running the
`extract_hidden_states` speculative method with vLLM's ExampleHiddenStatesConnector writes
the hidden states that speculators' `generate-offline-data` collects into its offline
format. Thin on purpose: it calls upstream and cannot run on a machine without a GPU (it is
not exercised by peagle's tests; the sandbox's CPU backend is)."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path


class GpuBackend:
    """The default backend (see the module docstring). UNVERIFIED here: vLLM is not in the
    stock PyTorch training image nor in requirements.txt (the image must provide it), and
    the `extract_hidden_states` config shape follows vLLM 0.31's source, never run."""

    name = "gpu"

    def patch(self) -> None:
        """Nothing to adjust: speculators' trainer runs as released on an accelerator."""

    def train_args(self) -> list[str]:
        return []

    def continuations(
        self, target: Path, prompts: list[list[int]], max_new_tokens: int, seed: int
    ) -> list[list[int]]:
        from vllm import LLM, SamplingParams
        from vllm.inputs import TokensPrompt

        llm = LLM(model=str(target), seed=seed)
        params = SamplingParams(temperature=0.0, max_tokens=max_new_tokens)
        outs = llm.generate([TokensPrompt(prompt_token_ids=p) for p in prompts], params)
        result = [list(o.outputs[0].token_ids) for o in outs]
        del llm
        return result

    def hidden_states(self, target: Path, dataset: Path, layer_ids: list[int]) -> None:
        import subprocess
        import urllib.request

        from speculators.cli.generate_offline_data import generate_offline_data

        port = int(os.environ.get("PEAGLE_TRAIN_VLLM_PORT", "8000"))
        store = dataset / "hs-store"
        spec = {
            "method": "extract_hidden_states",
            "num_speculative_tokens": 1,
            "draft_model_config": {
                "hf_config": {"eagle_aux_hidden_state_layer_ids": [*layer_ids]},
            },
        }
        kv = {
            "kv_connector": "ExampleHiddenStatesConnector",
            "kv_role": "kv_producer",
            "kv_connector_extra_config": {"shared_storage_path": str(store)},
        }
        argv = [sys.executable, "-m", "vllm.entrypoints.openai.api_server"]
        argv += ["--model", str(target), "--port", str(port)]
        argv += ["--speculative-config", json.dumps(spec)]
        argv += ["--kv-transfer-config", json.dumps(kv)]
        server = subprocess.Popen(argv)
        try:
            deadline = time.monotonic() + 1800
            while True:
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5)
                    break
                except OSError:
                    if server.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError("the hidden-states vLLM server did not start") from None
                    time.sleep(5)
            generate_offline_data(
                model=str(target),
                endpoint=f"http://127.0.0.1:{port}/v1",
                preprocessed_data=str(dataset),
                output=str(dataset / "hidden_states"),
            )
        finally:
            server.terminate()
            server.wait(timeout=120)
