"""What a DeploymentConfig may say, for the moto harness's guardrail deployments
(moto_rollouts): botocore's model (moto_validate) and AWS's documented rules, and the steps
a valid one takes (design38 decision 1). Sources and assumptions: moto_rollouts' doc.
Refusals are ValidationException; AWS documents the rules, not their wording, so every
message here is [assumed wording] (except the variant-name rule, the guide's own words).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from moto.cloudwatch.models import cloudwatch_backends
from moto.sagemaker.exceptions import ValidationError

from peagle_sandbox.testing.moto_validate import problems, validation_message

__all__ = ["Step", "check_deployment", "fleet_size", "plan_steps", "refuse"]

_PCT = {"CANARY": (0, 50), "LINEAR": (10, 50), "ROLLING": (5, 50)}
_SIZE_FIELD = {"CANARY": "CanarySize", "LINEAR": "LinearStepSize", "ROLLING": "MaximumBatchSize"}


@dataclass(frozen=True)
class Step:
    share: float  # of traffic once shifted
    instances: int  # new-fleet instances taking traffic during its bake
    bake_s: float
    final: bool = False


def refuse(message: str) -> ValidationError:
    # [assumed wording] AWS documents the rules, not the text of their refusals.
    return ValidationError(message=message)


def fleet_size(variant: dict[str, Any], old: dict[str, Any] | None, retain: bool,
               excluded: set[str]) -> int:  # fmt: skip
    """The variant's total instance count the percentages refer to: the new config's
    InitialInstanceCount, or the live DesiredInstanceCount it keeps under
    RetainAllVariantProperties (unless excluded)."""
    if (
        retain
        and old
        and old.get("DesiredInstanceCount")
        and "DesiredInstanceCount" not in excluded
    ):
        return int(old["DesiredInstanceCount"])
    return int(variant.get("InitialInstanceCount") or 1)


def _step_instances(kind: str, size: dict[str, Any], n: int, unit: str, noun: str) -> int:
    """Instances (copies) in one step, checked against the documented percentage rule."""
    low, high = _PCT[kind]
    value = int(size["Value"])
    if size["Type"] == "CAPACITY_PERCENT":
        percent, count = float(value), math.floor(value * n / 100)
    else:
        percent, count = 100.0 * value / n, value
    rule = {
        "CANARY": f"less than or equal to 50% of the {noun}",
        "LINEAR": f"10-50% of the {noun}",
        "ROLLING": f"between 5% to 50% of the {noun}",
    }[kind]
    field_name = _SIZE_FIELD[kind]
    if not low <= percent <= high:
        raise refuse(f"{field_name} value must be {rule} ({n}); {value} {size['Type']} is "
                      f"{percent:g}%.")  # fmt: skip
    if count < 1:
        raise refuse(f"{field_name} {value}% of {n} {unit} is less than one {unit[:-1]}.")
    return count


def plan_steps(kind: str, size: dict[str, Any] | None, n: int, wait: float, final: float,
               *, unit: str = "instances", noun: str = "variant's total instance count",
               ) -> list[Step]:  # fmt: skip
    """Design38 decision 1's steps for a policy on a fleet of `n`."""
    if kind == "ALL_AT_ONCE":
        return [Step(1.0, n, final, final=True)]
    assert size is not None
    c = _step_instances(kind, size, n, unit, noun)
    if kind == "CANARY":
        return [Step(c / n, c, wait), Step(1.0, n, final, final=True)]
    counts = [min(i * c, n) for i in range(1, math.ceil(n / c) + 1)]
    if kind == "ROLLING":
        return [Step(k / n, k, wait) for k in counts]
    return [*(Step(k / n, k, wait) for k in counts if k < n), Step(1.0, n, final, final=True)]


def check_deployment(
    operation: str,
    params: dict[str, Any],
    *,
    fleet: int,
    alarms_region: tuple[str, str],
    component: bool = False,
) -> tuple[str, list[Step], tuple[str, ...], float | None]:
    """Validate a DeploymentConfig (botocore's model, then the documented rules);
    returns (kind, steps, alarm names, timeout) or raises ValidationError."""
    found = problems("sagemaker", operation, params)
    if found:
        raise refuse(validation_message(found))
    dc = params["DeploymentConfig"]
    blue, rolling = dc.get("BlueGreenUpdatePolicy"), dc.get("RollingUpdatePolicy")
    if blue and rolling:
        raise refuse("DeploymentConfig may specify only one update policy: "
                      "BlueGreenUpdatePolicy or RollingUpdatePolicy.")  # fmt: skip
    names = tuple(a["AlarmName"] for a in (dc.get("AutoRollbackConfiguration") or {})
                  .get("Alarms", []))  # fmt: skip
    account, region = alarms_region
    existing = cloudwatch_backends[account][region].alarms
    for name in names:
        if name not in existing:
            raise refuse(f"The CloudWatch alarm {name} in AutoRollbackConfiguration does "
                          "not exist.")  # fmt: skip
    unit = "copies" if component else "instances"
    noun = "copy count of the inference component" if component else (
        "variant's total instance count")  # fmt: skip
    timeout: float | None
    if rolling:
        wait = float(rolling["WaitIntervalInSeconds"])
        steps = plan_steps("ROLLING", rolling["MaximumBatchSize"], fleet, wait, 0.0,
                           unit=unit, noun=noun)  # fmt: skip
        kind, timeout = "ROLLING", rolling.get("MaximumExecutionTimeoutInSeconds")
    else:
        blue = blue or {}
        routing = blue.get("TrafficRoutingConfiguration") or {
            "Type": "ALL_AT_ONCE",
            "WaitIntervalInSeconds": 0,
        }
        kind = routing["Type"]
        size_field = {"CANARY": "CanarySize", "LINEAR": "LinearStepSize"}.get(kind)
        if size_field and not routing.get(size_field):
            raise refuse(f"{size_field} is required when TrafficRoutingConfiguration Type is "
                          f"{kind}.")  # fmt: skip
        steps = plan_steps(kind, routing.get(size_field) if size_field else None, fleet,
                           float(routing["WaitIntervalInSeconds"]),
                           float(blue.get("TerminationWaitInSeconds", 0)), unit=unit,
                           noun=noun)  # fmt: skip
        timeout = blue.get("MaximumExecutionTimeoutInSeconds")
    waits = sum(s.bake_s for s in steps)
    if timeout is not None and timeout <= waits:
        raise refuse(f"MaximumExecutionTimeoutInSeconds ({timeout}) must be larger than the "
                      f"total waiting time ({waits:g} seconds).")  # fmt: skip
    return kind, steps, names, None if timeout is None else float(timeout)
