"""The offline request validator rule by rule, each limit from AWS's SageMaker API
reference (the "Array Members", "Length Constraints", "Valid Range" and "Type" lines of
CreateModel / CreateEndpointConfig / CreateEndpoint), on small hand-written requests."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from sm_peagle.planning.aws_shapes import shape_enum, validate_request

ROLE = "arn:aws:iam::123456789012:role/peagle-exec"
IMAGE = "763104351884.dkr.ecr.us-east-1.amazonaws.com/vllm:0.18.0-gpu-py312-cu129-ubuntu22.04"
VARIANT = {
    "VariantName": "AllTraffic",
    "ModelName": "m",
    "InstanceType": "ml.g7e.2xlarge",
    "InitialInstanceCount": 1,
}
MODEL = {"ModelName": "m", "ExecutionRoleArn": ROLE, "PrimaryContainer": {"Image": IMAGE}}
CONFIG = {"EndpointConfigName": "c", "ProductionVariants": [VARIANT]}


def errors(operation: str, base: dict[str, Any], **changes: Any) -> list[str]:
    params = copy.deepcopy(base)
    params.update(changes)
    return validate_request("sagemaker", operation, params)


def variant(**changes: Any) -> list[str]:
    return errors("CreateEndpointConfig", CONFIG, ProductionVariants=[{**VARIANT, **changes}])


def test_the_minimal_requests_are_valid() -> None:
    assert errors("CreateModel", MODEL) == []
    assert errors("CreateEndpointConfig", CONFIG) == []
    assert errors("CreateEndpoint", {"EndpointName": "e", "EndpointConfigName": "c"}) == []


@pytest.mark.parametrize(
    ("count", "expected"),
    [
        (0, ["CreateEndpointConfig.ProductionVariants: 0 entries is below the minimum 1"]),
        (1, []),
        (10, []),  # ProductionVariants: "Maximum number of 10 items"
        (11, ["CreateEndpointConfig.ProductionVariants: 11 entries is above the maximum 10"]),
    ],
)
def test_production_variant_list_bounds(count: int, expected: list[str]) -> None:
    variants = [{**VARIANT, "VariantName": f"v{i}"} for i in range(count)]
    assert errors("CreateEndpointConfig", CONFIG, ProductionVariants=variants) == expected


def test_tag_list_holds_at_most_50() -> None:
    tags = [{"Key": f"k{i}", "Value": "v"} for i in range(51)]
    assert errors("CreateModel", MODEL, Tags=tags[:50]) == []
    assert errors("CreateModel", MODEL, Tags=tags) == [
        "CreateModel.Tags: 51 entries is above the maximum 50"
    ]


def test_environment_map_holds_at_most_100_entries_of_1024_characters() -> None:
    env = {f"K{i}": "v" for i in range(101)}
    container = {"Image": IMAGE, "Environment": env}
    assert errors("CreateModel", MODEL, PrimaryContainer=container) == [
        "CreateModel.PrimaryContainer.Environment: 101 entries is above the maximum 100"
    ]
    container["Environment"] = {"K" * 1025: "v"}
    (e,) = errors("CreateModel", MODEL, PrimaryContainer=container)
    assert "key" in e and "1025 characters is above the maximum 1024" in e
    container["Environment"] = {"K": 7}
    assert errors("CreateModel", MODEL, PrimaryContainer=container) == [
        "CreateModel.PrimaryContainer.Environment.K: expected a string"
    ]
    container["Environment"] = ["K=v"]
    assert errors("CreateModel", MODEL, PrimaryContainer=container) == [
        "CreateModel.PrimaryContainer.Environment: expected a mapping"
    ]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (True, ["expected an integer"]),  # a bool is an int in Python, never in the API
        (1.0, ["expected an integer"]),
        ("1", ["expected an integer"]),
        (0, ["0 is below the minimum 1"]),  # InitialInstanceCount: "Minimum value of 1"
        (1, []),
    ],
)
def test_integer_members_refuse_booleans_and_respect_their_minimum(value, expected) -> None:
    got = variant(InitialInstanceCount=value)
    assert [e.split(": ", 1)[1] for e in got] == expected
    assert all(
        e.startswith("CreateEndpointConfig.ProductionVariants[0].InitialInstanceCount") for e in got
    )


@pytest.mark.parametrize(("value", "ok"), [(True, False), ("1", False), (1, True), (0.5, True)])
def test_float_members_take_numbers_but_not_booleans(value, ok) -> None:
    assert (variant(InitialVariantWeight=value) == []) == ok
    if not ok:
        assert variant(InitialVariantWeight=value) == [
            "CreateEndpointConfig.ProductionVariants[0].InitialVariantWeight: expected a number"
        ]


@pytest.mark.parametrize(
    ("value", "ok"), [(True, True), (False, True), (1, False), ("true", False)]
)
def test_boolean_members_take_only_booleans(value, ok) -> None:
    got = errors("CreateModel", MODEL, EnableNetworkIsolation=value)
    assert got == ([] if ok else ["CreateModel.EnableNetworkIsolation: expected true or false"])


def test_string_length_pattern_and_enum() -> None:
    assert errors("CreateModel", MODEL, ModelName="m" * 63) == []  # "Maximum length of 63"
    assert errors("CreateModel", MODEL, ModelName="m" * 64) == [
        "CreateModel.ModelName: 64 characters is above the maximum 63"
    ]
    # Pattern ^[a-zA-Z0-9]([\-a-zA-Z0-9]*[a-zA-Z0-9])?, applied to the whole value.
    (e,) = errors("CreateModel", MODEL, ModelName="a_b")
    assert e.startswith("CreateModel.ModelName: 'a_b' does not match ")
    (e,) = errors("CreateModel", MODEL, ModelName="ab-")
    assert "does not match" in e
    (e,) = variant(InstanceType="ml.bogus.large")
    n = len(shape_enum("sagemaker", "ProductionVariantInstanceType"))
    assert e.endswith(f"'ml.bogus.large' is not one of {n} allowed values")
    assert errors("CreateModel", MODEL, ModelName=7) == ["CreateModel.ModelName: expected a string"]


def test_structures_report_required_unknown_and_non_mappings() -> None:
    assert errors("CreateEndpoint", {"EndpointName": "e"}) == [
        "CreateEndpoint.EndpointConfigName: required"
    ]
    assert errors("CreateEndpoint", {"EndpointName": "e", "EndpointConfigName": "c", "X": 1}) == [
        "CreateEndpoint.X: unknown parameter"
    ]
    assert errors("CreateModel", MODEL, PrimaryContainer="image") == [
        "CreateModel.PrimaryContainer: expected a mapping"
    ]
    assert errors("CreateEndpointConfig", CONFIG, ProductionVariants=VARIANT) == [
        "CreateEndpointConfig.ProductionVariants: expected a list"
    ]


def test_errors_accumulate_in_request_order() -> None:
    got = errors("CreateModel", MODEL, ModelName="a_b", Tags=[{"Key": "k"}] * 51)
    assert len(got) == 1 + 1 + 51  # the name, the list length, 51 missing tag values
    assert got[0].startswith("CreateModel.ModelName") and got[1].startswith("CreateModel.Tags:")
    assert got[2] == "CreateModel.Tags[0].Value: required"
