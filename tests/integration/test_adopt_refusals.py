"""`peagle adopt` refuses what one spec cannot describe (one line, exit 2, nothing
tagged), says so for an endpoint it already manages or one that does not exist, and works
through the SDK (`Endpoint.adopt`). Shared resources, endpoints mid-update and JumpStart's
tags: test_adopt_guards.py; fields a spec cannot carry: test_adopt_differences.py."""

from __future__ import annotations

import json

import boto3
import pytest

import sm_peagle
from sm_peagle.errors import SpecError
from tests.integration.lifecycle_env import REGION, run, sagemaker_inventory
from tests.integration.test_adopt import (
    CONFIG,
    EMPTY,
    MODEL,
    NAME,
    VIEW,
    all_tags,
    create_jumpstart_endpoint,
    js_env,
)
from tests.spec_tags_rule import spec_data_in

MUTATING = ("AddTags", "DeleteTags", "Create", "Delete", "Update")


def assert_untouched(world, before: dict) -> None:
    assert all_tags() == before
    assert not [op for op, _ in world.requests if op.startswith(MUTATING)]


def one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if not line.startswith("talking to:")]
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ")
    return lines[0]


def refused_adoption(world, capsys) -> str:
    """`peagle adopt NAME --yes` from here on: exit 2, nothing on stdout, one error line
    (returned), nothing tagged and no mutating request sent."""
    before = all_tags()
    world.requests.clear()
    code, out, err = run(capsys, "adopt", NAME, "--yes")
    assert code == 2 and out == "", err
    line = one_error_line(err)
    assert_untouched(world, before)
    return line


def djl_image() -> str:
    """The LMI (DJL) image the same JumpStart spec names for the g5 family: not vLLM."""
    variants = VIEW["hosting_instance_type_variants"]
    alias = variants["variants"]["g5"]["regional_properties"]["image_uri"].lstrip("$")
    return variants["regional_aliases"][REGION][alias]


@pytest.mark.parametrize(
    ("shape", "reason"),
    [
        ({"variants": 2}, "has 2 production variants; peagle manages one variant"),
        ({"image": "djl"}, "is not a vLLM image"),
        ({"method": "ngram"}, "speculative method is 'ngram'"),
        ({"drafter": "/opt/ml/model/draft"}, "is not one of the model's additional data sources"),
    ],
)
def test_what_peagle_cannot_represent_is_refused_in_one_line(world, capsys, shape, reason):
    env = js_env()
    if "method" in shape or "drafter" in shape:
        cfg = json.loads(env["SM_VLLM_SPECULATIVE_CONFIG"])
        cfg["method"] = shape.get("method", cfg["method"])
        cfg["model"] = shape.get("drafter", cfg["model"])
        env["SM_VLLM_SPECULATIVE_CONFIG"] = json.dumps(cfg)
    create_jumpstart_endpoint(
        world.role_arn,
        image=djl_image() if shape.get("image") else None,
        env=env,
        variants=shape.get("variants", 1),
    )
    line = refused_adoption(world, capsys)
    assert line.startswith(f"error: cannot adopt {NAME}: ") and reason in line, line


def test_an_endpoint_peagle_manages_is_not_adopted_again(world, capsys):
    create_jumpstart_endpoint(world.role_arn)
    assert run(capsys, "adopt", NAME, "--yes")[0] == 0
    assert f"endpoint {NAME} is already managed by peagle" in refused_adoption(world, capsys)


def test_an_endpoint_tagged_managed_without_its_spec_is_adopted(world, capsys):
    """peagle:managed but no peagle:spec:* tags (an older peagle's or an older export's):
    `update` cannot read a spec, so adopt writes it instead of calling it managed."""
    old = [
        {"Key": "peagle:managed", "Value": "true"},
        {"Key": "peagle:deployment", "Value": NAME},
        {"Key": "peagle:version", "Value": "0.0.1"},
    ]
    create_jumpstart_endpoint(world.role_arn, tags=old)
    code, _, err = run(capsys, "update", NAME, "-k", "7", "--yes")
    assert code == 2 and "no spec tags" in one_error_line(err)

    code, _, err = run(capsys, "adopt", NAME, "--yes")

    assert code == 0, err
    sm = boto3.client("sagemaker", region_name=REGION)
    arn = sm.describe_endpoint(EndpointName=NAME)["EndpointArn"]
    # The stale peagle:version was overwritten: read as AWS keeps it, one value per key
    # (moto appends a duplicate on AddTags of an existing key; the last one is the value).
    tags = {t["Key"]: t["Value"] for t in sm.list_tags(ResourceArn=arn)["Tags"]}
    assert tags["peagle:version"] == sm_peagle.__version__
    for tags in all_tags().values():
        assert tags["peagle:managed"] == "true"
        assert tags["peagle:version"] == sm_peagle.__version__
        assert spec_data_in(tags)["model"] == "gpt-oss-20b"
    assert run(capsys, "update", NAME, "-k", "7", "--yes")[0] == 0
    assert run(capsys, "delete", NAME, "--yes")[0] == 0
    assert sagemaker_inventory() == EMPTY


