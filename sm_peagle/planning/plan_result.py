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
from .spec.model import DeploymentSpec

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
