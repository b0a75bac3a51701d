"""What `peagle adopt` must not take, against the moto harness (one line, exit 2, nothing
tagged), and what it must not carry over:

- an endpoint that is not settled InService: while it is Updating, DescribeEndpoint's
  EndpointConfigName is the outgoing config and the incoming one is in
  PendingDeploymentSummary (botocore's DescribeEndpointOutput), so tagging "its" config
  would tag the one about to be retired; a Failed endpoint accepts only DeleteEndpoint;
- a config or model another endpoint (or another endpoint's inference component) uses:
  peagle:managed means peagle may delete it, and peagle has no notion of a shared owner;
- the SageMaker SDK's JumpStart provenance tags (`sagemaker-sdk:jumpstart-*`): they name
  what JumpStart deployed, not what peagle creates on the next update.
"""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from peagle_sandbox.sandbox_clock import SandboxClock
from sm_peagle.aws import AwsContext
from sm_peagle.errors import SpecError
from sm_peagle.lifecycle.adopt import adopt
from tests.integration.lifecycle_env import REGION, run, sagemaker_inventory
from tests.integration.test_adopt import (
    CONFIG,
    JS_RESOURCES,
    JS_TAGS,
    MODEL,
    NAME,
    all_tags,
    create_jumpstart_endpoint,
)
from tests.integration.test_adopt_refusals import one_error_line, refused_adoption

NEW_CONFIG = "jumpstart-gpt-oss-20b-cfg-2"


def copy_config(sm: Any, new: str = NEW_CONFIG) -> None:
    """A second config running the same model, as a console "update" would make."""
    cfg = sm.describe_endpoint_config(EndpointConfigName=CONFIG)
    sm.create_endpoint_config(EndpointConfigName=new, ProductionVariants=cfg["ProductionVariants"])


def test_an_updating_endpoint_is_refused_until_the_update_settles(world, capsys, sagemaker_harness):
    create_jumpstart_endpoint(world.role_arn)
    sm = boto3.client("sagemaker", region_name=REGION)
    copy_config(sm)
    # The harness's clock, frozen: the update settles when the test moves it, not by sleeping.
    clock = sagemaker_harness.clock = SandboxClock(frozen=True)
    sagemaker_harness.schedule_update(NAME, ("Updating", "InService"), seconds=600)
    sm.update_endpoint(EndpointName=NAME, EndpointConfigName=NEW_CONFIG)
    ep = sm.describe_endpoint(EndpointName=NAME)
    assert ep["EndpointStatus"] == "Updating" and ep["EndpointConfigName"] == CONFIG
    assert ep["PendingDeploymentSummary"]["EndpointConfigName"] == NEW_CONFIG
    line = refused_adoption(world, capsys)
    assert line.startswith(f"error: cannot adopt {NAME}: it is Updating to config {NEW_CONFIG}")
    assert line.endswith(f"(fix: wait until it is InService: `peagle status {NAME}`)"), line
    code, _, err = run(capsys, "adopt", NAME, "--dry-run")  # no spec of the outgoing config
    assert code == 2 and "it is Updating" in one_error_line(err)

    clock.advance(601)  # the update settles: the endpoint now runs NEW_CONFIG
    code, _, err = run(capsys, "adopt", NAME, "--yes")
    assert code == 0, err
    tags = all_tags()
    assert set(tags) == {NAME, NEW_CONFIG, MODEL}
    assert {t.get("peagle:managed") for t in tags.values()} == {"true"}
    # The config the console made and the endpoint no longer runs stays the console's.
    old = sm.describe_endpoint_config(EndpointConfigName=CONFIG)["EndpointConfigArn"]
    assert not [t for t in sm.list_tags(ResourceArn=old)["Tags"] if t["Key"].startswith("peagle")]
    assert run(capsys, "gc", "--min-age", "0", "--yes")[0] == 0
    assert CONFIG in sagemaker_inventory()["endpoint_configs"]


def test_a_failed_endpoint_is_refused_with_its_reason(world, capsys, sagemaker_harness):
    create_jumpstart_endpoint(world.role_arn)
    reason = "Image size 30 GB is greater than supported size 20 GB"
    sagemaker_harness.schedule(NAME, ("Failed",), failure_reason=reason)
    line = refused_adoption(world, capsys)
    assert f"cannot adopt {NAME}: it is Failed ({reason})" in line
    assert "accepts only DeleteEndpoint" in line


def test_an_update_started_while_confirming_stops_the_adoption(world, sagemaker_harness):
    """The answer at a prompt can take minutes: the endpoint is read again before tagging."""
    create_jumpstart_endpoint(world.role_arn)
    sm = boto3.client("sagemaker", region_name=REGION)
    copy_config(sm)
    before = all_tags()
    sagemaker_harness.schedule_update(NAME, ("Updating", "Updating", "InService"))

    def someone_updates(_result: Any) -> None:
        sm.update_endpoint(EndpointName=NAME, EndpointConfigName=NEW_CONFIG)

    with pytest.raises(SpecError, match=f"cannot adopt {NAME}: it is Updating to config"):
        adopt(AwsContext(REGION), NAME, confirm=someone_updates)
    assert all_tags() == before


