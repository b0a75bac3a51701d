"""Patches for moto's endpoint-config validation.

moto knows only ~70 old instance types, so every GPU peagle deploys to (g5, g6, g6e,
g7e, p4d, p5, p6) would be rejected: its list is swapped for botocore's own
``ProductionVariantInstanceType`` enum, so bogus names are still rejected. moto also
knows no ``InstancePools`` (capacity fallbacks); they are validated as AWS does.
"""

from __future__ import annotations

import functools
from typing import Any

from moto.sagemaker.exceptions import ValidationError
from moto.sagemaker.models import FakeEndpointConfig

__all__ = ["config_patches", "valid_instance_types"]


@functools.cache
def valid_instance_types() -> frozenset[str]:
    """Instance types SageMaker accepts for a production variant, per the installed botocore."""
    import botocore.session

    model = botocore.session.get_session().get_service_model("sagemaker")
    return frozenset(model.shape_for("ProductionVariantInstanceType").enum)


def config_patches() -> list[tuple[type, str, Any]]:
    """(class, attribute, replacement) triples; originals are captured at install time."""

    def validate_instance_type(self: FakeEndpointConfig, instance_type: str) -> None:
        allowed = valid_instance_types()
        if instance_type not in allowed:
            # Same wording as moto's (and AWS's) enum error, with the up-to-date value set.
            raise ValidationError(
                message=f"Value '{instance_type}' at 'instanceType' failed to satisfy "
                f"constraint: Member must satisfy enum value set: {sorted(allowed)}"
            )

    original_validate_variants = FakeEndpointConfig.validate_production_variants

    def validate_production_variants(
        self: FakeEndpointConfig, production_variants: list[dict[str, Any]]
    ) -> None:
        # moto only knows InstanceType / ServerlessConfig variants; AWS also takes
        # InstancePools (capacity fallbacks, 1-5 pools, distinct priorities).
        plain = []
        for variant in production_variants:
            pools = variant.get("InstancePools")
            if pools and "InstanceType" not in variant:
                if not 1 <= len(pools) <= 5:
                    raise ValidationError(message="InstancePools must hold 1 to 5 pools")
                if len({p["Priority"] for p in pools}) != len(pools):
                    raise ValidationError(message="InstancePools priorities must be distinct")
                for pool in pools:
                    validate_instance_type(self, pool["InstanceType"])
            else:
                plain.append(variant)
        original_validate_variants(self, plain)

    return [
        (FakeEndpointConfig, "validate_instance_type", validate_instance_type),
        (FakeEndpointConfig, "validate_production_variants", validate_production_variants),
    ]
