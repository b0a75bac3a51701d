"""A local SageMaker on loopback: moto's control plane plus a simulated runtime.

``python -m peagle_sandbox.server`` runs it in one process; ``manager`` starts, finds and
stops that process and points boto3 at it; ``peagle --sandbox <command>`` does both. Nothing
here talks to AWS, and every generated token is SIMULATED (see ``engine`` for the model).

It is not part of the product: it is its own distribution (``peagle-sandbox``, in
``sandbox/``), which the product finds through entry points (``sm_peagle/plugins.py``) and
never imports. ``peagle_sandbox.use_sandbox()`` is the SDK entry point (it was
``sm_peagle.use_sandbox()``), and ``peagle_sandbox.testing.pytest_plugin`` the pytest plugin
(it was ``sm_peagle.testing.pytest_plugin``).
"""

from __future__ import annotations

from typing import Any

__all__ = ["use_sandbox"]


def use_sandbox(**options: Any) -> Any:
    """Start the sandbox if needed and point this process at it (see ``manager.use_sandbox``).

    ``with peagle_sandbox.use_sandbox(): ...`` (or ``.stop()`` on the result) stops, at the
    end, the sandbox this call started; one that was already running is left running.

    Imported on call, so importing the package stays free."""
    from .plugin import use_sandbox as _use  # checks the options first

    return _use(**options)
