"""The impure step before `plan()`: fill defaults from the environment and find the
JumpStart spec (bundled snapshot, disk cache, or live), so that plan stays pure."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from ..aws import has_credentials_hint, resolve_region
from ..catalog.models import ModelEntry, find_model
from ..catalog.names import model_remedy, unknown_model
from ..errors import SpecError
from ..planning.specs import DeploymentSpec, Mode
from .jumpstart_live import fetch_spec, find_hub_model_ids, read_cached_spec

__all__ = ["Inputs", "apply_environment", "plan_resolved", "resolve_inputs"]

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
    if spec.role is None and (role := os.environ.get("PEAGLE_ROLE_ARN")):
        updates["role"] = role
    if not updates:
        return spec
    from ..planning.spec_loading import spec_from_data

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
                remedy=f"{model_remedy(spec.model)}; check the id and your credentials",
            ) from None
        notes.append(f"JumpStart lookup failed: {e}")
        return Inputs(spec, None, "none", notes)


def plan_resolved(spec: DeploymentSpec, *, allow_live: bool | None = None) -> Any:
    """Resolve the inputs (snapshot / cache / live JumpStart), then plan purely: what
    `peagle plan`, `sm_peagle.plan_for` and `apply` all do."""
    from ..planning.build import plan

    inputs = resolve_inputs(spec, allow_live=allow_live)
    return plan(
        inputs.spec, jumpstart_spec=inputs.jumpstart_spec, jumpstart_source=inputs.jumpstart_source
    )
