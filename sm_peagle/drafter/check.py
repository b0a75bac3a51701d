"""Judge an inspected drafter against the target model, the vLLM version and K.

Each rule mirrors a start-up or load failure of vLLM that would otherwise surface only
after SageMaker spent 10-20 minutes pulling the image and weights. One Check per rule;
when an input the rule needs is unknown it warns (naming what was not verified) rather
than passing silently.
"""

from __future__ import annotations

from sm_peagle.checks import Check, failed, passed, warned
from sm_peagle.drafter.inspection import DrafterInspection
from sm_peagle.drafter.safetensors_header import DTYPE_BITS
from sm_peagle.errors import SpecError
from sm_peagle.vllm.head_config_rules import check_aux_layers, check_config_keys, check_token_ids
from sm_peagle.vllm.head_inspection import WEIGHT_PROBLEMS
from sm_peagle.vllm.head_loading import (
    REFUSES,
    check_borrowed,
    check_tensor_names,
    check_tensor_shapes,
    check_unloaded,
)
from sm_peagle.vllm.head_rules import (
    check_architecture,
    check_mask_token,
    effective_architecture,
)
from sm_peagle.vllm.head_shapes import check_fc_shape, check_mask_hidden, check_vocab
from sm_peagle.vllm.loader_facts import cite
from sm_peagle.vllm.versions import MAX_K, VllmVersion

__all__ = [
    "LOADING_CHECKS",
    "MODES",
    "check_drafter",
    "check_drafter_loading",
    "check_dtypes",
    "check_mode",
]

MODES = ("p-eagle", "eagle3")
# The second pass, in the order `check_drafter_loading` returns it.
LOADING_CHECKS = (
    "drafter.dtypes",
    "drafter.config_keys",
    "drafter.tensor_names",
    "drafter.tensor_shapes",
    "drafter.token_ids",
    "drafter.aux_layers",
    "drafter.unloaded",
    "drafter.borrowed",
)
# The names torch gives its dtypes (`torch.<name>`): what transformers turns a config's
# torch_dtype / dtype string into (getattr(torch, name)); any other name fails there.
TORCH_DTYPES = frozenset(
    {
        "float32",
        "float",
        "float64",
        "double",
        "float16",
        "half",
        "bfloat16",
        "complex32",
        "complex64",
        "complex128",
        "cfloat",
        "cdouble",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "int8",
        "int16",
        "short",
        "int32",
        "int",
        "int64",
        "long",
        "bool",
        "float8_e4m3fn",
        "float8_e4m3fnuz",
        "float8_e5m2",
        "float8_e5m2fnuz",
        "float8_e8m0fnu",
        "float4_e2m1fn_x2",
        "auto",
    }
)
# The rules that depend on the vLLM version live in version_rules.py (architecture,
# mask token) and shape_rules.py (mask_hidden, fc, vocab); the version gates shared
# with `plan` (parallel drafting, model minimums) are planning/version_gates.py.


def check_mode(mode: str) -> None:
    """SpecError unless `mode` is one a drafter head serves (p-eagle, eagle3): the one check
    of it, before a head is read (`drafter check`, `push`, `deploy --drafter`)."""
    if mode not in MODES:
        raise SpecError(
            f"unknown drafter mode {mode!r}",
            remedy="use p-eagle or eagle3",
            field="mode",
            value=mode,
            rule=" or ".join(sorted(MODES)),
        )


def check_drafter(
    inspection: DrafterInspection,
    *,
    target_hidden_size: int | None = None,
    target_vocab_size: int | None = None,
    vllm_version: VllmVersion,
    mode: str = "p-eagle",
    k: int | None = None,
    trained_k: int | None = None,
) -> list[Check]:
    """Run every drafter rule; returns checks in a fixed order (config first, layout last)."""
    check_mode(mode)
    ins, v = inspection, vllm_version
    arch = effective_architecture(ins, v)  # the class vLLM loads: sizes depend on it
    return [
        _config(ins),
        _weights(ins, v),
        check_architecture(ins, v),
        check_mask_token(ins, v, mode),
        check_mask_hidden(ins, mode, v, arch),
        check_fc_shape(ins, target_hidden_size, v, arch),
        check_vocab(ins, target_vocab_size),
        _k(k, trained_k),
        _layout(ins),
    ]


def check_drafter_loading(
    inspection: DrafterInspection,
    *,
    vllm_version: VllmVersion,
    mode: str = "p-eagle",
    target_hidden_size: int | None = None,
    target_vocab_size: int | None = None,
    target_num_layers: int | None = None,
) -> list[Check]:
    """The second pass: what vLLM's loader does with each tensor and config value of the
    head (`LOADING_CHECKS`, in that order). `check_drafter` is the first pass; `drafter
    check`, the plan, deploy preflight and push run both."""
    check_mode(mode)
    ins, v = inspection, vllm_version
    arch = effective_architecture(ins, v)
    return [
        check_dtypes(ins, v),
        check_config_keys(ins, v),
        check_tensor_names(ins, v, arch),
        check_tensor_shapes(ins, v, arch),
        check_token_ids(ins, v, mode, target_vocab_size),
        check_aux_layers(ins, v, arch, target_num_layers, target_hidden_size),
        check_unloaded(ins, v, arch),
        check_borrowed(ins, v, arch, target_hidden_size, target_vocab_size),
    ]


