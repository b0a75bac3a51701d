"""moto on the sandbox clock: every `utcnow()` moto reads is the installed harness's clock.

moto stamps what it emulates with `moto.core.utils.utcnow()`: resource `CreationTime` and
`LastModifiedTime`, CloudWatch datapoints and alarm state times, log ingestion and its
14-day/2-hour acceptance window, scheduler times, and the `Date` header of every answer in
process (`moto.core.responses`; behind the sandbox's server moto sets none, and the
server's request handler stamps it from the same clock). Each module imports the function
by name, so the patch replaces that name in each moto module loaded when the harness
installs (the services the sandbox emulates are imported first, so they are among them)
and in `moto.core.utils` itself (`unix_time()` and the other helpers read it from there).

Left on the wall clock, and why: Application Auto Scaling stamps with `time.time()`, and
a CloudWatch dashboard's `LastModified` with `datetime.now()` (local, naive); nothing in
peagle reads either yet.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from datetime import datetime
from typing import Any

__all__ = ["EMULATED_MODULES", "clock_patches"]

# The moto modules of the services the sandbox emulates, loaded before patching so their
# `utcnow` is the harness's however late moto would have imported them.
EMULATED_MODULES = (
    "moto.core.responses",
    "moto.sagemaker.models",
    "moto.logs.models",
    "moto.cloudwatch.models",
    "moto.scheduler.models",
    "moto.events.models",
    "moto.iam.models",
    "moto.sts.models",
    "moto.s3.models",
    "moto.applicationautoscaling.models",
)


def clock_patches(now: Callable[[], datetime]) -> list[tuple[Any, str, Any]]:
    """(module, "utcnow", replacement) for moto.core.utils and every loaded moto module
    that imported moto's `utcnow`; `now()` returns a naive UTC datetime."""
    from moto.core import utils

    original = utils.utcnow
    for name in EMULATED_MODULES:
        importlib.import_module(name)

    def utcnow() -> datetime:
        return now()

    utcnow.__doc__ = "moto's utcnow on the sandbox clock (peagle_sandbox.testing.moto_clock)."
    patched = [(utils, "utcnow", utcnow)]
    for name, module in sorted(sys.modules.items()):
        if (
            name.startswith("moto.")
            and module is not None
            and module is not utils
            and getattr(module, "utcnow", None) is original
        ):
            patched.append((module, "utcnow", utcnow))
    return patched
