"""Infrastructure code as SDK calls (the methods of `IacOps`, a part of `sm_peagle.Client`):
`export()` (Terraform, CloudFormation, the raw plan or a
sagemaker SDK script) and `iam_policy()` (the execution role a deployment needs).

Both plan exactly as `peagle plan` does (same spec, same checks) and refuse a plan with
failed checks: exporting requests that `deploy` itself would refuse helps nobody. Every
argument is checked before the plan is made: an unknown format or an output path that
cannot be written costs nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import Param, SpecError, as_text, text
from ..iac.export import FORMATS as EXPORT_FORMATS
from .session import Session, check_output_path

__all__ = ["EXPORT_FORMATS", "IAM_POLICY_FOR", "ExportResult", "IacOps", "IamPolicy"]

# Whose policy `iam_policy` prints: the role SageMaker runs the container as, the
# principal that runs peagle (deploy, update, bench, delete), or the role the expiry
# schedules run as (for `ttl_role`: peagle's own has the same policies).
IAM_POLICY_FOR = ("execution-role", "deployer", "ttl-role", "trainer", "training-role")

Progress = Callable[[str], None] | None
SpecInput = Any  # DeploymentSpec | dict | str | Path | None


@dataclass(frozen=True)
class ExportResult:
    """The exported document and where it went; `to_dict()` is the `peagle export --json`
    document.

    Attributes:
        format: `terraform`, `cloudformation` or `sagemaker-sdk`.
        endpoint: The endpoint the document creates.
        text: The document, as written.
        output: The file it was written to, or None.
        warnings: The warnings planning and exporting gave, one line each.
    """

    format: str
    endpoint: str
    text: str
    output: Path | None = None
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The document `peagle export --json` prints."""
        return {
            "format": self.format,
            "endpoint": self.endpoint,
            "output": str(self.output) if self.output is not None else None,
            "warnings": list(self.warnings),
            "text": self.text,
        }


@dataclass(frozen=True)
class IamPolicy:
    """A least-privilege policy for one deployment; `to_dict()` is the `peagle iam-policy
    --json` document.

    Attributes:
        endpoint: The endpoint the policy is for.
        account: The AWS account its ARNs name.
        policy: The permissions policy.
        trust_policy: The role's trust policy: the execution role's, or the TTL role's
            (empty for the deployer: that policy goes on your own user or role).
        warnings: The warnings planning and building it gave, one line each.
        for_: Whose policy: `execution-role`, `deployer` or `ttl-role`.
    """

    endpoint: str
    account: str
    policy: dict[str, Any]
    trust_policy: dict[str, Any]
    warnings: list[str] = field(default_factory=list)
    for_: str = "execution-role"

    def to_dict(self) -> dict[str, Any]:
        """The document `peagle iam-policy --json` prints: whose policy (`for`), the
        permissions policy and, for a role (execution or TTL), its trust policy."""
        doc: dict[str, Any] = {"for": self.for_, "policy": self.policy}
        if self.for_ not in ("deployer", "trainer"):  # a role: its trust policy too
            doc["trust_policy"] = self.trust_policy
        return doc


