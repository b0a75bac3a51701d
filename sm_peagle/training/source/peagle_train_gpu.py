"""The GPU backend of peagle_train.py (the default, in AWS's vLLM DLC; see images.py).

Upstream's GPU path, as speculators' `scripts/launch_vllm.py` and `generate-offline-data`
run it: vLLM generates the target's continuations, then a vLLM server running the
`extract_hidden_states` speculative method with vLLM's ExampleHiddenStatesConnector writes
the hidden states that speculators' `generate_offline_data` collects into its offline
format (`hidden_states/hs_{i}.safetensors`).

UNVERIFIED: this module has never run on a GPU. Its vLLM and speculators calls were read
from vLLM 0.31.0's and speculators 0.9.0's source; the pure functions below (what it asks
vLLM for) are unit-tested against those sources' rules (tests/unit/test_training_gpu.py).

- Layers: speculators reads each sample's hidden states as `[:, :-1]` (the aux layers) and
  `[:, -1]` (the verifier's last state) (speculators/train/data.py, the dataset's
  `__getitem__`), and launch_vllm.py appends `num_hidden_layers` to the aux ids (its
  `--include-last-layer`, default on). So vLLM extracts `[*aux, num_hidden_layers]`.
- GPUs: every GPU of the instance (SM_NUM_GPUS when set, else torch's count) is one
  tensor-parallel group, for the continuations and for the server: preflight
  (training/checks.py) lets a target span all of them.
- Memory: the continuations run in a child process, so every byte the first engine held
  is freed when it exits, before the server starts on the same GPUs (`del llm` does not
  reliably release a vLLM engine's memory).
- Chunked prefill stays on (vLLM's default; launch_vllm.py does not turn it off): in 0.31
  the method stores each token's hidden states in a cache-only KV layer as it is computed
  and the connector reads the request's blocks when it finishes
  (vllm/distributed/kv_transfer/kv_connector/v1/example_hidden_states_connector.py,
  `request_finished` / `_submit_async_write`), so a prefill in chunks loses nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

CONNECTOR = "ExampleHiddenStatesConnector"
SERVER_START_SECONDS = 1800  # a large target's weights load from the channel's disk
SERVER_POLL_SECONDS = 5


class HiddenStatesFailed(RuntimeError):
    """speculators' generate_offline_data ended the process (`sys.exit(1)` on any failure):
    its own log above says why."""


# ---- what the backend asks vLLM for (pure: unit-tested without a GPU) -------------------


def gpu_count(env: dict[str, str] | None = None) -> int:
    """The instance's GPUs: SM_NUM_GPUS when the environment has it (a toolkit image),
    else torch's count (the vLLM DLC has no toolkit); at least 1."""
    env = dict(os.environ if env is None else env)
    raw = env.get("SM_NUM_GPUS", "").strip()
    if raw.isdigit() and int(raw) > 0:
        return int(raw)
    import torch

    return max(1, int(torch.cuda.device_count()))


def tensor_parallel(config: dict[str, Any], gpus: int) -> int:
    """The most GPUs (at most `gpus`) the target splits across: vLLM needs the attention
    heads divisible by the tensor-parallel size, and the KV heads either divisible by it or
    dividing it (replicated). A target whose heads 8 does not divide still runs on 8-GPU
    instances, on fewer of them."""
    text = config.get("text_config", config)
    heads = int(text.get("num_attention_heads") or 1)
    kv = int(text.get("num_key_value_heads") or heads)
    for t in range(max(1, gpus), 0, -1):
        if heads % t == 0 and (kv % t == 0 or t % kv == 0):
            return t
    return 1


def num_hidden_layers(config: dict[str, Any]) -> int:
    """The target's decoder layer count from its config.json (a multimodal config's
    `text_config`, as launch_vllm.py reads it)."""
    text = config.get("text_config", config)
    return int(text["num_hidden_layers"])


def extraction_layer_ids(aux_layer_ids: list[int], layers: int) -> list[int]:
    """The layers vLLM extracts: the aux ids, then the last (`layers`), as launch_vllm.py
    builds them with --include-last-layer."""
    ids = list(aux_layer_ids)
    if layers not in ids:
        ids.append(layers)
    return ids


def speculative_config(aux_layer_ids: list[int], layers: int) -> dict[str, Any]:
    """vLLM's `--speculative-config` for hidden-states extraction (launch_vllm.py's)."""
    return {
        "method": "extract_hidden_states",
        "num_speculative_tokens": 1,  # vLLM's ExtractHiddenStatesProposer asserts 1
        "draft_model_config": {
            "hf_config": {
                "eagle_aux_hidden_state_layer_ids": extraction_layer_ids(aux_layer_ids, layers)
            }
        },
    }


def kv_transfer_config(store: Path) -> dict[str, Any]:
    """vLLM's `--kv-transfer-config`: the connector writes one safetensors file per request
    under `store` (launch_vllm.py's `file` backend)."""
    return {
        "kv_connector": CONNECTOR,
        "kv_role": "kv_producer",
        "kv_connector_extra_config": {"shared_storage_path": str(store)},
    }


def model_len(config: dict[str, Any], longest: int) -> int:
    """The engines' `max_model_len`: the longest row this job has (prompt + continuation),
    at most the target's own limit. Left to vLLM, it is the model's whole context (131072
    for Llama-3.1), whose KV cache for one sequence vLLM 0.31 insists fits at start
    (`kv_cache_utils._check_enough_kv_cache_memory`): an 8B target on a 24 GB GPU would
    then fail after the instance started, though its weights fit."""
    text = config.get("text_config", config)
    limit = int(text.get("max_position_embeddings") or longest)
    return max(1, min(longest, limit))


