"""Honest benchmarks of deployed endpoints: load, metrics, acceptance, results, reports.

    from sm_peagle.bench import bench_endpoint
    doc = bench_endpoint("my-endpoint", concurrency=[1, 8, 32], requests=128)

The public call is `sm_peagle.bench(...)` (sm_peagle/ops/measure.py). Once this subpackage
is imported it shadows that name on `sm_peagle`, so the module itself is callable and
forwards to it: `sm_peagle.bench("my-endpoint", concurrency=2)` works either way.

Names are imported lazily so importing the package costs nothing until a call.
"""

from __future__ import annotations

import sys
import types
from typing import Any

from .._lazy import lazy_getattr


class _CallableModule(types.ModuleType):
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from ..ops.measure import bench

        return bench(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule

_LAZY = {
    "bench_endpoint": "runner",
    "run_sweep": "sweep",
    "load_dataset": "datasets",
    "Dataset": "datasets",
    "LoadSpec": "load",
    "run_level": "load",
    "summarize_level": "metrics",
    "RequestRecord": "metrics",
    "load_document": "results",
    "save_document": "results",
    "SCHEMA": "results",
}

__all__ = sorted(_LAZY)

__getattr__ = lazy_getattr(__name__, _LAZY)
