"""Read a drafter head the way vLLM will: config.json, the index, and each safetensors
header (never the tensors). `HeaderReader` holds the logic; a subclass says how to list
files and read bytes. `LocalReader` reads a directory; the S3 reader is in `inspect.py`.
Local file reads only: the plan checks a local head with this module.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sm_peagle.drafter.inspection import (
    CONFIG,
    INDEX,
    SINGLE,
    DrafterInspection,
    FileEntry,
    Problem,
    all_mask_token_keys,
    find_tensor,
    lookup,
    name_problems,
)
from sm_peagle.drafter.safetensors_header import HeaderError, SafetensorsHeader, read_local_header
from sm_peagle.errors import SpecError

__all__ = ["HeaderReader", "LocalReader", "inspect_local"]

# Files vLLM's `filter_files_not_needed_for_inference` (model_loader/weight_utils.py) never
# loads although they match *.bin / *.pt.
_NOT_WEIGHTS = frozenset(
    {"training_args.bin", "optimizer.bin", "optimizer.pt", "scheduler.pt", "scaler.pt"}
)


def inspect_local(source: str) -> DrafterInspection:
    """Inspect a local drafter directory (headers only, never tensors)."""
    root = Path(source).expanduser()
    if not root.exists():
        raise SpecError(f"drafter directory {source} does not exist", field="source", value=source)
    if not root.is_dir():
        raise SpecError(
            f"drafter source {source} is not a directory",
            remedy="pass the directory holding config.json and *.safetensors",
            field="source",
            value=source,
        )
    return LocalReader(root).run()


class HeaderReader:
    """Shared logic; subclasses say how to list, read a small file and read a header."""

    def __init__(self, source: str) -> None:
        self.ins = DrafterInspection(source=source)
        self.sizes: dict[str, int] = {}

    def list_files(self) -> dict[str, int]:
        raise NotImplementedError

    def read_small(self, name: str) -> bytes:
        raise NotImplementedError

    def read_header(self, name: str) -> SafetensorsHeader:
        raise NotImplementedError

    def run(self) -> DrafterInspection:
        ins = self.ins
        self.sizes = self.list_files()
        ins.files = [FileEntry(n, s) for n, s in sorted(self.sizes.items())]
        ins.bad_names = name_problems([n for n in sorted(self.sizes) if not _hidden(n)])
        self._read_config()
        self._read_weights()
        return ins

    def _read_json(self, name: str, kind: str) -> Any:
        try:
            return json.loads(self.read_small(name).decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            self.ins.problems.append(Problem(kind, name, f"{name} is not valid JSON ({exc})"))
            return None

    def _read_config(self) -> None:
        ins = self.ins
        if CONFIG not in self.sizes:
            ins.problems.append(Problem("missing_config", CONFIG, "config.json not found"))
            return
        cfg = self._read_json(CONFIG, "bad_config")
        if cfg is None:
            return
        if not isinstance(cfg, dict):
            ins.problems.append(Problem("bad_config", CONFIG, "config.json is not a JSON object"))
            return
        ins.config = cfg
        archs = cfg.get("architectures")
        if isinstance(archs, list) and archs:
            ins.architecture = str(archs[0])
        # A speculators-format config: vLLM builds the head's config from its
        # transformer_layer_config block and copies only target_hidden_size and
        # draft_vocab_size from the top level (transformers_utils/configs/speculators/
        # base.py and algos.py), so the drafter's own sizes are read from that block.
        layer = cfg.get("transformer_layer_config")
        sizes = layer if "speculators_model_type" in cfg and isinstance(layer, dict) else cfg
        for key in ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size"):
            val = sizes.get(key)
            setattr(ins, key, val if _is_int(val) else None)
        val = cfg.get("target_hidden_size")
        ins.target_hidden_size = val if _is_int(val) else None
        dv = cfg.get("draft_vocab_size")
        ins.draft_vocab_size = dv if _is_int(dv) else ins.vocab_size
        for key in all_mask_token_keys():
            val = lookup(cfg, key)
            if val is not None:
                ins.mask_tokens[key] = val
        if ins.mask_tokens:
            ins.mask_token_key, ins.mask_token_value = next(iter(ins.mask_tokens.items()))

    def _weight_file_names(self) -> list[str]:
        ins = self.ins
        if INDEX in self.sizes:
            index = self._read_json(INDEX, "bad_index")
            wmap = index.get("weight_map") if isinstance(index, dict) else None
            if not isinstance(wmap, dict):
                if index is not None:
                    ins.problems.append(Problem("bad_index", INDEX, f"{INDEX} has no weight_map"))
                return []
            shards = sorted({str(v) for v in wmap.values()})
            for s in shards:
                if s not in self.sizes:
                    ins.problems.append(
                        Problem("missing_shard", s, f"{INDEX} lists shard {s}, which is missing")
                    )
            return [s for s in shards if s in self.sizes]
        # Without an index vLLM loads every top-level *.safetensors file (default_loader.py,
        # `_prepare_weights`: glob, then filter by the index only when there is one).
        return sorted(n for n in self.sizes if n.endswith(".safetensors") and "/" not in n)

    def _pickled(self) -> list[str]:
        """The pickled weight files vLLM falls back to without safetensors: *.bin, then
        *.pt (its first pattern with a match wins), less the training-state files
        `filter_files_not_needed_for_inference` drops."""
        top = [n for n in sorted(self.sizes) if "/" not in n and n not in _NOT_WEIGHTS]
        return [n for n in top if n.endswith(".bin")] or [n for n in top if n.endswith(".pt")]

    def _read_weights(self) -> None:
        ins = self.ins
        names = self._weight_file_names()
        if not names and not ins.problem("bad_index", "missing_shard"):
            ins.pickled_weights = self._pickled()
            if ins.pickled_weights:
                files = ", ".join(ins.pickled_weights)
                ins.problems.append(
                    Problem("pickled_weights", files, f"only pickled weights ({files})")
                )
            else:
                ins.problems.append(
                    Problem(
                        "missing_weights",
                        SINGLE,
                        "no model.safetensors, index or *.safetensors found",
                    )
                )
        tensors: dict[str, Any] = {}
        for name in names:
            try:
                header = self.read_header(name)
            except HeaderError as exc:
                ins.problems.append(Problem("corrupt_header", name, str(exc)))
                continue
            ins.weight_files.append(name)
            tensors.update(header.tensors)
        ins.tensor_count = len(tensors)
        ins.total_tensor_bytes = sum(t.nbytes for t in tensors.values())
        ins.parameter_count = sum(t.numel for t in tensors.values())
        ins.dtypes = sorted({t.dtype for t in tensors.values()})
        ins.tensors = {n: {"dtype": t.dtype, "shape": list(t.shape)} for n, t in tensors.items()}
        if (mh := find_tensor(tensors, "mask_hidden")) is not None:
            ins.mask_hidden, ins.mask_hidden_shape = True, list(tensors[mh].shape)
        if (fc := find_tensor(tensors, "fc.weight")) is not None:
            ins.fc_name, ins.fc_shape = fc, list(tensors[fc].shape)
        if (d2t := find_tensor(tensors, "d2t")) is not None:
            ins.d2t, ins.d2t_shape = True, list(tensors[d2t].shape)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _hidden(name: str) -> bool:
    return any(part.startswith(".") for part in name.split("/"))


class LocalReader(HeaderReader):
    def __init__(self, root: Path) -> None:
        super().__init__(str(root))
        self.root = root

    def list_files(self) -> dict[str, int]:
        try:
            return {
                p.relative_to(self.root).as_posix(): p.stat().st_size
                for p in self.root.rglob("*")
                if p.is_file()
            }
        except OSError as exc:
            raise SpecError(f"cannot read drafter directory {self.root}: {exc}") from None

    def read_small(self, name: str) -> bytes:
        try:
            return (self.root / name).read_bytes()
        except OSError as exc:
            raise SpecError(f"cannot read {self.root / name}: {exc}") from None

    def read_header(self, name: str) -> SafetensorsHeader:
        try:
            return read_local_header(self.root / name)
        except OSError as exc:
            raise SpecError(f"cannot read {self.root / name}: {exc}") from None
