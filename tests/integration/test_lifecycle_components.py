"""Inference-component endpoints through the real CLI against the moto harness: deploy
waits for the endpoint, then each component; status shows copies; a component scales
to zero; delete and rollback go in reverse and leave nothing (models, configs, endpoint,
components, scaling targets, policies, alarms)."""

from __future__ import annotations

import json
from typing import Any

from peagle_sandbox.testing.moto_components import schedule_component
from tests.integration.lifecycle_env import left_in_moto, run
from tests.plan_helpers import TWO_COMPONENTS

NAME = "peagle-gpt-oss-20b-p-eagle"
PEAGLE, BASELINE = f"{NAME}-p-eagle", f"{NAME}-baseline"
DEPLOY = ("deploy", *TWO_COMPONENTS, "--yes", "--json")


def test_deploy_status_scale_to_zero_delete(
    world: Any, capsys: Any, sagemaker_harness: Any
) -> None:
    code, out, err = run(capsys, *DEPLOY)
    assert code == 0, err
    doc = json.loads(out)
    assert [c["kind"] for c in doc["created"]] == [
        "model",
        "model",
        "endpoint_config",
        "endpoint",
        "inference_component",
        "inference_component",
        "component_scaling",
        "component_scaling",
    ]
    # The endpoint is waited for before any component is created (AWS refuses otherwise;
    # the harness does too), and every component reached InService.
    ops = [op for op, _ in world.requests]
    assert ops.index("DescribeEndpoint") < ops.index("CreateInferenceComponent")
    (config,) = world.sent("CreateEndpointConfig")
    assert config["ExecutionRoleArn"] == world.role_arn
    assert "ModelName" not in config["ProductionVariants"][0]
    registered = world.sent("RegisterScalableTarget")
    assert [r["MinCapacity"] for r in registered] == [0, 0]
    alarms = left_in_moto()["alarms"]
    assert alarms == sorted([f"{PEAGLE}-no-capacity", f"{BASELINE}-no-capacity"])

    code, out, err = run(capsys, "status", NAME, "--json")
    assert code == 0, err
    st = json.loads(out)
    assert st["unfinished"] == []  # the deploy finished: its components' models are in use
    rows = {c["name"]: c for c in st["components"]}
    assert rows[PEAGLE]["mode"] == "p-eagle" and rows[PEAGLE]["k"] == 7
    assert rows[BASELINE]["mode"] == "baseline"
    assert {(r["status"], r["desired_copies"], r["current_copies"]) for r in rows.values()} == {
        ("InService", 1, 1)
    }
    assert rows[PEAGLE]["autoscaling"]["min"] == 0

    code, out, err = run(
        capsys, "update", NAME, "--component", "baseline", "--copies", "0", "--yes", "--json"
    )
    assert code == 0, err
    assert json.loads(out)["scaled_to_zero"] is True
    st = json.loads(run(capsys, "status", NAME, "--json")[1])
    rows = {c["name"]: c for c in st["components"]}
    assert rows[BASELINE]["scaled_to_zero"] and not rows[PEAGLE]["scaled_to_zero"]

    code, out, err = run(capsys, "delete", NAME, "--yes", "--json")
    assert code == 0, err
    assert left_in_moto() == {}
    # Reverse order: scaling, components (waiting until gone), endpoint, config, models.
    ops = [op for op, _ in world.requests]
    last_component_delete = max(i for i, op in enumerate(ops) if op == "DeleteInferenceComponent")
    assert ops.index("DeregisterScalableTarget") < ops.index("DeleteInferenceComponent")
    assert last_component_delete < ops.index("DeleteEndpoint")
    assert (
        ops.index("DeleteEndpoint") < ops.index("DeleteEndpointConfig") < ops.index("DeleteModel")
    )


def test_gc_keeps_the_models_components_use(
    world: Any, capsys: Any, sagemaker_harness: Any
) -> None:
    assert run(capsys, *DEPLOY)[0] == 0
    code, out, err = run(capsys, "gc", "--json", "--min-age", "0")
    assert code == 0, err
    assert json.loads(out).get("models", []) == []
    run(capsys, "delete", NAME, "--yes")
    assert left_in_moto() == {}


