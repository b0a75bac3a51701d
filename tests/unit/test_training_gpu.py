"""The GPU backend of the training job (`sm_peagle/training/source/peagle_train_gpu.py`):
what it asks vLLM for, checked against upstream's rules without a GPU.

The backend has never run on a GPU (docs/guides/drafter-training.md says so); these tests
hold its pure builders to the sources it follows:

- speculators 0.9.0 `speculators/train/data.py:325-331`: a sample's hidden states are read
  as `[:, :-1]` (the aux layers, flattened to 3 * hidden) and `[:, -1]` (the verifier's
  last hidden state), so the file must hold the aux layers AND the last one;
  `speculators/train/config/schema.py:115-121`: `--target-layer-ids` excludes "the final
  layer launch_vllm.py appends".
- speculators' `scripts/launch_vllm.py` (vllm-project/speculators at 01a981e, `main()`):
  with `--include-last-layer` (default True) it appends `num_hidden_layers` to the given ids
  unless present; its speculative config is `{"method": "extract_hidden_states",
  "num_speculative_tokens": 1, "draft_model_config": {"hf_config":
  {"eagle_aux_hidden_state_layer_ids": ids}}}`; its `file` backend's kv-transfer config is
  `ExampleHiddenStatesConnector`, `kv_producer`, `shared_storage_path`; it serves with
  `-m vllm.entrypoints.cli.main serve MODEL`.
- vLLM 0.31.0 `vllm/v1/spec_decode/extract_hidden_states.py:35` asserts
  `num_speculative_tokens == 1`, `:65-70` requires `eagle_aux_hidden_state_layer_ids`;
  `vllm/distributed/kv_transfer/kv_connector/v1/example_hidden_states_connector.py:178-179`
  reads `shared_storage_path`; `vllm/entrypoints/llm.py:192` takes `tensor_parallel_size`.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

SOURCE = Path(__file__).resolve().parents[2] / "sm_peagle" / "training" / "source"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("peagle_train_gpu_under_test",
                                                  SOURCE / "peagle_train_gpu.py")  # fmt: skip
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


gpu = _load()
TARGET = Path("/opt/ml/input/data/target")
STORE = Path("/opt/ml/output/peagle-work/dataset/hs-store")


def _after(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


def test_vllm_extracts_the_aux_layers_and_the_last_one() -> None:
    """3 aux ids on a 4-layer target: vLLM must write 4 slices, the last being layer 4
    (num_hidden_layers), so speculators' [:, :-1] is 3 * hidden and [:, -1] the last state.
    The old backend passed only the 3 aux ids: the fc layer got 2 * hidden."""
    ids = gpu.extraction_layer_ids([1, 2, 3], 4)
    assert ids == [1, 2, 3, 4]
    assert ids[:-1] == [1, 2, 3] and ids[-1] == 4
    # launch_vllm.py appends it only when absent.
    assert gpu.extraction_layer_ids([1, 2, 4], 4) == [1, 2, 4]


def test_the_speculative_config_is_launch_vllms() -> None:
    got = gpu.speculative_config([2, 16, 29], 32)
    assert got == {
        "method": "extract_hidden_states",
        "num_speculative_tokens": 1,
        "draft_model_config": {"hf_config": {"eagle_aux_hidden_state_layer_ids": [2, 16, 29, 32]}},
    }


def test_the_kv_transfer_config_is_the_file_connectors() -> None:
    assert gpu.kv_transfer_config(STORE) == {
        "kv_connector": "ExampleHiddenStatesConnector",
        "kv_role": "kv_producer",
        "kv_connector_extra_config": {"shared_storage_path": str(STORE)},
    }


@pytest.mark.parametrize("gpus", [1, 4, 8])
def test_the_server_runs_across_every_gpu_with_the_extraction_configs(gpus: int) -> None:
    argv = gpu.server_argv("python3", TARGET, port=8123, aux_layer_ids=[1, 2, 3], layers=4,
                           store=STORE, tensor_parallel=gpus)  # fmt: skip
    assert argv[:5] == ["python3", "-m", "vllm.entrypoints.cli.main", "serve", str(TARGET)]
    spec = json.loads(_after(argv, "--speculative_config"))
    assert spec["draft_model_config"]["hf_config"]["eagle_aux_hidden_state_layer_ids"] == [
        1, 2, 3, 4
    ]  # fmt: skip
    kv = json.loads(_after(argv, "--kv_transfer_config"))
    assert kv["kv_connector_extra_config"]["shared_storage_path"] == str(STORE)
    assert _after(argv, "--tensor-parallel-size") == str(gpus)
    assert _after(argv, "--port") == "8123"
    assert _after(argv, "--host") == "127.0.0.1"  # the job's own, never exposed
    # Chunked prefill stays vLLM's default (the module doc says why): not turned off.
    assert not [a for a in argv if "chunked" in a]


def test_the_continuations_use_every_gpu_in_a_child_process() -> None:
    """The child's exit frees the first engine's GPU memory before the server starts."""
    assert gpu.llm_kwargs(TARGET, 7, 4) == {
        "model": str(TARGET), "seed": 7, "tensor_parallel_size": 4
    }  # fmt: skip
    argv = gpu.continuations_argv("python3", Path("/tmp/r.json"))
    assert argv[0] == "python3" and argv[2:] == ["continuations", "/tmp/r.json"]
    assert Path(argv[1]).name == "peagle_train_gpu.py"


def test_the_gpu_count_is_sm_num_gpus_else_torchs(monkeypatch: pytest.MonkeyPatch) -> None:
    assert gpu.gpu_count({"SM_NUM_GPUS": "8"}) == 8
    # The vLLM DLC has no toolkit, so no SM_NUM_GPUS: torch counts them.
    fake = ModuleType("torch")
    fake.cuda = type("cuda", (), {"device_count": staticmethod(lambda: 4)})  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch", fake)
    assert gpu.gpu_count({}) == 4
    assert gpu.gpu_count({"SM_NUM_GPUS": ""}) == 4


def test_the_layer_count_comes_from_the_targets_config() -> None:
    assert gpu.num_hidden_layers({"num_hidden_layers": 4}) == 4
    # A multimodal target's text model (launch_vllm.py reads config.text_config).
    assert (
        gpu.num_hidden_layers({"num_hidden_layers": 2, "text_config": {"num_hidden_layers": 36}})
        == 36
    )


def test_a_failed_hidden_states_run_is_its_own_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """speculators' generate_offline_data ends with `sys.exit(1)` on any failure
    (speculators/cli/generate_offline_data.py, its last `except Exception`): the backend
    reports that as a hidden-states failure, not as rejected training arguments."""
    specs = ModuleType("speculators.cli.generate_offline_data")

    def generate_offline_data(**_kw: object) -> None:
        raise SystemExit(1)

    specs.generate_offline_data = generate_offline_data  # type: ignore[attr-defined]
    for name in ("speculators", "speculators.cli"):
        monkeypatch.setitem(sys.modules, name, ModuleType(name))
    monkeypatch.setitem(sys.modules, specs.__name__, specs)

    class Server:
        def poll(self) -> None:
            return None

        def terminate(self) -> None:
            pass

        def wait(self, timeout: float) -> int:
            return 0

    monkeypatch.setattr(gpu.subprocess, "Popen", lambda argv: Server())
    import urllib.request

    monkeypatch.setattr(urllib.request, "urlopen", lambda *a, **k: None)
    monkeypatch.setenv("SM_NUM_GPUS", "1")
    (tmp_path / "config.json").write_text(json.dumps({"num_hidden_layers": 4}))
    with pytest.raises(gpu.HiddenStatesFailed, match=r"generate_offline_data failed \(exit 1\)"):
        gpu.GpuBackend().hidden_states(tmp_path, tmp_path / "dataset", [1, 2, 3])


def test_both_engines_are_no_longer_than_the_jobs_rows() -> None:
    """vLLM 0.31 refuses to start when one sequence of max_model_len does not fit the KV
    cache (`vllm/v1/core/kv_cache_utils.py`, `_check_enough_kv_cache_memory`), and the
    default is the model's whole context: Llama-3.1-8B's 131072 on a 24 GB GPU. The job's
    rows are its prompts plus their continuations, so that is the length asked for, at most
    the model's own `max_position_embeddings`."""
    llama = {"num_hidden_layers": 32, "max_position_embeddings": 131072}
    assert gpu.model_len(llama, 300 + 256) == 556
    assert gpu.model_len({"max_position_embeddings": 512}, 900) == 512  # the model's limit
    assert gpu.model_len({"text_config": {"max_position_embeddings": 256}}, 900) == 256
    assert gpu.llm_kwargs(TARGET, 7, 1, 556)["max_model_len"] == 556
    argv = gpu.server_argv("python3", TARGET, port=8123, aux_layer_ids=[1, 2, 3], layers=4,
                           store=STORE, tensor_parallel=1, max_model_len=556)  # fmt: skip
    assert _after(argv, "--max-model-len") == "556"


def test_tensor_parallel_divides_the_heads() -> None:
    """vLLM's rule: num_attention_heads % tp == 0, and the KV heads divisible by tp or
    dividing it (replicated). Llama-3.1-8B (32 heads, 8 KV) spans all 8 GPUs; a target with
    12 heads and 4 KV heads spans 4 of 8 (6 would not divide the KV heads, 8 not the heads);
    a 20-head, 20-KV target 5 of 8; one GPU stays one."""
    assert gpu.tensor_parallel({"num_attention_heads": 32, "num_key_value_heads": 8}, 8) == 8
    assert gpu.tensor_parallel({"num_attention_heads": 12, "num_key_value_heads": 4}, 8) == 4
    assert gpu.tensor_parallel({"num_attention_heads": 20, "num_key_value_heads": 20}, 8) == 5
    assert gpu.tensor_parallel({"num_attention_heads": 32, "num_key_value_heads": 8}, 1) == 1
    assert gpu.tensor_parallel({"num_attention_heads": 32, "num_key_value_heads": 2}, 4) == 4
