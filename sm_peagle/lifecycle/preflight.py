"""Checks against AWS before anything is created: a failure here costs seconds and
leaves nothing behind, instead of an hour-long failed deployment."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import unquote

from ..checks import Check, any_failed, failed, passed, warned
from ..errors import (
    Call,
    CheckFailed,
    InstanceTypeUnavailable,
    Param,
    PreflightFailed,
    QuotaExceeded,
    text,
)
from ..planning.plan_result import PLACEHOLDER_ROLE, Plan, variant_instance_types
from ..planning.steps.drafter_checks import STRICT, strict_checks

_DENIED = ("AccessDenied", "AccessDeniedException", "UnauthorizedOperation")


def _code(e: Exception) -> str:
    return getattr(e, "response", {}).get("Error", {}).get("Code", "")


def check_role(iam: Any, role_arn: str) -> Check:
    from botocore.exceptions import ClientError

    if role_arn == PLACEHOLDER_ROLE:
        return failed(
            "role",
            "no execution role: the plan holds a placeholder ARN",
            text(
                "pass {role} or set PEAGLE_ROLE_ARN",
                role=Param("role", "arn:aws:iam::<account>:role/<name>"),
            ),
        )
    name = role_arn.split("/")[-1]
    try:
        role = iam.get_role(RoleName=name)["Role"]
    except ClientError as e:
        if _code(e) == "NoSuchEntity":
            return failed(
                "role",
                f"role {role_arn} does not exist",
                text("create it (see `{p}`) or pass another {role}", p=Call("iam_policy")),
            )
        if _code(e) in _DENIED:
            return warned("role", f"cannot read role {name} (iam:GetRole denied); not checked")
        raise
    doc = role.get("AssumeRolePolicyDocument") or {}
    if isinstance(doc, str):
        doc = json.loads(unquote(doc))
    for stmt in doc.get("Statement", []):
        principals = (stmt.get("Principal") or {}).get("Service", [])
        principals = [principals] if isinstance(principals, str) else principals
        if stmt.get("Effect") == "Allow" and "sagemaker.amazonaws.com" in principals:
            return passed("role", f"{name} trusts sagemaker.amazonaws.com")
    return failed(
        "role",
        f"role {name} does not trust sagemaker.amazonaws.com",
        "add sagemaker.amazonaws.com to its trust policy",
    )


def _split(uri: str) -> tuple[str, str]:
    bucket, _, key = uri[len("s3://") :].partition("/")
    return bucket, key


def check_s3_source(s3: Any, label: str, uri: str, data_type: str) -> Check:
    """The prefix exists, is readable, and has no zero-byte 'folder' keys (which break
    SageMaker's S3Prefix download)."""
    from botocore.exceptions import ClientError

    bucket, key = _split(uri)
    try:
        if data_type == "S3Object":
            s3.head_object(Bucket=bucket, Key=key)
            return passed(label, f"{uri} exists")
        pages = s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=key)
        count, folders = 0, []
        for page in pages:
            for obj in page.get("Contents", []):
                count += 1
                if obj["Key"].endswith("/"):
                    folders.append(obj["Key"])
    except ClientError as e:
        code = _code(e)
        if code in _DENIED or code == "403":
            return warned(
                label,
                f"cannot list {uri} with your credentials; not checked "
                "(SageMaker reads it with the execution role)",
            )
        if code in ("NoSuchBucket", "404", "NoSuchKey"):
            return failed(label, f"{uri} does not exist ({code})", "check the S3 URI")
        raise
    if count == 0:
        return failed(label, f"no objects under {uri}", "upload the files, or fix the prefix")
    if folders:
        return failed(
            label,
            f"zero-byte folder key {folders[0]} under {uri} breaks the SageMaker download",
            "delete the folder keys (`aws s3 rm` each)",
        )
    return passed(label, f"{count} objects under {uri}")


