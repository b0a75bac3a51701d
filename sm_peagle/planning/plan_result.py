"""The plan itself: the exact requests a deployment sends, the checks behind them, and
what it costs. Built by `planning.build.plan()`; sent by `lifecycle`; rendered by the
CLI and the IaC exports. A plain dataclass: no I/O."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from ..catalog.instances import InstanceType
from ..catalog.jumpstart import JumpStartResolution
from ..catalog.models import ModelEntry
from ..catalog.regional_prices import RegionalPrice
from ..checks import Check, any_failed
from ..errors import CheckFailed
from .monitoring import MonitoringPlan
from .rollout import RolloutPlan
from .spec.model import DeploymentSpec
from .steps.expiry import PlannedExpiry

__all__ = ["DEFAULT_REGION", "PLACEHOLDER_ROLE", "KOrigin", "Plan", "variant_instance_types"]

PLACEHOLDER_ROLE = "arn:aws:iam::000000000000:role/peagle-placeholder-execution-role"
DEFAULT_REGION = "us-east-1"


@dataclass(frozen=True)
class KOrigin:
    """Where the plan's K came from, so a K nobody typed is never a mystery: `source` is
    "spec" (-k or speculative.num_speculative_tokens), "k_schedule" (the schedule's
    largest K), "jumpstart" (the JumpStart config's SM_VLLM_SPECULATIVE_CONFIG),
    "head_card" (the head's model card) or "peagle" (peagle's fallback); `reason` says it
    in words. `trained_k`/`recommended_k`: the head's, when known."""

    k: int
    source: str
    reason: str
    trained_k: int | None = None
    recommended_k: int | None = None

    def describe(self) -> str:
        """K=3 (JumpStart's default for this model; the head was trained for 10, 7
        recommended)."""
        from ..errors import as_text, text

        head = ""
        if self.trained_k is not None and self.recommended_k is not None:
            head = f"; the head was trained for {self.trained_k}, {self.recommended_k} recommended"
        elif self.trained_k is not None:
            head = f"; the head was trained for {self.trained_k}"
        elif self.recommended_k is not None:
            head = f"; {self.recommended_k} recommended for the head"
        # text(): a reason naming a keyword (`given with k=`) keeps it for the CLI (-k)
        return text("K={k} ({reason}{head})", k=self.k, reason=as_text(self.reason), head=head)

    def to_dict(self) -> dict[str, Any]:
        """The `k_origin` of `peagle plan --json`."""
        return {**asdict(self), "text": self.describe()}


@dataclass
class Plan:
    """What a deployment would do, computed without a request to AWS: the exact SageMaker
    requests it sends, the checks behind them (the model and its head, the instance type,
    the vLLM version, K, the fit in GPU memory, the role, the request shapes) and what it
    costs. `sm_peagle.plan()` returns one; `deploy()` sends it; `to_dict()` is the
    `peagle plan --json` document.

    Attributes:
        spec: the deployment spec the plan was built from, defaults filled in.
        region: the AWS region the requests are for.
        names: the names the run creates: `endpoint`, `endpoint_config`, `model`.
        create_model: the CreateModel request (its `AdditionalModelDataSources` carry
            the drafter head).
        create_endpoint_config: the CreateEndpointConfig request.
        create_endpoint: the CreateEndpoint request.
        speculative_config: the vLLM speculative config the container gets (None for
            the baseline).
        checks: every check, passed, warned or failed; `ok` is False when one failed.
        usd_per_hour: the estimated price of the instances per hour, or None when it is
            not known for the region (`price` says why).
        vllm_version: the vLLM version of the serving image.
        image: the serving image URI.
        instance: the instance type's facts (GPUs, memory) the fit check used.
        model: the catalog entry of the target model, or None for a model outside the
            catalog.
        jumpstart: how the JumpStart model id resolved (model id, version, config), or
            None.
        drafter_push: where a local drafter head is uploaded before the model is created
            (`source`, `destination`), or None.
        spec_sha256: the hash of the spec, in the resource names and tags (drift
            detection).
        autoscaling: the Application Auto Scaling requests, (operation, request), run
            once the endpoint is InService.
        pool_models: the CreateModel requests of the capacity fallback pools.
        inference_components: the CreateInferenceComponent requests of an
            inference-components endpoint.
        component_models: the CreateModel requests of the components that name a model.
        price: the price behind `usd_per_hour` (its region and source, or why it is
            unknown there), or None.
        availability: whether each instance type is offered in the region, as peagle's
            shipped data says, one line per type.
        strict: planned with `strict=True`: deploy's preflight fails on a warning from
            the heads it reads from S3 too.
        k_origin: where K came from (the spec, the head's card, JumpStart, peagle's
            default) and why; None for the baseline.
        component_k_origins: each component's `k_origin`, by component name.
        monitoring: the speculation-health requests (log group, transformer, metric
            filters, alarm, dashboard), or None without `monitoring:`.
        rollout: how the next `update` moves traffic (`endpoint.rollout`): its
            DeploymentConfig for the spec's fleet and its rollback alarms, or None
            without a rollout (or when the fleet cannot take it: the `rollout` check
            says why). Deploy never sends it.
        expiry: the schedules that delete the endpoint when its TTL runs out
            (`endpoint.ttl`), the role they run as and its policies, or None without a
            TTL. A plan has no deploy time: a relative TTL shows as "deploy start + 4h".
    """

    spec: DeploymentSpec
    region: str
    names: dict[str, str]
    create_model: dict[str, Any]
    create_endpoint_config: dict[str, Any]
    create_endpoint: dict[str, Any]
    speculative_config: dict[str, Any] | None
    checks: list[Check]
    usd_per_hour: float | None
    vllm_version: str
    image: str
    instance: InstanceType
    model: ModelEntry | None
    jumpstart: JumpStartResolution | None = None
    drafter_push: dict[str, str] | None = None
    spec_sha256: str = ""
    # (operation, kwargs) for application-autoscaling, run after the endpoint is InService.
    autoscaling: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    # create_model kwargs of the capacity fallback pools (ModelNameOverride targets).
    pool_models: list[dict[str, Any]] = field(default_factory=list)
    # endpoint.hosting: inference-components (planning.components): CreateInferenceComponent
    # kwargs, and the CreateModel kwargs of the components that name a model.
    inference_components: list[dict[str, Any]] = field(default_factory=list)
    component_models: list[dict[str, Any]] = field(default_factory=list)
    # The price behind usd_per_hour: its region and source, or why it is unknown there.
    price: RegionalPrice | None = None
    # Whether the instance types are offered in the region, per peagle's shipped data
    # (catalog/availability.py): one line per type; "availability unknown" when not known.
    availability: list[str] = field(default_factory=list)
    # Planned with --strict (SDK strict=True): deploy preflight fails a warning of the
    # heads it reads from S3 too, as the plan failed its own.
    strict: bool = False
    # Where K came from (None for baseline); with components, each component's by name.
    k_origin: KOrigin | None = None
    component_k_origins: dict[str, KOrigin] = field(default_factory=dict)
    # `monitoring:` (planning/monitoring.py): the CloudWatch Logs and CloudWatch requests
    # for speculation health, sent before CreateEndpoint; None when not asked for.
    monitoring: MonitoringPlan | None = None
    # `endpoint.rollout` (planning/steps/rollout.py): what the next update sends; the plan's
    # fleet is the spec's instance_count and it reads no live metric (its notes say so).
    rollout: RolloutPlan | None = None
    # `endpoint.ttl` (planning/steps/expiry.py): the schedules, the role, the tags.
    expiry: PlannedExpiry | None = None

    @property
    def ok(self) -> bool:
        """True when no check failed (warnings do not count)."""
        return not any_failed(self.checks)

    def raise_for_failures(self) -> None:
        """Raise CheckFailed, naming every failed check, unless the plan is ok."""
        if not self.ok:
            raise CheckFailed(self.checks)

    def to_dict(self) -> dict[str, Any]:
        """The `peagle plan --json` document."""
        return {
            "create_model": self.create_model,
            "create_endpoint_config": self.create_endpoint_config,
            "create_endpoint": self.create_endpoint,
            "speculative_config": self.speculative_config,
            "k_origin": self.k_origin.to_dict() if self.k_origin else None,
            "checks": [
                {
                    "name": c.name,
                    "status": c.status,
                    "message": c.message,
                    **({"fix": c.fix} if c.fix else {}),
                }
                for c in self.checks
            ],
            "estimate": {
                "usd_per_hour": self.usd_per_hour,
                "region": self.price.region if self.price else self.region,
                "source": self.price.source if self.price else None,
            }
            if self.usd_per_hour is not None
            else None,
            # Why there is no estimate (e.g. peagle's price is for another region).
            "price_note": self.price.note if self.price else None,
            "availability": self.availability,
            "region": self.region,
            "names": self.names,
            "vllm_version": self.vllm_version,
            "mode": self.spec.speculative.mode.value,
            "drafter_push": self.drafter_push,
            "pool_models": self.pool_models,
            "hosting": self.spec.endpoint.hosting,
            "component_models": self.component_models,
            "create_inference_components": self.inference_components,
            "component_k_origins": {
                name: origin.to_dict() for name, origin in self.component_k_origins.items()
            },
            "autoscaling": [{"operation": op, "request": req} for op, req in self.autoscaling],
            "monitoring": self.monitoring.to_dict() if self.monitoring else None,
            "rollout": self.rollout.to_dict() if self.rollout else None,
            "expiry": self.expiry.to_dict() if self.expiry else None,
            "spec_sha256": self.spec_sha256,
            "jumpstart": {
                "model_id": self.jumpstart.model_id,
                "version": self.jumpstart.version,
                "config": self.jumpstart.config_name,
                "source": self.jumpstart.source,
            }
            if self.jumpstart
            else None,
        }


def variant_instance_types(variant: dict[str, Any]) -> list[str]:
    """The instance types a ProductionVariant may run on, in priority order."""
    pools = variant.get("InstancePools") or []
    if pools:
        return [p["InstanceType"] for p in sorted(pools, key=lambda p: p["Priority"])]
    return [variant["InstanceType"]]
