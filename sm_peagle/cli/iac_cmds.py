"""`peagle export` and `peagle iam-policy`: a plan as IaC, and the role it needs.

Both call one SDK function (`sm_peagle.export`, `sm_peagle.iam_policy`), which plans
exactly as `peagle plan` does and refuses a plan with failed checks.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from .options import ExportFormat, output_option
from .output import current, note
from .spec_options import (
    ImageOpt,
    JsonOpt,
    RegionOpt,
    RoleOpt,
    SpecFileOpt,
    TtlOpt,
    TtlRoleOpt,
    VllmVersionOpt,
)

ModelArg = Annotated[str | None, typer.Argument(help="Catalog alias or JumpStart id (or use -f).")]
FormatOpt = Annotated[
    ExportFormat,
    typer.Option(
        "--format",
        parser=str,  # the SDK checks it (one message from either side)
        help="terraform (*.tf.json), cloudformation, json, or sagemaker (a Python script "
        "using the sagemaker SDK's resource classes).",
    ),
]
ExportOutputOpt = output_option("Write here instead of stdout.")


def export_command(
    model: ModelArg = None,
    spec_file: SpecFileOpt = None,
    format_: FormatOpt = "terraform",
    output: ExportOutputOpt = None,
    role: RoleOpt = None,
    region: RegionOpt = None,
    image: ImageOpt = None,
    vllm_version: VllmVersionOpt = None,
    ttl: TtlOpt = None,
    ttl_role: TtlRoleOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Export the planned deployment as Terraform JSON, CloudFormation, the raw plan, or a
    sagemaker SDK script. With --json: one document (format, endpoint, output, warnings and
    the exported text)."""
    from .context import client

    result = client(region).export(
        model,
        format_,
        output,
        spec_file=spec_file,
        role=role,
        image=image,
        vllm_version=vllm_version,
        ttl=ttl,
        ttl_role=ttl_role,
    )
    if result.output is not None:
        note(f"wrote {result.format} export of {result.endpoint} to {result.output}")
    current().result(result, render=_show_export)


def _show_export(result: Any) -> None:
    if result.output is None:
        typer.echo(result.text, nl=False)


def iam_policy_command(
    model: ModelArg = None,
    spec_file: SpecFileOpt = None,
    for_: Annotated[
        str,
        typer.Option(
            "--for",
            metavar="<execution-role|deployer|ttl-role|trainer|training-role>",
            help="Whose policy: execution-role (the role SageMaker runs the container as, "
            "with its trust policy), deployer (whoever runs peagle deploy/update/bench/"
            "delete: attach it to your own user or role) or ttl-role (the role an expiry "
            "schedule runs as, with its trust policy: for --ttl-role); trainer / "
            "training-role: whoever runs `peagle drafter train` / the role its job runs as.",
        ),
    ] = "execution-role",
    account: Annotated[
        str | None,
        typer.Option("--account", help="Account id for log/KMS/EC2 ARNs (default: the role's)."),
    ] = None,
    role: RoleOpt = None,
    region: RegionOpt = None,
    image: ImageOpt = None,
    vllm_version: VllmVersionOpt = None,
    ttl: TtlOpt = None,
    ttl_role: TtlRoleOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Print the least-privilege execution-role policy and trust policy for a deployment
    (--for deployer: the policy of whoever runs peagle; --for ttl-role: the role an expiry
    schedule runs as)."""
    from .context import client

    result = client(region).iam_policy(
        model,
        for_=for_,  # the SDK checks it (one error, each face words it)
        account=account,
        spec_file=spec_file,
        role=role,
        image=image,
        vllm_version=vllm_version,
        ttl=ttl,
        ttl_role=ttl_role,
    )
    current().result(result, render=_show_policy)


def _show_policy(result: Any) -> None:
    if result.for_ == "trainer":
        typer.echo(
            f"# Trainer policy (account {result.account}): attach it to the user or role "
            "that runs peagle drafter train"
        )
        typer.echo(json.dumps(result.policy, indent=2))
        return
    if result.for_ == "training-role":
        typer.echo(f"# Training-job execution role policy (account {result.account})")
        typer.echo(json.dumps(result.policy, indent=2))
        typer.echo("# Trust policy (attach as the role's assume-role policy)")
        typer.echo(json.dumps(result.trust_policy, indent=2))
        return
    if result.for_ == "deployer":
        typer.echo(
            f"# Deployer policy for {result.endpoint} (account {result.account}): attach it "
            "to the user or role that runs peagle"
        )
        typer.echo(json.dumps(result.policy, indent=2))
        return
    if result.for_ == "ttl-role":
        typer.echo(
            f"# TTL-role permission policy (account {result.account}): what the role given "
            "with --ttl-role needs; peagle's own peagle-ttl-deleter has exactly this"
        )
        typer.echo(json.dumps(result.policy, indent=2))
        typer.echo("# Trust policy (attach as the role's assume-role policy)")
        typer.echo(json.dumps(result.trust_policy, indent=2))
        return
    typer.echo(f"# Execution-role policy for {result.endpoint} (account {result.account})")
    typer.echo(json.dumps(result.policy, indent=2))
    typer.echo("# Trust policy (attach as the role's assume-role policy)")
    typer.echo(json.dumps(result.trust_policy, indent=2))
