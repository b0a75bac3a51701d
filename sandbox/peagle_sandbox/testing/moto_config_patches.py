"""Patches for moto's endpoint-config validation.

moto knows only ~70 old instance types, so every GPU peagle deploys to (g5, g6, g6e,
g7e, p4d, p5, p6) would be rejected: its list is swapped for botocore's own
``ProductionVariantInstanceType`` enum, so bogus names are still rejected. moto also
knows no ``InstancePools`` (capacity fallbacks); they are validated as AWS does. moto
stores ``ManagedInstanceScaling`` as sent and echoes it (``ScaleInPolicy`` included) in
DescribeEndpointConfig, but checks none of it: the ``ScaleInPolicy`` enum and ranges the
service model declares (which botocore's client-side validator does not enforce: it
checks no enum and no maximum) are checked here.
"""

from __future__ import annotations

import functools
from typing import Any

from moto.sagemaker.exceptions import ValidationError
from moto.sagemaker.models import FakeEndpointConfig

__all__ = ["config_patches", "scale_in_problem", "valid_instance_types"]


@functools.cache
def valid_instance_types() -> frozenset[str]:
    """Instance types SageMaker accepts for a production variant, per the installed botocore."""
    import botocore.session

    model = botocore.session.get_session().get_service_model("sagemaker")
    return frozenset(model.shape_for("ProductionVariantInstanceType").enum)


def scale_in_problem(variant: dict[str, Any], index: int) -> str | None:
    """AWS's constraint message for a ScaleInPolicy outside botocore's model, or None."""
    import botocore.session

    policy = (variant.get("ManagedInstanceScaling") or {}).get("ScaleInPolicy")
    if not policy:
        return None
    model = botocore.session.get_session().get_service_model("sagemaker")
    shape = model.shape_for("ProductionVariantManagedInstanceScalingScaleInPolicy")
    where = f"productionVariants.{index}.member.managedInstanceScaling.scaleInPolicy"
    for member, value in policy.items():
        spec = shape.members.get(member)
        field = f"{where}.{member[0].lower()}{member[1:]}"
        if spec is None:
            return f"Unknown parameter {member} at '{where}'"
        enum = spec.metadata.get("enum")
        if enum and value not in enum:
            return (
                f"Value '{value}' at '{field}' failed to satisfy constraint: "
                f"Member must satisfy enum value set: {list(enum)}"
            )
        low, high = spec.metadata.get("min"), spec.metadata.get("max")
        if low is not None and value < low:
            return (
                f"Value '{value}' at '{field}' failed to satisfy constraint: "
                f"Member must have value greater than or equal to {low}"
            )
        if high is not None and value > high:
            return (
                f"Value '{value}' at '{field}' failed to satisfy constraint: "
                f"Member must have value less than or equal to {high}"
            )
    return None


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
        for index, variant in enumerate(production_variants, start=1):
            problem = scale_in_problem(variant, index)
            if problem:
                raise ValidationError(message=f"1 validation error detected: {problem}")
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
