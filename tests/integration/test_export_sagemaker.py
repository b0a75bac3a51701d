"""`peagle export --format sagemaker`: the script runs with the real sagemaker-core
against the moto harness, and the requests it sends are the ones `peagle deploy` sends,
field by field: the plan's (AdditionalModelDataSources included: facts 4 says SDK releases
silently dropped them) with the spec in `peagle:spec:*` tags, so the endpoint it makes is
peagle's at once (`update`, `delete`). Refusals say why; the script without the SDK says
how to install it."""

from __future__ import annotations

import json
import runpy
import subprocess
import sys
from pathlib import Path
from typing import Any

import boto3
import pytest

import sm_peagle
from peagle_sandbox.synthetic_head import synthetic_head
from sm_peagle.iac.export import export_text
from sm_peagle.planning.build import plan as build_plan
from sm_peagle.planning.spec.options import spec_from_options
from tests.integration.lifecycle_env import (
    HEAD_PREFIX,
    JS_BUCKET,
    REGION,
    run,
    sagemaker_inventory,
)
from tests.integration.sagemaker_extra import sagemaker_core  # noqa: F401 (fixture)
from tests.operation_tags import operation_of, without_operation_tags
from tests.spec_tags_rule import documented_spec_tags, spec_data_in

NAME = "peagle-gpt-oss-20b-p-eagle"
CREATES = {"CreateModel", "CreateEndpointConfig", "CreateEndpoint", "CreateInferenceComponent"}


def record_sdk_requests(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, dict]]:
    """Every SageMaker request made through a boto3 Session (the script's), as botocore
    receives its parameters from sagemaker-core."""
    sent: list[tuple[str, dict]] = []
    original = boto3.session.Session.client

    def client(self: Any, *args: Any, **kwargs: Any) -> Any:
        c = original(self, *args, **kwargs)
        if c.meta.service_model.service_name == "sagemaker":

            def before(params: dict, model: Any, **_: Any) -> None:
                sent.append((model.name, json.loads(json.dumps(params, default=str))))

            c.meta.events.register("provide-client-params.sagemaker.*", before)
        return c

    monkeypatch.setattr(boto3.session.Session, "client", client)
    return sent


def differences(sent: Any, planned: Any, path: str = "") -> list[str]:
    """Field-by-field differences, as paths (empty when equal)."""
    if isinstance(sent, dict) and isinstance(planned, dict):
        out = []
        for key in sorted(set(sent) | set(planned)):
            if key not in sent:
                out.append(f"{path}.{key}: planned but not sent")
            elif key not in planned:
                out.append(f"{path}.{key}: sent but not planned")
            else:
                out += differences(sent[key], planned[key], f"{path}.{key}")
        return out
    if isinstance(sent, list) and isinstance(planned, list) and len(sent) == len(planned):
        pairs = enumerate(zip(sent, planned, strict=True))
        return [d for i, (s, p) in pairs for d in differences(s, p, f"{path}[{i}]")]
    return [] if sent == planned else [f"{path}: sent {sent!r}, planned {planned!r}"]


def assert_creates(
    sent: list[tuple[str, dict]], expected: list[tuple[str, dict]]
) -> list[tuple[str, dict]]:
    """The Create* requests sent are `expected` (operation, request), in order, with no
    field different; returns them."""
    creates = [(op, params) for op, params in sent if op in CREATES]
    assert [op for op, _ in creates] == [op for op, _ in expected]
    for (op, params), (_, request) in zip(creates, expected, strict=True):
        assert differences(params, request) == [], op
    return creates


def with_spec_tags(planned: Any, expected: list[tuple[str, dict]]) -> list[tuple[str, dict]]:
    """The plan's requests as `peagle deploy` tags them: its tags, then the spec's
    (tests/spec_tags_rule.py, written from the documented rule)."""
    spec = [{"Key": k, "Value": v} for k, v in documented_spec_tags(planned.spec).items()]
    return [(op, {**req, "Tags": req["Tags"] + spec}) for op, req in expected]


def what_deploy_sends(world: Any, capsys: Any, harness: Any, *argv: str) -> list[tuple[str, dict]]:
    """The Create* requests `peagle deploy <argv>` sends in this harness, in order; then
    `peagle delete` removes what it made, so the script starts from nothing."""
    world.requests.clear()
    code, _, err = run(capsys, "deploy", *argv, "--yes")
    assert code == 0, err
    sent = [(op, params) for op, params in world.requests if op in CREATES]
    # A deploy is an operation and tags what it makes with it; a script runs none.
    assert len({operation_of(params) for _, params in sent}) == 1
    sent = [(op, without_operation_tags(params)) for op, params in sent]
    code, _, err = run(capsys, "delete", NAME, "--yes")
    assert code == 0, err
    assert harness.resources().is_empty
    return sent


