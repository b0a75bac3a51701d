"""Say where the CLI is talking to, so nobody mistakes a sandbox for AWS or vice versa."""

from __future__ import annotations

from typing import Any


def hello(aws: Any) -> None:
    """Say where the command talks to (stderr): the `on_connect` the CLI gives the SDK.
    The line itself is the SDK's (`ops/target.py`), so both faces say the same."""
    from ..ops.target import talking_to
    from .output import note

    note(talking_to(aws.region))
