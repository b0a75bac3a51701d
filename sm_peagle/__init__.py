"""peagle: P-EAGLE speculative decoding on Amazon SageMaker, from plan to teardown.

Public names are imported lazily so `import sm_peagle` stays cheap.
"""

from __future__ import annotations

from typing import Any

from .version import __version__

_LAZY = {
    "deploy": "endpoint",
    "Endpoint": "endpoint",
    "plan_for": "endpoint",
    "plan": "plan",
    "Plan": "plan",
    "DeploymentSpec": "specs",
    "load_spec": "specs",
    "spec_from_options": "specs",
    "PeagleError": "errors",
    "SpecError": "errors",
    "CheckFailed": "errors",
    "PreflightFailed": "errors",
    "QuotaExceeded": "errors",
    "DeploymentFailed": "errors",
    "DeploymentTimeout": "errors",
    "NotFound": "errors",
    "NoCredentials": "errors",
    "use_sandbox": "sandbox.manager",
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module 'sm_peagle' has no attribute {name!r}")
