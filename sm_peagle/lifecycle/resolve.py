"""Resolve and plan: `plan()` fills defaults from the environment and finds the JumpStart
spec (bundled snapshot, disk cache, or live), then runs the pure planner
(`planning.build`). The one resolve-and-plan step under the SDK: the public
`sm_peagle.plan` (`Client.plan`, in `sm_peagle.ops.deployment`, with every spec option a
typed keyword), `deploy`, `update`, `apply` and `adopt` all end here. It lives in
lifecycle because resolving may read JumpStart from S3."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import settings
from ..aws import has_credentials_hint, resolve_region
from ..catalog.models import ModelEntry, find_model
from ..catalog.names import model_remedy, unknown_model
from ..errors import SpecError, text
from ..planning.plan_result import Plan
from ..planning.spec.model import DeploymentSpec, Mode
from ..planning.spec.options import SpecOptions, build_spec
from .jumpstart_live import fetch_spec, find_hub_model_ids, read_cached_spec

__all__ = ["Inputs", "apply_environment", "plan", "resolve_inputs", "to_spec"]

# What to search the public hub for when a catalog model has no confirmed JumpStart id.
_HUB_KEYWORDS = {"qwen3-coder-30b-a3b-instruct": "qwen3-coder-30b-a3b"}


@dataclass
class Inputs:
    spec: DeploymentSpec
    jumpstart_spec: dict | None
    jumpstart_source: str
    notes: list[str]


def apply_environment(spec: DeploymentSpec) -> DeploymentSpec:
    """Region and role from the standard environment when the spec leaves them out."""
    updates: dict[str, Any] = {}
    if spec.region is None and (region := resolve_region()):
        updates["region"] = region
    if spec.role is None and (role := settings.role_arn()):
        updates["role"] = role
    if not updates:
        return spec
    from ..planning.spec.loading import spec_from_data

    return spec_from_data({**spec.model_dump(mode="json", exclude_unset=True), **updates})


def _needs_jumpstart(spec: DeploymentSpec) -> bool:
    wants_head = spec.speculative.mode != Mode.BASELINE and spec.drafter.source is None
    return spec.model_data is None or wants_head


def resolve_inputs(
    spec: DeploymentSpec, *, allow_live: bool | None = None, aws: Any = None
) -> Inputs:
    """Find the JumpStart spec for `spec.model` without touching AWS unless needed.

    Order: bundled snapshot (confirmed wiring) -> disk cache -> live fetch, the last only
    when credentials look present (or `allow_live`), so an offline plan never hangs.
    """
    spec = apply_environment(spec)
    region = spec.region or "us-east-1"
    model: ModelEntry | None = find_model(spec.model)
    notes: list[str] = []
    if (model and model.jumpstart_snapshot) or not _needs_jumpstart(spec):
        return Inputs(spec, None, "snapshot", notes)
    js_id = model.jumpstart_id if model else spec.model
    if js_id and (cached := read_cached_spec(js_id, region)):
        return Inputs(spec, cached, "cache", notes)
    live = has_credentials_hint() if allow_live is None else allow_live
    if not live:
        if model is None:
            raise unknown_model(spec.model)
        return Inputs(spec, None, "none", notes)

    from ..aws import AwsContext

    aws = aws or AwsContext(region)
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        if js_id is None and model is not None:
            keyword = _HUB_KEYWORDS.get(model.alias, model.alias)
            ids = find_hub_model_ids(aws.client("sagemaker", region), keyword)
            if len(ids) != 1:
                notes.append(f"public hub search {keyword!r} found {ids or 'nothing'}")
                return Inputs(spec, None, "none", notes)
            js_id = ids[0]
        spec_json = fetch_spec(js_id, region, s3_client=aws.client("s3", region))
        return Inputs(spec, spec_json, "live", notes)
    except (ClientError, BotoCoreError) as e:
        if model is None:
            code = getattr(e, "response", {}).get("Error", {}).get("Code")
            if code in ("NoSuchKey", "404", "ResourceNotFound"):  # a typo, most likely
                detail = f"JumpStart has no such model in {region}"
                raise unknown_model(spec.model, detail) from None
            raise SpecError(
                f"model: cannot resolve JumpStart model {spec.model!r} in {region}: {e}",
                remedy=text("{r}; check the id and your credentials", r=model_remedy(spec.model)),
            ) from None
        notes.append(f"JumpStart lookup failed: {e}")
        return Inputs(spec, None, "none", notes)


def to_spec(
    spec_or_model: DeploymentSpec | str | dict | Path,
    options: SpecOptions | Mapping[str, Any] | None = None,
) -> DeploymentSpec:
    """The spec `plan` starts from (pure: no lookup, no request): `spec_or_model` with the
    spec options given (a SpecOptions, or keywords: unknown names are a SpecError)."""
    if options is None:
        options = SpecOptions()
    elif not isinstance(options, SpecOptions):
        options = SpecOptions.from_keywords(dict(options))
    if isinstance(spec_or_model, DeploymentSpec):
        if options == SpecOptions():
            return spec_or_model
        base = spec_or_model.model_dump(mode="json", exclude_unset=True)
        return build_spec(None, None, options, base=base)
    if isinstance(spec_or_model, dict):
        return build_spec(None, None, options, base=spec_or_model)
    if isinstance(spec_or_model, Path) or str(spec_or_model).endswith((".yaml", ".yml", ".json")):
        return build_spec(None, spec_or_model, options)
    return build_spec(str(spec_or_model), None, options)


def plan(
    spec_or_model: DeploymentSpec | str | dict | Path,
    *,
    allow_live: bool | None = None,
    jumpstart_spec: dict | None = None,
    jumpstart_source: str | None = None,
    strict: bool = False,
    **overrides: Any,
) -> Plan:
    """Resolve and plan: the exact requests a deployment would send, and its checks
    (`.checks`; `.raise_for_failures()` raises CheckFailed). The SDK's internal entry;
    the public one is `sm_peagle.plan` (`Client.plan`), with typed keywords.

    `spec_or_model`: a DeploymentSpec, a dict, a spec file path, or a catalog alias /
    JumpStart id; `overrides`: k=, mode=, role=, instance_type=, autoscale="1:4", …
    (unknown names: SpecError). The JumpStart spec comes from the bundled snapshot, the
    disk cache or, with credentials (or `allow_live=True`), a live fetch; pass
    `jumpstart_spec=` to plan from a JumpStart spec you hold, with no lookup at all.
    `strict=True` (`--strict`) turns every warning into a failure."""
    from ..planning.build import plan as build_plan
    from ..planning.steps.drafter_checks import strict_checks
    from .shape_cache import install

    install()
    spec = to_spec(spec_or_model, overrides)
    if jumpstart_spec is not None:
        p = build_plan(
            apply_environment(spec),
            jumpstart_spec=jumpstart_spec,
            jumpstart_source=jumpstart_source or "snapshot",
        )
    else:
        inputs = resolve_inputs(spec, allow_live=allow_live)
        p = build_plan(
            inputs.spec,
            jumpstart_spec=inputs.jumpstart_spec,
            jumpstart_source=inputs.jumpstart_source,
        )
    if strict:
        p.checks, p.strict = strict_checks(p.checks), True
    return p
