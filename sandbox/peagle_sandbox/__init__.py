"""A local SageMaker on loopback: moto's control plane plus a simulated runtime.

``python -m peagle_sandbox.server`` runs it in one process; ``manager`` starts, finds and
stops that process and points boto3 at it; ``peagle --sandbox <command>`` does both. Nothing
here talks to AWS, and every generated token is SIMULATED (see ``engine`` for the model).

It is not part of the product: it is its own distribution (``peagle-sandbox``, in
``sandbox/``), a peagle plugin (``peagle_plugin.PLUGIN``, through the ``sm_peagle.plugins``
entry point), and the product never imports it. Its SDK is here: ``client()``,
``use_sandbox()``, ``start()``, ``status()``, ``stop()`` and their results (they were
``sm_peagle.use_sandbox`` and ``sm_peagle.sandbox_start|status|stop``), and ``clock()``,
the running sandbox's clock (``SandboxClockHandle``, whose calls return a ``ClockState``);
``peagle_sandbox.testing.pytest_plugin`` is the pytest plugin (it was
``sm_peagle.testing.pytest_plugin``). The old names still work for one release, with a
FutureWarning.
"""

from __future__ import annotations

from typing import Any

# In reading order (the SDK reference renders them so): the client, then the sandbox's
# own calls, then their results.
__all__ = [
    "client",
    "use_sandbox",
    "start",
    "status",
    "stop",
    "clock",
    "SandboxStart",
    "SandboxState",
    "SandboxStop",
    "SandboxClockHandle",
    "ClockState",
]

# Imported when asked for (`peagle --help` imports this package for the plugin's
# declarations, and must not pay for the SDK).
_SDK = (
    "SandboxStart",
    "SandboxState",
    "SandboxStop",
    "SandboxClockHandle",
    "ClockState",
    "start",
    "status",
    "stop",
)


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
    from .sdk import client as _client  # checks the options first

    return _client(**options)


def use_sandbox(**options: Any) -> Any:
    """Start the sandbox if needed and point this process at it (see ``manager.use_sandbox``).

    ``with peagle_sandbox.use_sandbox(): ...`` (or ``.stop()`` on the result) stops, at the
    end, the sandbox this call started; one that was already running is left running.

    Imported on call, so importing the package stays free."""
    from .sdk import use_sandbox as _use  # checks the options first

    return _use(**options)


def clock() -> Any:
    """The running sandbox's clock (a ``SandboxClockHandle``): ``.state()``,
    ``.advance("15m")``, ``.freeze()``, ``.resume(rate=60)``, each returning a
    ``ClockState``. SandboxError when no sandbox runs. (The clock type the sandbox itself
    runs on is ``peagle_sandbox.sandbox_clock.SandboxClock``.)

    Imported on call, so importing the package stays free."""
    from .sdk import clock as _clock

    return _clock()


def __getattr__(name: str) -> Any:
    if name in _SDK:
        from . import sdk

        return getattr(sdk, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
