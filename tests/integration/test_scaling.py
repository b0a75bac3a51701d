"""Autoscaling and capacity fallback pools against moto: the requests, the order of
teardown, and what status reports."""

from __future__ import annotations

import json

import boto3
import botocore.session
import pytest
from botocore.validate import ParamValidator

import sm_peagle
from tests.integration.lifecycle_env import REGION, sagemaker_inventory
from tests.integration.test_lifecycle import EMPTY, NAME, run


def test_autoscale_registers_exactly_the_planned_target_and_policy(world, capsys):
    code, out, err = run(
        capsys, "deploy", "gpt-oss-20b", "--autoscale", "1:4", "--target-concurrency", "6", "--yes"
    )
    assert code == 0, err
    planned = dict(
        sm_peagle.plan(
            "gpt-oss-20b", role=world.role_arn, region=REGION, autoscale="1:4", target_concurrency=6
        ).autoscaling
    )
    assert world.sent("RegisterScalableTarget") == [planned["RegisterScalableTarget"]]
    assert world.sent("PutScalingPolicy") == [planned["PutScalingPolicy"]]
    policy = planned["PutScalingPolicy"]["TargetTrackingScalingPolicyConfiguration"]
    assert (
        policy["PredefinedMetricSpecification"]["PredefinedMetricType"]
        == "SageMakerVariantConcurrentRequestsPerModelHighResolution"
    )
    assert policy["TargetValue"] == 6.0

    aas = boto3.client("application-autoscaling", region_name=REGION)
    (target,) = aas.describe_scalable_targets(ServiceNamespace="sagemaker")["ScalableTargets"]
    assert (target["ResourceId"], target["MinCapacity"], target["MaxCapacity"]) == (
        f"endpoint/{NAME}/variant/AllTraffic",
        1,
        4,
    )

    code, out, _ = run(capsys, "status", NAME, "--json")
    st = json.loads(out)
    assert st["autoscaling"] == {"min": 1, "max": 4, "policies": [f"{NAME}-target-tracking"]}
    assert (st["instance_count"], st["desired_instance_count"]) == (1, 1)

    assert run(capsys, "delete", NAME, "--yes")[0] == 0
    ops = [op for op, _ in world.requests]
    assert ops.index("DeregisterScalableTarget") < ops.index("DeleteEndpoint")
    assert ops.index("DeleteScalingPolicy") < ops.index("DeregisterScalableTarget")
    assert aas.describe_scalable_targets(ServiceNamespace="sagemaker")["ScalableTargets"] == []
    assert sagemaker_inventory() == EMPTY


def test_autoscaling_is_rolled_back_with_a_failed_deploy(world, monkeypatch):
    from moto.applicationautoscaling.responses import ApplicationAutoScalingResponse
    from moto.core.exceptions import JsonRESTError

    def fail(self):  # the policy is refused after the target was registered
        raise JsonRESTError("ValidationException", "injected policy failure")

    monkeypatch.setattr(ApplicationAutoScalingResponse, "put_scaling_policy", fail)
    with pytest.raises(sm_peagle.DeploymentFailed, match="injected policy failure"):
        sm_peagle.deploy("gpt-oss-20b", role=world.role_arn, region=REGION, autoscale="1:2")
    aas = boto3.client("application-autoscaling", region_name=REGION)
    assert aas.describe_scalable_targets(ServiceNamespace="sagemaker")["ScalableTargets"] == []
    assert sagemaker_inventory() == EMPTY


def test_bad_autoscale_input_is_one_line_exit_2(capsys):
    code, _, err = run(capsys, "plan", "gpt-oss-20b", "--autoscale", "4:1")
    assert code == 2 and err.startswith("error: autoscaling: ")
    code, _, err = run(capsys, "plan", "gpt-oss-20b", "--autoscale", "two")
    assert code == 2 and "MIN:MAX" in err
    code, _, err = run(capsys, "plan", "gpt-oss-20b", "--autoscale", "2:4")
    assert code == 2 and "instance_count 1 is outside min..max 2..4" in err


