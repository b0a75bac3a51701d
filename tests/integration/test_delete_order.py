"""Deletion order and waiting, against the harness's strict delete mode
(`peagle_sandbox.testing.moto_delete_order`): endpoints stay `Deleting` for a few describes, and
a config or model an endpoint still uses (or is updating to) cannot be deleted. moto alone
deletes anything instantly in any order, so none of these could fail without it."""

from __future__ import annotations

from typing import Any

import boto3
import pytest

import sm_peagle
from peagle_sandbox.testing.moto_delete_order import strict_deletes
from sm_peagle.aws import AwsContext
from sm_peagle.lifecycle.manager import Lifecycle
from tests.integration.lifecycle_env import REGION, run, sagemaker_inventory

EMPTY = {"models": [], "endpoint_configs": [], "endpoints": []}
NAME = "peagle-gpt-oss-20b-p-eagle"
IMAGE = "763104351884.dkr.ecr.us-east-1.amazonaws.com/vllm:0.18.0-gpu-py312-cu129-ubuntu22.04"


@pytest.fixture
def strict(sagemaker_harness: Any) -> Any:
    with strict_deletes(sagemaker_harness, deleting_describes=3) as mode:
        yield mode


def _names(world: Any) -> tuple[str, str]:
    (model,) = [r["ModelName"] for r in world.sent("CreateModel")]
    (config,) = [r["EndpointConfigName"] for r in world.sent("CreateEndpointConfig")]
    return model, config


def _plain_endpoint(sm: Any, name: str = "ep", model: str = "m", config: str = "c") -> None:
    sm.create_model(
        ModelName=model, ExecutionRoleArn="arn:aws:iam::123456789012:role/r",
        PrimaryContainer={"Image": IMAGE},
    )  # fmt: skip
    sm.create_endpoint_config(
        EndpointConfigName=config,
        ProductionVariants=[
            {"VariantName": "AllTraffic", "ModelName": model, "InstanceType": "ml.g7e.2xlarge",
             "InitialInstanceCount": 1}
        ],
    )  # fmt: skip
    if name:
        sm.create_endpoint(EndpointName=name, EndpointConfigName=config)


# ---------------------------------------------------------------- the mode itself


def test_an_endpoint_stays_deleting_then_is_gone(aws: None, sagemaker_harness: Any) -> None:
    sm = boto3.client("sagemaker", region_name=REGION)
    _plain_endpoint(sm)
    with strict_deletes(sagemaker_harness, deleting_describes=2) as mode:
        sm.delete_endpoint(EndpointName="ep")
        seen = [sm.describe_endpoint(EndpointName="ep")["EndpointStatus"] for _ in range(2)]
        assert seen == ["Deleting", "Deleting"]
        assert [e["EndpointStatus"] for e in sm.list_endpoints()["Endpoints"]] == ["Deleting"]
        with pytest.raises(sm.exceptions.ClientError, match="Could not find endpoint"):
            sm.describe_endpoint(EndpointName="ep")
        assert mode.log == [("endpoint", "ep")]


def test_config_and_model_in_use_are_refused_until_the_endpoint_is_gone(
    aws: None, sagemaker_harness: Any
) -> None:
    sm = boto3.client("sagemaker", region_name=REGION)
    _plain_endpoint(sm)
    with strict_deletes(sagemaker_harness, deleting_describes=1) as mode:
        with pytest.raises(sm.exceptions.ClientError, match="used by endpoint ep \\(InService\\)"):
            sm.delete_endpoint_config(EndpointConfigName="c")
        sm.delete_endpoint(EndpointName="ep")
        with pytest.raises(sm.exceptions.ClientError, match="used by endpoint ep \\(Deleting\\)"):
            sm.delete_model(ModelName="m")
        assert sm.describe_endpoint(EndpointName="ep")["EndpointStatus"] == "Deleting"
        with pytest.raises(sm.exceptions.ClientError, match="Could not find endpoint"):
            sm.describe_endpoint(EndpointName="ep")
        sm.delete_model(ModelName="m")  # no endpoint left: the order is the caller's choice
        sm.delete_endpoint_config(EndpointConfigName="c")
        assert [k for k, _, _ in mode.refused] == ["endpoint_config", "model"]
        assert mode.log == [("endpoint", "ep"), ("model", "m"), ("endpoint_config", "c")]
    # Uninstalled: moto's instant delete is back.
    _plain_endpoint(sm, "ep2", "m2", "c2")
    sm.delete_endpoint(EndpointName="ep2")
    assert sagemaker_harness.resources().endpoints == ()


