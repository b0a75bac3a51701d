"""The offline request validator rule by rule, each limit from AWS's SageMaker API
reference (the "Array Members", "Length Constraints", "Valid Range" and "Type" lines of
CreateModel / CreateEndpointConfig / CreateEndpoint), on small hand-written requests."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest

from sm_peagle.planning.steps.aws_shapes import shape_enum, validate_request

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


# --- the cached slice of botocore's service model ------------------------------------------
@pytest.fixture
def fresh_model_cache(tmp_path, monkeypatch):
    """No cached slice, on disk or in memory, and the disk cache the impure layer installs
    (lifecycle/shape_cache.py): the next lookup reads botocore's file."""
    from sm_peagle.lifecycle import shape_cache
    from sm_peagle.planning.steps import aws_shapes

    monkeypatch.setenv("PEAGLE_CACHE_DIR", str(tmp_path))
    shape_cache.install()
    aws_shapes.service_model.cache_clear()
    yield tmp_path / "shapes"
    aws_shapes.service_model.cache_clear()


def _botocore_shapes(service: str) -> dict:
    import botocore.session

    loader = botocore.session.get_session().get_component("data_loader")
    return loader.load_service_model(service, "service-2")


KEPT = ("type", "required", "min", "max", "enum", "pattern")


@pytest.mark.parametrize("service", ["sagemaker", "application-autoscaling", "cloudwatch"])
def test_the_slice_is_botocores_model_for_every_shape_peagle_sends(fresh_model_cache, service):
    from sm_peagle.planning.steps.aws_shapes import OPERATIONS, service_model

    full = _botocore_shapes(service)
    sliced = service_model(service)
    ops = {op: full["operations"][op]["input"]["shape"] for op in OPERATIONS[service]}
    assert sliced["operations"] == ops
    # Every shape reachable from those inputs is there, with botocore's constraints.
    todo, seen = list(ops.values()), set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        shape, got = full["shapes"][name], sliced["shapes"][name]
        assert {k: shape[k] for k in KEPT if k in shape} == {k: got[k] for k in KEPT if k in got}
        refs = [m["shape"] for m in shape.get("members", {}).values()]
        refs += [shape[k]["shape"] for k in ("member", "key", "value") if k in shape]
        assert refs == [m["shape"] for m in got.get("members", {}).values()] + [
            got[k]["shape"] for k in ("member", "key", "value") if k in got
        ]
        todo += refs
    assert set(sliced["shapes"]) == seen | (
        {"ProductionVariantInstanceType"} if service == "sagemaker" else set()
    )


def test_the_slice_is_cached_on_disk_and_a_broken_cache_is_rebuilt(fresh_model_cache):
    from sm_peagle.planning.steps.aws_shapes import service_model

    first = service_model("sagemaker")
    (cached,) = fresh_model_cache.glob("sagemaker-*.json")
    # sagemaker-<file size>-<mtime>-<8 hex digits of the operation list>.json
    assert re.fullmatch(r"sagemaker-\d+-\d+-[0-9a-f]{8}\.json", cached.name)
    assert json.loads(cached.read_text()) == first
    service_model.cache_clear()
    cached.write_text(json.dumps({"operations": {}, "shapes": {}, "marker": 1}))
    assert service_model("sagemaker")["marker"] == 1  # read from disk, not rebuilt
    service_model.cache_clear()
    cached.write_text("{not json")
    assert service_model("sagemaker") == first  # unreadable: rebuilt from botocore's file
    assert json.loads(cached.read_text()) == first
    assert not list(fresh_model_cache.glob("*.tmp"))


def test_the_pure_module_writes_nothing_without_the_cache(tmp_path, monkeypatch) -> None:
    """planning/ writes nothing: with its own loader a lookup computes the slice and
    leaves the cache directory untouched; sm_peagle.plan installs the disk cache."""
    from sm_peagle.planning.steps import aws_shapes

    monkeypatch.setenv("PEAGLE_CACHE_DIR", str(tmp_path))
    before = aws_shapes.current_loader()
    try:
        aws_shapes.use_loader(aws_shapes.slice_service)
        assert aws_shapes.service_model("cloudwatch")["operations"]
        assert list(tmp_path.iterdir()) == []
        import sm_peagle

        sm_peagle.plan("gpt-oss-20b")
        assert [p.name for p in (tmp_path / "shapes").iterdir()]
    finally:
        aws_shapes.use_loader(before)


