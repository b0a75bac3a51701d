"""Inference-component hosting and scale to zero in the pure plan.

The expected requests are written from the documented recipe (facts §10: botocore 1.43's
model and AWS's "Scale an endpoint to zero instances" page), never read back from the
code under test, and every request also goes through botocore's own ParamValidator.
"""

from __future__ import annotations

import json
from typing import Any

import botocore.session
import pytest
from botocore.validate import ParamValidator

from sm_peagle.errors import SpecError
from sm_peagle.planning.build import plan
from sm_peagle.planning.spec.options import spec_from_options
from tests.plan_helpers import TWO_COMPONENTS, plan_json

ROLE = "arn:aws:iam::123456789012:role/peagle"
EP = "peagle-gpt-oss-20b-p-eagle"


def _botocore(service: str, operation: str, params: dict[str, Any]) -> str:
    model = botocore.session.get_session().get_service_model(service)
    report = ParamValidator().validate(params, model.operation_model(operation).input_shape)
    return report.generate_report() if report.has_errors() else ""


def _plan(**options: Any) -> Any:
    options.setdefault("role", ROLE)
    return plan(spec_from_options("gpt-oss-20b", **options))


@pytest.fixture(scope="module")
def s2z() -> Any:
    """One P-EAGLE component (K=7) on a 1-GPU instance, scaling to zero."""
    return _plan(instance_type="ml.g7e.2xlarge", components=["p-eagle:k=7"], scale_to_zero=True)


