"""`peagle plan`: show the exact requests a deployment would send, and the checks."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from .component_options import (
    AcceleratorsOpt,
    ComponentOpt,
    CopiesOpt,
    HostingOpt,
    MaxInstancesOpt,
    MinInstancesOpt,
    ScaleInCooldownOpt,
    ScaleInMaxStepOpt,
    ScaleInStrategyOpt,
    ScaleToZeroOpt,
)
from .output import STATUS_STYLE, console, print_json, table
from .spec_options import (
    AutoscaleOpt,
    BucketOpt,
    DrafterOpt,
    FallbackOpt,
    ImageOpt,
    InstanceCountOpt,
    InstanceTypeOpt,
    JsonOpt,
    KOpt,
    KScheduleOpt,
    ModelDataOpt,
    ModeOpt,
    NameOpt,
    RegionOpt,
    RoleOpt,
    SpecFileOpt,
    TargetConcurrencyOpt,
    TargetInvocationsOpt,
    VllmVersionOpt,
)


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
    price = f"${p.usd_per_hour:.2f}/h" if p.usd_per_hour is not None else "unknown"
    c.print(f"  cost           {price} on-demand")
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


def plan_command(
    model: Annotated[str | None, typer.Argument(help="Catalog alias or JumpStart id.")] = None,
    spec_file: SpecFileOpt = None,
    instance_type: InstanceTypeOpt = None,
    instance_count: InstanceCountOpt = None,
    fallback: FallbackOpt = None,
    autoscale: AutoscaleOpt = None,
    target_concurrency: TargetConcurrencyOpt = None,
    target_invocations: TargetInvocationsOpt = None,
    mode: ModeOpt = None,
    k: KOpt = None,
    k_schedule: KScheduleOpt = None,
    drafter: DrafterOpt = None,
    bucket: BucketOpt = None,
    model_data: ModelDataOpt = None,
    image: ImageOpt = None,
    vllm_version: VllmVersionOpt = None,
    name: NameOpt = None,
    role: RoleOpt = None,
    region: RegionOpt = None,
    hosting: HostingOpt = None,
    component: ComponentOpt = None,
    scale_to_zero: ScaleToZeroOpt = False,
    copies: CopiesOpt = None,
    accelerators_per_copy: AcceleratorsOpt = None,
    min_instances: MinInstancesOpt = None,
    max_instances: MaxInstancesOpt = None,
    scale_in_strategy: ScaleInStrategyOpt = None,
    scale_in_max_step: ScaleInMaxStepOpt = None,
    scale_in_cooldown_minutes: ScaleInCooldownOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Validate a deployment and print the exact AWS requests, without creating anything."""
    from ..planning.spec_options import SpecOptions, build_spec

    options = SpecOptions(
        instance_type=instance_type,
        instance_count=instance_count,
        fallback=fallback or None,
        autoscale=autoscale,
        target_concurrency=target_concurrency,
        target_invocations=target_invocations,
        mode=mode,
        k=k,
        k_schedule=k_schedule,
        drafter=drafter,
        bucket=bucket,
        model_data=model_data,
        image=image,
        vllm_version=vllm_version,
        name=name,
        role=role,
        region=region,
        hosting=hosting,
        components=component or None,
        scale_to_zero=scale_to_zero or None,
        copies=copies,
        accelerators_per_copy=accelerators_per_copy,
        min_instances=min_instances,
        max_instances=max_instances,
        scale_in_strategy=scale_in_strategy,
        scale_in_max_step=scale_in_max_step,
        scale_in_cooldown_minutes=scale_in_cooldown_minutes,
    )
    import sm_peagle

    p = sm_peagle.plan(build_spec(model, spec_file, options))
    if json_out:
        print_json(p.to_dict())
    else:
        render_plan(p)
    p.raise_for_failures()
