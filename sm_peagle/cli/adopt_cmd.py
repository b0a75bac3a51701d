"""`peagle adopt NAME`: take an endpoint made elsewhere under peagle's management."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from .lifecycle_cmds import YesOpt, asker
from .options import dry_run_option, model_option, output_option
from .output import STATUS_STYLE, console, current, table
from .spec_options import JsonOpt, RegionOpt, TtlOpt, TtlRoleOpt


def render_adoption(result: Any) -> None:
    """The spec, the checks (plan, head, adopt's own) and what peagle would change."""
    from rich.markup import escape

    from .faces import check_detail

    c = console()
    p = result.plan
    c.print(f"[bold]Adopt[/] {result.deployed.name}  ({p.region}, {p.spec.speculative.mode.value})")
    for kind, name in result.resources:
        c.print(f"  {kind:<16}{name}")
    c.print("[bold]Spec[/] (what `update`, `apply` and `diff` will start from)")
    c.print(escape(result.spec_yaml()), soft_wrap=True)
    rows = [
        [
            ch.name,
            STATUS_STYLE[ch.status],
            escape(check_detail(ch)),
        ]
        for ch in result.checks
    ]
    c.print(table(None, ["check", "status", "detail"], rows))
    diffs = result.differences
    if not diffs:
        c.print("The spec plans to the same requests as the endpoint runs (names and tags aside).")
        return
    c.print(f"[bold]Not represented[/] ({len(diffs)}): the next update or apply would change")
    for d in diffs:
        c.print(f"  {escape(str(d))}", soft_wrap=True)


AdoptDryRunOpt = dry_run_option("Show the spec and checks; tag nothing.")
AdoptOutputOpt = output_option("Also write the spec to this YAML file.")
AdoptModelOpt = model_option(
    "Catalog alias or JumpStart id of what it serves, when its tags, "
    "HF_MODEL_ID and weights do not tell."
)


def adopt_command(
    name: Annotated[str, typer.Argument(help="Endpoint name.")],
    model: AdoptModelOpt = None,
    dry_run: AdoptDryRunOpt = False,
    accept_differences: Annotated[
        bool,
        typer.Option(
            "--accept-differences",
            help="Adopt even when the spec cannot represent every field it runs; the "
            "next update or apply changes those fields.",
        ),
    ] = False,
    output: AdoptOutputOpt = None,
    ttl: TtlOpt = None,
    ttl_role: TtlRoleOpt = None,
    region: RegionOpt = None,
    yes: YesOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Take an endpoint made elsewhere (console, sagemaker SDK, boto3) under peagle's
    management: reconstruct its spec, run plan's checks, tag it as peagle's. Stopped
    while tagging, it puts the tags back; killed, run it again to finish."""
    from .context import client

    result = client(region).adopt(
        name,
        model=model,
        dry_run=dry_run,
        accept_differences=accept_differences,
        output=output,
        confirm=asker(yes),
        ttl=ttl,
        ttl_role=ttl_role,
        on_result=current().human(render_adoption),  # before the prompt, for people
    )
    current().result(result, render=lambda r: _render_adopted(r, name, dry_run))


def _render_adopted(result: Any, name: str, dry_run: bool) -> None:
    """After a dry run: the adoption and that nothing was tagged; after adopting: what was
    tagged, what works on it now, and what the next update would change."""
    from .advice import Suggestion, render

    if dry_run:
        render_adoption(result)
        typer.echo(
            f"dry run: nothing was tagged; `{render(Suggestion.of('adopt', name))}` adopts it"
        )
        return
    update, bench = Suggestion.of("update", name, k="N"), Suggestion.of("bench", name)
    typer.echo(
        f"adopted {name}: {len(result.tagged)} resources tagged peagle:managed; "
        f"`{render(update)}`, `{render(bench)}` and `{render(Suggestion.of('delete', name))}` "
        "now work on it"
    )
    if result.differences:
        typer.echo(
            f"the next update or apply will change {len(result.differences)} field(s): "
            + "; ".join(d.path for d in result.differences)
        )