def test_scale_to_zero_plan_is_the_documented_recipe_request_by_request(s2z: Any) -> None:
    assert s2z.ok, [c for c in s2z.checks if c.status == "fail"]
    ic = f"{EP}-p-eagle"
    # CreateEndpointConfig: no ModelName on the variant, ExecutionRoleArn on the config,
    # ManagedInstanceScaling with MinInstanceCount 0, RoutingConfig.
    config = s2z.create_endpoint_config
    assert config["ExecutionRoleArn"] == ROLE
    (variant,) = config["ProductionVariants"]
    assert "ModelName" not in variant
    assert variant["InstanceType"] == "ml.g7e.2xlarge"
    assert variant["ManagedInstanceScaling"] == {
        "Status": "ENABLED",
        "MinInstanceCount": 0,
        "MaxInstanceCount": 1,
    }
    assert variant["RoutingConfig"] == {"RoutingStrategy": "LEAST_OUTSTANDING_REQUESTS"}
    # CreateInferenceComponent: the component names its model, so it gets the model's
    # AdditionalModelDataSources (the drafter channel); CopyCount >= 1 at creation.
    (create_ic,) = s2z.inference_components
    assert create_ic["InferenceComponentName"] == ic
    assert create_ic["EndpointName"] == EP
    assert create_ic["VariantName"] == "AllTraffic"
    assert create_ic["RuntimeConfig"] == {"CopyCount": 1}
    spec = create_ic["Specification"]
    (model,) = s2z.component_models
    assert spec["ModelName"] == model["ModelName"]
    assert spec["ComputeResourceRequirements"]["NumberOfAcceleratorDevicesRequired"] == 1
    assert spec["ComputeResourceRequirements"]["MinMemoryRequiredInMb"] >= 128
    channels = model["PrimaryContainer"]["AdditionalModelDataSources"]
    assert [c["ChannelName"] for c in channels] == ["eagle"]
    speculative = json.loads(model["PrimaryContainer"]["Environment"]["SM_VLLM_SPECULATIVE_CONFIG"])
    assert speculative["num_speculative_tokens"] == 7 and speculative["parallel_drafting"]
    # Application Auto Scaling + CloudWatch, in the documented order.
    ops = [op for op, _ in s2z.autoscaling]
    assert ops == [
        "RegisterScalableTarget",
        "PutScalingPolicy",
        "PutScalingPolicy",
        "PutMetricAlarm",
    ]
    register, tracking, step, alarm = (req for _, req in s2z.autoscaling)
    target = {
        "ServiceNamespace": "sagemaker",
        "ResourceId": f"inference-component/{ic}",
        "ScalableDimension": "sagemaker:inference-component:DesiredCopyCount",
    }
    assert register == {**target, "MinCapacity": 0, "MaxCapacity": 1}
    assert {k: tracking[k] for k in target} == target
    assert tracking["PolicyType"] == "TargetTrackingScaling"
    metric = tracking["TargetTrackingScalingPolicyConfiguration"]["PredefinedMetricSpecification"]
    assert metric["PredefinedMetricType"] in (
        "SageMakerInferenceComponentInvocationsPerCopy",
        "SageMakerInferenceComponentConcurrentRequestsPerCopyHighResolution",
    )
    assert {k: step[k] for k in target} == target
    assert step["PolicyType"] == "StepScaling"
    step_cfg = step["StepScalingPolicyConfiguration"]
    assert step_cfg["AdjustmentType"] == "ChangeInCapacity"
    assert [a["ScalingAdjustment"] for a in step_cfg["StepAdjustments"]] == [1]
    assert step_cfg["StepAdjustments"][0]["MetricIntervalLowerBound"] == 0
    # The alarm: NoCapacityInvocationFailures, AWS/SageMaker, per component, Sum over 60 s
    # >= 1, firing the step policy.
    assert alarm["MetricName"] == "NoCapacityInvocationFailures"
    assert alarm["Namespace"] == "AWS/SageMaker"
    assert alarm["Dimensions"] == [{"Name": "InferenceComponentName", "Value": ic}]
    assert (alarm["Statistic"], alarm["Period"], alarm["Threshold"]) == ("Sum", 60, 1)
    assert alarm["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    assert alarm["EvaluationPeriods"] == 1
    assert len(alarm["AlarmActions"]) == 1 and step["PolicyName"] in alarm["AlarmActions"][0]


def test_every_component_request_passes_botocores_validator(s2z: Any) -> None:
    requests = [("sagemaker", "CreateModel", m) for m in s2z.component_models] + [
        ("sagemaker", "CreateEndpointConfig", s2z.create_endpoint_config),
        ("sagemaker", "CreateEndpoint", s2z.create_endpoint),
        *[("sagemaker", "CreateInferenceComponent", ic) for ic in s2z.inference_components],
    ]
    service = {"PutMetricAlarm": "cloudwatch"}
    requests += [(service.get(op, "application-autoscaling"), op, r) for op, r in s2z.autoscaling]
    assert [
        (op, _botocore(svc, op, req)) for svc, op, req in requests if _botocore(svc, op, req)
    ] == []
    names = {c.name: c.status for c in s2z.checks}
    assert names["inference_components.request_shapes"] == "pass"
    assert names["aws.request_shapes"] == "pass"


def test_two_components_share_one_endpoint_with_their_own_models() -> None:
    p = _plan(
        instance_type="ml.g7e.12xlarge",
        components=["p-eagle:k=7", "baseline"],
        accelerators_per_copy=1,
    )
    assert p.ok, [c for c in p.checks if c.status == "fail"]
    assert [ic["InferenceComponentName"] for ic in p.inference_components] == [
        f"{EP}-p-eagle",
        f"{EP}-baseline",
    ]
    models = {m["ModelName"]: m["PrimaryContainer"] for m in p.component_models}
    assert len(models) == 2
    by_ic = {
        ic["InferenceComponentName"]: models[ic["Specification"]["ModelName"]]
        for ic in p.inference_components
    }
    baseline = by_ic[f"{EP}-baseline"]
    assert "SM_VLLM_SPECULATIVE_CONFIG" not in baseline["Environment"]
    assert "AdditionalModelDataSources" not in baseline
    for container in by_ic.values():  # accelerators per copy = TP size
        assert container["Environment"]["SM_VLLM_TENSOR_PARALLEL_SIZE"] == "1"
    # No scale to zero asked: min instances stays 1, and no scaling requests.
    variant = p.create_endpoint_config["ProductionVariants"][0]
    assert variant["ManagedInstanceScaling"]["MinInstanceCount"] == 1
    assert p.autoscaling == []


@pytest.mark.parametrize(
    ("options", "field"),
    [
        # 2 GPUs per copy on a 1-GPU instance.
        ({"instance_type": "ml.g7e.2xlarge", "accelerators_per_copy": 2}, "accelerators_per_copy"),
        # 3 copies x 1 GPU on one 2-GPU instance, max 1 instance.
        (
            {"instance_type": "ml.g7e.12xlarge", "accelerators_per_copy": 1, "copies": 3},
            "inference_components.copies",
        ),
    ],
)
def test_accelerators_and_copies_must_fit(options: dict[str, Any], field: str) -> None:
    p = _plan(components=["p-eagle"], **options)
    assert any(c.status == "fail" and field in c.name for c in p.checks), p.checks


def test_accelerators_per_copy_must_equal_the_tensor_parallel_size() -> None:
    spec = spec_from_options(
        "gpt-oss-20b",
        role=ROLE,
        instance_type="ml.g7e.12xlarge",
        components=["baseline"],
        accelerators_per_copy=1,
    )
    data = spec.model_dump(mode="json", exclude_unset=True)
    data["container"] = {"engine_args": {"tensor_parallel_size": 2}}
    from sm_peagle.planning.spec.loading import spec_from_data

    p = plan(spec_from_data(data))
    bad = [c for c in p.checks if c.status == "fail"]
    assert [c.name for c in bad] == [
        "inference_components.components[baseline].accelerators_per_copy"
    ]


def test_more_copies_than_one_instance_holds_fit_when_max_instances_allows() -> None:
    p = _plan(instance_type="ml.g7e.2xlarge", components=["baseline"], copies=2, max_instances=2)
    assert p.ok
    c = next(c for c in p.checks if c.name == "inference_components.copies")
    assert c.status == "warn"  # starts with 1 instance; managed scaling adds the second


def test_inline_container_env_limit_and_no_drafter() -> None:
    from sm_peagle.planning.components.checks import INLINE_ENV_MAX, check_inline_env

    assert INLINE_ENV_MAX == 16  # facts §10
    ok = check_inline_env("b", {f"K{i}": "v" for i in range(16)}, "baseline")
    assert [c.status for c in ok] == ["pass"]
    too_many = check_inline_env("b", {f"K{i}": "v" for i in range(17)}, "baseline")
    assert [c.status for c in too_many] == ["fail"]
    drafter = check_inline_env("p", {}, "p-eagle")
    assert [c.status for c in drafter] == ["fail"]


def test_inline_component_carries_its_container() -> None:
    spec = spec_from_options(
        "gpt-oss-20b", role=ROLE, instance_type="ml.g7e.2xlarge", components=["baseline"]
    )
    data = spec.model_dump(mode="json", exclude_unset=True)
    data["inference_components"]["components"][0]["inline_container"] = True
    from sm_peagle.planning.spec.loading import spec_from_data

    p = plan(spec_from_data(data))
    (ic,) = p.inference_components
    assert "ModelName" not in ic["Specification"]
    assert ic["Specification"]["Container"]["Image"]
    assert p.component_models == []
    assert _botocore("sagemaker", "CreateInferenceComponent", ic) == ""


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"fallback": ["ml.g6e.2xlarge"]}, "endpoint.fallback_instance_types"),
        ({"autoscale": "1:2"}, "autoscaling"),
    ],
)
def test_single_model_options_are_refused_with_components(
    options: dict[str, Any], field: str
) -> None:
    p = _plan(instance_type="ml.g7e.2xlarge", components=["p-eagle"], **options)
    assert any(c.status == "fail" and c.name == field for c in p.checks)


