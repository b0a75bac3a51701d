"""spec -> Plan: the exact SageMaker requests a deployment will send, and why.

`plan()` is pure: no boto3, no network. Given the same spec (and the same JumpStart
spec, when one is passed) it returns the same requests. `peagle plan`, `deploy
--dry-run`, the IaC exports and the lifecycle all start from it. It is a pipeline of
named steps, each in the module that owns it:

1. resolve the sources      sources.resolve_sources
2. the speculative config   speculative.plan_speculative
3. build the environment    environment.build_environment
4. the checks               plan_checks.check_deployment
5. the requests             requests.build_requests
6. pools and scaling        scaling.add_fallback_pools, scaling.add_autoscaling
7. inference components     components.add_inference_components (hosting only)
8. speculation health       monitoring.add_monitoring (`monitoring:` only)
9. the next update's rollout rollout.add_rollout (`endpoint.rollout` only)
10. the expiry              expiry.add_expiry (`endpoint.ttl` only)
   and the request shapes   aws_shapes.check_request_shapes
"""

from __future__ import annotations

from ..catalog.availability import availability as offered_in
from ..catalog.regional_prices import price_in
from ..checks import Check, failed, passed
from ..errors import text
from ..vllm.versions import DEFAULT_VLLM
from .components.hosting import add_inference_components
from .monitoring import add_monitoring
from .plan_result import DEFAULT_REGION, PLACEHOLDER_ROLE, Plan, variant_instance_types
from .spec.model import DeploymentSpec
from .steps.aws_shapes import check_request_shapes
from .steps.checks import check_deployment
from .steps.environment import build_environment
from .steps.expiry import add_expiry
from .steps.requests import build_requests, default_names
from .steps.rollout import add_rollout
from .steps.scaling import add_autoscaling, add_fallback_pools
from .steps.sources import resolve_sources
from .steps.speculative import k_origin, plan_speculative

__all__ = ["Plan", "plan", "PLACEHOLDER_ROLE", "DEFAULT_REGION", "DEFAULT_VLLM", "default_names"]


def plan(
    spec: DeploymentSpec, *, jumpstart_spec: dict | None = None, jumpstart_source: str = "snapshot"
) -> Plan:
    """Build the plan. Raises SpecError when no requests can be built at all."""
    checks: list[Check] = []
    src = resolve_sources(spec, jumpstart_spec, jumpstart_source, checks)
    speculative = plan_speculative(spec, src, checks)
    env = build_environment(spec, src, speculative.config, checks)
    ami = check_deployment(spec, src, env, checks)
    price = price_in(src.instance, src.region, spec.endpoint.instance_count)
    names, create_model, create_config, create_endpoint = build_requests(
        spec, src, env, ami, checks
    )
    availability = check_availability(create_config, src.region, checks)
    p = Plan(
        spec=spec,
        region=src.region,
        names=names,
        create_model=create_model,
        create_endpoint_config=create_config,
        create_endpoint=create_endpoint,
        speculative_config=speculative.config,
        checks=checks,
        usd_per_hour=price.usd_per_hour,
        price=price,
        availability=availability,
        vllm_version=str(src.version),
        image=src.image,
        instance=src.instance,
        model=src.model,
        jumpstart=src.jumpstart,
        drafter_push=src.drafter_push,
        spec_sha256=spec.sha256(),
        k_origin=k_origin(spec, src, speculative.k),
    )
    add_fallback_pools(
        p, lambda sub: plan(sub, jumpstart_spec=jumpstart_spec, jumpstart_source=jumpstart_source)
    )
    add_autoscaling(p)
    add_inference_components(
        p, lambda sub: plan(sub, jumpstart_spec=jumpstart_spec, jumpstart_source=jumpstart_source)
    )
    add_monitoring(p)
    add_rollout(p)
    add_expiry(p)
    p.checks.append(check_request_shapes(p))
    return p


def check_availability(create_config: dict, region: str, checks: list[Check]) -> list[str]:
    """Each instance type of the variant (fallback pools too) against peagle's shipped
    regional data: a check when the data knows (pass: offered; fail: not offered, nothing
    is sent), and one plan line per type either way ("availability unknown" when the data
    does not know: no check then, since nothing was checked; preflight asks AWS)."""
    lines = []
    for name in variant_instance_types(create_config["ProductionVariants"][0]):
        found = offered_in(name, region)
        lines.append(found.line)
        if found.status == "offered":
            checks.append(passed("region", found.line))
        elif found.status == "not offered":
            checks.append(
                failed(
                    "region",
                    found.line,
                    text("pick a type offered there, or another {region}"),
                    field="region",
                )
            )
    return lines
