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

__all__ = ["client", "use_sandbox"]


def client(**options: Any) -> Any:
    """A ready `sm_peagle.Client` aimed at the local sandbox, which is started if needed:

        client = peagle_sandbox.client()
        ep = client.deploy("gpt-oss-20b", k=5)

    ``options``: the sandbox's (those of ``use_sandbox``: ``port``, ``engine``, …) and the
    client's (``region``, ``progress``, ``on_connect``, ``on_poll``). The client's AWS
    context holds the sandbox's URL and fake keys, so its requests go to the sandbox and
    never carry real credentials. Not everything is the client's yet: this process's
    environment is pointed at the sandbox too (as ``use_sandbox`` does), because the
    labels (``SANDBOX (SIMULATED)``), the sandbox-only models, the default role and the
    poll interval are read from it (``PEAGLE_SANDBOX_URL`` and friends), so do not mix
    it with a client for AWS in one process. ``with peagle_sandbox.client() as client:``
    stops, when the block ends, the sandbox this call started (``client.stop()`` does the
    same); otherwise the sandbox keeps running after the process ends, until
    ``peagle sandbox stop``.

    Imported on call, so importing the package stays free."""
    from .plugin import client as _client  # checks the options first

    return _client(**options)


def use_sandbox(**options: Any) -> Any:
    """Start the sandbox if needed and point this process at it (see ``manager.use_sandbox``).

    ``with peagle_sandbox.use_sandbox(): ...`` (or ``.stop()`` on the result) stops, at the
    end, the sandbox this call started; one that was already running is left running.

    Imported on call, so importing the package stays free."""
    from .plugin import use_sandbox as _use  # checks the options first

    return _use(**options)
