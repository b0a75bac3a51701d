"""`endpoint.rollout`: how an update moves traffic to the new fleet, and what rolls it back.

SageMaker's deployment guardrails (`UpdateEndpoint`'s `DeploymentConfig`): blue/green with
all-at-once, canary or linear traffic shifting, rolling batches, and automatic rollback when
a named CloudWatch alarm trips while a step bakes. The section says how the next update
changes the endpoint, not what runs on it: like `monitoring`, it is outside the spec hash
and the `peagle:spec:*` tags, so changing only the rollout sends nothing.

The rules a single field decides are here; the ones that need the endpoint (its instance
count, hosting, fallback pools, live acceptance) are `planning/rollout.py`.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = ["ROLLBACK_SIGNALS", "STRATEGIES", "RolloutSpec", "parse_size"]

STRATEGIES = ("all-at-once", "canary", "linear", "rolling")
# What a rollout's own alarms watch (planning/rollout.py builds them).
ROLLBACK_SIGNALS = ("speculation", "latency", "errors")
# botocore 1.44.8: WaitIntervalInSeconds and TerminationWaitInSeconds 0..3600,
# MaximumExecutionTimeoutInSeconds 600..28800, AutoRollbackConfig.Alarms 1..10.
MAX_WAIT_S = 3600
MIN_TIMEOUT_S, MAX_TIMEOUT_S = 600, 28800
MAX_ALARMS = 10
_PERCENT = re.compile(r"^(\d{1,3})%$")


def parse_size(value: int | str) -> tuple[str, int]:
    """A step's size: an int is instances (copies on a component endpoint), "25%" a share
    of the fleet. -> ("count", n) or ("percent", p). ValueError for anything else."""
    if isinstance(value, bool):
        raise ValueError(f"size {value!r} is not a number of instances or a percentage")
    if isinstance(value, int):
        if value < 1:
            raise ValueError(f"size {value} must be at least 1 instance")
        return "count", value
    text = str(value).strip()
    if text.isdigit():
        return parse_size(int(text))
    m = _PERCENT.match(text)
    if not m or not 1 <= int(m.group(1)) <= 100:
        raise ValueError(f"size {value!r} is not a number of instances (2) or a percentage (25%)")
    return "percent", int(m.group(1))


def _seconds(value: object, what: str) -> int | None:
    """A duration field: seconds, or "10m", "1h", "90s" (whole seconds)."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise ValueError(f"{what} {value!r} is not a duration")
    if isinstance(value, int | float):
        return int(value)
    m = re.fullmatch(r"\s*(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?\s*", str(value).lower())
    if str(value).strip().isdigit():
        return int(str(value).strip())
    if not m or not any(m.groups()):
        raise ValueError(f"{what} {value!r} is not a duration (600, 10m, 1h, 90s)")
    h, mnt, s = (int(g or 0) for g in m.groups())
    return h * 3600 + mnt * 60 + s


class RolloutSpec(BaseModel):
    """How `update` (and `apply`) change a live endpoint (`--rollout`, `--bake`)."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    strategy: Literal["all-at-once", "canary", "linear", "rolling"] = Field(
        default="all-at-once",
        description="all-at-once: blue/green, every request to the new fleet at once, then a "
        "final bake; canary: `size` first, bake, then the rest; linear: `size` per step, a "
        "bake after each; rolling: replace `size` instances per batch (the only one an "
        "inference-component endpoint takes).",
    )
    size: int | str | None = Field(
        default=None,
        description="The canary, the linear step or the rolling batch: instances (2) or a share "
        "of the fleet (25%). Default: 1 instance for a canary, a quarter of the fleet "
        "(at least 1) for linear and rolling.",
    )
    bake: int = Field(
        default=600,
        ge=0,
        le=MAX_WAIT_S,
        description="Seconds each step bakes while the rollback alarms watch "
        "(WaitIntervalInSeconds, 0..3600); '10m' is taken.",
    )
    final_bake: int | None = Field(
        default=None,
        ge=0,
        le=MAX_WAIT_S,
        description="Blue/green: seconds the new fleet serves everything before the old one "
        "is terminated (TerminationWaitInSeconds); default: `bake`. Not for rolling.",
    )
    timeout: int | None = Field(
        default=None,
        ge=MIN_TIMEOUT_S,
        le=MAX_TIMEOUT_S,
        description="MaximumExecutionTimeoutInSeconds (600..28800); default: the endpoint's "
        "provisioning allowance plus every bake.",
    )
    rollback_size: int | str | None = Field(
        default=None,
        description="Rolling only: instances rolled back per batch (RollbackMaximumBatchSize); "
        "default: all at once (AWS's default).",
    )
    rollback_on: list[Literal["speculation", "latency", "errors"]] | None = Field(
        default=None,
        description="peagle's rollback alarms: speculation (needs monitoring), latency, errors. "
        "Default: all that apply; [] for none.",
    )
    latency_ms: float | None = Field(
        default=None,
        gt=0,
        description="The new fleet's p90 ModelLatency that rolls back; default: twice the live "
        "p90 over the last hour (at least 1000 ms).",
    )
    error_rate: float = Field(
        default=0.05,
        gt=0,
        le=1,
        description="The new fleet's share of 5xx responses (Invocation5XXErrors, Average) "
        "that rolls back.",
    )
    alarms: list[str] = Field(
        default_factory=list,
        max_length=MAX_ALARMS,
        description="Your own CloudWatch alarms that also roll back (by name; they must exist).",
    )
    require_traffic: bool = Field(
        default=True,
        description="A bake that saw no invocation on the new fleet verified nothing: fail the "
        "update (exit 1, the new fleet still serves) instead of warning.",
    )

    @field_validator("bake", "final_bake", "timeout", mode="before")
    @classmethod
    def _durations(cls, v: object, info: object) -> int | None:
        return _seconds(v, getattr(info, "field_name", "duration"))

    @field_validator("size", "rollback_size")
    @classmethod
    def _size(cls, v: int | str | None) -> int | str | None:
        if v is None:
            return v
        kind, n = parse_size(v)
        return n if kind == "count" else f"{n}%"

    @field_validator("alarms")
    @classmethod
    def _alarms(cls, v: list[str]) -> list[str]:
        for name in v:  # botocore: AlarmName 1..255, pattern (?!\s*$).+
            if not 1 <= len(name) <= 255 or not name.strip():
                raise ValueError(f"alarm name {name!r} must be 1-255 characters, not blank")
        if len(set(v)) != len(v):
            raise ValueError("alarm names must be distinct")
        return v

    @field_validator("rollback_on")
    @classmethod
    def _signals(cls, v: list[str] | None) -> list[str] | None:
        if v is not None and len(set(v)) != len(v):
            raise ValueError("rollback_on names each signal once")
        return v

    @model_validator(mode="after")
    def _combination(self) -> RolloutSpec:
        if self.strategy == "rolling" and self.final_bake is not None:
            raise ValueError(
                "final_bake is blue/green's TerminationWaitInSeconds; a rolling update has none"
            )
        if self.strategy != "rolling" and self.rollback_size is not None:
            raise ValueError("rollback_size (RollbackMaximumBatchSize) is for rolling updates only")
        if self.strategy == "all-at-once" and self.size is not None:
            raise ValueError("all-at-once moves every instance at once: it takes no size")
        return self

    @property
    def final_wait(self) -> int:
        """TerminationWaitInSeconds (blue/green): `final_bake`, else `bake`."""
        return self.bake if self.final_bake is None else self.final_bake
