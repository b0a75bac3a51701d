"""Resources another endpoint still uses, and components peagle did not create, through
the real CLI against the moto harness.

- A model that another endpoint's inference component names (Specification.ModelName)
  is in use: `update -k` and `delete` keep it and say so, `gc` does not list it, and
  `adopt` notes it, exactly as for a model another endpoint config names.
- `delete` removes only the inference components peagle tagged. A component someone else
  added to a peagle endpoint is refused (one line, exit 2, nothing deleted) unless
  `--force`; forced, it goes with the endpoint (SageMaker refuses DeleteEndpoint while
  components remain) but its model is never deleted.
- The harness refuses DeleteEndpoint while a component on it is not Deleting.
"""

from __future__ import annotations

import io
import json
import sys
from typing import Any

import boto3
import pytest
import yaml
from botocore.exceptions import ClientError

from peagle_sandbox.testing.moto_components import leftovers
from peagle_sandbox.testing.moto_delete_order import strict_deletes
from sm_peagle import plan
from sm_peagle.aws import AwsContext
from sm_peagle.endpoint import deployed_spec
from sm_peagle.lifecycle.manager import Lifecycle
from tests.integration.lifecycle_env import REGION, World, left_in_moto, run, sagemaker_inventory
from tests.integration.test_adopt import MODEL as JS_MODEL
from tests.integration.test_adopt import NAME as JS_NAME
from tests.integration.test_adopt import create_jumpstart_endpoint
from tests.plan_helpers import TWO_COMPONENTS

NAME = "peagle-gpt-oss-20b-p-eagle"  # `peagle deploy gpt-oss-20b`'s endpoint
ROLE = "arn:aws:iam::123456789012:role/theirs"
MUTATING = ("Create", "Delete", "Update", "Deregister", "AddTags")


def sm() -> Any:
    return boto3.client("sagemaker", region_name=REGION)


def their_component_endpoint(model: str, *, endpoint: str = "their-e") -> None:
    """Raw boto3, no peagle tags: a component endpoint whose one component names `model`."""
    variant = {"VariantName": "AllTraffic", "InstanceType": "ml.g7e.12xlarge",
               "InitialInstanceCount": 1}  # fmt: skip
    sm().create_endpoint_config(
        EndpointConfigName=f"{endpoint}-c", ExecutionRoleArn=ROLE, ProductionVariants=[variant]
    )
    sm().create_endpoint(EndpointName=endpoint, EndpointConfigName=f"{endpoint}-c")
    their_component(endpoint, model, name="their-ic")


def their_component(endpoint: str, model: str, *, name: str) -> None:
    sm().create_inference_component(
        InferenceComponentName=name,
        EndpointName=endpoint,
        VariantName="AllTraffic",
        Specification={"ModelName": model,
                       "ComputeResourceRequirements": {"MinMemoryRequiredInMb": 1024}},
        RuntimeConfig={"CopyCount": 1},
    )  # fmt: skip


def deploy_single(capsys: Any) -> str:
    """`peagle deploy gpt-oss-20b`; returns its model's name."""
    code, _, err = run(capsys, "deploy", "gpt-oss-20b", "--yes", "--json")
    assert code == 0, err
    (model,) = sagemaker_inventory()["models"]
    return model