class IacOps(Session):
    """Infrastructure code: `export` (Terraform, CloudFormation, the raw plan or a
    sagemaker SDK script) and `iam_policy` (the policy a deployment needs). Both plan
    offline, for the client's region."""

    def export(
        self,
        spec_or_model: SpecInput = None,
        format: str = "terraform",  # noqa: A002 - the CLI's --format
        output: str | Path | None = None,
        *,
        spec_file: str | Path | None = None,
        role: str | None = None,
        image: str | None = None,
        vllm_version: str | None = None,
        ttl: str | float | None = None,
        ttl_role: str | None = None,
    ) -> ExportResult:
        """Export the planned deployment as infrastructure code. Warnings of the plan go
        to the client's `progress` as they are found.

        Args:
            spec_or_model: a DeploymentSpec, a spec dict, a spec file path, or a catalog
                alias / JumpStart id.
            format: terraform (*.tf.json), cloudformation, json or sagemaker.
            output: also write the text to this file.
            spec_file: a spec file under a model name.
            role: the execution role's ARN.
            image: the serving image.
            vllm_version: the vLLM version of the serving image.
            ttl: the endpoint expires (`endpoint.ttl`): Terraform and CloudFormation get
                its schedule, the time fixed now (a duration counts from the export).
            ttl_role: the role that schedule runs as (default: one of the stack's own).

        Returns:
            The exported text, where it went, and the plan's warnings.

        Raises:
            SpecError: an unknown format, or an `output` that cannot be written (before
                planning).
            CheckFailed: the plan fails a check.
        """
        check_export_format(format)
        target = check_output_path(output, "output", create_parents=False)
        from ..iac.export import export_text

        warnings: list[str] = []
        p = _planned(
            spec_or_model, spec_file, role, self.region, image, vllm_version, warnings,
            self._say, ttl=ttl, ttl_role=ttl_role,
        )  # fmt: skip
        text_ = export_text(p, format)
        if target is not None:
            try:
                target.write_text(text_)
            except OSError as e:
                raise SpecError(f"cannot write {target}: {e.strerror}") from None
        return ExportResult(format, p.names["endpoint"], text_, target, warnings)

    def iam_policy(
        self,
        spec_or_model: SpecInput = None,
        *,
        for_: str = "execution-role",
        account: str | None = None,
        spec_file: str | Path | None = None,
        role: str | None = None,
        image: str | None = None,
        vllm_version: str | None = None,
        ttl: str | float | None = None,
        ttl_role: str | None = None,
    ) -> IamPolicy:
        """The least-privilege policy for the planned deployment of `spec_or_model`.

        Args:
            spec_or_model: as `export` takes it.
            for_: "execution-role" (the role SageMaker runs the container as: permissions
                and trust policy) or "deployer" (whoever runs peagle's deploy, update,
                bench and delete: PassRole on the execution role, the SageMaker calls,
                Service Quotas, CloudWatch Logs and the S3 reads of preflight); "trainer"
                (whoever runs `drafter train`) or "training-role" (the role its training
                job runs as), which plan no deployment: `spec_or_model` is not needed.
            account: the 12-digit account for ARNs (default: the role's).
            spec_file: a spec file under a model name.
            role: the execution role's ARN.
            image: the serving image.
            vllm_version: the vLLM version of the serving image.
            ttl: the endpoint expires (`endpoint.ttl`): the deployer's policy covers its
                schedules and role.
            ttl_role: the role the expiry schedules run as.

        Returns:
            The policy (and, for a role, its trust policy).

        Raises:
            SpecError: a bad `for_` or `account` (before planning).
            CheckFailed: the plan fails a check.
        """
        if for_ not in IAM_POLICY_FOR:
            raise SpecError(
                text("{for_}: unknown value {v!r}", v=for_),
                remedy=f"use one of {', '.join(IAM_POLICY_FOR)}",
                field="for_",
                value=for_,
                rule=" or ".join(IAM_POLICY_FOR),
            )
        if account is not None and not re.fullmatch(r"\d{12}", str(account)):
            raise SpecError(
                text("{account}: {a!r} is not a 12-digit AWS account id", a=account),
                field="account",
                value=account,
                rule="12 digits",
            )
        if for_ in ("trainer", "training-role"):  # `drafter train`: no deployment to plan
            return _training_policy(for_, self.region, account, role, self._say)
        from ..iac.iam import execution_role_policy
        from ..iac.iam_deployer import deployer_policy
        from ..iac.iam_expiry import ttl_role_policy

        warnings: list[str] = []
        # This command is how the role gets made: "no role given" is the expected state
        # here, and the account the policy names is settled (or warned about) by the builder.
        p = _planned(
            spec_or_model,
            spec_file,
            role,
            self.region,
            image,
            vllm_version,
            warnings,
            self._say,
            quiet_checks=("role",),
            ttl=ttl,
            ttl_role=ttl_role,
        )
        build = {
            "deployer": deployer_policy,
            "ttl-role": ttl_role_policy,
        }.get(for_, execution_role_policy)
        result = build(p, account=account)
        for w in result.warnings:
            _warn("warning: " + w, warnings, self._say)  # + keeps a Text's parts
        return IamPolicy(
            endpoint=p.names["endpoint"],
            account=result.account,
            policy=result.policy,
            trust_policy=result.trust_policy,
            warnings=warnings,
            for_=for_,
        )