def test_an_updates_pending_config_and_model_are_in_use(aws: None, sagemaker_harness: Any) -> None:
    sm = boto3.client("sagemaker", region_name=REGION)
    _plain_endpoint(sm)
    _plain_endpoint(sm, "", "m-new", "c-new")
    sagemaker_harness.schedule_update("ep", ["Updating"] * 50 + ["InService"])
    sm.update_endpoint(EndpointName="ep", EndpointConfigName="c-new")
    with strict_deletes(sagemaker_harness) as mode:
        for call, arg, value in (
            (sm.delete_endpoint_config, "EndpointConfigName", "c-new"),
            (sm.delete_model, "ModelName", "m-new"),
        ):
            with pytest.raises(sm.exceptions.ClientError, match="ep \\(Updating\\)"):
                call(**{arg: value})
        sm.delete_endpoint(EndpointName="ep")
        # The update's schedule stops: a deleted endpoint never comes back InService.
        assert {sm.describe_endpoint(EndpointName="ep")["EndpointStatus"] for _ in range(2)} == {
            "Deleting"
        }
        assert len(mode.refused) == 2


# ---------------------------------------------------------------- the lifecycle against it


def test_rollback_deletes_newest_first_and_waits_for_each(world, capsys, sagemaker_harness, strict):
    sagemaker_harness.schedule(NAME, ["Creating", "Failed"], failure_reason="health check")
    code, _, err = run(capsys, "deploy", "gpt-oss-20b", "--yes")
    assert code == 1 and "is Failed" in err
    model, config = _names(world)
    # Newest first; the config only once the endpoint was really gone (else refused).
    assert strict.log == [("endpoint", NAME), ("endpoint_config", config), ("model", model)]
    assert strict.refused == [] and sagemaker_inventory() == EMPTY


def test_interrupted_create_rolls_back_in_order(world, sagemaker_harness, strict):
    sagemaker_harness.schedule(NAME, ["Creating"] * 50 + ["InService"])

    def interrupt(state: Any) -> None:
        if state.polls == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        sm_peagle.deploy("gpt-oss-20b", role=world.role_arn, region=REGION, on_poll=interrupt)
    model, config = _names(world)
    assert strict.log == [("endpoint", NAME), ("endpoint_config", config), ("model", model)]
    assert strict.refused == [] and sagemaker_inventory() == EMPTY


def test_delete_and_confirm_returns_only_once_the_endpoint_is_gone(
    aws: None, sagemaker_harness: Any, strict: Any
) -> None:
    sm = boto3.client("sagemaker", region_name=REGION)
    _plain_endpoint(sm)
    sleeps: list[float] = []
    lc = Lifecycle(AwsContext(region=REGION), poll_initial=0.5, sleep=sleeps.append)
    assert lc.delete_and_confirm("endpoint", "ep") is True
    assert sagemaker_harness.resources().endpoints == ()
    # Three describes saw Deleting, each followed by one poll interval; the fourth, gone.
    assert sleeps == [0.5, 0.5, 0.5]
    assert lc.delete_and_confirm("endpoint", "ep") is False  # already gone
    assert lc.delete_and_confirm("endpoint_config", "c") is True
    assert lc.delete_and_confirm("model", "m") is True
    assert strict.refused == []