def test_a_component_that_fails_to_start_rolls_back_everything(
    world: Any, capsys: Any, sagemaker_harness: Any
) -> None:
    schedule_component(
        sagemaker_harness, BASELINE, ["Creating", "Failed"], failure_reason="CUDA out of memory"
    )
    code, out, err = run(capsys, *DEPLOY)
    assert code != 0
    assert "CUDA out of memory" in err
    assert left_in_moto() == {}
    ops = [op for op, _ in world.requests]
    # Newest first: the components (the failed one too), then the endpoint, config, models.
    deletes = [op for op in ops if op.startswith("Delete")]
    assert deletes[:2] == ["DeleteInferenceComponent", "DeleteInferenceComponent"]
    assert deletes[2:] == ["DeleteEndpoint", "DeleteEndpointConfig", "DeleteModel", "DeleteModel"]


def test_a_component_that_cannot_be_deleted_stops_the_rollback_before_the_endpoint(
    world: Any, capsys: Any, sagemaker_harness: Any, monkeypatch: Any
) -> None:
    """SageMaker (and the harness) refuse DeleteEndpoint while a component remains, and gc
    never deletes an endpoint: the rollback keeps the endpoint, config and models, and
    names `peagle delete`; following the advice leaves nothing."""
    from moto.sagemaker.exceptions import ValidationError
    from moto.sagemaker.models import SageMakerModelBackend

    schedule_component(sagemaker_harness, BASELINE, ["Creating", "Failed"])
    harness_delete = SageMakerModelBackend.delete_inference_component
    fault = {"on": True}

    def refusing(self: Any, name: str) -> None:
        if fault["on"] and name == BASELINE:
            raise ValidationError(message=f"fault injected: cannot delete {name}")
        harness_delete(self, name)

    monkeypatch.setattr(SageMakerModelBackend, "delete_inference_component", refusing)
    code, _, err = run(capsys, *DEPLOY)
    assert code == 1
    deletes = [(op, p) for op, p in world.requests if op.startswith("Delete")]
    assert deletes == [
        ("DeleteInferenceComponent", {"InferenceComponentName": BASELINE}),
        ("DeleteInferenceComponent", {"InferenceComponentName": PEAGLE}),
    ]
    left = left_in_moto()
    assert left["inference_components"] == [BASELINE] and left["endpoints"] == [NAME]
    assert len(left["endpoint_configs"]) == 1 and len(left["models"]) == 2
    advice = [line for line in err.splitlines() if line.startswith("left behind: ")]
    assert len(advice) == 1 and BASELINE in advice[0] and NAME in advice[0]
    # One command for exactly this deployment's leftovers, never a blanket gc.
    assert advice[0].endswith(f"run `peagle delete {NAME} --yes` to remove it")

    fault["on"] = False  # the cause is gone; the user follows the advice
    assert run(capsys, "delete", NAME, "--yes")[0] == 0
    assert run(capsys, "gc", "--min-age", "0", "--yes")[0] == 0
    assert left_in_moto() == {}


def test_status_text_shows_each_component_and_scale_to_zero(
    world: Any, capsys: Any, sagemaker_harness: Any
) -> None:
    """The table a user reads (not only --json): one row per component with what it
    runs and its copies, the endpoint's managed instance scaling, and "scaled to zero"."""
    assert run(capsys, *DEPLOY)[0] == 0
    (config,) = world.sent("CreateEndpointConfig")
    mis = config["ProductionVariants"][0]["ManagedInstanceScaling"]
    code, out, err = run(capsys, "status", NAME)
    assert code == 0, err
    rows = {line.split("│")[1].strip(): line for line in out.splitlines() if line.count("│") > 2}
    assert f"min {mis['MinInstanceCount']} / max {mis['MaxInstanceCount']} instances" in out
    assert "p-eagle, K=7" in rows["p-eagle"] and "1/1" in rows["p-eagle"]
    assert "baseline" in rows["baseline"].split("│")[3] and "1/1" in rows["baseline"]
    assert "scaled to zero" not in out

    assert run(capsys, "update", NAME, "--component", "baseline", "--copies", "0", "--yes")[0] == 0
    code, out, err = run(capsys, "status", NAME)
    assert code == 0, err
    rows = {line.split("│")[1].strip(): line for line in out.splitlines() if line.count("│") > 2}
    assert "0/0 (scaled to zero)" in rows["baseline"]
    assert "scaled to zero" not in rows["p-eagle"]
    run(capsys, "delete", NAME, "--yes")
    assert left_in_moto() == {}