def _training_policy(
    for_: str, region: str | None, account: str | None, role: str | None, say: Progress | None
) -> IamPolicy:
    """`iam_policy(for_="trainer" | "training-role")` (iac/iam_training.py)."""
    from .. import settings
    from ..aws import resolve_region
    from ..iac.iam import partition
    from ..iac.iam_training import trainer_policy, training_role_policy

    region = region or resolve_region()
    if not region:
        raise SpecError(
            "a region is needed for the training policy's ARNs",
            remedy=text("pass {r} or set AWS_REGION", r=Param("region", "us-east-1")),
            field="region",
        )
    role = role or settings.role_arn()
    warnings: list[str] = []
    if account is None and role and re.match(r"arn:[^:]+:iam::\d{12}:", role):
        account = role.split(":")[4]
    if account is None:
        account = "<account>"
        _warn("warning: no account given: the ARNs name <account>", warnings, say)
    if role is None:
        role = f"arn:{partition(region)}:iam::{account}:role/<training-role>"
        if for_ == "trainer":
            _warn("warning: no role given: iam:PassRole names " + role, warnings, say)
    if for_ == "trainer":
        result = trainer_policy(region, account, role)
    else:
        result = training_role_policy(region, account)
    for w in result.warnings:
        _warn("warning: " + w, warnings, say)
    return IamPolicy(endpoint="", account=account, policy=result.policy,
                     trust_policy=result.trust_policy, warnings=warnings, for_=for_)  # fmt: skip


def check_export_format(fmt: str) -> None:
    """SpecError unless `fmt` is one `export` writes."""
    if fmt not in EXPORT_FORMATS:
        raise SpecError(
            text("{format}: unknown format {f!r}", f=fmt),
            remedy=f"use one of {', '.join(EXPORT_FORMATS)}",
            field="format",
            value=fmt,
            rule=", ".join(EXPORT_FORMATS),
        )


def _planned(
    spec_or_model: SpecInput,
    spec_file: str | Path | None,
    role: str | None,
    region: str | None,
    image: str | None,
    vllm_version: str | None,
    warnings: list[str],
    progress: Progress | None,
    quiet_checks: tuple[str, ...] = (),
    ttl: str | float | None = None,
    ttl_role: str | None = None,
) -> Any:
    """Resolve and plan as `peagle plan` does; a failed check raises CheckFailed. Warnings
    of the checks named in `quiet_checks` are not reported."""
    from ..lifecycle.resolve import plan
    from ..planning.spec.model import DeploymentSpec
    from ..planning.spec.options import SpecOptions, build_spec

    options = SpecOptions(
        role=role, region=region, image=image, vllm_version=vllm_version, ttl=ttl,
        ttl_role=ttl_role,
    )  # fmt: skip
    model: str | None = None
    base: dict[str, Any] | None = None
    if isinstance(spec_or_model, DeploymentSpec):
        base = spec_or_model.model_dump(mode="json", exclude_unset=True)
    elif isinstance(spec_or_model, dict):
        base = spec_or_model
    elif isinstance(spec_or_model, Path) or (
        spec_file is None and str(spec_or_model or "").endswith((".yaml", ".yml", ".json"))
    ):
        spec_file = spec_or_model
    elif spec_or_model is not None:
        model = str(spec_or_model)
    p = plan(build_spec(model, spec_file, options, base=base))
    p.raise_for_failures()
    for c in p.checks:
        if c.status == "warn" and c.name not in quiet_checks:
            # text(): keeps the parameters and calls the check names (the CLI words them)
            line = text("warning: {n}: {m}", n=c.name, m=as_text(c.message))
            line += text(" ({f})", f=as_text(c.fix)) if c.fix else ""
            _warn(line, warnings, progress)
    return p


def _warn(line: str, warnings: list[str], progress: Progress | None) -> None:
    warnings.append(line)
    if progress is not None:
        progress(line)
