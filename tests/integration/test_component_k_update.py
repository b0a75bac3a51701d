"""`peagle update EP --component NAME -k N / --mode M` on an inference-component endpoint,
through the real CLI (and the SDK) against the moto harness.

On such an endpoint K and mode are per component (`inference_components.components[]`),
so the update changes that one component: a new model whose SM_VLLM_SPECULATIVE_CONFIG
carries the new `num_speculative_tokens` (vLLM's SpeculativeConfig key), one
UpdateInferenceComponent naming it, the component's old model deleted, the endpoint's
spec tags rewritten; the other component is not touched. `-k` without `--component`
would change no component, so it is refused (exit 2) before any mutating request."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from sm_peagle.lifecycle.spec_tags import decode_spec, tag_dict
from tests.integration.lifecycle_env import REGION, left_in_moto, run
from tests.plan_helpers import TWO_COMPONENTS

NAME = "peagle-gpt-oss-20b-p-eagle"
PEAGLE, BASELINE = f"{NAME}-p-eagle", f"{NAME}-baseline"
DEPLOY = ("deploy", *TWO_COMPONENTS, "--yes", "--json")
MUTATING = ("Create", "Update", "Delete", "AddTags", "Register", "Put", "Deregister")


def deploy(world: Any, capsys: Any) -> dict[str, str]:
    """Deploy the two components; returns each component's model as created."""
    code, _, err = run(capsys, *DEPLOY)
    assert code == 0, err
    models = {
        r["InferenceComponentName"]: r["Specification"]["ModelName"]
        for r in world.sent("CreateInferenceComponent")
    }
    world.requests.clear()
    return models


def mutating(world: Any) -> list[tuple[str, dict[str, Any]]]:
    return [(op, p) for op, p in world.requests if op.startswith(MUTATING)]


def spec_on_endpoint() -> dict[str, Any]:
    sm = boto3.client("sagemaker", region_name=REGION)
    arn = sm.describe_endpoint(EndpointName=NAME)["EndpointArn"]
    data = decode_spec(tag_dict(sm.list_tags(ResourceArn=arn)["Tags"]))
    assert data is not None
    return {c["name"]: c for c in data["inference_components"]["components"]}


def live_models() -> set[str]:
    sm = boto3.client("sagemaker", region_name=REGION)
    return {m["ModelName"] for m in sm.list_models()["Models"]}


def test_k_of_one_component_changes_that_component_only(
    world: Any, capsys: Any, sagemaker_harness: Any
) -> None:
    old = deploy(world, capsys)
    code, out, err = run(
        capsys, "update", NAME, "--component", "p-eagle", "-k", "5", "--yes", "--json"
    )
    assert code == 0, err
    doc = json.loads(out)
    assert doc["changed"] is True
    assert doc["changes"] == ["component p-eagle: K 7 -> 5"]

    (update,) = world.sent("UpdateInferenceComponent")
    assert update["InferenceComponentName"] == PEAGLE
    new_model = update["Specification"]["ModelName"]
    assert new_model != old[PEAGLE]
    (created,) = world.sent("CreateModel")
    assert created["ModelName"] == new_model
    spec_cfg = json.loads(created["PrimaryContainer"]["Environment"]["SM_VLLM_SPECULATIVE_CONFIG"])
    assert spec_cfg["num_speculative_tokens"] == 5
    # The endpoint itself is not touched: no new config, no UpdateEndpoint.
    assert world.sent("CreateEndpointConfig") == [] and world.sent("UpdateEndpoint") == []
    # The baseline component and its model: no request names them.
    for op, params in mutating(world):
        assert BASELINE not in json.dumps(params) and old[BASELINE] not in json.dumps(params), op
    assert world.sent("UpdateInferenceComponentRuntimeConfig") == []
    # The old p-eagle model is retired; the baseline's stays.
    assert world.sent("DeleteModel") == [{"ModelName": old[PEAGLE]}]
    assert live_models() == {new_model, old[BASELINE]}

    tagged = spec_on_endpoint()
    assert tagged["p-eagle"]["k"] == 5
    assert tagged["baseline"] == {"name": "baseline"}

    code, out, err = run(capsys, "status", NAME, "--json")
    assert code == 0, err
    rows = {c["name"]: c for c in json.loads(out)["components"]}
    assert (rows[PEAGLE]["mode"], rows[PEAGLE]["k"]) == ("p-eagle", 5)
    assert rows[BASELINE]["mode"] == "baseline"
    assert rows[PEAGLE]["status"] == "InService"

    # Once more with the same K: nothing to change, nothing sent that mutates.
    world.requests.clear()
    code, out, err = run(capsys, "update", NAME, "--component", "p-eagle", "-k", "5", "--yes")
    assert code == 0, err
    assert out.strip() == ""  # one line, on stderr: the note says it
    assert "no changes: p-eagle already runs these values; nothing sent" in err
    assert mutating(world) == []

    assert run(capsys, "delete", NAME, "--yes")[0] == 0
    assert left_in_moto() == {}


