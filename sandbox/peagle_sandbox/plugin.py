"""What the product loads through the `sm_peagle.plugins` entry point (`sm_peagle/plugins.py`).

The product never imports this package by name: it talks to the sandbox the way it talks to
AWS, through endpoint URLs and credentials, which `activate` sets.
"""

from __future__ import annotations

from .manager import SandboxInfo, activate, ensure_running, use_sandbox

__all__ = ["cli_activate", "use_sandbox"]


def cli_activate() -> SandboxInfo:
    """`peagle --sandbox <command>`: start the sandbox if needed and point this process at it."""
    info = ensure_running()
    activate(info)
    return info
