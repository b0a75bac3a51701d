"""`peagle race A B`: two endpoints, one prompt, streamed side by side.

A side is an endpoint, or one inference component of an endpoint: `peagle race EP/p-eagle
EP/baseline`, or `peagle race EP --component p-eagle --component baseline` (two
components of one endpoint, compared on the same instances). Each target is checked
before any traffic: a component the endpoint does not host, or an endpoint with
components and none named, is one line and exit 2.

On a terminal both answers grow live in two panes with their TTFT, tokens and tokens/s;
then one verdict line. Not on a terminal: the final numbers and the verdict as lines;
`--json`: the numbers (and both texts) as one JSON document.
"""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from .output import note, print_json
from .spec_options import JsonOpt, RegionOpt

DEFAULT_PROMPT = (
    "Write a Python function `merge_intervals(intervals)` that merges overlapping closed "
    "intervals and returns them sorted, with a docstring and three doctests."
)


def _header(s: dict[str, Any]) -> str:
    def f(v: Any, fmt: str) -> str:
        return "-" if v is None else fmt.format(v)

    state = "error" if s["error"] else ("done" if s["done"] else "streaming")
    return (
        f"{s['side']}: {s['target']}  [{state}]  TTFT {f(s['ttft_s'], '{:.3f}s')} · "
        f"{s['output_tokens']} tok · {f(s['output_tokens_per_s'], '{:,.0f}')} tok/s"
    )


def _live_view(lanes_height: int) -> Any:
    """A rich Live showing both lanes side by side; returns (live, update)."""
    from rich.console import Group
    from rich.live import Live
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text

    from .output import console

    con = console()
    live = Live(console=con, refresh_per_second=10, transient=False)

    def pane(s: dict[str, Any], width: int) -> Panel:
        body = Text(s["error"] or s["text"] or "…", style="red" if s["error"] else "")
        lines = body.wrap(con, max(width - 4, 10))
        tail = Text("\n").join(list(lines)[-lanes_height:])
        style = "green" if s["done"] and not s["error"] else ("red" if s["error"] else "cyan")
        title = Text(_header(s), style="bold")  # a Text: "[done]" is not markup
        return Panel(tail, title=title, title_align="left", border_style=style,
                     height=lanes_height + 2)  # fmt: skip

    def update(lanes: list[Any]) -> None:
        width = max(con.size.width // 2, 30)
        grid = Table.grid(expand=True)
        grid.add_column(ratio=1)
        grid.add_column(ratio=1)
        a, b = (lane.snapshot() for lane in lanes)
        grid.add_row(pane(a, width), pane(b, width))
        live.update(Group(grid))

    return live, update


def _targets(a: str, b: str | None, components: list[str]) -> list[tuple[str, str | None]]:
    """[(endpoint, component or None)] for sides A and B, from the arguments."""
    from ..errors import SpecError

    usage = "peagle race EP-A EP-B | EP/COMP-A EP/COMP-B | EP --component A --component B"
    if components:
        if b is not None or "/" in a or len(components) != 2:
            raise SpecError(
                "--component races two components of one endpoint: give one endpoint and "
                f"--component twice (got {1 + (b is not None)} endpoint(s), "
                f"{len(components)} --component)",
                remedy=usage,
            )
        return [(a, components[0]), (a, components[1])]
    if b is None:
        raise SpecError("race needs two sides", remedy=usage)
    out: list[tuple[str, str | None]] = []
    for side in (a, b):
        endpoint, slash, component = side.partition("/")
        if not endpoint or (slash and (not component or "/" in component)):
            raise SpecError(f"race: {side!r} is not ENDPOINT or ENDPOINT/COMPONENT", remedy=usage)
        out.append((endpoint, component or None))
    return out


def race_command(
    a: Annotated[str, typer.Argument(help="Side A: ENDPOINT or ENDPOINT/COMPONENT.")],
    b: Annotated[
        str | None,
        typer.Argument(
            help="Side B: ENDPOINT or ENDPOINT/COMPONENT (omit it with --component twice)."
        ),
    ] = None,
    component: Annotated[
        list[str] | None,
        typer.Option(
            "--component",
            help="Give it twice to race two inference components of the one endpoint A "
            "(short names as deployed, e.g. --component p-eagle --component baseline).",
        ),
    ] = None,
    prompt: Annotated[
        str | None, typer.Option("--prompt", "-p", help="The prompt both get (chat).")
    ] = None,
    max_tokens: Annotated[int, typer.Option("--max-tokens", help="max_tokens for both.")] = 256,
    temperature: Annotated[
        float | None, typer.Option("--temperature", help="Sampling temperature (model default).")
    ] = None,
    region: RegionOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Stream one prompt to two endpoints (or inference components) at once, side by side;
    verdict on output tok/s.

    peagle race EP-A EP-B · peagle race EP/p-eagle EP/baseline ·
    peagle race EP --component p-eagle --component baseline"""
    from ..aws import AwsContext
    from ..bench.race import RaceTarget, race
    from ..bench.results import is_sandbox
    from ..errors import SpecError
    from ..lifecycle.component_targets import resolve_component

    if max_tokens < 1:
        raise SpecError("--max-tokens must be at least 1")
    sides = _targets(a, b, list(component or []))
    aws = AwsContext(region)
    aws.check_credentials()
    sm = aws.client("sagemaker")
    flag = "/" if "/" in a + (b or "") else "--component"  # as the user wrote it, for messages
    ta, tb = (RaceTarget(ep, resolve_component(sm, ep, c, flag=flag)) for ep, c in sides)
    live_tty = sys.stdout.isatty() and not json_out
    kwargs: dict[str, Any] = dict(
        aws=aws, prompt=prompt or DEFAULT_PROMPT, max_tokens=max_tokens, temperature=temperature
    )
    if live_tty:
        from .output import console

        live, update = _live_view(max(console().size.height - 6, 6))
        with live:
            result = race(ta, tb, on_update=update, **kwargs)
    else:
        result = race(ta, tb, **kwargs)
    result["simulated"] = is_sandbox()
    if json_out:
        print_json(result)
        return
    if not live_tty:
        for side in ("a", "b"):
            s = result[side]
            print(_header(s))
            if s["error"]:
                print(f"  error: {s['error']}")
    if result["simulated"]:
        note("SIMULATED: the local sandbox made these tokens and timings up")
    print(result["verdict"])
