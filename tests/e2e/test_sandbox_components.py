"""Two inference components (p-eagle K=7 and baseline) on one sandbox endpoint, through
the real CLI in subprocesses: deploy, invoke each (routed by InferenceComponentName),
scale one to zero (its invocations then fail with a clear message), delete all, and
nothing is left: models, configs, endpoint, components, scaling targets, policies,
alarms. The engine is the SIMULATED one."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.e2e.test_sandbox import Sandbox, running_sandbox
from tests.plan_helpers import TWO_COMPONENTS
from tests.sandbox_helpers import leftovers

pytestmark = pytest.mark.e2e

NAME = "peagle-gpt-oss-20b-p-eagle"
PEAGLE, BASELINE = f"{NAME}-p-eagle", f"{NAME}-baseline"


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    yield from running_sandbox(tmp_path_factory.mktemp("sandbox-ic"))


def invoke(sb: Sandbox, component: str | None, check: bool = True) -> Any:
    args = ["--sandbox", "invoke", NAME, "Hello", "--no-stream", "--max-tokens", "16"]
    return sb.cli(*args, *(["--component", component] if component else []), check=check)


def test_two_components_invoke_scale_to_zero_delete(sandbox: Sandbox) -> None:
    sb = sandbox
    out = sb.cli(
        "--sandbox",
        "deploy",
        *TWO_COMPONENTS,
        "--yes",
        "--json",
    )
    assert json.loads(out.stdout)["status"] == "InService"

    # Each component answers, with its own configuration.
    invoke(sb, PEAGLE)
    invoke(sb, BASELINE)
    runs = [r for r in sb.ground_truth(NAME) if r.get("status") == "ok"]
    assert [(r["mode"], r.get("k")) for r in runs[-2:]] == [("p-eagle", 7), ("baseline", None)]

    # An endpoint with components refuses an invocation that names none: the CLI before
    # sending (exit 2, naming them), the runtime itself with SageMaker's message.
    refused = invoke(sb, None, check=False)
    assert refused.returncode == 2 and "pass --component with one of p-eagle" in refused.stderr
    runtime = sb.client("sagemaker-runtime")
    with pytest.raises(ClientError, match="Inference Component Name header is required"):
        runtime.invoke_endpoint(EndpointName=NAME, Body=b'{"prompt": "Hi", "max_tokens": 4}')

    # Scale baseline to zero: its invocations fail with a clear message; p-eagle still works.
    sb.cli("--sandbox", "update", NAME, "--component", "baseline", "--copies", "0", "--yes")
    status = json.loads(sb.cli("--sandbox", "status", NAME, "--json").stdout)
    rows = {c["name"]: c for c in status["components"]}
    assert rows[BASELINE]["scaled_to_zero"] and not rows[PEAGLE]["scaled_to_zero"]
    cold = invoke(sb, BASELINE, check=False)
    assert cold.returncode != 0
    assert "has no capacity" in cold.stderr + cold.stdout
    invoke(sb, PEAGLE)

    sb.cli("--sandbox", "delete", NAME, "--yes")
    assert leftovers(sb.client) == {}