def check_dtypes(ins: DrafterInspection, version: VllmVersion) -> Check:
    """Every tensor dtype is one the safetensors format defines, and config.json's
    torch_dtype / dtype names a torch dtype: vLLM refuses either at start otherwise."""
    name = "drafter.dtypes"
    refuses = REFUSES.format(v=version)
    odd = {n: t["dtype"] for n, t in ins.tensors.items() if t["dtype"] not in DTYPE_BITS}
    if odd:
        tensor, dtype = sorted(odd.items())[0]
        more = f" and {len(odd) - 1} more" if len(odd) > 1 else ""
        return failed(
            name,
            f"tensor {tensor} has dtype {dtype}{more}, which is no safetensors dtype "
            f"(known: {', '.join(sorted(DTYPE_BITS))}): the safetensors loader cannot read "
            f"the file; {refuses}",
            fix="re-save the weights with safetensors save_file in BF16, F16 or F32",
        )
    for key in ("dtype", "torch_dtype"):  # transformers reads dtype first
        val = (ins.config or {}).get(key)
        if val is None:
            continue
        if not isinstance(val, str) or val.removeprefix("torch.") not in TORCH_DTYPES:
            return failed(
                name,
                f"config.json {key} {val!r} is no torch dtype: vLLM {version} reads the "
                f"config with transformers ({cite('config_via_autoconfig', version)}), which "
                f"looks it up as torch.{val} and fails; {refuses}",
                fix=f'set "{key}": "bfloat16" (or float16 / float32, as the weights are saved)',
            )
        break
    shown = ", ".join(ins.dtypes) or "no tensors"
    return passed(name, f"tensor dtypes {shown}; every one a safetensors dtype")


def _files(ins: DrafterInspection) -> str:
    return ", ".join(ins.weight_files) or "weights"


def _config(ins: DrafterInspection) -> Check:
    name = "drafter.config"
    if ins.problem("missing_config") is not None:
        return failed(
            name,
            f"config.json not found in {ins.source}",
            fix="add the head's config.json next to its safetensors weights",
        )
    if (p := ins.problem("bad_config")) is not None:
        return failed(name, p.message, fix="repair config.json (it must be one JSON object)")
    missing = [key for key in ("hidden_size", "vocab_size") if getattr(ins, key) is None]
    if missing:
        return warned(
            name,
            f"config.json has no integer {', '.join(missing)}",
            fix="copy the head's config.json as published with its weights",
        )
    return passed(
        name,
        f"config.json: {ins.architecture}, hidden {ins.hidden_size}, "
        f"{ins.num_hidden_layers} layer(s), vocab {ins.vocab_size}",
    )


def _weights(ins: DrafterInspection, version: VllmVersion) -> Check:
    name = "drafter.weights"
    if ins.pickled_weights:
        files = ", ".join(ins.pickled_weights)
        return failed(
            name,
            f"only pickled weights ({files}), no safetensors: vLLM {version} would load them "
            f"({cite('weight_patterns', version)} falls back to *.bin, then *.pt), but peagle "
            "refuses pickled weights by policy: unpickling runs code stored in the file, and "
            "their tensor names, shapes and dtypes cannot be checked without loading them",
            fix='convert them to safetensors: python -c "import torch; from safetensors.torch '
            f"import save_file; save_file(torch.load('{ins.pickled_weights[0]}', "
            "weights_only=True), 'model.safetensors')\" and remove the pickled file",
        )
    probs = [p for p in ins.problems if p.kind in WEIGHT_PROBLEMS]
    if probs:
        first = probs[0]
        fixes = {
            "corrupt_header": f"re-save {first.file} with safetensors save_file and upload it "
            "again (the file is truncated or not safetensors)",
            "missing_shard": f"upload {first.file} or fix weight_map in "
            "model.safetensors.index.json",
            "bad_index": "repair model.safetensors.index.json (it needs a weight_map object)",
            "missing_weights": "save the head's weights as model.safetensors",
        }
        return failed(name, "; ".join(p.message for p in probs), fix=fixes[first.kind])
    mib = ins.total_tensor_bytes / 2**20
    return passed(
        name,
        f"{ins.tensor_count} tensors, {ins.parameter_count:,} parameters, "
        f"{mib:.1f} MiB in {_files(ins)} ({', '.join(ins.dtypes)})",
    )


def _k(k: int | None, trained_k: int | None) -> Check:
    name = "drafter.k"
    if k is None:
        return warned(name, "K (num_speculative_tokens) not given; not checked")
    if not 1 <= k <= MAX_K:
        return failed(
            name,
            f"K={k} is outside 1..{MAX_K}",
            fix=f"set num_speculative_tokens between 1 and {MAX_K}",
        )
    if trained_k is None:
        return warned(
            name,
            f"K={k}; the head's trained K is unknown, not verified",
            fix="pass the K the head was trained with",
        )
    if k > trained_k:
        return failed(
            name,
            f"K={k} is above the head's trained K={trained_k}",
            fix=f"set num_speculative_tokens <= {trained_k}",
        )
    return passed(name, f"K={k} <= trained K={trained_k}")


def _layout(ins: DrafterInspection) -> Check:
    name = "drafter.layout"
    if ins.folder_keys:
        keys = ", ".join(ins.folder_keys)
        return failed(
            name,
            f"zero-byte folder object(s) under {ins.source}: {keys}",
            fix="delete them (aws s3 rm s3://BUCKET/KEY); peagle drafter push never creates them",
        )
    if ins.bad_names:
        return failed(
            name,
            f"ambiguous file name(s) for the SageMaker mount: {', '.join(ins.bad_names)}",
            fix="rename to [A-Za-z0-9._-] names, unique ignoring case",
        )
    where = "S3 prefix" if ins.source.startswith("s3://") else "directory"
    return passed(
        name,
        f"{len(ins.files)} file(s) in {where}, each mounts as "
        "/opt/ml/additional-model-data-sources/<channel>/<name>",
    )