def test_instance_type_enum_is_botocores() -> None:
    full = _botocore_shapes("sagemaker")
    assert shape_enum("sagemaker", "ProductionVariantInstanceType") == frozenset(
        full["shapes"]["ProductionVariantInstanceType"]["enum"]
    )
    assert shape_enum("sagemaker", "NoSuchShape") == frozenset()


def test_double_members_take_numbers_but_not_booleans() -> None:
    # PutMetricAlarm's Threshold is a "double" in CloudWatch's model.
    def alarm(**kw: Any) -> list[str]:
        return validate_request("cloudwatch", "PutMetricAlarm", {"AlarmName": "a", **kw})

    assert alarm(Threshold=1.5) == [] and alarm(Threshold=2) == []
    assert alarm(Threshold=True) == ["PutMetricAlarm.Threshold: expected a number"]
    assert alarm(Threshold="1") == ["PutMetricAlarm.Threshold: expected a number"]
    # SlidingWindow is a structure with no members: any key in it is unknown.
    assert alarm(EvaluationWindow={"SlidingWindow": {}}) == []
    assert alarm(EvaluationWindow={"SlidingWindow": {"X": 1}}) == [
        "PutMetricAlarm.EvaluationWindow.SlidingWindow.X: unknown parameter"
    ]


def test_the_service_file_is_found_compressed_or_not(tmp_path, monkeypatch) -> None:
    import importlib.util
    from types import SimpleNamespace

    from sm_peagle.planning.steps import aws_shapes

    root = tmp_path / "botocore"
    older, newer = root / "data" / "svc" / "2015-01-01", root / "data" / "svc" / "2020-01-01"
    older.mkdir(parents=True)
    newer.mkdir(parents=True)
    (older / "service-2.json.gz").write_bytes(b"")
    (newer / "service-2.json").write_text("{}")
    spec = SimpleNamespace(submodule_search_locations=[str(root)])
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: spec)
    assert aws_shapes._service_file("svc") == newer / "service-2.json"  # the newest version
    (newer / "service-2.json").unlink()
    assert aws_shapes._service_file("svc") == older / "service-2.json.gz"
    with pytest.raises(RuntimeError, match="^botocore has no service model for nope$"):
        (root / "data" / "nope" / "v").mkdir(parents=True)
        aws_shapes._service_file("nope")
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(RuntimeError, match="^botocore is not installed$"):
        aws_shapes._service_file("svc")
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name: SimpleNamespace(submodule_search_locations=[])
    )
    with pytest.raises(RuntimeError, match="^botocore is not installed$"):
        aws_shapes._service_file("svc")


def test_check_request_shapes_names_the_first_three_errors(monkeypatch) -> None:
    from types import SimpleNamespace

    from sm_peagle.planning.steps.aws_shapes import check_request_shapes

    good = SimpleNamespace(
        create_model=MODEL,
        pool_models=[],
        create_endpoint_config=CONFIG,
        create_endpoint={"EndpointName": "e", "EndpointConfigName": "c"},
        monitoring=None,
    )
    ok = check_request_shapes(good)
    assert (ok.name, ok.status, ok.message) == (
        "aws.request_shapes",
        "pass",
        "all requests pass botocore's service model",
    )
    bad_pool = {**MODEL, "ModelName": "a_b"}
    bad = SimpleNamespace(
        **{**vars(good), "pool_models": [MODEL, bad_pool]},
    )
    c = check_request_shapes(bad)
    assert (c.name, c.status, c.fix) == ("aws.request_shapes", "fail", "fix the field named above")
    assert c.message.startswith("CreateModel.ModelName: 'a_b' does not match ")
    many = SimpleNamespace(
        **{**vars(good), "create_endpoint": {"EndpointName": "a_b", "X": 1, "Y": 2, "Z": 3}}
    )
    c = check_request_shapes(many)
    parts = c.message.split("; ")
    assert len(parts) == 3 and parts[0] == "CreateEndpoint.EndpointConfigName: required"