def check_names_free(sm: Any, plan: Plan) -> list[Check]:
    """Each name the deploy would create is free. A taken config or model that the live
    endpoint of this name uses is that endpoint's, not a leftover: its fix deletes the
    endpoint (or picks another name), never `gc`, which keeps what an endpoint uses."""
    from botocore.exceptions import ClientError

    endpoint = plan.names["endpoint"]
    out = []
    probes = [
        ("endpoint", sm.describe_endpoint, "EndpointName", endpoint),
        (
            "endpoint config",
            sm.describe_endpoint_config,
            "EndpointConfigName",
            plan.names["endpoint_config"],
        ),
        ("model", sm.describe_model, "ModelName", plan.names["model"]),
    ]
    in_use: set[str] = set()  # the live endpoint's config and the models it runs
    clash = None  # the live endpoint's own check; the config and model it uses join it
    used: list[str] = []
    for kind, call, arg, name in probes:
        try:
            found = call(**{arg: name})
        except ClientError as e:
            if "Could not find" in str(e) or _code(e) == "ValidationException":
                continue
            raise
        if kind == "endpoint":
            in_use |= _used_by(sm, found.get("EndpointConfigName"))
            clash = len(out)
            out.append(failed("name", f"endpoint {name} already exists"))  # fix: below
        elif name in in_use:
            used.append(f"{kind} {name}")
        else:
            out.append(
                failed(
                    "name",
                    f"{kind} {name} already exists",
                    text("`{gc}` removes leftovers of earlier runs", gc=Call("gc", yes=False)),
                )
            )
    if clash is not None:
        # One fix for the endpoint and what it uses: deleting it removes them (gc keeps
        # what a live endpoint uses, so it is never their fix).
        also = f" and uses {' and '.join(used)}" if used else ""
        with_them = " with them" if used else ""
        out[clash] = failed(
            "name",
            f"endpoint {endpoint} already exists{also}",
            text(
                "`{delete}` removes it{with_them}, or pass {name}",
                delete=Call("delete", endpoint),
                with_them=with_them,
            ),
        )
    return out or [passed("name", f"{endpoint} is free")]


def _used_by(sm: Any, config: str | None) -> set[str]:
    """The config and its variants' models (empty if it cannot be read)."""
    from botocore.exceptions import ClientError

    if not config:
        return set()
    try:
        variants = sm.describe_endpoint_config(EndpointConfigName=config)["ProductionVariants"]
    except (ClientError, KeyError):
        return {config}
    return {config} | {v["ModelName"] for v in variants if v.get("ModelName")}


ENDPOINT_USAGE = " for endpoint usage"  # "<instance type> for endpoint usage"


def list_sagemaker_quotas(quotas: Any) -> list[dict[str, Any]]:
    """Every SageMaker quota Service Quotas lists in the client's region (all pages)."""
    pages = quotas.get_paginator("list_service_quotas").paginate(ServiceCode="sagemaker")
    return [q for page in pages for q in page.get("Quotas", [])]


def check_offered(listed: list[dict[str, Any]], instance_type: str, region: str) -> Check | None:
    """Is `instance_type` offered for SageMaker endpoints in `region`? None: no answer.

    Why Service Quotas: SageMaker has no API that lists the instance types it hosts in a
    region (botocore's InstanceType enum is global, and CreateEndpointConfig, the first
    call that would refuse one, comes after CreateModel). Service Quotas is regional and
    holds one "<type> for endpoint usage" quota for each instance type SageMaker hosts in
    that region (endpoint quotas are per instance type and region); preflight lists them
    anyway for the quota check. So a region whose list holds endpoint-usage quotas, but
    none for this type, does not host it. A list with no endpoint-usage quota at all
    (denied, empty, partial) proves nothing: no check then.
    """
    usage = [q for q in listed if str(q.get("QuotaName", "")).endswith(ENDPOINT_USAGE)]
    if not usage:
        return None
    wanted = f"{instance_type}{ENDPOINT_USAGE}"
    if any(q.get("QuotaName") == wanted for q in usage):
        return passed("region", f"{instance_type} is offered for endpoints in {region}")
    return failed(
        "region",
        f"{instance_type} is not offered for SageMaker endpoints in {region} "
        f"(Service Quotas there lists no '{wanted}' among {len(usage)} endpoint quotas)",
        text("choose another {instance_type}, or a {region} that offers it"),
    )


def check_quota(
    quotas: Any,
    instance_type: str,
    count: int,
    listed: list[dict[str, Any]] | None = None,
    *,
    usage: str = ENDPOINT_USAGE,
    who: str = "the plan",
) -> Check:
    """Endpoint quotas are per instance type and often 0 by default. `listed`: the
    region's SageMaker quotas when already read (list_sagemaker_quotas), else read here.
    `usage`: the quota name's suffix (training's is " for training job usage"); `who`
    needs `count` of them, in the failure's words."""
    from botocore.exceptions import BotoCoreError, ClientError

    wanted = f"{instance_type}{usage}"
    try:
        for q in listed if listed is not None else list_sagemaker_quotas(quotas):
            if q.get("QuotaName") == wanted:
                value = int(q.get("Value", 0))
                if value < count:
                    return failed(
                        "quota",
                        f"quota '{wanted}' is {value}, {who} needs {count}",
                        f"request an increase in Service Quotas (code {q.get('QuotaCode', '?')})",
                    )
                return passed("quota", f"'{wanted}' = {value}")
    except (ClientError, BotoCoreError, NotImplementedError) as e:
        return warned(
            "quota", f"cannot read Service Quotas ({_code(e) or type(e).__name__}); not checked"
        )
    return warned("quota", f"no quota named '{wanted}' visible; not checked")


