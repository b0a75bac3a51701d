"""Checks that must pass before a long command does any work: a missing optional library
or a typo in a model name should cost a second, not a benchmark or a results directory."""

from __future__ import annotations

import importlib.util
from pathlib import Path

__all__ = ["require_plot", "require_plannable"]


def require_plot(*paths: Path | None) -> None:
    """`--plot` needs matplotlib (sm-peagle[plot]): exit 2 before anything runs."""
    if all(p is None for p in paths) or importlib.util.find_spec("matplotlib") is not None:
        return
    from ..errors import SpecError

    raise SpecError(
        "--plot: needs matplotlib, which is not installed; nothing was run",
        remedy="pip install 'sm-peagle[plot]', or drop --plot (write --out and "
        "`peagle report --plot` later)",
    )


def require_plannable(
    model: str,
    *,
    mode: str,
    k: int | None,
    instance_type: str | None,
    role: str | None,
    region: str | None,
) -> None:
    """Plan one configuration as `deploy` would: an unknown model, a bad instance type or
    a failed check stops a sweep before it deploys anything or writes a directory."""
    from ..endpoint import plan

    options = {"mode": mode, "instance_type": instance_type, "role": role, "region": region}
    if mode != "baseline":
        options["k"] = k
    plan(model, **{key: v for key, v in options.items() if v is not None}).raise_for_failures()
