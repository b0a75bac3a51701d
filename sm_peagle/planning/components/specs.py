"""The spec of inference-component hosting: several configurations of one model on one
endpoint, each a SageMaker inference component with its own copies and accelerators,
and the endpoint's managed instance scaling (down to zero instances when asked).

Selected by `endpoint.hosting: inference-components`; the requests are built by
`planning.components`. Single-field rules live here; rules that need the catalog or the
resolved plan (accelerators vs GPUs and TP, copies x accelerators vs instances) are
checks in `planning.components`.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ...errors import SpecError
from ...errors import text as words

__all__ = [
    "ComponentSpec",
    "InferenceComponentsSpec",
    "ScaleInSpec",
    "parse_component",
    "HOSTING_CHOICES",
    "SCALE_IN_STRATEGIES",
]

HOSTING_CHOICES = ("endpoint", "inference-components")
MODES = ("p-eagle", "eagle3", "baseline")
# A component's short name becomes part of SageMaker names (letters, digits, hyphens).
COMPONENT_NAME_RE = re.compile(r"^[a-z0-9](-?[a-z0-9])*$")
COMPONENT_NAME_MAX = 16


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


# ProductionVariantManagedInstanceScaling.ScaleInPolicy (botocore 1.44 sagemaker model):
# Strategy is the enum ManagedInstanceScalingScaleInStrategy; MaximumStepSize (min 1,
# max 100) and CooldownInMinutes (min 5, max 1440) are documented as governing
# consolidation scale-in. botocore's ParamValidator checks neither enums nor maxima, so
# they are checked here.
SCALE_IN_STRATEGIES = {"idle-release": "IDLE_RELEASE", "consolidation": "CONSOLIDATION"}


class ScaleInSpec(_Strict):
    """How managed instance scaling releases instances (`ScaleInPolicy`). In a spec,
    `scale_in: idle-release` is short for `scale_in: {strategy: idle-release}`."""

    strategy: Literal["idle-release", "consolidation"] = Field(
        description="idle-release: release instances that host no component copies; "
        "consolidation: move copies onto fewer instances to release more."
    )
    max_step_size: int | None = Field(
        default=None,
        ge=1,
        le=100,
        description="Consolidation only: instances terminated at a time (AWS default 1).",
    )
    cooldown_minutes: int | None = Field(
        default=None,
        ge=5,
        le=1440,
        description="Consolidation only: minutes after the last endpoint operation before "
        "consolidation is evaluated (AWS default 20).",
    )

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, v: Any) -> Any:
        if isinstance(v, str):
            v = {"strategy": v}
        if isinstance(v, dict) and v.get("strategy") is None:
            raise ValueError(
                words(
                    "a scale-in policy needs its strategy: idle-release or consolidation "
                    "({scale_in_strategy})"
                )
            )
        if isinstance(v, dict) and isinstance(v.get("strategy"), str):
            # The API's spelling (IDLE_RELEASE) is accepted too.
            given = v["strategy"]
            by_api = {api: ours for ours, api in SCALE_IN_STRATEGIES.items()}
            v = {**v, "strategy": by_api.get(given, given)}
        return v

    @model_validator(mode="after")
    def _consolidation_only(self) -> ScaleInSpec:
        extra = [f for f in ("max_step_size", "cooldown_minutes") if getattr(self, f) is not None]
        if extra and self.strategy != "consolidation":
            raise ValueError(
                f"{' and '.join(extra)}: consolidation scale-in only (SageMaker's "
                f"ScaleInPolicy docs); with {self.strategy} drop it or use consolidation"
            )
        return self

    def request(self) -> dict[str, Any]:
        """The ScaleInPolicy request member: only what was given."""
        out: dict[str, Any] = {"Strategy": SCALE_IN_STRATEGIES[self.strategy]}
        if self.max_step_size is not None:
            out["MaximumStepSize"] = self.max_step_size
        if self.cooldown_minutes is not None:
            out["CooldownInMinutes"] = self.cooldown_minutes
        return out


class ComponentSpec(_Strict):
    """One configuration of the model: a mode, K, and its share of the instances."""

    name: str = Field(description="Short name: p-eagle, baseline, k7 ... (part of AWS names).")
    mode: Literal["p-eagle", "eagle3", "baseline"] | None = Field(
        default=None, description="Default: the name if it is a mode, else the spec's mode."
    )
    k: int | None = Field(default=None, ge=1, le=128, description="K for this component.")
    copies: int | None = Field(
        default=None,
        ge=1,
        description="Initial copies (CreateInferenceComponent refuses 0; scale-to-zero "
        "reaches 0 through autoscaling). Default: inference_components.copies.",
    )
    max_copies: int | None = Field(default=None, ge=1, description="Autoscaling maximum.")
    accelerators_per_copy: int | None = Field(default=None, ge=1)
    min_memory_mb: int | None = Field(default=None, ge=128)
    inline_container: bool = Field(
        default=False,
        description="Give the container inline (Specification.Container) instead of a "
        "CreateModel; inline containers take at most 16 env entries and no drafter channel.",
    )

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if len(v) > COMPONENT_NAME_MAX or not COMPONENT_NAME_RE.match(v):
            raise ValueError(
                f"component name {v!r} must be 1-{COMPONENT_NAME_MAX} lower-case letters, "
                "digits and single hyphens (it becomes part of SageMaker names)"
            )
        return v

    def resolved_mode(self, default: str) -> str:
        if self.mode is not None:
            return self.mode
        return self.name if self.name in MODES else default


class InferenceComponentsSpec(_Strict):
    """The components and the endpoint's managed instance scaling."""

    components: list[ComponentSpec] = Field(default_factory=list, max_length=8)
    copies: int = Field(default=1, ge=1, description="Initial copies of each component.")
    accelerators_per_copy: int | None = Field(
        default=None, ge=1, description="GPUs per copy. Default: the tensor-parallel size."
    )
    min_instances: int | None = Field(
        default=None, ge=0, le=100, description="ManagedInstanceScaling minimum (0 allowed)."
    )
    max_instances: int | None = Field(default=None, ge=1, le=100)
    scale_in: ScaleInSpec | None = Field(
        default=None,
        description="ManagedInstanceScaling.ScaleInPolicy; unset: none is sent (SageMaker's "
        "default scale-in).",
    )
    scale_to_zero: bool = Field(
        default=False,
        description="Register each component's copy count with min 0, a target-tracking "
        "policy, and a step policy + NoCapacityInvocationFailures alarm to scale from zero.",
    )
    target_concurrency_per_copy: float | None = Field(default=None, gt=0)
    target_invocations_per_copy: float | None = Field(default=None, gt=0)
    scale_out_cooldown: int = Field(default=600, ge=0, le=86400)
    scale_in_cooldown: int = Field(default=1800, ge=0, le=86400)

    @field_validator("components")
    @classmethod
    def _distinct(cls, v: list[ComponentSpec]) -> list[ComponentSpec]:
        names = [c.name for c in v]
        if len(set(names)) != len(names):
            raise ValueError(f"component names must be distinct (got {names})")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> InferenceComponentsSpec:
        lo, hi = self.min_instances, self.max_instances
        if lo is not None and hi is not None and hi < lo:
            raise ValueError(f"max_instances {hi} is below min_instances {lo}")
        if self.target_concurrency_per_copy and self.target_invocations_per_copy:
            raise ValueError(
                "give target_concurrency_per_copy or target_invocations_per_copy, not both"
            )
        if self.scale_to_zero and lo not in (None, 0):
            raise ValueError(
                f"scale_to_zero needs min_instances 0 (got {lo}): the endpoint can only "
                "release its last instance when managed instance scaling allows 0"
            )
        return self


def parse_component(text: str) -> dict[str, Any]:
    """`p-eagle:k=7`, `baseline`, `fast:mode=p-eagle,k=5,copies=2` -> a component dict."""
    name, _, rest = text.strip().partition(":")
    out: dict[str, Any] = {"name": name}
    keys = {"mode": str, "k": int, "copies": int, "max_copies": int, "accelerators": int}
    for item in filter(None, (p.strip() for p in rest.split(","))):
        key, sep, value = item.partition("=")
        if not sep or key not in keys:
            raise SpecError(
                words(
                    "{components} {got!r}: expected NAME[:key=value,...] with keys "
                    "{keys} (e.g. p-eagle:k=7)",
                    got=text,
                    keys=", ".join(keys),
                ),
                field="components",
                value=text,
            )
        try:
            parsed = keys[key](value)
        except ValueError:
            raise SpecError(
                words("{components} {got!r}: {key} takes a whole number", got=text, key=key),
                field="components",
                value=text,
            ) from None
        out["accelerators_per_copy" if key == "accelerators" else key] = parsed
    return out
