"""peagle: P-EAGLE speculative decoding on Amazon SageMaker, from plan to teardown.

Public names are imported lazily so `import sm_peagle` stays cheap.
"""

from __future__ import annotations

from ._lazy import lazy_getattr
from .version import __version__

_LAZY = {
    "deploy": "client:deploy",
    "Endpoint": "endpoint",
    "plan": "client:plan",
    # Deprecated spelling of `plan` (a FutureWarning; removed in the next release).
    "plan_for": "endpoint",
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
    "status": "ops.endpoints",
    "ls": "ops.endpoints",
    "logs": "ops.endpoints",
    "delete": "ops.endpoints",
    "gc": "ops.endpoints",
    "EndpointStatus": "ops.endpoints",
    "EndpointSummary": "ops.endpoints",
    "DeleteResult": "ops.endpoints",
    "GcResult": "ops.endpoints",
    "LogEvent": "ops.endpoints",
    "LogStream": "ops.endpoints",
    "update": "client:update",
    "apply": "client:apply",
    "diff": "client:diff",
    "adopt": "client:adopt",
    "UpdateResult": "ops.changes",
    "ApplyResult": "ops.deployment",
    "Deployment": "ops.deployment",
    "connect": "ops.session",
    # -- ops: measurement --
    "bench": "client:bench",
    "sweep": "client:sweep",
    "race": "client:race",
    "tune_k": "client:tune_k",
    "report": "client:report",
    "invoke": "client:invoke",
    "chat": "client:chat",
    "ChatSession": "ops.measure_traffic",
    "BenchResult": "ops.measure_results",
    "SweepResult": "ops.measure_results",
    "RaceResult": "ops.measure_results",
    "TuneKResult": "ops.measure_results",
    "ReportResult": "ops.measure_results",
    # -- ops: catalog, iac, drafter, sandbox --
    "models": "ops.catalog",
    "instances": "ops.catalog",
    "schema": "ops.catalog",
    "recommend": "ops.catalog",
    "Recommendation": "ops.catalog",
    "export": "ops.iac",
    "ExportResult": "ops.iac",
    "EXPORT_FORMATS": "ops.iac",
    "iam_policy": "ops.iac",
    "IamPolicy": "ops.iac",
    "drafter_inspect": "ops.drafter",
    "drafter_check": "ops.drafter",
    "DrafterCheck": "ops.drafter",
    "drafter_push": "ops.drafter",
    "DrafterPush": "ops.drafter",
    # -- ops: what is newer --
    "doctor": "ops.doctor",
    "DoctorReport": "ops.doctor",
    "DoctorCheck": "ops.doctor",
    "sandbox_start": "ops.sandbox",
    "sandbox_stop": "ops.sandbox",
    "sandbox_status": "ops.sandbox",
    # Moved to peagle_sandbox.use_sandbox (a deprecation notice for one release).
    "use_sandbox": "plugins",
}

__all__ = ["__version__", *_LAZY]

__getattr__ = lazy_getattr(__name__, _LAZY)
