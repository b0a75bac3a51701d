"""Honest benchmarks of deployed endpoints: load, metrics, acceptance, results, reports.

    from sm_peagle.benchmarking import bench_endpoint
    doc = bench_endpoint("my-endpoint", concurrency=[1, 8, 32], requests=128)

The public call is `sm_peagle.bench(...)` (sm_peagle/ops/measure.py). This package is
named `benchmarking`, not `bench`, so that importing it can never rebind that function.

Names are imported lazily so importing the package costs nothing until a call.
"""

from __future__ import annotations

from .._lazy import lazy_getattr

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
