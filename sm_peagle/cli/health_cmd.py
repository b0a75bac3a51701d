"""`peagle health NAME`: is speculation paying? (SDK: `sm_peagle.health`, `Endpoint.health`.)
Also the speculation row of `peagle status`."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from .options import component_option
from .spec_options import JsonOpt, RegionOpt

NameArg = Annotated[str, typer.Argument(help="Endpoint name.")]
WindowOpt = Annotated[
    str,
    typer.Option("--window", help="How far back from AWS's now (1h, 30m, 2h, 1d or seconds)."),
]
HealthComponentOpt = component_option(
    "Judge this inference component, from its own log group (the short name is enough)."
)


def health_command(
    name: NameArg,
    window: WindowOpt = "1h",
    component: HealthComponentOpt = None,
    region: RegionOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Whether speculative decoding pays on the endpoint: paying, degraded, off or no data,
    with the evidence (acceptance length against the threshold, periods with data, the
    alarm). Reads peagle's CloudWatch metrics and alarm when monitoring is on (deploy
    --monitor), else vLLM's SpecDecoding log lines. Exit 0 for every verdict (scripts read
    `.verdict` from --json), 1 when AWS fails, 2 on bad input."""
    from .context import client
    from .output import current

    report = client(region).health(name, window=window, component=component)
    current().result(report, render=render_health)


def render_health(report: Any) -> None:
    """The verdict on one line, then the evidence, one line each."""
    from .output import current

    out = current()
    length = report.acceptance_length
    measured = f"acceptance length {length:.2f}, " if length is not None else ""
    threshold = f"threshold {report.threshold}, " if report.threshold is not None else ""
    out.echo(
        f"{report.endpoint}: {report.verdict} ({measured}{threshold}from {report.source}, "
        f"[{out.label}])"
    )
    for line in report.evidence:
        out.echo(f"  - {line}")


def speculation_row(st: Any) -> list[str] | None:
    """`peagle status`'s speculation row of a one-model endpoint (None otherwise): the
    alarm's state and the last hour's acceptance, or how to turn monitoring on."""
    if st.components is not None or st.problem or st.mode is None:
        return None
    spec = st.speculation
    if spec is None:
        if st.mode == "baseline":
            return ["speculation", "none (baseline)"]
        from .advice import Suggestion, render

        apply = render(Suggestion(("apply",), (), (("-f", "SPEC"),)))
        deploy = render(Suggestion.of("deploy", "MODEL", monitor=True))
        return [
            "speculation",
            f"monitoring off (`{deploy}`, or monitoring.enabled in the spec and `{apply}`)",
        ]
    if spec.get("unreadable"):
        return ["speculation", f"unknown: {spec['unreadable']}"]
    length = spec.get("acceptance_length_1h")
    seen = (
        f"acceptance {length:.2f} over the last hour"
        if length is not None
        else "no data in the last hour"
    )
    return ["speculation", f"{seen} (alarm {spec['alarm_state']})"]