def check_remote_head(s3: Any, uri: str, plan: Plan) -> list[Check]:
    """The drafter checks on an S3 head (a JumpStart head too), by ranged GETs of the
    safetensors headers: a few KB per file, never the weights."""
    from ..drafter.inspect import inspect_drafter
    from ..planning.steps.drafter_checks import judge_drafter
    from ..vllm.versions import VllmVersion

    spec = plan.spec
    head = plan.model.drafter if (plan.model and spec.drafter.source is None) else None
    config = plan.speculative_config or {}
    return judge_drafter(
        uri,
        lambda source: inspect_drafter(source, s3_client=s3),
        model=plan.model,
        vllm_version=VllmVersion(plan.vllm_version),
        mode=spec.speculative.mode.value,
        k=config.get("num_speculative_tokens"),
        trained_k=spec.drafter.trained_k or (head.trained_k if head else None),
    )


def check_region_and_quotas(quotas: Any, plan: Plan) -> list[Check]:
    """For each instance type of the variant (every fallback pool holds quota too): is it
    offered in the plan's region (check_offered), then is its quota enough (check_quota).
    The region's quota list is read once for all of them."""
    from botocore.exceptions import BotoCoreError, ClientError

    variant = plan.create_endpoint_config["ProductionVariants"][0]
    types = variant_instance_types(variant)
    try:
        listed: list[dict[str, Any]] | None = list_sagemaker_quotas(quotas)
    except (ClientError, BotoCoreError, NotImplementedError):
        listed = None  # unknown offer; check_quota tries once more and says it could not
    out: list[Check] = []
    for instance_type in types:
        offered = check_offered(listed or [], instance_type, plan.region)
        if offered is not None:
            out.append(offered)
            if offered.status == "fail":
                continue  # no quota to judge for a type the region does not host
        out.append(check_quota(quotas, instance_type, variant["InitialInstanceCount"], listed))
    return out


def run_preflight(plan: Plan, aws: Any) -> list[Check]:
    """Run every preflight check; raise PreflightFailed (or QuotaExceeded) on a failure."""
    checks = [check_role(aws.client("iam"), plan.create_model["ExecutionRoleArn"])]
    if checks[0].status != "fail":
        container = plan.create_model["PrimaryContainer"]
        s3 = aws.client("s3")
        if "ModelDataSource" in container:
            src = container["ModelDataSource"]["S3DataSource"]
            checks.append(check_s3_source(s3, "model_data", src["S3Uri"], src["S3DataType"]))
        head: list[Check] = []
        for extra in container.get("AdditionalModelDataSources", []):
            src = extra["S3DataSource"]
            if plan.drafter_push and src["S3Uri"] == plan.drafter_push["destination"]:
                continue  # a local head: checked by plan, pushed by this deploy
            exists = check_s3_source(s3, "drafter.source", src["S3Uri"], src["S3DataType"])
            head.append(exists)
            if exists.status == "pass":
                head += check_remote_head(s3, src["S3Uri"], plan)
        # --strict reaches the heads read here as it reached the plan's local head.
        checks += strict_checks(head) if plan.strict else head
        checks += check_names_free(aws.client("sagemaker"), plan)
        # Best effort: a denied or missing Service Quotas API must not cost minutes of
        # retries, so this client tries twice.
        quotas = aws.client("service-quotas", retries={"mode": "standard", "max_attempts": 2})
        checks += check_region_and_quotas(quotas, plan)
    if any_failed(checks):
        bad = [c for c in checks if c.status == "fail"]
        if all(c.message.endswith(STRICT) for c in bad):
            # Only warnings --strict refuses: the caller's rule, not AWS's state; exit 2
            # as the plan's own strict failures.
            refused = CheckFailed(checks)
            refused.message += "; nothing was created"
            raise refused
        cls = QuotaExceeded if all(c.name == "quota" for c in bad) else PreflightFailed
        if any(c.name == "region" for c in bad):
            cls = InstanceTypeUnavailable  # a wrong type or region: exit 2
        # Every failed check with its own fix; the last one's fix is the error's remedy.
        # c.line(): each keeps the parameters and calls it names (the CLI words them)
        last = bad[-1]
        parts = {f"c{i}": c.line() for i, c in enumerate(bad[:-1])}
        parts["last"] = last.line(with_fix=False)
        joined = text("; ".join(f"{{{key}}}" for key in parts), **parts)
        err = cls("preflight " + joined + "; nothing was created", remedy=last.fix)
        err.checks = checks  # type: ignore[attr-defined]
        raise err
    return checks
