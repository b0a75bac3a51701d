"""`SandboxClient`: the `sm_peagle.Client` that `peagle_sandbox.client()` hands out.

It is a client like any other, aimed at the local sandbox, and it knows whether it
started that sandbox: used as a context manager (`with peagle_sandbox.client() as
client:`), it stops, on exit (even on error), the sandbox it started, so a notebook or a
script leaves nothing running; one that was already running is left alone.
"""

from __future__ import annotations

from typing import Any

from sm_peagle import Client

from .clock_client import SandboxClockHandle

__all__ = ["SandboxClient"]


class SandboxClient(Client):
    """A `sm_peagle.Client` aimed at the local sandbox.

    Args:
        sandbox: what starting (or joining) the sandbox returned (`use_sandbox`'s
            `SandboxUse`: its URL, and whether this call started it).
        **session: the client's own keywords (`region`, `aws`, `progress`, …).

    Attributes:
        sandbox: the sandbox this client talks to (`SandboxUse`).
        clock: that sandbox's clock (`SandboxClockHandle`).
    """

    def __init__(self, *, sandbox: Any, **session: Any) -> None:
        super().__init__(**session)
        self.sandbox = sandbox

    @property
    def clock(self) -> SandboxClockHandle:
        """This client's sandbox's clock: `client.clock.advance("2d")`, `.freeze()`,
        `.resume(rate=60)`, `.state()` (as `peagle_sandbox.clock()`)."""
        return SandboxClockHandle(self.sandbox.url, engine_label=self.sandbox.engine_label)

    def stop(self) -> dict[str, Any]:
        """Stop the sandbox if this client's call started it (else leave it running)."""
        return self.sandbox.stop()

    def __enter__(self) -> SandboxClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