def run_script(path: Path, capsys: pytest.CaptureFixture) -> str:
    capsys.readouterr()
    runpy.run_path(str(path), run_name="__main__")
    return capsys.readouterr().out


@pytest.mark.usefixtures("sagemaker_core")
def test_the_script_sends_the_plans_requests(
    world: Any,
    capsys: Any,
    sagemaker_harness: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    deployed = what_deploy_sends(world, capsys, sagemaker_harness, "gpt-oss-20b")
    script = tmp_path / "deploy_peagle.py"
    code, _, err = run(capsys, "export", "gpt-oss-20b", "--format", "sagemaker", "-o", str(script))
    assert code == 0, err
    assert f"wrote sagemaker export of {NAME} to {script}" in err
    sent = record_sdk_requests(monkeypatch)

    out = run_script(script, capsys)

    assert out.splitlines()[-1] == NAME
    assert [op for op, _ in deployed] == ["CreateModel", "CreateEndpointConfig", "CreateEndpoint"]
    creates = assert_creates(sent, deployed)
    # Which is the plan's requests plus the spec tags, each resource carrying the spec.
    planned = sm_peagle.plan("gpt-oss-20b", role=world.role_arn, region=REGION)
    plain = [
        ("CreateModel", planned.create_model),
        ("CreateEndpointConfig", planned.create_endpoint_config),
        ("CreateEndpoint", planned.create_endpoint),
    ]
    assert creates == with_spec_tags(planned, plain)
    for _, params in creates:
        tags = {t["Key"]: t["Value"] for t in params["Tags"]}
        assert spec_data_in(tags)["model"] == "gpt-oss-20b"
    # The drafter channel, spelled out: what SDK releases before 3.19 dropped.
    (model,) = [p for op, p in creates if op == "CreateModel"]
    assert model["PrimaryContainer"]["AdditionalModelDataSources"] == [
        {
            "ChannelName": "eagle",
            "S3DataSource": {
                "S3Uri": f"s3://{JS_BUCKET}/{HEAD_PREFIX}",
                "S3DataType": "S3Prefix",
                "CompressionType": "None",
            },
        }
    ]
    # The rest of what it sent only reads (the SDK re-reads each resource it creates).
    assert {op for op, _ in sent} - CREATES <= {
        "DescribeModel",
        "DescribeEndpointConfig",
        "DescribeEndpoint",
    }
    sm = boto3.client("sagemaker", region_name=REGION)
    assert sm.describe_endpoint(EndpointName=NAME)["EndpointStatus"] == "InService"
    assert sagemaker_harness.resources().total == 3


@pytest.mark.usefixtures("sagemaker_core")
def test_components_script_sends_the_plans_requests(
    world: Any,
    capsys: Any,
    sagemaker_harness: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    planned = build_plan(
        spec_from_options(
            "gpt-oss-20b",
            role=world.role_arn,
            region=REGION,
            instance_type="ml.g7e.12xlarge",
            components=["p-eagle:k=7", "baseline"],
            accelerators_per_copy=1,
        )
    )
    script = tmp_path / "deploy_components.py"
    script.write_text(export_text(planned, "sagemaker"))
    sent = record_sdk_requests(monkeypatch)

    out = run_script(script, capsys)

    assert out.splitlines()[-1] == NAME
    expected = [
        *(("CreateModel", m) for m in planned.component_models),
        ("CreateEndpointConfig", planned.create_endpoint_config),
        ("CreateEndpoint", planned.create_endpoint),
        *(("CreateInferenceComponent", ic) for ic in planned.inference_components),
    ]
    assert_creates(sent, with_spec_tags(planned, expected))
    # Components are created only once the endpoint is in service (AWS refuses otherwise).
    ops = [op for op, _ in sent]
    assert ops.index("CreateInferenceComponent") > ops.index("DescribeEndpoint")
    sources = planned.component_models[0]["PrimaryContainer"]["AdditionalModelDataSources"]
    assert [s["ChannelName"] for s in sources] == ["eagle"]


@pytest.mark.usefixtures("sagemaker_core")
def test_fallback_pools_script_sends_the_plans_requests(
    world: Any, capsys: Any, sagemaker_harness: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    planned = sm_peagle.plan(
        {
            "model": "gpt-oss-20b",
            "region": REGION,
            "role": world.role_arn,
            "endpoint": {"fallback_instance_types": ["ml.g7e.4xlarge"]},
        }
    )
    script = tmp_path / "deploy_pools.py"
    script.write_text(export_text(planned, "sagemaker"))
    sent = record_sdk_requests(monkeypatch)

    assert run_script(script, capsys).splitlines()[-1] == NAME

    expected = [
        ("CreateModel", planned.create_model),
        *(("CreateModel", m) for m in planned.pool_models),
        ("CreateEndpointConfig", planned.create_endpoint_config),
        ("CreateEndpoint", planned.create_endpoint),
    ]
    creates = assert_creates(sent, with_spec_tags(planned, expected))
    (variant,) = creates[2][1]["ProductionVariants"]
    assert [p["InstanceType"] for p in variant["InstancePools"]] == [
        "ml.g7e.2xlarge",
        "ml.g7e.4xlarge",
    ]


@pytest.mark.usefixtures("sagemaker_core")
def test_the_endpoint_the_script_makes_is_peagles_update_and_delete_work(
    world: Any, capsys: Any, sagemaker_harness: Any, tmp_path: Path
) -> None:
    """No `peagle adopt` step: the script tags what deploy tags, so update reads the spec
    from the tags and delete owns all of it."""
    script = tmp_path / "deploy_peagle.py"
    assert run(capsys, "export", "gpt-oss-20b", "--format", "sagemaker", "-o", str(script))[0] == 0
    assert run_script(script, capsys).splitlines()[-1] == NAME
    sm = boto3.client("sagemaker", region_name=REGION)
    first = sm.describe_endpoint(EndpointName=NAME)["EndpointConfigName"]

    code, _, err = run(capsys, "update", NAME, "-k", "5", "--yes")

    assert code == 0, err
    now = sm.describe_endpoint(EndpointName=NAME)
    assert now["EndpointStatus"] == "InService" and now["EndpointConfigName"] != first
    (variant,) = sm.describe_endpoint_config(EndpointConfigName=now["EndpointConfigName"])[
        "ProductionVariants"
    ]
    env = sm.describe_model(ModelName=variant["ModelName"])["PrimaryContainer"]["Environment"]
    assert json.loads(env["SM_VLLM_SPECULATIVE_CONFIG"])["num_speculative_tokens"] == 5
    code, _, err = run(capsys, "delete", NAME, "--yes")
    assert code == 0, err
    assert sagemaker_harness.resources().is_empty
    assert sagemaker_inventory() == {"models": [], "endpoint_configs": [], "endpoints": []}


COMPONENTS = {
    "instance_type": "ml.g7e.12xlarge",
    "components": ["p-eagle:k=7", "baseline"],
    "accelerators_per_copy": 1,
}


@pytest.mark.parametrize(
    ("spec", "options", "message"),
    [
        (
            {"autoscaling": {"min_instances": 1, "max_instances": 2}},
            {},
            "sagemaker export does not cover autoscaling: sagemaker-core has no resource "
            "classes for Application Auto Scaling or CloudWatch alarms",
        ),
        (
            {},
            {**COMPONENTS, "scale_to_zero": True},
            "sagemaker export does not cover autoscaling: sagemaker-core has no resource "
            "classes for Application Auto Scaling or CloudWatch alarms",
        ),
        (
            {"drafter": {"source": "HEAD_DIR"}},
            {},
            "sagemaker export cannot upload the local drafter head HEAD_DIR: "
            "`sm_peagle.deploy()` pushes it to S3 first",  # `peagle deploy` at the CLI
        ),
    ],
    ids=["autoscaling", "scale-to-zero", "local-drafter"],
)
def test_refusals_say_why(spec: dict, options: dict, message: str, tmp_path: Path) -> None:
    head = tmp_path / "head"
    head.mkdir()
    for key, body in synthetic_head(target_hidden=2880, target_vocab=201088).items():
        (head / key).write_bytes(body)
    spec = json.loads(json.dumps(spec).replace("HEAD_DIR", str(head)))
    base = {"model": "gpt-oss-20b", "region": REGION, "role": "arn:aws:iam::123456789012:role/r"}
    planned = build_plan(spec_from_options(base={**base, **spec}, **options))
    assert planned.ok
    with pytest.raises(sm_peagle.SpecError) as caught:
        export_text(planned, "sagemaker")
    assert caught.value.message == message.replace("HEAD_DIR", str(head))


def test_the_script_without_the_sdk_says_how_to_install_it(tmp_path: Path) -> None:
    planned = build_plan(
        spec_from_options("gpt-oss-20b", role="arn:aws:iam::123456789012:role/r", region=REGION)
    )
    script = tmp_path / "deploy.py"
    script.write_text(export_text(planned, "sagemaker"))
    blocker = tmp_path / "blocked" / "sagemaker"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text("raise ImportError('no sagemaker here')\n")
    result = subprocess.run(
        [sys.executable, str(script)],
        env={"PYTHONPATH": str(blocker.parent), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    assert result.stderr.strip() == (
        "this script needs the sagemaker SDK's resource classes: "
        "pip install 'sagemaker-core>=2.27,<3'"
    )
    assert result.stdout == ""
