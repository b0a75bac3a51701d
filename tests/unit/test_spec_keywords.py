"""The spec options are real, typed keyword parameters of `plan`, `deploy`, `diff`,
`apply` and `update`, held to the one table (`SpecOptions`) and the table to the spec's
fields, so a new option cannot be forgotten in a signature or map to no field."""

from __future__ import annotations

import dataclasses
import inspect
import typing
import warnings

import pytest
from pydantic import BaseModel

import sm_peagle
from sm_peagle import SpecError
from sm_peagle.client import Client
from sm_peagle.planning.spec.model import DeploymentSpec
from sm_peagle.planning.spec.options import SPEC_OPTION_NAMES, SpecOptions

TABLE = {f.name: f for f in dataclasses.fields(SpecOptions)}
# update cannot change these in place: the endpoint's name and components are what it
# is, and its region is the client's.
NOT_UPDATED = {"name", "components", "region"}
# update's own meaning of `copies`: one component's running copy count
# (UpdateInferenceComponentRuntimeConfig), an int as the table's is.
TAKERS = ("plan", "deploy", "diff", "apply")


def _keywords(fn: typing.Callable[..., typing.Any]) -> dict[str, inspect.Parameter]:
    return {
        n: p
        for n, p in inspect.signature(fn).parameters.items()
        if p.kind is inspect.Parameter.KEYWORD_ONLY
    }


@pytest.mark.parametrize("op", TAKERS)
def test_every_spec_option_is_a_typed_keyword_in_table_order(op: str) -> None:
    for fn in (getattr(Client, op), getattr(sm_peagle, op)):
        params = _keywords(fn)
        options = [n for n in params if n in TABLE]
        assert options == list(SPEC_OPTION_NAMES), op  # every one, in the table's order
        for name in SPEC_OPTION_NAMES:
            assert params[name].annotation == TABLE[name].type, (op, name)
            assert params[name].default is None, (op, name)
        sig = inspect.signature(fn)
        assert not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in sig.parameters.values())


def test_update_takes_every_option_it_can_change_in_place() -> None:
    for fn in (Client.update, sm_peagle.update):
        params = _keywords(fn)
        assert set(SPEC_OPTION_NAMES) - NOT_UPDATED <= set(params)
        assert not (NOT_UPDATED & set(params))
        for name in set(SPEC_OPTION_NAMES) - NOT_UPDATED:
            assert params[name].annotation == TABLE[name].type, name
            assert params[name].default is None, name
        assert "component" in params
        assert not any(
            p.kind is inspect.Parameter.VAR_KEYWORD
            for p in inspect.signature(fn).parameters.values()
        )


def test_the_module_level_deploy_lists_every_spec_option() -> None:
    params = inspect.signature(sm_peagle.deploy).parameters
    assert "self" not in params
    assert {"k", "mode", "role", "instance_type", "autoscale", "components"} <= set(params)
    assert set(SPEC_OPTION_NAMES) <= set(params)


def _spec_paths(model: type[BaseModel], prefix: str = "") -> set[str]:
    """Every field path of the spec ("speculative.num_speculative_tokens", "region")."""
    out: set[str] = set()
    for name, info in model.model_fields.items():
        out.add(prefix + name)
        for arg in (info.annotation, *typing.get_args(info.annotation)):
            if isinstance(arg, type) and issubclass(arg, BaseModel):
                out |= _spec_paths(arg, f"{prefix}{name}.")
    return out


def test_every_option_sets_a_field_the_spec_has() -> None:
    paths = _spec_paths(DeploymentSpec)
    assert "speculative.num_speculative_tokens" in paths and "region" in paths
    assert set(SpecOptions().overrides()) <= paths


# A value each option accepts, to see which spec field it sets.
SAMPLES = {
    "autoscale": "1:4",
    "k_schedule": "1-4:7",
    "components": ["baseline"],
    "fallback": ["ml.g6e.4xlarge"],
    "scale_to_zero": True,
}


@pytest.mark.parametrize("name", SPEC_OPTION_NAMES)
def test_each_option_sets_a_spec_field(name: str) -> None:
    kind = str(TABLE[name].type)
    sample = SAMPLES.get(name, 2 if kind.startswith(("int", "float")) else "x")
    before = SpecOptions().overrides()
    after = SpecOptions(**{name: sample}).overrides()
    assert [k for k in after if after[k] != before[k]], name


def test_an_unknown_keyword_is_a_type_error_before_any_request() -> None:
    with pytest.raises(TypeError, match="kk"):
        sm_peagle.plan("gpt-oss-20b", kk=5)
    with pytest.raises(TypeError, match="kk"):
        sm_peagle.deploy("gpt-oss-20b", kk=5)  # no credentials are read: binding fails
    with pytest.raises(TypeError, match="kk"):
        Client(region="us-east-1").apply("spec.yaml", kk=5)


def test_the_keywords_reach_the_plan() -> None:
    p = sm_peagle.plan("gpt-oss-20b", k=5, mode="eagle3", instance_count=2, region="us-west-2")
    assert p.spec.speculative.num_speculative_tokens == 5
    assert p.spec.speculative.mode.value == "eagle3"
    assert p.create_endpoint_config["ProductionVariants"][0]["InitialInstanceCount"] == 2
    assert p.region == "us-west-2"


def test_a_clients_region_is_the_deployments() -> None:
    assert Client(region="eu-west-1").plan("gpt-oss-20b").region == "eu-west-1"
    # the same region given twice is no conflict
    assert Client(region="eu-west-1").plan("gpt-oss-20b", region="eu-west-1").region == (
        "eu-west-1"
    )
    with pytest.raises(SpecError) as err:
        Client(region="eu-west-1").plan("gpt-oss-20b", region="us-west-2")
    e = err.value
    assert e.field == "region" and e.value == "us-west-2"
    assert "'us-west-2'" in str(e) and "'eu-west-1'" in str(e) and "region=" in str(e)
    assert "--region" not in str(e)


def test_the_old_homes_still_work_for_one_release() -> None:
    from sm_peagle.ops.deployment import Deployment

    with pytest.warns(FutureWarning, match=r"sm_peagle.endpoint.Deployment is deprecated"):
        from sm_peagle.endpoint import Deployment as Old
    assert Old is Deployment is sm_peagle.Deployment
    with pytest.warns(FutureWarning, match=r"sm_peagle.endpoint.plan is deprecated"):
        from sm_peagle.endpoint import plan
    assert plan("gpt-oss-20b", k=4).spec.speculative.num_speculative_tokens == 4
    with pytest.warns(FutureWarning, match=r"sm_peagle.endpoint.deploy is deprecated"):
        from sm_peagle.endpoint import deploy
    assert callable(deploy)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from sm_peagle.endpoint import Endpoint, deployed_spec  # the handle: no notice

        assert Endpoint and deployed_spec
