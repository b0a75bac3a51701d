"""`peagle plan`: show the exact requests a deployment would send, and the checks."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from .faces import check_detail, cli_text
from .options import StrictOpt
from .output import STATUS_STYLE, console, current, table
from .plan_text import requests_text
from .spec_options import JsonOpt, SpecFileOpt, with_spec_options

if TYPE_CHECKING:
    from ..planning.spec.options import SpecOptions


def render_plan(p: Any) -> None:
    """The plan for people: a summary (with where K came from and the price), every
    request deploy would send (`plan_text`), then the checks."""
    from rich.markup import escape

    c = console()
    # soft_wrap: rich never inserts a line break, so a long value (an image or S3 URI)
    # stays whole; markup off so a value like `[lmi-optimized]` prints as it is.
    for line in summary_lines(p):
        c.print(line, soft_wrap=True, markup=False)
    c.print()
    for line in requests_text(p):
        heading = bool(line) and not line.startswith(" ")  # an operation: CreateModel, …
        c.print(line, soft_wrap=True, markup=False, style="bold" if heading else None)
    c.print()
    c.print(
        table(
            None,
            ["check", "status", "detail"],
            [
                [
                    ch.name,
                    STATUS_STYLE[ch.status],
                    # escape: messages quote shapes like [32, 8640], which rich eats as tags;
                    # a fix naming a command targets what this plan targeted (--region)
                    escape(check_detail(ch)),
                ]
                for ch in p.checks
            ],
        )
    )


def price_text(p: Any) -> str:
    """The plan's price, as the summary's `cost` line shows it: with its region and source,
    or why it is unknown in this region (never another region's figure unlabelled)."""
    return (cli_text(p.price.label) or "unknown") if p.price else "unknown"  # it may name a call


def summary_lines(p: Any) -> list[str]:
    """The plan at a glance: names, image, instances, sources, speculative config, K and
    where it came from, cost."""
    import json

    from ..planning.plan_result import variant_instance_types

    js = p.jumpstart
    lines = [f"Plan {p.names['endpoint']}  ({p.region}, {p.spec.speculative.mode.value})"]
    lines.append(f"  model           {p.create_model['ModelName']}")
    lines.append(f"  endpoint config {p.create_endpoint_config['EndpointConfigName']}")
    lines.append(f"  endpoint        {p.names['endpoint']}")
    lines.append(f"  vLLM            {p.vllm_version}")
    lines.append(f"  image           {p.image}")  # last on its line: a double-click copies it
    v = p.create_endpoint_config["ProductionVariants"][0]
    types = " > ".join(variant_instance_types(v))
    lines.append(f"  instances       {v['InitialInstanceCount']} x {types}")
    if js:
        config = f" [{js.config_name}]" if js.config_name else ""
        lines.append(f"  JumpStart       {js.model_id} v{js.version}{config} ({js.source})")
    for src in p.create_model["PrimaryContainer"].get("AdditionalModelDataSources", []):
        uri, channel = src["S3DataSource"]["S3Uri"], src["ChannelName"]
        lines.append(f"  drafter         {uri} -> channel {channel}")
    if p.speculative_config:
        lines.append(f"  speculative     {json.dumps(p.speculative_config)}")
    else:
        lines.append("  speculative     none (baseline)")
    if p.k_origin is not None and not p.inference_components:
        lines.append(f"  {cli_text(p.k_origin.describe())}")
    for name, origin in p.component_k_origins.items():
        lines.append(f"  component {name}: {cli_text(origin.describe())}")
    lines.append(f"  cost            {price_text(p)}")
    lines += [f"  availability    {line}" for line in p.availability]
    return lines


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
    from ..planning.spec.options import build_spec
    from .context import client

    p = client().plan(build_spec(model, spec_file, options), strict=strict)
    current().result(p, render=render_plan)
    p.raise_for_failures()
