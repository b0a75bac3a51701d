"""`peagle plan`: show the exact requests a deployment would send, and the checks."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from .options import StrictOpt
from .output import STATUS_STYLE, console, current, table
from .spec_options import JsonOpt, SpecFileOpt, with_spec_options

if TYPE_CHECKING:
    from ..planning.spec.options import SpecOptions


def render_plan(p: Any) -> None:
    from rich.markup import escape

    from ..planning.plan_result import variant_instance_types

    c = console()
    js = p.jumpstart
    c.print(f"[bold]Plan[/] {p.names['endpoint']}  ({p.region}, {p.spec.speculative.mode.value})")
    c.print(f"  model          {p.create_model['ModelName']}")
    c.print(f"  endpoint config {p.create_endpoint_config['EndpointConfigName']}")
    c.print(f"  endpoint       {p.names['endpoint']}")
    c.print(f"  image          {p.image}  (vLLM {p.vllm_version})")
    v = p.create_endpoint_config["ProductionVariants"][0]
    types = " > ".join(variant_instance_types(v))
    c.print(f"  instances      {v['InitialInstanceCount']} x {types}")
    if js:
        c.print(f"  JumpStart      {js.model_id} v{js.version} [{js.config_name}] ({js.source})")
    for src in p.create_model["PrimaryContainer"].get("AdditionalModelDataSources", []):
        c.print(f"  drafter        {src['S3DataSource']['S3Uri']} -> channel {src['ChannelName']}")
    if p.speculative_config:
        import json

        c.print(f"  speculative    {json.dumps(p.speculative_config)}")
    else:
        c.print("  speculative    none (baseline)")
    # The price names its region and source, or says why it is unknown in this region.
    price = p.price.label if p.price else "unknown"
    c.print(f"  cost           {escape(price)}")
    for line in p.availability:
        c.print(f"  availability   {escape(line)}")
    c.print(
        table(
            None,
            ["check", "status", "detail"],
            [
                [
                    ch.name,
                    STATUS_STYLE[ch.status],
                    # escape: messages quote shapes like [32, 8640], which rich eats as tags
                    escape(
                        ch.message + (f" -> {ch.fix}" if ch.fix and ch.status != "pass" else "")
                    ),
                ]
                for ch in p.checks
            ],
        )
    )


@with_spec_options
def plan_command(
    model: Annotated[str | None, typer.Argument(help="Catalog alias or JumpStart id.")] = None,
    spec_file: SpecFileOpt = None,
    strict: StrictOpt = False,
    json_out: JsonOpt = False,
    *,
    options: SpecOptions,
) -> None:
    """Validate a deployment and print the exact AWS requests, without creating anything."""
    import sm_peagle

    from ..planning.spec.options import build_spec

    p = sm_peagle.plan(build_spec(model, spec_file, options), strict=strict)
    current().result(p, render=render_plan)
    p.raise_for_failures()
