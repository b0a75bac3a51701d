"""Ages on the sandbox clock, as `gc` judges them: shared by the SIMULATED e2e test
(tests/e2e/test_sandbox_clock_gc.py) and the real engine's (tests/conformance/
test_sandbox_engine_e2e.py), which differ only in the sandbox they run on.

A model and an endpoint config that peagle made (`peagle:managed`) before it tagged its
operations are judged by their age alone (lifecycle/garbage.py): younger than `--min-age`,
gc leaves them alone ("skipped_young"); older, they are garbage. Their age is AWS's
`Date` minus their `CreationTime`, both on the sandbox clock: moving the clock two days
ahead makes them two days old, however little real time passed.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

MODEL, CONFIG = "clock-aged-model", "clock-aged-config"
MANAGED = [{"Key": "peagle:managed", "Value": "true"}]  # lifecycle/resources.py MANAGED


def make_untagged_leftovers(sm: Any, role_arn: str) -> None:
    sm.create_model(
        ModelName=MODEL,
        ExecutionRoleArn=role_arn,
        PrimaryContainer={"Image": "763104351884.dkr.ecr.us-east-1.amazonaws.com/vllm:x"},
        Tags=MANAGED,
    )
    sm.create_endpoint_config(
        EndpointConfigName=CONFIG,
        ProductionVariants=[
            {
                "VariantName": "AllTraffic",
                "ModelName": MODEL,
                "InstanceType": "ml.g6e.2xlarge",
                "InitialInstanceCount": 1,
            }
        ],
        Tags=MANAGED,
    )


def gc_dry_run(peagle: Callable[..., Any]) -> dict[str, Any]:
    out = peagle("--sandbox", "gc", "--min-age", "1d", "--dry-run", "--json")
    return json.loads(out.stdout)


def check_gc_sees_them_age(peagle: Callable[..., Any], sm: Any, role_arn: str) -> None:
    """Before: gc --min-age 1d skips them as young. After `peagle sandbox clock advance 2d`:
    it lists them as garbage. Then they are removed (by gc itself)."""
    make_untagged_leftovers(sm, role_arn)
    before = gc_dry_run(peagle)
    assert {MODEL, CONFIG} <= set(before["skipped_young"]), before
    assert MODEL not in before["models"] and CONFIG not in before["endpoint_configs"], before

    peagle("sandbox", "clock", "advance", "2d")
    after = gc_dry_run(peagle)
    assert MODEL in after["models"] and CONFIG in after["endpoint_configs"], after
    assert not {MODEL, CONFIG} & set(after["skipped_young"]), after

    peagle("--sandbox", "gc", "--min-age", "1d", "--yes")
    assert MODEL not in {m["ModelName"] for m in sm.list_models()["Models"]}
    configs = sm.list_endpoint_configs()["EndpointConfigs"]
    assert CONFIG not in {c["EndpointConfigName"] for c in configs}
