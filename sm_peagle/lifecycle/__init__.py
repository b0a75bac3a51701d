"""Side effects: everything that reads or changes AWS state for a deployment.

preflight, create / wait / roll back / delete (`manager`), update in place (`update`),
the poller (`waiter`), apply / diff (`apply`), inventory (status, ls, gc), CloudWatch
logs (`endpoint_logs`), the spec carried in tags (`spec_tags`), and the impure input
resolution before a plan (`resolve`, `jumpstart_live`). boto3 clients come only from
`sm_peagle.aws`. Names are imported lazily so importing the package costs nothing.
"""

from __future__ import annotations

from .._lazy import lazy_getattr

_LAZY = {
    "Lifecycle": "manager",
    "DeployResult": "resources",
    "tagged_requests": "resources",
}

__all__ = sorted(_LAZY)

__getattr__ = lazy_getattr(__name__, _LAZY)
