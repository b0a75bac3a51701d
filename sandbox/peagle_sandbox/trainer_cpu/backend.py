"""The CPU backend of peagle's training entrypoint (`peagle_train.backends` name `cpu`).

Loaded only inside the trainer virtualenv (torch +cpu, speculators 0.9.0, transformers 5.x),
by `peagle_train.py`'s `find_backend`. It replaces what upstream does with vLLM on GPUs:
- continuations: the real vLLM engine's greedy output when an engine is installed (the engine
  venv under $PEAGLE_ENGINE_HOME, run as a subprocess: `vllm_generate`), so the head learns
  what the served target emits; else HF transformers' greedy `generate`, with a warning (HF
  and vLLM break near-ties differently on the bf16 tiny targets: measured, 15 of 32 prompts
  diverge within 32 tokens);
- hidden states: forward pre-hooks, aux id L = the input of decoder layer L (vLLM's
  convention for `eagle_aux_hidden_state_layer_ids`), plus the last layer's output before
  the final norm (the input of `model.norm`), in speculators' offline format;
- trainer flags: `sdpa` draft attention (FlexAttention has no backward on CPU) and the eager
  loss (the fused loss needs Triton);
- the device fixes of speculators 0.9.0's `speculators/train/trainer.py`, as runtime patches.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["BACKEND", "CpuBackend"]

# Prompts per generate call: enough to amortise the per-step overhead of a tiny model.
_BATCH = 32
# Where the continuations come from: "vllm" (the default when an engine is installed) or
# "hf" (to compare, or to skip the engine's start-up).
CONTINUATIONS_ENV = "PEAGLE_TRAINER_CONTINUATIONS"
_DEFAULT_HOME = Path.home() / ".cache" / "peagle" / "engine"  # as vllm_engine.install's


def _log(message: str) -> None:
    print(f"peagle-train: {message}", flush=True)


def engine_python(environ: dict[str, str] | None = None) -> Path | None:
    """The engine venv's python ($PEAGLE_ENGINE_HOME, $PEAGLE_ENGINE_VERSION), if installed.

    Read from the environment directly: the sandbox's settings module needs the product,
    which the trainer venv does not have."""
    from peagle_sandbox.vllm_engine.install import DEFAULT_VLLM_VERSION

    env = os.environ if environ is None else environ
    home = Path(env.get("PEAGLE_ENGINE_HOME") or _DEFAULT_HOME).expanduser()
    version = env.get("PEAGLE_ENGINE_VERSION") or DEFAULT_VLLM_VERSION
    python = home / f"venv-{version}" / "bin" / "python"
    return python if python.exists() else None


def vllm_continuations(
    python: Path, target: Path, prompts: list[list[int]], max_new_tokens: int, seed: int
) -> list[list[int]]:
    """Greedy continuations from vLLM (`vllm_generate` in the engine venv, one process)."""
    from peagle_sandbox.vllm_engine.install import EngineEnv

    home = python.parent.parent.parent
    environ = EngineEnv(home=home, version="", python=python, models=home / "models")
    env = environ.engine_environ()
    # This checkout's peagle_sandbox (the one the trainer venv links), not the engine's.
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    with tempfile.TemporaryDirectory(prefix="peagle-vllmgen-") as tmp:
        out, log = Path(tmp) / "out.json", Path(tmp) / "vllm.log"
        job = {
            "model": str(target),
            "prompts": prompts,
            "max_new_tokens": max_new_tokens,
            "seed": seed,
            "out": str(out),
        }
        with log.open("w") as fh:
            code = subprocess.run(
                [str(python), "-m", "peagle_sandbox.trainer_cpu.vllm_generate"],
                input=json.dumps(job),
                text=True,
                stdout=fh,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=tmp,
            ).returncode
        if code != 0 or not out.exists():
            tail = log.read_text(errors="replace").strip().splitlines()[-20:]
            sys.stderr.write("\n".join(tail) + "\n")
            raise RuntimeError(f"vLLM generation in {python} failed (exit {code})")
        doc = json.loads(out.read_text())
    _log(f"continuations from vLLM {doc['vllm_version']} ({python})")
    return [list(map(int, ids)) for ids in doc["token_ids"]]


class CpuBackend:
    name = "cpu"

    def train_args(self) -> list[str]:
        return ["--draft-attn-impl=sdpa", "--loss-implementation=eager"]

    def patch(self) -> None:
        import speculators.train.trainer as trainer_mod
        import torch

        cpu = torch.device("cpu")
        # trainer.py:221 `self.local_rank = get_local_rank()` is then used as a device at
        # :348/:383 (`self.model.to(self.local_rank)`) and :533/:643 (`v.to(self.local_rank)`):
        # the int 0 means the first accelerator, which a CPU does not have.
        trainer_mod.get_local_rank = lambda: cpu
        # trainer.py:80 and :92 call `torch.accelerator.synchronize()` unguarded (timed
        # steps); without an accelerator it raises. Nothing to wait for on a CPU.
        if torch.accelerator.current_accelerator() is None:
            torch.accelerator.synchronize = lambda *a, **k: None
        # trainer.py:228 falls back to `device_type = "cuda"` for autocast (:539, :649)
        # when there is no accelerator: autocast on the CPU instead.
        original_init = trainer_mod.Trainer.__init__

        def init(self: Any, *args: Any, **kwargs: Any) -> None:
            original_init(self, *args, **kwargs)
            self.device_type = "cpu"

        trainer_mod.Trainer.__init__ = init

    def _load(self, target: Path) -> tuple[Any, Any]:
        import torch
        from transformers import AutoModelForCausalLM

        # The target's own dtype (bf16 for the tiny targets), as vLLM serves it.
        model = AutoModelForCausalLM.from_pretrained(
            str(target), dtype="auto", attn_implementation="sdpa"
        )
        model.eval()
        return model, torch

    def continuations(
        self, target: Path, prompts: list[list[int]], max_new_tokens: int, seed: int
    ) -> list[list[int]]:
        """The served engine's greedy continuations when one is installed, else HF's."""
        choice = os.environ.get(CONTINUATIONS_ENV, "vllm")
        python = engine_python() if choice == "vllm" else None
        if python is not None:
            return vllm_continuations(python, target, prompts, max_new_tokens, seed)
        if choice == "vllm":
            _log(
                "warning: no vLLM engine installed (PEAGLE_ENGINE_HOME); continuations from "
                "HF transformers, which the served engine does not always agree with"
            )
        return self.hf_continuations(target, prompts, max_new_tokens, seed)

    def hf_continuations(
        self, target: Path, prompts: list[list[int]], max_new_tokens: int, seed: int
    ) -> list[list[int]]:
        """Greedy continuations, in left-padded batches (one prompt at a time is ~15x slower
        on this CPU); each ends at the first EOS, which it keeps (as vLLM's output does)."""
        model, torch = self._load(target)
        torch.manual_seed(seed)
        pad = model.config.pad_token_id
        eos = model.config.eos_token_id
        eos_ids = set(eos if isinstance(eos, list) else [eos] if eos is not None else [])
        if pad is None:
            pad = next(iter(eos_ids), 0)
        out: list[list[int]] = []
        with torch.inference_mode():
            for start in range(0, len(prompts), _BATCH):
                batch = prompts[start : start + _BATCH]
                width = max(len(p) for p in batch)
                x = torch.tensor([[pad] * (width - len(p)) + p for p in batch], dtype=torch.long)
                mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in batch])
                gen = model.generate(
                    x,
                    attention_mask=mask,
                    do_sample=False,
                    max_new_tokens=max_new_tokens,
                    pad_token_id=pad,
                )
                for row in gen[:, width:].tolist():
                    cut = next((i + 1 for i, t in enumerate(row) if t in eos_ids), len(row))
                    out.append(row[:cut])
        return out

    def hidden_states(self, target: Path, dataset: Path, layer_ids: list[int]) -> None:
        from datasets import load_from_disk
        from safetensors.torch import save_file

        model, torch = self._load(target)
        decoder = model.model
        captured: dict[int, Any] = {}

        def grab(key: int) -> Any:
            def hook(_module: Any, args: tuple, kwargs: dict) -> None:
                hs = args[0] if args else kwargs["hidden_states"]
                captured[key] = hs[0].detach()

            return hook

        last = len(layer_ids)
        handles = [
            decoder.layers[layer].register_forward_pre_hook(grab(i), with_kwargs=True)
            for i, layer in enumerate(layer_ids)
        ]
        handles.append(decoder.norm.register_forward_pre_hook(grab(last), with_kwargs=True))
        out_dir = dataset / "hidden_states"
        out_dir.mkdir(parents=True, exist_ok=True)
        rows = load_from_disk(str(dataset))
        try:
            with torch.inference_mode():
                for i, row in enumerate(rows):
                    ids = torch.as_tensor(row["input_ids"]).to(torch.long)
                    captured.clear()
                    model(ids[None, :], use_cache=False)
                    hs = torch.stack([captured[j] for j in range(last + 1)], dim=1)
                    save_file(
                        {"token_ids": ids, "hidden_states": hs.to(torch.bfloat16).contiguous()},
                        str(out_dir / f"hs_{i}.safetensors"),
                    )
        finally:
            for h in handles:
                h.remove()


BACKEND = CpuBackend()
