"""The one SDK client a command talks through, and the line saying where it talks to, so
nobody mistakes a plugin's local target for AWS or vice versa."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def hello(aws: Any) -> None:
    """Say where the command talks to (stderr): the `on_connect` the CLI gives the SDK.
    The line itself is the SDK's (`ops/target.py`), so both faces say the same."""
    from ..ops.target import talking_to_context
    from .output import note

    note(talking_to_context(aws))


def client(region: str | None = None, *, on_poll: Callable[[Any], None] | None = None) -> Any:
    """The `sm_peagle.Client` for this command, from its global options: `region` (on the
    commands that take `--region`; None reads the environment, which a plugin target's
    option has pointed at the target), progress lines as notes on stderr, the "talking
    to" line before the first request, and `on_poll` for a command that waits (the live
    view)."""
    from ..client import Client
    from .output import note

    return Client(region=region, progress=note, on_connect=hello, on_poll=on_poll)
