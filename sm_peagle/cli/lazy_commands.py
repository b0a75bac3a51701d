"""Start-up work typer would do for nothing: building every command to list them, and a
pydantic adapter for every parameter of the command that runs.

- A root-level run (`peagle --help`, `peagle` alone, a mistyped command) only lists the
  commands: each (a sub-app such as `drafter` too) is registered as a stub that has the
  real command's help text and no parameters (typer turns every parameter of every
  command into click objects, ~40 ms for the whole tree). A stub is replaced by the real
  command the moment click resolves it (`peagle -qv plan …` runs the command, shell
  completion completes its options).
- typer >= 0.2x coerces every parameter's value through a pydantic TypeAdapter, built on
  first use, even for a value left unset (None), which it then returns untouched. That
  imports `typer._adapters` and pydantic's type machinery (~45 ms) on every run, `peagle
  plan` included. `defer_coercion` builds the adapter only for a value that needs one: an
  unset value and a string for a `str` parameter come back exactly as typer's own
  coercion returns them (`None`/`()`, and `str(value)`); anything else goes to typer's
  coercion, unchanged (its messages for a bad `-k abc` are typer's).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import typer


def listing_stub(target: Callable[..., Any] | typer.Typer) -> Callable[..., Any]:
    """A parameterless stand-in for the command function (or sub-app) `target`, with the
    help text typer would give it."""

    def stub() -> None:
        raise RuntimeError("a listing stub ran instead of its command")  # pragma: no cover

    if isinstance(target, typer.Typer):
        from typer.models import TyperInfo

        stub.__doc__ = typer.main.solve_typer_info_help(TyperInfo(typer_instance=target))
    else:
        stub.__doc__ = inspect.getdoc(target)
    stub.listing_stub = True  # type: ignore[attr-defined]
    return stub


def is_listing_stub(command: Any) -> bool:
    return bool(getattr(getattr(command, "callback", None), "listing_stub", False))


def real_command(build: Callable[..., typer.Typer], name: str) -> Any:
    """The click command `name` as a run of just that command builds it."""
    return typer.main.get_command(build(name)).commands[name]  # type: ignore[attr-defined]


class _Deferred:
    """typer's coercion of one parameter, its pydantic adapter built only if needed. It
    stands in for the parameter's `get_runtime_param` (calling it gives the coercion)."""

    __slots__ = ("built",)

    def __init__(self) -> None:
        self.built: Any = None

    def __call__(self) -> _Deferred:
        return self

    def coerce(self, value: Any, param: Any, ctx: Any) -> Any:
        if self.built is None:
            multi = param.multiple or param.nargs == -1
            if value is None:  # typer's RuntimeParam.coerce: unset stays unset
                return () if multi else None
            desc = param.type_descriptor
            info = desc.parameter_info
            # typer's str adapter is str(value), and a `parser=str` option's is parser(value)
            as_str = (desc.annotation is str and info.parser is None) or info.parser is str
            if as_str and type(value) is str and not multi and desc.file_annotation is None:
                return value
            from typer._coercion import build_runtime_param

            self.built = build_runtime_param(desc)
        return self.built.coerce(value, param=param, ctx=ctx)


def defer_coercion(params: list[Any]) -> None:
    """Give each typer parameter the deferred coercion above (a typer without runtime
    coercion, before 0.2x, has nothing to defer)."""
    for param in params:
        has_runtime = hasattr(param, "get_runtime_param") and hasattr(param, "type_descriptor")
        if has_runtime and not isinstance(vars(param).get("get_runtime_param"), _Deferred):
            param.get_runtime_param = _Deferred()
