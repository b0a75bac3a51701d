"""Every plan passes botocore's own ParamValidator, and peagle's offline validator is
stricter: it also catches what AWS rejects server-side (patterns, enums, maximums)."""

from __future__ import annotations

import copy
import itertools
from functools import cache
from typing import Any

import botocore.session
import pytest
from botocore.validate import ParamValidator

from sm_peagle.catalog.instances import INSTANCES
from sm_peagle.catalog.models import MODELS
from sm_peagle.errors import CheckFailed
from sm_peagle.planning.build import plan
from sm_peagle.planning.spec.loading import spec_from_data
from sm_peagle.planning.steps.aws_shapes import validate_request

OPERATIONS = {
    "CreateModel": "create_model",
    "CreateEndpointConfig": "create_endpoint_config",
    "CreateEndpoint": "create_endpoint",
}
MODES = ("p-eagle", "eagle3", "baseline")
BUCKET = "s3://peagle-test-bucket"


@cache
def _input_shape(operation: str) -> Any:
    model = botocore.session.get_session().get_service_model("sagemaker")
    return model.operation_model(operation).input_shape


def botocore_errors(operation: str, params: dict[str, Any]) -> str:
    report = ParamValidator().validate(params, _input_shape(operation))
    return report.generate_report() if report.has_errors() else ""


def _spec(alias: str, mode: str, instance_type: str) -> dict[str, Any]:
    data: dict[str, Any] = {
        "model": alias,
        "region": "us-east-1",
        "speculative": {"mode": mode},
        "endpoint": {"instance_type": instance_type},
    }
    if alias != "gpt-oss-20b":  # no bundled JumpStart spec: weights and head given
        data["model_data"] = f"{BUCKET}/{alias}/weights/"
        data["drafter"] = {"source": f"{BUCKET}/{alias}/head/"}
    return data


def all_plans() -> tuple[list[Any], list[tuple[str, str, str]]]:
    plans, refused = [], []
    for m, mode, inst in itertools.product(MODELS, MODES, INSTANCES):
        try:
            plans.append(plan(spec_from_data(_spec(m.alias, mode, inst))))
        except CheckFailed:
            refused.append((m.alias, mode, inst))
    return plans, refused


def test_every_catalog_plan_passes_botocores_param_validator() -> None:
    plans, refused = all_plans()
    # Only the Arm-host type is refused outright; everything else yields requests.
    assert {inst for _, _, inst in refused} == {"ml.p6e-gb200.36xlarge"}
    assert len(plans) == len(MODELS) * len(MODES) * (len(INSTANCES) - 1)
    for p in plans:
        for operation, attr in OPERATIONS.items():
            params = getattr(p, attr)
            assert botocore_errors(operation, params) == "", (p.names, operation)
            assert validate_request("sagemaker", operation, params) == []
        shapes = next(c for c in p.checks if c.name == "aws.request_shapes")
        assert shapes.status == "pass"


def test_the_model_matrix_covers_every_model_and_mode() -> None:
    plans, _ = all_plans()
    seen = {(p.spec.model, p.spec.speculative.mode.value) for p in plans}
    assert seen == {(m.alias, mode) for m in MODELS for mode in MODES}
    # Speculative plans carry a drafter channel; baseline plans do not.
    for p in plans:
        extra = p.create_model["PrimaryContainer"].get("AdditionalModelDataSources")
        assert bool(extra) is (p.spec.speculative.mode.value != "baseline")


@pytest.fixture(scope="module")
def good() -> dict[str, dict[str, Any]]:
    p = plan(spec_from_data({"model": "gpt-oss-20b", "region": "us-east-1"}))
    return {op: getattr(p, attr) for op, attr in OPERATIONS.items()}


def _break(good, operation: str, path: list[Any], value: Any) -> dict[str, Any]:
    params = copy.deepcopy(good[operation])
    node = params
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return params


KNOWN_BAD = [
    ("endpoint-name-underscore", "CreateEndpoint", ["EndpointName"], "my_endpoint"),
    ("endpoint-name-64-chars", "CreateEndpoint", ["EndpointName"], "e" * 64),
    ("model-name-underscore", "CreateModel", ["ModelName"], "my_model"),
    (
        "env-value-over-1024",
        "CreateModel",
        ["PrimaryContainer", "Environment", "BIG"],
        "x" * 1025,
    ),
    (
        "instance-type-not-in-enum",
        "CreateEndpointConfig",
        ["ProductionVariants", 0, "InstanceType"],
        "ml.bogus.large",
    ),
    (
        "timeout-above-3600",
        "CreateEndpointConfig",
        ["ProductionVariants", 0, "ModelDataDownloadTimeoutInSeconds"],
        4000,
    ),
    (
        "ami-not-in-enum",
        "CreateEndpointConfig",
        ["ProductionVariants", 0, "InferenceAmiVersion"],
        "al2-ami-bogus",
    ),
]


@pytest.mark.parametrize(
    ("operation", "path", "value"), [c[1:] for c in KNOWN_BAD], ids=[c[0] for c in KNOWN_BAD]
)
def test_peagle_flags_what_botocore_lets_through(good, operation, path, value) -> None:
    params = _break(good, operation, path, value)
    assert botocore_errors(operation, params) == ""  # botocore would send it...
    errors = validate_request("sagemaker", operation, params)  # ...peagle does not
    assert errors, params
    assert any(str(path[-1]) in e for e in errors), errors


@pytest.mark.parametrize(
    ("operation", "mutate"),
    [
        ("CreateModel", lambda p: p.pop("ModelName")),
        ("CreateEndpoint", lambda p: p.update(EndpointName=7)),
        (
            "CreateEndpointConfig",
            lambda p: p["ProductionVariants"][0].update(InitialInstanceCount="one"),
        ),
        ("CreateEndpoint", lambda p: p.update(Bogus="x")),
    ],
    ids=["missing-required", "wrong-type", "wrong-type-nested", "unknown-parameter"],
)
def test_both_validators_agree_on_what_botocore_checks(good, operation, mutate) -> None:
    params = copy.deepcopy(good[operation])
    mutate(params)
    assert botocore_errors(operation, params) != ""
    assert validate_request("sagemaker", operation, params) != []