def test_component_option_parsing() -> None:
    from sm_peagle.planning.components.specs import parse_component

    assert parse_component("p-eagle:k=7") == {"name": "p-eagle", "k": 7}
    assert parse_component("fast:mode=p-eagle,k=5,copies=2,accelerators=1") == {
        "name": "fast",
        "mode": "p-eagle",
        "k": 5,
        "copies": 2,
        "accelerators_per_copy": 1,
    }
    with pytest.raises(SpecError):
        parse_component("p-eagle:kk=7")
    with pytest.raises(SpecError):
        spec_from_options("gpt-oss-20b", components=["p-eagle", "p-eagle"])
    with pytest.raises(SpecError):  # scale to zero needs min instances 0
        spec_from_options("gpt-oss-20b", scale_to_zero=True, min_instances=1)


def test_single_model_plans_keep_their_hash_and_requests() -> None:
    """Hosting fields at their defaults leave the spec hash (and so every name) as it was."""
    p = _plan(instance_type="ml.g7e.2xlarge")
    assert p.spec.endpoint.hosting == "endpoint"
    assert "hosting" not in json.dumps(p.spec.model_dump(mode="json", exclude_defaults=True))
    assert p.inference_components == [] and p.component_models == []
    assert p.create_endpoint_config["ProductionVariants"][0]["ModelName"] == p.names["model"]


def test_cli_plan_json_shows_components(capsys: pytest.CaptureFixture[str]) -> None:
    doc = plan_json(
        capsys,
        *TWO_COMPONENTS,
        "--role",
        ROLE,
    )
    assert doc["hosting"] == "inference-components"
    assert [ic["InferenceComponentName"] for ic in doc["create_inference_components"]] == [
        f"{EP}-p-eagle",
        f"{EP}-baseline",
    ]
    assert [a["operation"] for a in doc["autoscaling"]].count("PutMetricAlarm") == 2
