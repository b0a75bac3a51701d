"""Whether a path can be a directory the sandbox keeps files in: the state directory
(`sdk.check_state_dir`) and the engine's home (`install-engine --home`) are checked the
same way before anything is written, and each caller words the refusal for its setting."""

from __future__ import annotations

import tempfile
from pathlib import Path

__all__ = ["not_a_directory", "unwritable"]


def not_a_directory(path: Path) -> str | None:
    """Why `path` cannot be a directory (it, or the nearest existing parent, is a file),
    or None."""
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if probe.exists() and not probe.is_dir():
        where = "" if probe == path else f" ({probe} is a file)"
        return f"{path} is not a directory{where}"
    return None


def unwritable(path: Path) -> str | None:
    """Why the directory `path` cannot be created or written, or None. It is tried
    (created, and a file written in it): os.access says yes to root."""
    step = "creating it"
    try:
        path.mkdir(parents=True, exist_ok=True)
        step = "writing a file in it"
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as e:
        return f"{path} cannot be written ({step} failed: {e.strerror or e})"
    return None
