"""Inference components on the `--engine vllm` sandbox host with the stand-in engine (no
vLLM needed; `tests/integration/fake_vllm.py`, as in test_sandbox_engine_host.py): the
real sandbox server, the real `peagle` CLI and peagle's real container entrypoint.

Each component with copies gets its own engine process, started from its own model; an
invocation naming a component reaches only that engine (the engine's own access-log line
lands in that component's log group); 0 copies ends the engine and the component refuses
invocations with SageMaker's ValidationError; 1 copy starts a new one; a component whose
engine exits is Failed with the engine's own error line and the deploy rolls back; delete
leaves no process and no resource. The real engine's version of this runs in
`tests/conformance/test_sandbox_engine_components.py`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from peagle_sandbox.procs import group_alive
from tests.e2e.test_sandbox_engine_host import (
    Cli,
    assert_nothing_left,
    fake_engine_home,
    port_free,
)
from tests.plan_helpers import TINY_TWO_COMPONENTS

pytestmark = pytest.mark.e2e
NAME = "peagle-tiny-llama-p-eagle"
PEAGLE, BASELINE = f"{NAME}-p-eagle", f"{NAME}-baseline"
FAKE_ERROR = "User-specified max_model_len (4096) is greater than"  # fake_vllm.py says so


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("engine-host-components")
    cli = Cli(root, fake_engine_home(root))
    cli("sandbox", "start", "--engine", "vllm")
    yield cli
    cli("sandbox", "stop", code=None)


def invoke(cli: Cli, component: str) -> dict[str, Any]:
    resp = cli.client("sagemaker-runtime").invoke_endpoint(
        EndpointName=NAME,
        InferenceComponentName=component,
        Body=json.dumps({"prompt": "hello", "max_tokens": 8}),
        ContentType="application/json",
    )
    return json.loads(resp["Body"].read())


def component_log(cli: Cli, component: str) -> str:
    group = f"/aws/sagemaker/InferenceComponents/{component}"
    events = cli.client("logs").filter_log_events(logGroupName=group)["events"]
    return "\n".join(e["message"] for e in events)


def served(cli: Cli, component: str) -> int:
    """POST /invocations lines the component's engine logged (its own access log)."""
    return component_log(cli, component).count('"POST /invocations HTTP/1.1" 200')


def engines(cli: Cli) -> dict[str, dict[str, Any]]:
    return {e["component"]: e for e in cli.engines()}


def test_each_component_runs_and_answers_on_its_own_engine(real: Cli) -> None:
    try:
        out = real("--sandbox", "deploy", *TINY_TWO_COMPONENTS, "--yes", "--json")
        assert json.loads(out.stdout)["status"] == "InService"
        live = engines(real)
        assert set(live) == {PEAGLE, BASELINE}
        assert live[PEAGLE]["pid"] != live[BASELINE]["pid"]
        assert all(group_alive(e["pid"]) for e in live.values())
        # Each engine was started from its own component model: the drafter channel
        # (materialised under its /opt/ml root) only for p-eagle.
        assert "additional-model-data-sources/eagle" in component_log(real, PEAGLE)
        assert "additional-model-data-sources" not in component_log(real, BASELINE)

        for name, other in ((PEAGLE, BASELINE), (BASELINE, PEAGLE)):
            before = served(real, name), served(real, other)
            assert invoke(real, name)["usage"]["completion_tokens"] == 3
            assert (served(real, name), served(real, other)) == (before[0] + 1, before[1])

        real("--sandbox", "update", NAME, "--component", "baseline", "--copies", "0", "--yes")
        old = live[BASELINE]
        assert not group_alive(old["pid"]) and port_free(old["port"])
        assert set(engines(real)) == {PEAGLE}
        with pytest.raises(ClientError) as refused:
            invoke(real, BASELINE)
        assert refused.value.response["Error"]["Code"] == "ValidationError"
        assert f"Inference Component {BASELINE} has no capacity" in str(refused.value)

        real("--sandbox", "update", NAME, "--component", "baseline", "--copies", "1", "--yes")
        new = engines(real)[BASELINE]
        assert new["pid"] != old["pid"] and group_alive(new["pid"])
        assert invoke(real, BASELINE)["usage"]["completion_tokens"] == 3
        live[f"{BASELINE} (old)"] = old
        live[BASELINE] = new
    finally:
        real("--sandbox", "delete", NAME, "--yes", code=None)
    assert all(not group_alive(e["pid"]) and port_free(e["port"]) for e in live.values())
    assert_nothing_left(real)


def test_a_component_whose_engine_exits_fails_and_the_deploy_rolls_back(
    real: Cli, tmp_path: Path
) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "model: tiny-llama\n"
        "endpoint: {hosting: inference-components, instance_type: ml.g7e.12xlarge}\n"
        "speculative: {mode: p-eagle, num_speculative_tokens: 3}\n"
        "container: {engine_args: {max_model_len: 4096}}\n"
        "inference_components: {accelerators_per_copy: 1, components: [{name: p-eagle}]}\n"
    )
    out = real("--sandbox", "deploy", "--file", str(spec), "--yes", code=1)
    assert f"inference component {PEAGLE} is Failed: engine exited with code" in out.stderr
    reason = [ln for ln in out.stderr.splitlines() if ln.startswith("FailureReason:")]
    assert reason and FAKE_ERROR in reason[0], out.stderr
    assert "rolling back" in out.stderr
    assert FAKE_ERROR in component_log(real, PEAGLE)
    assert_nothing_left(real)
