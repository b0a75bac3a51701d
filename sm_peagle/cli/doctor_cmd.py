"""`peagle doctor`: what this peagle knows, next to what is newer (SDK: `sm_peagle.doctor`)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from .options import JsonOpt, RegionOpt


def doctor_command(
    offline: Annotated[
        bool,
        typer.Option(
            "--offline",
            help="Ask no network source (package index, GitHub, ECR, STS): their rows say "
            "'not checked'.",
        ),
    ] = False,
    source_timeout: Annotated[
        str | None,
        typer.Option(
            "--source-timeout",
            help="How long each request to a network source may take (3s, 10s; default "
            "3s); the sources are asked at once. Was --timeout, which on deploy, update "
            "and apply bounds the whole wait.",
        ),
    ] = None,
    region: RegionOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Say what this peagle knows and what is newer.

    One row each: the newest vLLM in peagle's facts next to the newest on the package
    index (PEAGLE_PYPI_URL, default https://pypi.org); the newest SageMaker vLLM images in
    peagle's list next to the newest published (ECR DescribeImages with your credentials,
    else the aws/deep-learning-containers files on GitHub; the row names the source); the
    rows installed plugins add; botocore's version and whether its SageMaker model has
    every field peagle sends; the account and region of your credentials (a plugin
    target's under its option). A source that does not answer is 'not checked', with the reason.
    Exit 0 when current, 3 when something newer exists, 1 when a check failed.
    """
    from .context import client
    from .output import current

    options: dict[str, Any] = {"offline": offline}
    if source_timeout is not None:  # the SDK reads "3s" as deploy's --timeout does
        options["source_timeout"] = source_timeout
    report = client(region).doctor(**options)
    current().result(report, render=render_report)
    if report.exit_code:
        raise typer.Exit(report.exit_code)


# What a row's `known` and `found` are, as the screen names them.
KNOWN_AS = {"vllm": "facts", "dlc_image": "image list", "botocore": "installed"}
FOUND_AS = {"vllm": "index", "dlc_image": "published"}


def render_report(report: Any) -> None:
    """One line per check (its status, what peagle has, what was found and where), then
    the verdict with the exit code."""
    from .faces import cli_text
    from .output import current

    out = current()
    out.echo(f"peagle doctor ({report.label})")
    width = max(len(c.title) for c in report.checks) + 2
    for c in report.checks:
        parts = []
        if c.known:
            parts.append(f"{KNOWN_AS.get(c.name, 'peagle')} {c.known}")
        if c.found:
            found = f"{FOUND_AS[c.name]} {c.found}" if c.name in FOUND_AS else c.found
            parts.append(found + (f" ({c.source})" if c.source else ""))
        parts.append(cli_text(c.detail) or "")
        out.echo(f"  {c.title:<{width}}{c.status:<13}{' · '.join(parts)}")
    out.echo(f"{report.summary} (exit {report.exit_code})")
