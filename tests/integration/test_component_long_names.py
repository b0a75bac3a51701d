"""A component's short name (`--component baseline`) finds it even when the endpoint's
name is so long that SageMaker's 63-character limit on InferenceComponentName (botocore's
model) made peagle cut the endpoint part of the component's name."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.integration.lifecycle_env import left_in_moto, record_requests, run
from tests.plan_helpers import TWO_COMPONENTS

NAME = "team-a-gpt-oss-20b-p-eagle-long-running-evaluation-endpoint"  # 59 characters
LIMIT = 63  # InferenceComponentName: max 63 (botocore's sagemaker model)


def test_short_names_find_components_of_a_long_endpoint(
    world: Any, capsys: Any, sagemaker_harness: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    record_requests(world, monkeypatch, "sagemaker-runtime")
    code, _, err = run(capsys, "deploy", *TWO_COMPONENTS, "--name", NAME, "--yes", "--json")
    assert code == 0, err
    names = sorted(p["InferenceComponentName"] for p in world.sent("CreateInferenceComponent"))
    assert all(len(n) <= LIMIT for n in names)
    baseline = next(n for n in names if n.endswith("-baseline"))
    assert not baseline.startswith(f"{NAME}-")  # the endpoint part was cut to fit

    world.requests.clear()
    code, out, err = run(capsys, "race", f"{NAME}/baseline", f"{NAME}/p-eagle",
                         "--max-tokens", "4", "--json")  # fmt: skip
    assert code == 0, err
    assert json.loads(out)["a"]["component"] == baseline
    sent = world.sent("InvokeEndpointWithResponseStream")
    assert sorted(p["InferenceComponentName"] for p in sent) == names

    code, out, err = run(capsys, "update", NAME, "--component", "baseline", "--copies", "0",
                         "--yes", "--json")  # fmt: skip
    assert code == 0, err
    assert json.loads(out)["component"] == baseline

    assert run(capsys, "delete", NAME, "--yes")[0] == 0
    assert left_in_moto() == {}
