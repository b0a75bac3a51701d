"""Renamed SDK keywords: the old name works for one release, with a FutureWarning.

Issue 35 (one vocabulary) renamed a few keywords with their CLI options: `recommend`'s
`concurrency`/`results` (a list of load levels and one bench file elsewhere), `doctor`'s
`timeout` (every other `timeout` bounds the whole wait, doctor's each source's request).
"""

from __future__ import annotations

import functools
import inspect
import os
import warnings
from collections.abc import Callable
from typing import Any, TypeVar, cast

__all__ = ["renamed_keywords"]

F = TypeVar("F", bound=Callable[..., Any])


def _callers_level() -> int:
    """The `stacklevel` of the first frame outside sm_peagle: the warning points at the
    user's line whether they called `client.recommend` or `sm_peagle.recommend` (the default
    client's method, one frame deeper)."""
    package = os.path.dirname(os.path.dirname(__file__)) + os.sep
    here = inspect.currentframe()
    frame, level = (here.f_back if here else None), 1
    while frame is not None and frame.f_code.co_filename.startswith(package):
        frame, level = frame.f_back, level + 1
    return level


def renamed_keywords(**renamed: str) -> Callable[[F], F]:
    """An operation whose keywords `renamed` (old -> new) were renamed: each old one still
    works for one release, with a FutureWarning naming the new one; both at once is a
    TypeError. The operation's signature (and `help()`) shows the new names only."""

    def decorate(method: F) -> F:
        @functools.wraps(method)
        def call(*args: Any, **kwargs: Any) -> Any:
            for old, new in renamed.items():
                if old not in kwargs:
                    continue
                if kwargs.get(new) is not None:
                    raise TypeError(
                        f"{method.__name__}(): give {new}= only ({old}= is its old name)"
                    )
                warnings.warn(
                    f"{method.__name__}({old}=) is deprecated: use {new}= "
                    "(removed in the next release)",
                    FutureWarning,
                    stacklevel=_callers_level(),
                )
                kwargs[new] = kwargs.pop(old)
            return method(*args, **kwargs)

        return cast(F, call)

    return decorate