def test_delete_keeps_a_model_another_endpoints_component_names(world: World, capsys: Any) -> None:
    model = deploy_single(capsys)
    their_component_endpoint(model)
    world.requests.clear()
    code, out, err = run(capsys, "delete", NAME, "--yes", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["kept_shared"] == {model: ["their-e"]}
    assert model not in doc["deleted"] and len(doc["deleted"]) == 2  # endpoint, config
    assert f"kept {model}: endpoint their-e uses it" in err
    assert [p["ModelName"] for p in world.sent("DeleteModel")] == []
    assert sagemaker_inventory()["models"] == [model]
    # gc does not call it garbage either, while the component names it.
    code, out, err = run(capsys, "gc", "--dry-run", "--min-age", "0", "--json")
    assert code == 0, err
    assert json.loads(out)["models"] == []


def test_update_keeps_the_old_model_another_endpoints_component_names(
    world: World, capsys: Any
) -> None:
    old = deploy_single(capsys)
    their_component_endpoint(old)
    world.requests.clear()
    code, _, err = run(capsys, "update", NAME, "-k", "5", "--yes", "--json")
    assert code == 0, err
    assert f"kept old model {old}: their-e uses it" in err
    assert [p["ModelName"] for p in world.sent("DeleteModel")] == []
    models = sagemaker_inventory()["models"]
    assert old in models and len(models) == 2  # the new one serves NAME
    desc = sm().describe_inference_component(InferenceComponentName="their-ic")
    assert desc["Specification"]["ModelName"] == old


def test_adopt_notes_a_model_another_endpoints_component_names(world: World, capsys: Any) -> None:
    create_jumpstart_endpoint(world.role_arn)
    their_component_endpoint(JS_MODEL)
    code, out, err = run(capsys, "adopt", JS_NAME, "--dry-run", "--json")
    assert code == 0, err
    shared = [c["message"] for c in json.loads(out)["checks"] if c["name"] == "shared"]
    assert len(shared) == 1 and JS_MODEL in shared[0] and "used by endpoint their-e" in shared[0]


@pytest.fixture
def with_foreign(world: World, capsys: Any) -> World:
    """TWO_COMPONENTS deployed by peagle, then a component someone added with raw boto3
    (no peagle:managed tag) naming a model of their own."""
    code, _, err = run(capsys, "deploy", *TWO_COMPONENTS, "--yes", "--json")
    assert code == 0, err
    sm().create_model(ModelName="their-m", ExecutionRoleArn=ROLE, PrimaryContainer={"Image": "i"})
    their_component(NAME, "their-m", name="their-ic")
    world.requests.clear()
    return world


def test_delete_refuses_an_endpoint_hosting_a_component_peagle_did_not_create(
    with_foreign: World, capsys: Any
) -> None:
    before = leftovers("123456789012", REGION)
    assert "their-ic" in before["inference_components"]
    code, out, err = run(capsys, "delete", NAME, "--yes")
    assert code == 2
    # One line (after the usual "talking to: AWS, region ..." notice), no traceback.
    lines = [line for line in err.strip().splitlines() if not line.startswith("talking to:")]
    assert len(lines) == 1 and lines[0].startswith("error: ")
    assert "their-ic" in lines[0] and "would destroy" in lines[0] and "--force" in lines[0]
    assert leftovers("123456789012", REGION) == before
    assert [op for op, _ in with_foreign.requests if op.startswith(MUTATING)] == []


def test_delete_force_removes_the_foreign_component_but_never_its_model(
    with_foreign: World, capsys: Any
) -> None:
    code, out, err = run(capsys, "delete", NAME, "--yes", "--force", "--json")
    assert code == 0, err
    assert left_in_moto() == {"models": ["their-m"]}
    assert "their-m" not in [p["ModelName"] for p in with_foreign.sent("DeleteModel")]
    assert "kept model their-m: an inference component peagle did not create named it" in err
    ops = [op for op, _ in with_foreign.requests]
    last_ic = max(i for i, op in enumerate(ops) if op == "DeleteInferenceComponent")
    assert last_ic < ops.index("DeleteEndpoint")


def test_harness_refuses_delete_endpoint_while_a_component_remains(
    world: World, sagemaker_harness: Any
) -> None:
    sm().create_model(ModelName="m", ExecutionRoleArn=ROLE, PrimaryContainer={"Image": "i"})
    their_component_endpoint("m")
    for strict in (False, True):
        if strict:
            with strict_deletes(sagemaker_harness, deleting_describes=0) as mode:
                with pytest.raises(ClientError) as caught:
                    sm().delete_endpoint(EndpointName="their-e")
                assert mode.log == []
        else:
            with pytest.raises(ClientError) as caught:
                sm().delete_endpoint(EndpointName="their-e")
        error = caught.value.response["Error"]
        assert error["Code"] == "ValidationException"
        assert "their-ic" in error["Message"]
        assert [e["EndpointName"] for e in sm().list_endpoints()["Endpoints"]] == ["their-e"]
    # Once the component is Deleting, the endpoint may go.
    sm().delete_inference_component(InferenceComponentName="their-ic")
    sm().delete_endpoint(EndpointName="their-e")
    assert sm().list_endpoints()["Endpoints"] == []


def test_component_update_keeps_the_old_model_another_endpoints_component_names(
    world: World, capsys: Any
) -> None:
    code, _, err = run(capsys, "deploy", *TWO_COMPONENTS, "--yes", "--json")
    assert code == 0, err
    peagle_ic = f"{NAME}-p-eagle"
    spec = sm().describe_inference_component(InferenceComponentName=peagle_ic)["Specification"]
    old = spec["ModelName"]
    their_component_endpoint(old)
    world.requests.clear()
    # The p-eagle component's K 7 -> 5, through the lifecycle `update`/`apply` use.
    said: list[str] = []
    spec = deployed_spec(sm(), NAME)
    comps = spec.inference_components.components
    comps[[c.name for c in comps].index("p-eagle")].k = 5
    Lifecycle(AwsContext(region=REGION), say=said.append).update(plan(spec))
    err = "\n".join(said)
    new = sm().describe_inference_component(InferenceComponentName=peagle_ic)["Specification"]
    assert new["ModelName"] != old  # K changed: the component moved to a new model
    assert f"kept old model {old}: their-e uses it" in err
    assert old not in [p["ModelName"] for p in world.sent("DeleteModel")]
    assert old in sagemaker_inventory()["models"]


def their_component_intact() -> None:
    """their-ic still there (not Deleting), naming their-m, which is still there."""
    desc = sm().describe_inference_component(InferenceComponentName="their-ic")
    assert desc["InferenceComponentStatus"] != "Deleting"
    assert desc["Specification"]["ModelName"] == "their-m"
    assert "their-m" in sagemaker_inventory()["models"]


def test_update_leaves_a_component_peagle_did_not_create(with_foreign: World, capsys: Any) -> None:
    # K is per component: the update changes peagle's p-eagle component (a new model; its
    # old one retired) and leaves their-ic and their model alone.
    peagle_ic = f"{NAME}-p-eagle"
    old_model = sm().describe_inference_component(InferenceComponentName=peagle_ic)[
        "Specification"
    ]["ModelName"]
    code, _, err = run(
        capsys, "update", NAME, "--component", "p-eagle", "-k", "5", "--yes", "--json"
    )
    assert code == 0, err
    assert "kept inference component their-ic: not peagle's" in err
    assert [u["InferenceComponentName"] for u in with_foreign.sent("UpdateInferenceComponent")] == [
        peagle_ic
    ]
    assert with_foreign.sent("DeleteInferenceComponent") == []
    assert with_foreign.sent("DeleteModel") == [{"ModelName": old_model}]
    their_component_intact()


def component_spec(path: Any, components: list[dict[str, Any]]) -> Any:
    """TWO_COMPONENTS as a spec file, with `components` instead of its two."""
    doc = {
        "model": "gpt-oss-20b",
        "region": REGION,
        "endpoint": {"hosting": "inference-components", "instance_type": "ml.g7e.12xlarge"},
        "inference_components": {
            "components": components, "accelerators_per_copy": 1, "scale_to_zero": True,
        },
    }  # fmt: skip
    path.write_text(yaml.safe_dump(doc))
    return path


def test_apply_removes_only_peagles_dropped_component(
    with_foreign: World, capsys: Any, tmp_path: Any
) -> None:
    peagle, baseline = f"{NAME}-p-eagle", f"{NAME}-baseline"
    old = {ic: sm().describe_inference_component(InferenceComponentName=ic)["Specification"]
           ["ModelName"] for ic in (peagle, baseline)}  # fmt: skip
    spec = component_spec(tmp_path / "ic.yaml", [{"name": "p-eagle", "k": 5}])
    code, _, err = run(capsys, "apply", "-f", str(spec), "--yes", "--json")
    assert code == 0, err
    assert "kept inference component their-ic: not peagle's" in err
    assert [p["InferenceComponentName"] for p in with_foreign.sent("DeleteInferenceComponent")] == [
        baseline
    ]
    # Both retired models go (nothing else names them); their-m never does.
    assert sorted(p["ModelName"] for p in with_foreign.sent("DeleteModel")) == sorted(old.values())
    their_component_intact()
    assert sorted(left_in_moto()["inference_components"]) == sorted([peagle, "their-ic"])
    # "Is the old model still used?" is one scan of the account, not one per retired model.
    assert len(with_foreign.sent("ListEndpoints")) == 1


def test_delete_does_not_count_a_foreign_component_already_deleting(
    with_foreign: World, capsys: Any
) -> None:
    sm().delete_inference_component(InferenceComponentName="their-ic")  # its owner removes it
    code, _, err = run(capsys, "delete", NAME, "--yes", "--json")
    assert code == 0, err
    # peagle neither refused nor sent a delete of their component; their model stays.
    assert "their-ic" not in [p["InferenceComponentName"]
                              for p in with_foreign.sent("DeleteInferenceComponent")]  # fmt: skip
    assert "their-m" not in [p["ModelName"] for p in with_foreign.sent("DeleteModel")]
    assert sagemaker_inventory()["endpoints"] == []


class Terminal(io.StringIO):
    """stdin as a terminal that types its text."""

    def isatty(self) -> bool:
        return True


def test_delete_force_asks_naming_the_foreign_components(
    with_foreign: World, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    question = (
        f"Delete endpoint {NAME} and its config/models, and inference component(s) peagle "
        "did not create: their-ic (their scaling targets, policies and alarms go too; their "
        "models are kept)?"
    )
    before = leftovers("123456789012", REGION)
    monkeypatch.setattr(sys, "stdin", Terminal("n\n"))
    code, out, err = run(capsys, "delete", NAME, "--force")
    assert code == 1 and question in err and question not in out
    assert leftovers("123456789012", REGION) == before
    assert [op for op, _ in with_foreign.requests if op.startswith(MUTATING)] == []

    monkeypatch.setattr(sys, "stdin", Terminal("y\n"))
    code, _, err = run(capsys, "delete", NAME, "--force")
    assert code == 0 and question in err
    assert left_in_moto() == {"models": ["their-m"]}