def test_an_endpoint_sharing_its_config_while_confirming_stops_the_adoption(world):
    """The shared-resource check is run again after the answer, with the status."""
    create_jumpstart_endpoint(world.role_arn)
    sm = boto3.client("sagemaker", region_name=REGION)
    before = all_tags()

    def someone_shares(_result: Any) -> None:
        sm.create_endpoint(EndpointName="other", EndpointConfigName=CONFIG)

    with pytest.raises(SpecError, match=f"endpoint config {CONFIG} is also used by other"):
        adopt(AwsContext(REGION), NAME, confirm=someone_shares)
    assert all_tags() == before
    other = sm.describe_endpoint(EndpointName="other")["EndpointArn"]
    assert sm.list_tags(ResourceArn=other)["Tags"] == []


def test_a_refusal_after_confirming_leaves_no_spec_file(world, capsys, tmp_path, monkeypatch):
    """`-o` is written after the re-check: an endpoint never adopted gets no spec file."""
    import sm_peagle.cli.adopt_cmd as adopt_cmd

    create_jumpstart_endpoint(world.role_arn)
    sm = boto3.client("sagemaker", region_name=REGION)
    before = all_tags()
    answered = adopt_cmd.asker

    def answer_while_someone_shares(question: str) -> None:
        sm.create_endpoint(EndpointName="other", EndpointConfigName=CONFIG)

    # The prompt the CLI gives the SDK: the answer comes while someone shares the config.
    monkeypatch.setattr(adopt_cmd, "asker", lambda yes: answer_while_someone_shares)
    target = tmp_path / "spec.yaml"
    code, _, err = run(capsys, "adopt", NAME, "--yes", "-o", str(target))
    assert code == 2
    assert f"endpoint config {CONFIG} is also used by other" in one_error_line(err)
    assert not target.exists()
    assert all_tags() == before
    # Once the other endpoint is gone, the same command writes the file and adopts.
    monkeypatch.setattr(adopt_cmd, "asker", answered)
    sm.delete_endpoint(EndpointName="other")
    code, _, err = run(capsys, "adopt", NAME, "--yes", "-o", str(target))
    assert code == 0, err
    assert "model: gpt-oss-20b" in target.read_text().splitlines()


def test_a_config_another_endpoint_uses_is_refused_and_gc_keeps_it(world, capsys):
    create_jumpstart_endpoint(world.role_arn)
    sm = boto3.client("sagemaker", region_name=REGION)
    sm.create_endpoint(EndpointName="other", EndpointConfigName=CONFIG)  # shares both
    line = refused_adoption(world, capsys)
    assert f"endpoint config {CONFIG} is also used by other" in line
    assert f"model {MODEL} is also used by other" in line
    assert "(fix: update other to its own endpoint config and model" in line
    # The dry run shows the same, as a check.
    code, out, _ = run(capsys, "adopt", NAME, "--dry-run", "--json")
    assert code == 0
    shared = [c for c in json.loads(out)["checks"] if c["name"] == "shared"]
    assert [c["status"] for c in shared] == ["warn", "warn"]
    # The endpoint stays outside peagle, and so do its config and model: once the other
    # endpoint is gone (outside peagle), neither update nor gc touches them.
    assert run(capsys, "update", NAME, "-k", "7", "--yes")[0] == 2
    sm.delete_endpoint(EndpointName="other")
    world.requests.clear()
    assert run(capsys, "gc", "--min-age", "0", "--yes")[0] == 0
    assert not [op for op, _ in world.requests if op.startswith("Delete")]
    assert sagemaker_inventory() == JS_RESOURCES


def test_a_model_another_endpoints_inference_component_uses_is_refused(world, capsys):
    create_jumpstart_endpoint(world.role_arn)
    sm = boto3.client("sagemaker", region_name=REGION)
    sm.create_endpoint_config(
        EndpointConfigName="ic-cfg",
        ExecutionRoleArn=world.role_arn,
        ProductionVariants=[
            {
                "VariantName": "AllTraffic",
                "InstanceType": "ml.g7e.12xlarge",
                "InitialInstanceCount": 1,
                "RoutingConfig": {"RoutingStrategy": "LEAST_OUTSTANDING_REQUESTS"},
            }
        ],
    )
    sm.create_endpoint(EndpointName="ic-ep", EndpointConfigName="ic-cfg")
    sm.create_inference_component(
        InferenceComponentName="ic-ep-js",
        EndpointName="ic-ep",
        VariantName="AllTraffic",
        Specification={
            "ModelName": MODEL,
            "ComputeResourceRequirements": {"MinMemoryRequiredInMb": 1024},
        },
        RuntimeConfig={"CopyCount": 1},
    )
    assert f"model {MODEL} is also used by ic-ep" in refused_adoption(world, capsys)


def test_jumpstart_provenance_tags_identify_the_model_but_are_not_carried(world, capsys):
    create_jumpstart_endpoint(world.role_arn, tags=[*JS_TAGS, {"Key": "team", "Value": "ml"}])
    code, out, err = run(capsys, "adopt", NAME, "--yes", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["spec"]["model"] == "gpt-oss-20b"  # found by the JumpStart model id tag
    assert doc["spec"]["tags"] == {"team": "ml"}
    assert run(capsys, "update", NAME, "-k", "7", "--yes")[0] == 0
    sm = boto3.client("sagemaker", region_name=REGION)
    ep = sm.describe_endpoint(EndpointName=NAME)
    assert ep["EndpointConfigName"] != CONFIG  # what peagle made on the update
    tags = all_tags()
    new = [n for n in tags if n not in (NAME, CONFIG, MODEL)]
    assert len(new) == 2  # the new config and model
    for name in new:
        assert tags[name]["team"] == "ml"
        assert not [k for k in tags[name] if k.startswith("sagemaker-sdk:")], tags[name]