def server_argv(
    python: str,
    target: Path,
    *,
    port: int,
    aux_layer_ids: list[int],
    layers: int,
    store: Path,
    tensor_parallel: int,
    max_model_len: int | None = None,
) -> list[str]:
    """The hidden-states server's command: launch_vllm.py's, bound to loopback, across
    `tensor_parallel` GPUs, no longer than the job's rows (`max_model_len`)."""
    length = ["--max-model-len", str(max_model_len)] if max_model_len else []
    return [
        python,
        *("-m", "vllm.entrypoints.cli.main", "serve", str(target)),
        *("--speculative_config", json.dumps(speculative_config(aux_layer_ids, layers))),
        *("--kv_transfer_config", json.dumps(kv_transfer_config(store))),
        *("--host", "127.0.0.1", "--port", str(port)),
        *("--tensor-parallel-size", str(tensor_parallel)),
        *length,
    ]


def llm_kwargs(
    target: Path, seed: int, tensor_parallel: int, max_model_len: int | None = None
) -> dict[str, Any]:
    """vLLM's `LLM(...)` for the continuations, across the instance's GPUs, no longer than
    the job's rows (`max_model_len`, see `model_len`)."""
    kw: dict[str, Any] = {
        "model": str(target),
        "seed": seed,
        "tensor_parallel_size": tensor_parallel,
    }
    if max_model_len:
        kw["max_model_len"] = max_model_len
    return kw


def continuations_argv(python: str, request: Path) -> list[str]:
    """The child process that generates the continuations (see the module doc: memory)."""
    return [python, str(Path(__file__).resolve()), "continuations", str(request)]


# ---- the backend ------------------------------------------------------------------------


class GpuBackend:
    """The default backend (see the module docstring)."""

    name = "gpu"

    def patch(self) -> None:
        """Nothing to adjust: speculators' trainer runs as released on an accelerator."""

    def train_args(self) -> list[str]:
        return []

    def continuations(
        self, target: Path, prompts: list[list[int]], max_new_tokens: int, seed: int
    ) -> list[list[int]]:
        import tempfile

        config = json.loads((target / "config.json").read_text())
        # The rows are these prompts and their continuations: the hidden-states server
        # (next) reads the same rows, so one length serves both engines.
        self.max_model_len = model_len(config, max(map(len, prompts), default=1) + max_new_tokens)
        with tempfile.TemporaryDirectory(prefix="peagle-continuations-") as tmp:
            request, result = Path(tmp) / "request.json", Path(tmp) / "result.json"
            request.write_text(
                json.dumps(
                    {
                        "llm": llm_kwargs(
                            target, seed, tensor_parallel(config, gpu_count()), self.max_model_len
                        ),
                        "prompts": prompts,
                        "max_new_tokens": max_new_tokens,
                        "result": str(result),
                    }
                )
            )
            done = subprocess.run(continuations_argv(sys.executable, request), check=False)
            if done.returncode != 0:
                raise RuntimeError(f"vLLM's continuations process failed (exit {done.returncode})")
            return json.loads(result.read_text())

    def hidden_states(self, target: Path, dataset: Path, layer_ids: list[int]) -> None:
        import urllib.request

        from speculators.cli.generate_offline_data import generate_offline_data

        config = json.loads((target / "config.json").read_text())
        layers = num_hidden_layers(config)
        port = int(os.environ.get("PEAGLE_TRAIN_VLLM_PORT", "8000"))
        argv = server_argv(
            sys.executable,
            target,
            port=port,
            aux_layer_ids=layer_ids,
            layers=layers,
            store=dataset / "hs-store",
            tensor_parallel=tensor_parallel(config, gpu_count()),
            max_model_len=getattr(self, "max_model_len", None),
        )
        print(f"peagle-train: hidden-states server: {' '.join(argv)}", flush=True)
        server = subprocess.Popen(argv)
        try:
            deadline = time.monotonic() + SERVER_START_SECONDS
            while True:
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5)
                    break
                except OSError:
                    if server.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError("the hidden-states vLLM server did not start") from None
                    time.sleep(SERVER_POLL_SECONDS)
            out = dataset / "hidden_states"
            try:
                generate_offline_data(
                    model=str(target),
                    endpoint=f"http://127.0.0.1:{port}/v1",
                    preprocessed_data=str(dataset),
                    output=str(out),
                )
            except SystemExit as exc:  # its `except Exception: sys.exit(1)`
                if exc.code not in (None, 0):
                    raise HiddenStatesFailed(
                        f"speculators' generate_offline_data failed (exit {exc.code}): "
                        "its log above says why"
                    ) from None
            if not any(out.glob("hs_*.safetensors")):
                raise HiddenStatesFailed(f"generate_offline_data wrote no hidden states to {out}")
        finally:
            server.terminate()
            try:
                server.wait(timeout=120)
            except subprocess.TimeoutExpired:
                server.kill()


def _continuations_main(request_path: str) -> int:
    """The child: one vLLM engine, greedy continuations, the result as JSON; its exit frees
    the GPUs."""
    from vllm import LLM, SamplingParams
    from vllm.inputs import TokensPrompt

    req = json.loads(Path(request_path).read_text())
    llm = LLM(**req["llm"])
    params = SamplingParams(temperature=0.0, max_tokens=int(req["max_new_tokens"]))
    outs = llm.generate([TokensPrompt(prompt_token_ids=p) for p in req["prompts"]], params)
    Path(req["result"]).write_text(json.dumps([list(o.outputs[0].token_ids) for o in outs]))
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "continuations":
        raise SystemExit(_continuations_main(sys.argv[2]))
    raise SystemExit(f"usage: {sys.argv[0]} continuations REQUEST.json")