def test_fallback_pools_plan_two_models_with_their_own_tensor_parallel_size():
    p = sm_peagle.plan("gpt-oss-20b", fallback=["ml.g7e.12xlarge"])
    (variant,) = p.create_endpoint_config["ProductionVariants"]
    assert "InstanceType" not in variant
    assert variant["InstancePools"] == [
        {"InstanceType": "ml.g7e.2xlarge", "Priority": 1},
        {
            "InstanceType": "ml.g7e.12xlarge",
            "Priority": 2,
            "ModelNameOverride": p.pool_models[0]["ModelName"],
        },
    ]
    tp = [
        m["PrimaryContainer"]["Environment"]["SM_VLLM_TENSOR_PARALLEL_SIZE"]
        for m in (p.create_model, *p.pool_models)
    ]
    assert tp == ["1", "2"]
    model = botocore.session.get_session().get_service_model("sagemaker")
    for op, req in (
        ("CreateEndpointConfig", p.create_endpoint_config),
        ("CreateModel", p.pool_models[0]),
    ):
        report = ParamValidator().validate(req, model.operation_model(op).input_shape)
        assert not report.has_errors(), report.generate_report()


def test_fit_is_checked_per_pool():
    p = sm_peagle.plan(
        "gpt-oss-120b",
        instance_type="ml.g7e.2xlarge",
        fallback=["ml.g6e.xlarge"],
        model_data="s3://peagle-bkt/m/",
        drafter="s3://peagle-bkt/d/",
    )
    failed = [c for c in p.checks if c.status == "fail"]
    assert [c.name for c in failed] == ["pool[ml.g6e.xlarge].endpoint.instance_type"]
    assert "does not fit ml.g6e.xlarge" in failed[0].message


def test_deploy_with_pools_creates_and_deletes_every_pool_model(world, capsys):
    code, _, err = run(
        capsys,
        "deploy",
        "gpt-oss-20b",
        "--fallback",
        "ml.g7e.12xlarge",
        "--fallback",
        "ml.p5.48xlarge",
        "--yes",
    )
    assert code == 0, err
    (config,) = world.sent("CreateEndpointConfig")
    pools = config["ProductionVariants"][0]["InstancePools"]
    assert [p["InstanceType"] for p in pools] == [
        "ml.g7e.2xlarge",
        "ml.g7e.12xlarge",
        "ml.p5.48xlarge",
    ]
    assert len(world.sent("CreateModel")) == 3
    assert len(sagemaker_inventory()["models"]) == 3
    assert run(capsys, "delete", NAME, "--yes")[0] == 0
    assert sagemaker_inventory() == EMPTY


def test_quota_is_checked_for_every_pool(world, capsys, monkeypatch):
    from sm_peagle.lifecycle import preflight

    asked: list[str] = []

    def fake_quota(quotas, instance_type, count, listed=None):
        asked.append(instance_type)
        return preflight.passed("quota", f"{instance_type} ok")

    monkeypatch.setattr(preflight, "check_quota", fake_quota)
    assert run(capsys, "deploy", "gpt-oss-20b", "--fallback", "ml.g7e.12xlarge", "--yes")[0] == 0
    assert asked == ["ml.g7e.2xlarge", "ml.g7e.12xlarge"]


def test_sdk_options_map_the_same_for_every_input_kind():
    # plan(spec, …) and plan(dict, …) go through the same option mapping as an
    # alias does, so `autoscale="MIN:MAX"` works on a deployed spec too (Endpoint.update).
    spec = sm_peagle.plan("gpt-oss-20b").spec
    for source in (spec, {"model": "gpt-oss-20b"}, "gpt-oss-20b"):
        p = sm_peagle.plan(source, autoscale="1:3", k=4)
        assert (p.spec.autoscaling.min_instances, p.spec.autoscaling.max_instances) == (1, 3)
        assert p.speculative_config["num_speculative_tokens"] == 4
    with pytest.raises(TypeError, match="bogus"):  # the options are real keywords
        sm_peagle.plan(spec, bogus=1)
