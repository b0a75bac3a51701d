"""`peagle export` and `peagle iam-policy`: a plan as IaC, and the role it needs.

Both plan exactly as `peagle plan` does (same spec, same checks) and refuse a plan with
failed checks: exporting requests that `deploy` itself would refuse helps nobody.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from .spec_options import (
    ImageOpt,
    JsonOpt,
    RegionOpt,
    RoleOpt,
    SpecFileOpt,
    VllmVersionOpt,
)

ModelArg = Annotated[str | None, typer.Argument(help="Catalog alias or JumpStart id (or use -f).")]


def _planned(model: str | None, spec_file: Path | None, options: Any) -> Any:
    from ..planning.spec_options import build_spec
    from .output import note
    from .plan_cmd import make_plan

    p = make_plan(build_spec(model, spec_file, options))
    p.raise_for_failures()
    for c in p.checks:
        if c.status == "warn":
            note(f"warning: {c.name}: {c.message}" + (f" ({c.fix})" if c.fix else ""))
    return p


def export_command(
    model: ModelArg = None,
    spec_file: SpecFileOpt = None,
    format_: Annotated[
        str,
        typer.Option(
            "--format",
            help="terraform (*.tf.json), cloudformation, json, or sagemaker (a Python script "
            "using the sagemaker SDK's resource classes).",
        ),
    ] = "terraform",
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write here instead of stdout.")
    ] = None,
    role: RoleOpt = None,
    region: RegionOpt = None,
    image: ImageOpt = None,
    vllm_version: VllmVersionOpt = None,
) -> None:
    """Export the planned deployment as Terraform JSON, CloudFormation, the raw plan, or a
    sagemaker SDK script."""
    from ..errors import SpecError
    from ..iac.export import FORMATS, export_text

    if format_ not in FORMATS:  # before planning: a typo should not cost a plan
        raise SpecError(
            f"--format: unknown format {format_!r}", remedy=f"use one of {', '.join(FORMATS)}"
        )
    from ..planning.spec_options import SpecOptions

    options = SpecOptions(role=role, region=region, image=image, vllm_version=vllm_version)
    p = _planned(model, spec_file, options)
    text = export_text(p, format_)
    if output is None:
        typer.echo(text, nl=False)
        return
    from .output import note

    try:
        output.write_text(text)
    except OSError as e:
        raise SpecError(f"cannot write {output}: {e.strerror}") from None
    note(f"wrote {format_} export of {p.names['endpoint']} to {output}")


def iam_policy_command(
    model: ModelArg = None,
    spec_file: SpecFileOpt = None,
    account: Annotated[
        str | None,
        typer.Option("--account", help="Account id for log/KMS/EC2 ARNs (default: the role's)."),
    ] = None,
    role: RoleOpt = None,
    region: RegionOpt = None,
    image: ImageOpt = None,
    vllm_version: VllmVersionOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Print the least-privilege execution-role policy and trust policy for a deployment."""
    import json
    import re

    from ..errors import SpecError
    from ..iac.iam import execution_role_policy
    from .output import note, print_json

    if account is not None and not re.fullmatch(r"\d{12}", account):
        raise SpecError(f"--account: {account!r} is not a 12-digit AWS account id")
    from ..planning.spec_options import SpecOptions

    options = SpecOptions(role=role, region=region, image=image, vllm_version=vllm_version)
    p = _planned(model, spec_file, options)
    result = execution_role_policy(p, account=account)
    for w in result.warnings:
        note(f"warning: {w}")
    if json_out:
        print_json({"policy": result.policy, "trust_policy": result.trust_policy})
        return
    typer.echo(f"# Execution-role policy for {p.names['endpoint']} (account {result.account})")
    typer.echo(json.dumps(result.policy, indent=2))
    typer.echo("# Trust policy (attach as the role's assume-role policy)")
    typer.echo(json.dumps(result.trust_policy, indent=2))
