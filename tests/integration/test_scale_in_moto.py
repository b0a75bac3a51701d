"""ScaleInPolicy on a component endpoint, through the real CLI against the moto harness:
DescribeEndpointConfig echoes ManagedInstanceScaling (ScaleInPolicy included) as sent;
the harness refuses what botocore's model does not allow (its enum and maxima, which the
client-side validator does not check); `diff` shows a change of the policy, and
`apply` refuses it before changing anything (managed instance scaling is the endpoint
config's, which peagle does not replace on a component endpoint), while a change of a
component on an endpoint with a policy still goes through."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import botocore.session
import pytest
import yaml
from botocore.exceptions import ClientError

from tests.integration.lifecycle_env import REGION, run

NAME = "peagle-gpt-oss-20b-p-eagle"


def write_spec(path: Path, *, k: int = 7, scale_in: Any = None) -> Path:
    ics: dict[str, Any] = {
        "components": [{"name": "p-eagle", "k": k}, {"name": "baseline"}],
        "accelerators_per_copy": 1,
        "scale_to_zero": True,
    }
    if scale_in is not None:
        ics["scale_in"] = scale_in
    doc = {
        "model": "gpt-oss-20b",
        "region": REGION,
        "endpoint": {"hosting": "inference-components", "instance_type": "ml.g7e.12xlarge"},
        "inference_components": ics,
    }
    path.write_text(yaml.safe_dump(doc))
    return path


def mutating(world: Any) -> list[str]:
    prefixes = ("Create", "Update", "Delete", "AddTags", "Register", "Put", "Deregister")
    return [op for op, _ in world.requests if op.startswith(prefixes)]


def live_scaling(name: str = NAME) -> dict[str, Any]:
    sm = boto3.client("sagemaker", region_name=REGION)
    config = sm.describe_endpoint(EndpointName=name)["EndpointConfigName"]
    desc = sm.describe_endpoint_config(EndpointConfigName=config)
    return desc["ProductionVariants"][0]["ManagedInstanceScaling"]


def test_describe_echoes_the_policy_as_sent(world: Any, capsys: Any, tmp_path: Path) -> None:
    policy = {"strategy": "consolidation", "max_step_size": 2, "cooldown_minutes": 30}
    spec = write_spec(tmp_path / "ic.yaml", scale_in=policy)
    code, out, err = run(capsys, "apply", "-f", str(spec), "--yes", "--json")
    assert code == 0, err
    (sent,) = world.sent("CreateEndpointConfig")
    scaling = sent["ProductionVariants"][0]["ManagedInstanceScaling"]
    assert scaling["ScaleInPolicy"] == {
        "Strategy": "CONSOLIDATION",
        "MaximumStepSize": 2,
        "CooldownInMinutes": 30,
    }
    assert live_scaling() == scaling
    # `status` tells the user which scale-in strategy the endpoint runs with.
    code, out, err = run(capsys, "status", NAME)
    assert code == 0, err
    assert "scale-in CONSOLIDATION" in out
    st = json.loads(run(capsys, "status", NAME, "--json")[1])
    assert st["managed_instance_scaling"]["scale_in"] == "CONSOLIDATION"


@pytest.mark.parametrize(
    ("policy", "constraint"),
    [
        ({"Strategy": "FASTEST"}, "Member must satisfy enum value set"),
        (
            {"Strategy": "CONSOLIDATION", "MaximumStepSize": "max"},
            "Member must have value less than or equal to",
        ),
        (
            {"Strategy": "CONSOLIDATION", "CooldownInMinutes": "max"},
            "Member must have value less than or equal to",
        ),
    ],
)
def test_the_harness_refuses_what_the_model_does_not_allow(
    sagemaker_harness: Any, policy: dict[str, Any], constraint: str
) -> None:
    model = botocore.session.get_session().get_service_model("sagemaker")
    shape = model.shape_for("ProductionVariantManagedInstanceScalingScaleInPolicy")
    policy = {
        k: (shape.members[k].metadata["max"] + 1 if v == "max" else v) for k, v in policy.items()
    }
    sm = boto3.client("sagemaker", region_name=REGION)
    variant = {
        "VariantName": "AllTraffic",
        "InstanceType": "ml.g7e.2xlarge",
        "InitialInstanceCount": 1,
        "ManagedInstanceScaling": {
            "Status": "ENABLED",
            "MinInstanceCount": 0,
            "MaxInstanceCount": 1,
            "ScaleInPolicy": policy,
        },
    }
    role = "arn:aws:iam::123456789012:role/x"
    with pytest.raises(ClientError, match=constraint) as caught:
        sm.create_endpoint_config(
            EndpointConfigName="c", ExecutionRoleArn=role, ProductionVariants=[variant]
        )
    assert caught.value.response["Error"]["Code"] == "ValidationException"
    assert sm.list_endpoint_configs()["EndpointConfigs"] == []


def test_diff_shows_a_policy_change_and_apply_refuses_it(
    world: Any, capsys: Any, tmp_path: Path
) -> None:
    spec = write_spec(tmp_path / "ic.yaml")
    assert run(capsys, "apply", "-f", str(spec), "--yes", "--json")[0] == 0
    assert "ScaleInPolicy" not in live_scaling()

    write_spec(spec, scale_in="idle-release")
    code, out, err = run(capsys, "diff", "-f", str(spec), "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["action"] == "update"
    assert {
        "path": "inference_components.scale_in.strategy",
        "old": None,
        "new": "idle-release",
    } in (doc["spec_changes"])
    path = (
        "create_endpoint_config.ProductionVariants[0].ManagedInstanceScaling.ScaleInPolicy.Strategy"
    )
    assert {"path": path, "old": None, "new": "IDLE_RELEASE"} in doc["request_changes"]

    before = len(mutating(world))
    code, out, err = run(capsys, "apply", "-f", str(spec), "--yes", "--json")
    assert code == 2  # refused before any change: the brief's exit code for that
    lines = [ln for ln in err.splitlines() if ln.startswith("error")]
    assert len(lines) == 1 and "ManagedInstanceScaling" in lines[0], err
    assert "Traceback" not in err
    assert len(mutating(world)) == before  # refused before anything changed
    assert "ScaleInPolicy" not in live_scaling()


def test_a_component_change_goes_through_on_an_endpoint_with_a_policy(
    world: Any, capsys: Any, tmp_path: Path
) -> None:
    """The live policy (read back from DescribeEndpointConfig) equals the plan's, so an
    update of K is not mistaken for a change of the instances."""
    spec = write_spec(tmp_path / "ic.yaml", scale_in="idle-release")
    assert run(capsys, "apply", "-f", str(spec), "--yes", "--json")[0] == 0
    assert run(capsys, "apply", "-f", str(spec), "--yes", "--json")[1].count('"noop"') == 1

    write_spec(spec, k=5, scale_in="idle-release")
    code, out, err = run(capsys, "apply", "-f", str(spec), "--yes", "--json")
    assert code == 0, err
    assert json.loads(out)["applied"] is True
    (update,) = world.sent("UpdateInferenceComponent")
    assert update["InferenceComponentName"] == f"{NAME}-p-eagle"
    assert live_scaling()["ScaleInPolicy"] == {"Strategy": "IDLE_RELEASE"}