def test_a_missing_endpoint_is_one_line_exit_1(world, capsys):
    code, out, err = run(capsys, "adopt", "no-such-endpoint", "--yes")
    assert (code, out) == (1, "")
    assert "endpoint no-such-endpoint does not exist" in one_error_line(err)
    assert sagemaker_inventory() == EMPTY


def test_without_tags_the_jumpstart_weights_name_the_model(world, capsys):
    create_jumpstart_endpoint(world.role_arn, tags=[])
    code, out, err = run(capsys, "adopt", NAME, "--yes", "--json")
    assert code == 0, err
    doc = json.loads(out)
    (found,) = [c["message"] for c in doc["checks"] if c["name"] == "adopt.model"]
    assert found.startswith("gpt-oss-20b (from the weights s3://jumpstart-cache-prod-")
    assert doc["differences"] == []


def test_an_unknown_model_needs_model_and_then_adopts(world, capsys):
    """No JumpStart tags, weights where no bundled spec puts them, no HF_MODEL_ID."""
    weights = "s3://my-models-bucket/gpt-oss-20b/"
    create_jumpstart_endpoint(world.role_arn, tags=[], weights=weights)
    before = all_tags()
    code, _, err = run(capsys, "adopt", NAME, "--yes")
    assert code == 2
    line = one_error_line(err)
    assert "cannot tell which model it serves" in line and "--model" in line
    assert all_tags() == before
    code, out, err = run(capsys, "adopt", NAME, "--model", "gpt-oss-20b", "--yes", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["differences"] == []
    assert doc["spec"]["model_data"] == weights  # pinned: JumpStart's would differ
    assert all(t.get("peagle:managed") == "true" for t in all_tags().values())


def test_sdk_adopt_dry_run_then_adopt(world):
    create_jumpstart_endpoint(world.role_arn)
    before = all_tags()
    ep = sm_peagle.Endpoint.adopt(NAME, dry_run=True, region=REGION)
    assert ep.adoption is not None and ep.adoption.tagged == [] and all_tags() == before
    assert ep.adoption.spec.speculative.num_speculative_tokens == 3
    assert ep.adoption.differences == [] and ep.plan is ep.adoption.plan
    assert "K=3 but the head's recommended K is 7" in "\n".join(
        c.message for c in ep.adoption.checks
    )
    assert sm_peagle.Endpoint("x", region=REGION).adoption is None  # declared, not adopted
    ep = sm_peagle.Endpoint.adopt(NAME, region=REGION)
    assert len(ep.adoption.tagged) == 3
    assert ep.spec() == ep.adoption.spec  # read back from the tags
    with pytest.raises(SpecError, match="already managed"):
        sm_peagle.Endpoint.adopt(NAME, region=REGION)
    assert ep.delete().deleted == [NAME, CONFIG, MODEL]


def test_autoscaling_is_read_into_the_spec_and_removed_with_the_endpoint(world, capsys):
    create_jumpstart_endpoint(world.role_arn)
    aas = boto3.client("application-autoscaling", region_name=REGION)
    rid = f"endpoint/{NAME}/variant/AllTraffic"
    dim = "sagemaker:variant:DesiredInstanceCount"
    aas.register_scalable_target(
        ServiceNamespace="sagemaker",
        ResourceId=rid,
        ScalableDimension=dim,
        MinCapacity=1,
        MaxCapacity=3,
    )
    aas.put_scaling_policy(
        PolicyName="console-policy",
        ServiceNamespace="sagemaker",
        ResourceId=rid,
        ScalableDimension=dim,
        PolicyType="TargetTrackingScaling",
        TargetTrackingScalingPolicyConfiguration={
            "TargetValue": 70.0,
            "PredefinedMetricSpecification": {
                "PredefinedMetricType": "SageMakerVariantInvocationsPerInstance"
            },
            "ScaleOutCooldown": 300,
            "ScaleInCooldown": 600,
        },
    )
    code, out, err = run(capsys, "adopt", NAME, "--yes", "--json")
    assert code == 0, err
    assert json.loads(out)["spec"]["autoscaling"] == {
        "min_instances": 1,
        "max_instances": 3,
        "target_invocations": 70.0,
        "scale_out_cooldown": 300,
        "scale_in_cooldown": 600,
    }
    assert run(capsys, "delete", NAME, "--yes")[0] == 0
    targets = aas.describe_scalable_targets(ServiceNamespace="sagemaker", ResourceIds=[rid])
    assert targets["ScalableTargets"] == []
    assert sagemaker_inventory() == EMPTY
