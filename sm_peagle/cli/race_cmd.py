"""`peagle race A B`: two endpoints, one prompt, streamed side by side.

A side is an endpoint, or one inference component of an endpoint: `peagle race EP/p-eagle
EP/baseline`, or `peagle race EP --component p-eagle --component baseline` (two
components of one endpoint, compared on the same instances). Each target is checked
before any traffic: a component the endpoint does not host, or an endpoint with
components and none named, is one line and exit 2.

On a terminal both answers grow live in two panes with their TTFT, tokens and tokens/s,
and each lane's acceptance (vLLM's own count for that request, `acc 3.2 tok/step
(73%)`) as soon as its stream ends; then one verdict line. Not on a terminal: the final
numbers and the verdict as lines; `--json`: the numbers (and both texts) as one JSON
document.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from .options import MaxTokensOpt, TemperatureOpt, components_option
from .output import current, note
from .spec_options import JsonOpt, RegionOpt

RaceComponentsOpt = components_option(
    "Give it twice to race two inference components of the one endpoint A (short names as "
    "deployed, e.g. --component p-eagle --component baseline)."
)


def _header(s: Any) -> str:
    """A side (`RaceSide`) in one line: its state, TTFT, tokens, tokens/s, acceptance."""

    def f(v: Any, fmt: str) -> str:
        return "-" if v is None else fmt.format(v)

    state = "error" if s.error else ("done" if s.done else "streaming")
    line = (
        f"{s.side}: {s.target}  [{state}]  TTFT {f(s.ttft_s, '{:.3f}s')} · "
        f"{s.output_tokens} tok · {f(s.output_tokens_per_s, '{:,.0f}')} tok/s"
    )
    if s.acceptance_length is not None:  # vLLM's count, sent with the last chunk
        rate = s.draft_acceptance_rate
        share = f" ({rate:.0%})" if rate is not None else ""
        line += f" · acc {s.acceptance_length:.1f} tok/step{share}"
    return line


def _live_view(lanes_height: int) -> Any:
    """A rich Live showing both lanes side by side; returns (live, update)."""
    from rich.console import Group
    from rich.live import Live
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text

    from ..ops.measure_results import RaceSide
    from .output import console

    con = console()
    live = Live(console=con, refresh_per_second=10, transient=False)

    def pane(s: RaceSide, width: int) -> Panel:
        body = Text(s.error or s.text or "…", style="red" if s.error else "")
        lines = body.wrap(con, max(width - 4, 10))
        tail = Text("\n").join(list(lines)[-lanes_height:])
        style = "green" if s.done and not s.error else ("red" if s.error else "cyan")
        title = Text(_header(s), style="bold")  # a Text: "[done]" is not markup
        return Panel(tail, title=title, title_align="left", border_style=style,
                     height=lanes_height + 2)  # fmt: skip

    def update(lanes: list[Any]) -> None:
        width = max(con.size.width // 2, 30)
        grid = Table.grid(expand=True)
        grid.add_column(ratio=1)
        grid.add_column(ratio=1)
        a, b = (RaceSide.from_dict(lane.snapshot()) for lane in lanes)
        grid.add_row(pane(a, width), pane(b, width))
        live.update(Group(grid))

    return live, update


def race_command(
    a: Annotated[str, typer.Argument(help="Side A: ENDPOINT or ENDPOINT/COMPONENT.")],
    b: Annotated[
        str | None,
        typer.Argument(
            help="Side B: ENDPOINT or ENDPOINT/COMPONENT (omit it with --component twice)."
        ),
    ] = None,
    component: RaceComponentsOpt = None,
    prompt: Annotated[
        str | None, typer.Option("--prompt", "-p", help="The prompt both get (chat).")
    ] = None,
    max_tokens: MaxTokensOpt = 256,
    temperature: TemperatureOpt = None,
    region: RegionOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Stream one prompt to two endpoints (or inference components) at once, side by side;
    verdict on output tok/s.

    peagle race EP-A EP-B · peagle race EP/p-eagle EP/baseline ·
    peagle race EP --component p-eagle --component baseline"""
    from .bench_cmds import measure_client

    race = measure_client(region, say_where=False).race
    live_tty = current().live  # a terminal, no --json: both answers grow in two panes
    kwargs: dict[str, Any] = dict(
        components=component, prompt=prompt, max_tokens=max_tokens, temperature=temperature,
    )  # fmt: skip
    if live_tty:
        from .output import console

        live, update = _live_view(max(console().size.height - 6, 6))
        shown = []

        def on_update(lanes: list[Any]) -> None:  # the view opens with the first request
            if not shown:
                live.start()
                shown.append(live)
            update(lanes)

        try:
            result = race(a, b, on_update=on_update, **kwargs)
        finally:
            if shown:
                live.stop()
    else:
        result = race(a, b, **kwargs)
    current().result(result, render=lambda r: _render_race(r, shown_live=live_tty))


def _render_race(result: Any, shown_live: bool) -> None:
    """The final numbers (unless the live panes showed them) and the verdict."""
    if not shown_live:
        for s in (result.a, result.b):
            print(_header(s))
            if s.error:
                print(f"  error: {s.error}")
    if result.simulated:  # in the words of the plugin whose target made them up
        note(result.caveat)
    print(result.verdict)