def test_text_output_names_the_component_change(
    world: Any, capsys: Any, sagemaker_harness: Any
) -> None:
    deploy(world, capsys)
    code, out, err = run(capsys, "update", NAME, "--component", PEAGLE, "-k", "4", "--yes")
    assert code == 0, err
    assert out.strip() == f"{NAME} is InService (component p-eagle: K 7 -> 4)"
    assert run(capsys, "delete", NAME, "--yes")[0] == 0
    assert left_in_moto() == {}


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (("-k", "5"), "pass --component p-eagle -k 5 (K is per component)"),
        (
            ("--mode", "eagle3"),
            "pass --component p-eagle --mode eagle3 (mode is per component: p-eagle, baseline)",
        ),
        (("--component", "nope", "-k", "5"), "no inference component 'nope'"),
        (("--component", "baseline", "-k", "5"), "component baseline runs baseline"),
        (("--component", "p-eagle", "-k", "5", "--copies", "2"), "separate updates"),
        (("--component", "p-eagle", "-k", "5", "-t", "ml.g7e.48xlarge"), "the instances are"),
    ],
)
def test_refused_with_one_line_and_nothing_changed(
    world: Any, capsys: Any, sagemaker_harness: Any, argv: tuple[str, ...], expected: str
) -> None:
    deploy(world, capsys)
    code, out, err = run(capsys, "update", NAME, *argv, "--yes")
    assert code == 2, err
    lines = err.strip().splitlines()
    assert lines[-1].startswith("error: ") and expected in lines[-1], err
    assert "Traceback" not in err
    assert mutating(world) == []
    assert spec_on_endpoint()["p-eagle"]["k"] == 7


def test_sdk_update_takes_the_component(world: Any, capsys: Any, sagemaker_harness: Any) -> None:
    from sm_peagle import Endpoint
    from sm_peagle.aws import AwsContext
    from sm_peagle.errors import SpecError

    old = deploy(world, capsys)
    ep = Endpoint(NAME, aws=AwsContext(REGION))
    with pytest.raises(SpecError, match=r"component='p-eagle' k=6 \(K is per component\)") as e:
        ep.update(k=6)
    assert e.value.field == "component"
    assert mutating(world) == []

    result = ep.update(component="p-eagle", mode="baseline")
    assert result.status == "InService"
    (update,) = world.sent("UpdateInferenceComponent")
    assert update["InferenceComponentName"] == PEAGLE
    (created,) = world.sent("CreateModel")
    # Baseline: vLLM gets no speculative config at all.
    assert "SM_VLLM_SPECULATIVE_CONFIG" not in created["PrimaryContainer"]["Environment"]
    assert world.sent("DeleteModel") == [{"ModelName": old[PEAGLE]}]
    tagged = spec_on_endpoint()
    assert tagged["p-eagle"]["mode"] == "baseline" and "k" not in tagged["p-eagle"]
    ep.delete()
    assert left_in_moto() == {}


def test_a_ctrl_c_after_the_component_switched_says_the_update_completed(
    world: Any, capsys: Any, sagemaker_harness: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One Ctrl-C while the old p-eagle model is being removed (the component already
    runs K=6): the first interrupt lets the clean-up finish, so the line says the update
    completed, not a bare `error: interrupted` (QA of issue 33); exit 130 all the same."""
    from tests.integration.test_operations import inject, interrupt

    old = deploy(world, capsys)
    fired = inject(monkeypatch, "before-call.sagemaker.DeleteModel", interrupt)
    code, _, err = run(capsys, "update", NAME, "--component", "p-eagle", "-k", "6", "--yes")
    assert fired and code == 130, err
    assert err.strip().splitlines()[-1] == (
        f"error: interrupted after the component update of {NAME} completed; "
        "nothing is left to clean up"
    )
    assert spec_on_endpoint()["p-eagle"]["k"] == 6
    assert old[PEAGLE] not in live_models()
    code, out, err = run(capsys, "status", NAME, "--json")
    assert code == 0, err
    assert json.loads(out)["unfinished"] == []
