"""`peagle models`, `peagle instances`, `peagle schema`."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from .output import console, current, table
from .spec_options import JsonOpt, RegionOpt


def models(json_out: JsonOpt = False) -> None:
    """List models with published P-EAGLE heads, and what is known about each."""
    from .context import client

    current().result(client().models(), render=_render_models)


def _render_models(entries: list[Any]) -> None:
    rows = []
    for m in entries:
        d = m.drafter
        rows.append(
            [
                m.alias,
                m.jumpstart_id or "unknown (resolved live)",
                "confirmed"
                if m.jumpstart_wiring_confirmed
                else "needs --model-data/--drafter or AWS",
                f"{m.total_params_b:g}B / {m.active_params_b:g}B" if m.total_params_b else None,
                d.hf_id if d else "unknown",
                f"{d.trained_k}/{d.recommended_k}" if d else None,
                # The K a deploy without -k gets, and why (plan says it too: Plan.k_origin).
                f"{m.default_k} ({m.default_k_origin()[1]})",
                m.default_instance,
            ]
        )
    console().print(
        table(
            "P-EAGLE-ready models",
            [
                "alias",
                "JumpStart id",
                "JumpStart wiring",
                "params total/active",
                "drafter head",
                "K trained/recommended",
                "default K (no -k)",
                "default instance",
            ],
            rows,
        )
    )


def instances(
    json_out: JsonOpt = False,
    live_prices: Annotated[
        bool, typer.Option("--live-prices", help="Fill prices from the AWS Price List API.")
    ] = False,
    region: RegionOpt = None,
) -> None:
    """List GPU instance types peagle can deploy to, with GPU memory and $/h."""
    from .context import client

    items = client(region).instances(live_prices)
    current().result(items, render=_render_instances)


def _render_instances(items: list[Any]) -> None:
    rows = [
        [
            i.name,
            i.gpus,
            i.gpu,
            f"{i.gpu_memory_gb:g}",
            f"{i.total_gpu_memory_gb:g}",
            i.vcpu,
            i.ram_gib,
            # A price holds for one region: say which (another region's is "unknown").
            f"{i.usd_per_hour:.2f} ({i.price_region})" if i.usd_per_hour is not None else "unknown",
            "Arm host: refused" if i.arm_host else "",
        ]
        for i in items
    ]
    console().print(
        table(
            "GPU instance types",
            ["type", "GPUs", "GPU", "GB each", "GB total", "vCPU", "RAM GiB", "$/h", "note"],
            rows,
        )
    )


def schema(json_out: JsonOpt = False) -> None:
    """Print the JSON Schema of the deployment spec (a JSON document with or without
    --json, which is accepted so every command that prints data takes it)."""
    from .context import client

    current().json_document(client().schema())  # a JSON document in either mode
