"""peagle: P-EAGLE speculative decoding on Amazon SageMaker, from plan to teardown.

Public names are imported lazily so `import sm_peagle` stays cheap.
"""

from __future__ import annotations

from typing import Any

from ._lazy import lazy_getattr
from .version import __version__

# "client": an operation is the default client's method (`sm_peagle.Client`); client.py
# makes them (`module_function`).
_LAZY = {
    # Deprecated spelling of `plan` (a FutureWarning; removed in the next release).
    "plan_for": "endpoint",
    "Client": "client",
    "deploy": "client",
    # Through client.py, which gives the handle its default client (endpoint.py sits
    # below the client and does not import it).
    "Endpoint": "client",
    "plan": "client",
    "Plan": "planning.plan_result",
    "DeploymentSpec": "planning.spec.model",
    "load_spec": "planning.spec.loading",
    "spec_from_options": "planning.spec.options",
    "PeagleError": "errors",
    "SpecError": "errors",
    "CheckFailed": "errors",
    "PreflightFailed": "errors",
    "QuotaExceeded": "errors",
    "InstanceTypeUnavailable": "errors",
    "DeploymentFailed": "errors",
    "DeploymentTimeout": "errors",
    "RolloutRolledBack": "errors",
    "RolloutUnverified": "errors",
    "NotFound": "errors",
    "NoCredentials": "errors",
    "AwsUnreachable": "errors",
    "AwsError": "errors",
    "PayloadTooLarge": "errors",
    "OutputNotWritten": "errors",
    "BenchmarkFailed": "errors",
    "ModelInvocationError": "errors",
    "ModelStreamError": "errors",
    "InternalStreamFailure": "errors",
    # -- ops: endpoints and changes --
    "status": "client",
    "ls": "client",
    "logs": "client",
    "delete": "client",
    "gc": "client",
    "EndpointStatus": "ops.endpoints",
    "ComponentStatus": "ops.endpoints",
    "UnfinishedOperation": "ops.endpoints",
    "EndpointSummary": "ops.endpoints",
    "DeleteResult": "ops.endpoints",
    "GcResult": "ops.endpoints",
    "LogEvent": "ops.endpoints",
    "LogStream": "ops.endpoints",
    "health": "client",
    "HealthReport": "ops.health",
    "update": "client",
    "apply": "client",
    "diff": "client",
    "adopt": "client",
    "UpdateResult": "ops.changes",
    "ApplyResult": "ops.deployment",
    "Deployment": "ops.deployment",
    "connect": "ops.session",
    # -- ops: measurement --
    "bench": "client",
    "sweep": "client",
    "race": "client",
    "tune_k": "client",
    "report": "client",
    "invoke": "client",
    "chat": "client",
    "ChatSession": "ops.measure_traffic",
    "InvokeResult": "ops.measure_traffic_results",
    "ChatTranscript": "ops.measure_traffic_results",
    "BenchResult": "ops.measure_results",
    "SweepResult": "ops.measure_results",
    "RaceResult": "ops.measure_results",
    "TuneKResult": "ops.measure_results",
    "ReportResult": "ops.measure_results",
    # -- ops: catalog, iac, drafter --
    "models": "client",
    "instances": "client",
    "schema": "client",
    "recommend": "client",
    "Recommendation": "ops.catalog",
    "export": "client",
    "ExportResult": "ops.iac",
    "EXPORT_FORMATS": "ops.iac",
    "iam_policy": "client",
    "IamPolicy": "ops.iac",
    "drafter_inspect": "client",
    "drafter_check": "client",
    "DrafterCheck": "ops.drafter",
    "drafter_push": "client",
    "DrafterPush": "ops.drafter",
    "drafter_train": "client",
    "TrainResult": "ops.training_results",
    "TrainingFailed": "errors",
    "TrainingLost": "errors",
    "TrainingStopped": "errors",
    # -- ops: what is newer --
    "doctor": "client",
    "DoctorReport": "ops.doctor",
    "DoctorCheck": "ops.doctor",
}

# Deprecated names (each warns; removed in the next release): reachable through the table
# above, not public, so the reference does not render them.
_DEPRECATED = frozenset(("plan_for",))

__all__ = ["__version__", *(name for name in _LAZY if name not in _DEPRECATED)]

_lazy = lazy_getattr(__name__, _LAZY)


def __getattr__(name: str) -> Any:
    """A public name (`_LAZY`), else an old name that moved to an installed plugin, which
    declares it (`Plugin.moved()`: forwarded for one release, with a FutureWarning). peagle
    names none of them: the plugin does."""
    if name in _LAZY or name.startswith("_") or _submodule(name):
        # A submodule not imported yet (`from . import settings` asks here first): the
        # import system imports it when this says no.
        return _lazy(name)
    import importlib

    plugins = importlib.import_module(f"{__name__}.plugins")
    try:
        return plugins.moved_name(f"{__name__}.{name}")
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None


def _submodule(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(f"{__name__}.{name}") is not None