def test_delete_while_an_update_is_pending_removes_both_configs_after_the_endpoint(
    world, capsys, sagemaker_harness, strict
):
    assert run(capsys, "deploy", "gpt-oss-20b", "--yes")[0] == 0
    model, config = _names(world)
    sm = boto3.client("sagemaker", region_name=REGION)
    _plain_endpoint(sm, "", "m-new", "c-new")
    sagemaker_harness.schedule_update(NAME, ["Updating"] * 50 + ["InService"])
    sm.update_endpoint(EndpointName=NAME, EndpointConfigName="c-new")
    code, _, err = run(capsys, "delete", NAME, "--yes")
    assert code == 0, err
    assert strict.log == [
        ("endpoint", NAME),
        ("endpoint_config", config),
        ("endpoint_config", "c-new"),
        ("model", model),
        ("model", "m-new"),
    ]
    assert strict.refused == [] and sagemaker_inventory() == EMPTY


def test_update_rolled_back_by_sagemaker_removes_only_the_new_resources(
    world, capsys, sagemaker_harness, strict
):
    assert run(capsys, "deploy", "gpt-oss-20b", "--yes")[0] == 0
    before = sagemaker_inventory()
    sagemaker_harness.schedule_update(
        NAME, ["Updating", "Updating", "InService"], failure_reason="health check failed"
    )
    code, _, err = run(capsys, "update", NAME, "-k", "6", "--yes")
    assert code == 1 and "rolled back by SageMaker" in err
    new_config = world.sent("CreateEndpointConfig")[-1]["EndpointConfigName"]
    new_model = world.sent("CreateModel")[-1]["ModelName"]
    # Removed only after SageMaker settled: while Updating, the new config was pending.
    assert strict.log == [("endpoint_config", new_config), ("model", new_model)]
    assert strict.refused == [] and sagemaker_inventory() == before


def _interrupt_on(poll: int) -> Any:
    def on_poll(state: Any) -> None:
        if state.polls == poll:
            raise KeyboardInterrupt

    return on_poll


def test_interrupted_update_waits_for_sagemakers_rollback_before_removing_the_new_config(
    world, sagemaker_harness, strict
):
    ep = sm_peagle.deploy("gpt-oss-20b", role=world.role_arn, region=REGION)
    before = sagemaker_inventory()
    sagemaker_harness.schedule_update(
        NAME, ["Updating"] * 4 + ["InService"], failure_reason="health check failed"
    )
    new = sm_peagle.plan(ep.spec(), k=6, name=NAME)
    with pytest.raises(KeyboardInterrupt):
        ep.lifecycle().update(new, on_poll=_interrupt_on(1))
    # Interrupted while Updating: the new config was pending until SageMaker rolled back.
    assert [k for k, _ in strict.log] == ["endpoint_config", "model"]
    assert strict.refused == [] and sagemaker_inventory() == before


def test_interrupted_update_that_sagemaker_completes_keeps_what_the_endpoint_serves(
    world, sagemaker_harness, strict
):
    ep = sm_peagle.deploy("gpt-oss-20b", role=world.role_arn, region=REGION)
    old_model, old_config = _names(world)
    sagemaker_harness.schedule_update(NAME, ["Updating"] * 4 + ["InService"])
    new = sm_peagle.plan(ep.spec(), k=6, name=NAME)
    with pytest.raises(KeyboardInterrupt):
        ep.lifecycle().update(new, on_poll=_interrupt_on(1))
    # Ctrl-C does not stop SageMaker: the update went through, so the new config and model
    # are in use and the old ones are what is left over.
    serving = boto3.client("sagemaker", region_name=REGION).describe_endpoint(EndpointName=NAME)
    assert serving["EndpointConfigName"] == new.names["endpoint_config"]
    assert strict.refused == []
    assert strict.log == [("endpoint_config", old_config), ("model", old_model)]
    inv = sagemaker_inventory()
    assert inv["endpoint_configs"] == [new.names["endpoint_config"]]
    assert inv["models"] == [new.create_model["ModelName"]]
