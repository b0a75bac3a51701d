"""The lifecycle against moto: the requests sent, what is left behind (nothing), exit
codes and messages, and every failure path rolling back."""

from __future__ import annotations

import json
import os
import socket
from typing import Any

import boto3
import pytest

import sm_peagle
from sm_peagle.aws import AwsContext
from sm_peagle.lifecycle.spec_tags import PREFIX as SPEC_TAG
from tests.integration.lifecycle_env import (
    HEAD_PREFIX,
    JS_BUCKET,
    REGION,
    build_world,
    run,
    sagemaker_inventory,
)
from tests.operation_tags import operation_of, without_operation_tags

EMPTY = {"models": [], "endpoint_configs": [], "endpoints": []}
NAME = "peagle-gpt-oss-20b-p-eagle"


def without_spec_tags(req: dict) -> dict:
    """The request as plan() builds it: without the spec and operation tags deploy adds."""
    req = without_operation_tags(req)
    return {**req, "Tags": [t for t in req["Tags"] if not t["Key"].startswith(SPEC_TAG)]}


def test_cli_lifecycle_sends_the_planned_requests_and_leaves_nothing(
    world, capsys, sagemaker_harness
):
    code, out, err = run(capsys, "deploy", "gpt-oss-20b", "--yes", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["status"] == "InService"
    assert [c["kind"] for c in doc["created"]] == ["model", "endpoint_config", "endpoint"]
    assert "talking to: AWS, region us-east-1" in err

    planned = sm_peagle.plan("gpt-oss-20b", role=world.role_arn, region=REGION)
    ops = set()
    for op, expected in (
        ("CreateModel", planned.create_model),
        ("CreateEndpointConfig", planned.create_endpoint_config),
        ("CreateEndpoint", planned.create_endpoint),
    ):
        (sent,) = world.sent(op)
        assert without_spec_tags(sent) == expected
        assert any(t["Key"] == f"{SPEC_TAG}0" for t in sent["Tags"])
        ops.add(operation_of(sent, owner=f"{socket.gethostname()}:{os.getpid()}"))
    assert len(ops) == 1  # one operation made all three

    code, out, _ = run(capsys, "status", NAME, "--json")
    st = json.loads(out)
    assert (code, st["status"], st["mode"], st["k"]) == (0, "InService", "p-eagle", 3)
    assert st["unfinished"] == []
    assert st["instance_type"] == "ml.g7e.2xlarge" and st["usd_per_hour"] == 4.2

    code, out, _ = run(capsys, "ls", "--json")
    assert [r["endpoint"] for r in json.loads(out)] == [NAME]

    sagemaker_harness.seed_logs(
        NAME,
        [
            "INFO Starting vLLM API server on http://0.0.0.0:8080",
            "INFO SpecDecoding metrics: Mean acceptance length: 3.41, Accepted: 120 tokens, "
            "Drafted: 249 tokens, Avg Draft acceptance rate: 48.2%",
        ],
    )
    code, out, _ = run(capsys, "logs", NAME, "--json")
    events = json.loads(out)  # one JSON document: the list of events
    assert code == 0 and len(events) == 2
    assert events[1]["spec_decoding"] == {
        "mean_acceptance_length": 3.41,
        "draft_acceptance_rate": 0.482,
    }

    code, out, err = run(capsys, "update", NAME, "-k", "5", "--yes", "--json")
    assert code == 0, err
    assert json.loads(out)["speculative_config"]["num_speculative_tokens"] == 5
    code, out, _ = run(capsys, "status", NAME, "--json")
    assert json.loads(out)["k"] == 5
    inv = sagemaker_inventory()
    assert len(inv["models"]) == 1 and len(inv["endpoint_configs"]) == 1  # old ones removed
    (update_req,) = world.sent("UpdateEndpoint")
    assert update_req["EndpointConfigName"] == inv["endpoint_configs"][0]

    code, out, _ = run(capsys, "delete", NAME, "--yes", "--json")
    assert code == 0 and len(json.loads(out)["deleted"]) == 3
    assert sagemaker_inventory() == EMPTY


def test_sdk_context_manager_deletes_on_exception(world):
    with (
        pytest.raises(RuntimeError, match="boom"),
        sm_peagle.deploy("gpt-oss-20b", k=5, role=world.role_arn, region=REGION) as ep,
    ):
        assert ep.status().k == 5
        assert sagemaker_inventory()["endpoints"] == [NAME]
        raise RuntimeError("boom")
    assert sagemaker_inventory() == EMPTY


def test_sdk_attach_update_and_spec_roundtrip(world):
    ep = sm_peagle.deploy(
        "gpt-oss-20b", mode="eagle3", k=4, role=world.role_arn, region=REGION, name="my-ep"
    )
    again = sm_peagle.Endpoint.attach("my-ep", region=REGION)
    assert again.spec().speculative.num_speculative_tokens == 4
    again.update(mode="p-eagle", k=6)
    st = ep.status()
    assert (st.mode, st.k) == ("p-eagle", 6)
    ep.delete()
    assert sagemaker_inventory() == EMPTY
    with pytest.raises(sm_peagle.NotFound):
        sm_peagle.Endpoint.attach("my-ep", region=REGION)


_BACKEND_METHOD = {
    "CreateModel": "create_model",
    "CreateEndpointConfig": "create_endpoint_config",
    "CreateEndpoint": "create_endpoint",
}


def _inject(
    monkeypatch: pytest.MonkeyPatch, operation: str, code: str, message: str, times: int = 1
) -> list[int]:
    """Fail the next `times` calls of `operation` inside moto with an AWS error, so the
    error crosses the wire and botocore's own retry logic sees it. (A botocore
    before-send hook cannot do this under mock_aws: botocore runs every before-send
    handler, so moto would still execute the request.)"""
    from moto.core.exceptions import JsonRESTError
    from moto.sagemaker.responses import SageMakerResponse

    # The response layer, not the backend: the harness patches backend methods, and a
    # monkeypatch restored after the harness uninstalls would leave its patch behind.
    name = _BACKEND_METHOD[operation]
    original = getattr(SageMakerResponse, name)
    calls = [0]

    def failing(self: Any, *args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        if calls[0] <= times:
            raise JsonRESTError(code, message)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(SageMakerResponse, name, failing)
    return calls


@pytest.fixture
def ctx(world) -> AwsContext:
    return AwsContext(REGION)


def test_throttling_is_retried_and_succeeds(world, ctx, monkeypatch):
    calls = _inject(monkeypatch, "CreateModel", "ThrottlingException", "Rate exceeded", times=2)
    ep = sm_peagle.deploy("gpt-oss-20b", role=world.role_arn, region=REGION, aws=ctx)
    assert calls[0] == 3  # two throttled attempts, then the real call
    assert ep.status().status == "InService"
    ep.delete()


def test_quota_exceeded_on_create_endpoint_rolls_back(world, ctx, monkeypatch):
    _inject(
        monkeypatch,
        "CreateEndpoint",
        "ResourceLimitExceeded",
        "The account-level service limit 'ml.g7e.2xlarge for endpoint usage' is 0",
    )
    with pytest.raises(sm_peagle.QuotaExceeded, match="ml.g7e.2xlarge for endpoint usage"):
        sm_peagle.deploy("gpt-oss-20b", role=world.role_arn, region=REGION, aws=ctx)
    assert sagemaker_inventory() == EMPTY


def test_quota_exceeded_cli_exit_1_one_line(world, capsys, monkeypatch):
    _inject(monkeypatch, "CreateEndpoint", "ResourceLimitExceeded", "limit for endpoint usage is 0")
    code, out, err = run(capsys, "deploy", "gpt-oss-20b", "--yes")
    assert code == 1
    assert err.strip().splitlines()[-1].startswith("error: SageMaker quota exceeded")
    assert "Traceback" not in err
    assert sagemaker_inventory() == EMPTY


@pytest.mark.parametrize("operation", ["CreateModel", "CreateEndpointConfig", "CreateEndpoint"])
def test_failure_at_each_create_step_leaves_nothing(world, ctx, operation, monkeypatch):
    _inject(monkeypatch, operation, "ValidationException", "injected failure")
    with pytest.raises(sm_peagle.DeploymentFailed, match="injected failure"):
        sm_peagle.deploy("gpt-oss-20b", role=world.role_arn, region=REGION, aws=ctx)
    assert sagemaker_inventory() == EMPTY


def test_failed_endpoint_prints_reason_and_logs_and_rolls_back(world, capsys, sagemaker_harness):
    reason = "CannotStartContainerError: mask_hidden not found in weights"
    sagemaker_harness.schedule(NAME, ["Creating", "Creating", "Failed"], failure_reason=reason)
    sagemaker_harness.seed_logs(
        NAME,
        ["ERROR Engine core initialization failed", "KeyError: 'mask_hidden not found in weights'"],
    )
    code, out, err = run(capsys, "deploy", "gpt-oss-20b", "--yes")
    assert code == 1
    assert f"FailureReason: {reason}" in err
    assert "KeyError: 'mask_hidden not found in weights'" in err
    assert "rolling back endpoint" in err
    assert (
        err.strip()
        .splitlines()[-1]
        .startswith("error: endpoint peagle-gpt-oss-20b-p-eagle is Failed")
    )
    assert sagemaker_inventory() == EMPTY


def test_keyboard_interrupt_during_wait_rolls_back(world, sagemaker_harness):
    sagemaker_harness.schedule(NAME, ["Creating"] * 50 + ["InService"])

    def interrupt(state: Any) -> None:
        if state.polls == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        sm_peagle.deploy("gpt-oss-20b", role=world.role_arn, region=REGION, on_poll=interrupt)
    assert sagemaker_inventory() == EMPTY


def test_wait_timeout_rolls_back_and_keep_on_failure_keeps(world, capsys, sagemaker_harness):
    sagemaker_harness.schedule(NAME, ["Creating"] * 10_000)
    code, _, err = run(capsys, "deploy", "gpt-oss-20b", "--yes", "--timeout", "0.3")
    assert code == 1 and "still Creating after" in err
    assert sagemaker_inventory() == EMPTY

    sagemaker_harness.schedule(NAME, ["Creating"] * 10_000)
    code, _, err = run(
        capsys, "deploy", "gpt-oss-20b", "--yes", "--timeout", "0.3", "--keep-on-failure"
    )
    assert code == 1 and f"peagle delete {NAME} --yes" in err
    assert sagemaker_inventory()["endpoints"] == [NAME]


def test_preflight_failures_create_nothing(world, capsys):
    # A missing role.
    code, _, err = run(
        capsys, "deploy", "gpt-oss-20b", "--yes", "--role", "arn:aws:iam::123456789012:role/missing"
    )
    assert code == 1 and "preflight role" in err and "does not exist" in err
    # A missing drafter prefix.
    code, _, err = run(
        capsys, "deploy", "gpt-oss-20b", "--yes", "--drafter", f"s3://{JS_BUCKET}/no/such/head/"
    )
    assert code == 1 and "preflight drafter.source: no objects under" in err
    # A zero-byte folder key in the head's prefix.
    boto3.client("s3", region_name=REGION).put_object(
        Bucket=JS_BUCKET, Key=HEAD_PREFIX + "sub/", Body=b""
    )
    code, _, err = run(capsys, "deploy", "gpt-oss-20b", "--yes")
    assert code == 1 and "zero-byte folder key" in err
    assert not [op for op, _ in world.requests if op.startswith("Create")]
    assert sagemaker_inventory() == EMPTY


def test_taken_name_fails_in_preflight(world, capsys):
    assert run(capsys, "deploy", "gpt-oss-20b", "--yes", "--name", "taken")[0] == 0
    creates = len([op for op, _ in world.requests if op.startswith("Create")])
    code, _, err = run(capsys, "deploy", "gpt-oss-20b", "--yes", "--name", "taken", "-k", "4")
    assert code == 1 and "endpoint taken already exists" in err
    assert len([op for op, _ in world.requests if op.startswith("Create")]) == creates


def test_role_that_does_not_trust_sagemaker(sagemaker_harness, capsys, monkeypatch):
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    w = build_world(
        trust={
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Principal": {"Service": "ec2.amazonaws.com"},
                    "Action": "sts:AssumeRole",
                }
            ],
        }
    )
    code, _, err = run(capsys, "deploy", "gpt-oss-20b", "--yes", "--role", w.role_arn)
    assert code == 1 and "does not trust sagemaker.amazonaws.com" in err


def test_placeholder_role_refused(sagemaker_harness, capsys, monkeypatch):
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    build_world()
    code, _, err = run(capsys, "deploy", "gpt-oss-20b", "--yes")
    assert code == 1 and "placeholder" in err
    assert sagemaker_inventory() == EMPTY


def test_delete_twice_succeeds(world, capsys):
    assert run(capsys, "deploy", "gpt-oss-20b", "--yes")[0] == 0
    assert run(capsys, "delete", NAME, "--yes")[0] == 0
    code, out, _ = run(capsys, "delete", NAME, "--yes")
    assert code == 0 and "already gone" in out
    assert sagemaker_inventory() == EMPTY


def test_gc_removes_planted_orphans_only(world, capsys):
    sm = boto3.client("sagemaker", region_name=REGION)
    image = "763104351884.dkr.ecr.us-east-1.amazonaws.com/vllm:0.18.0-gpu-py312-cu129-ubuntu22.04"
    managed = [{"Key": "peagle:managed", "Value": "true"}]
    for name, tags in (("orphan-model", managed), ("user-model", [])):
        sm.create_model(
            ModelName=name,
            ExecutionRoleArn=world.role_arn,
            PrimaryContainer={"Image": image},
            Tags=tags or [{"Key": "a", "Value": "b"}],
        )
    for name, model, tags in (
        ("orphan-cfg", "orphan-model", managed),
        ("user-cfg", "user-model", []),
    ):
        sm.create_endpoint_config(
            EndpointConfigName=name,
            ProductionVariants=[
                {
                    "VariantName": "AllTraffic",
                    "ModelName": model,
                    "InstanceType": "ml.g7e.2xlarge",
                    "InitialInstanceCount": 1,
                }
            ],
            Tags=tags or [{"Key": "a", "Value": "b"}],
        )
    assert run(capsys, "deploy", "gpt-oss-20b", "--yes")[0] == 0  # live: must survive gc

    code, out, _ = run(capsys, "gc", "--dry-run", "--min-age", "0s", "--json")
    doc = json.loads(out)
    assert (doc["endpoint_configs"], doc["models"], doc["deleted"]) == (
        ["orphan-cfg"],
        ["orphan-model"],
        [],
    )
    code, out, _ = run(capsys, "gc", "--yes", "--min-age", "0s", "--json")
    assert json.loads(out)["deleted"] == ["orphan-cfg", "orphan-model"]
    inv = sagemaker_inventory()
    assert "user-model" in inv["models"] and "user-cfg" in inv["endpoint_configs"]
    assert "orphan-model" not in inv["models"] and inv["endpoints"] == [NAME]
    # Young orphans are left alone by default (a deploy may be running elsewhere).
    code, out, _ = run(capsys, "gc", "--dry-run", "--json")
    assert json.loads(out)["models"] == []


def test_failed_update_keeps_serving_old_config(world, capsys, sagemaker_harness):
    assert run(capsys, "deploy", "gpt-oss-20b", "--yes")[0] == 0
    before = sagemaker_inventory()
    sagemaker_harness.schedule_update(
        NAME, ["Updating", "Updating", "InService"], failure_reason="health check failed"
    )
    code, _, err = run(capsys, "update", NAME, "-k", "6", "--yes")
    assert code == 1 and "rolled back by SageMaker" in err
    assert sagemaker_inventory() == before
    code, out, _ = run(capsys, "status", NAME, "--json")
    assert json.loads(out)["k"] == 3


def test_no_credentials_is_one_line(capsys, monkeypatch, tmp_path):
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    code, _, err = run(capsys, "status", "anything")
    assert code == 1
    assert err.strip() == (
        "error: no AWS credentials found (fix: configure AWS (aws configure / "
        "AWS_PROFILE) or run with --sandbox)"
    )


def test_broken_jumpstart_head_fails_preflight_by_reading_headers_only(
    sagemaker_harness, capsys, monkeypatch
):
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    # A plain PEagleDraftModel config: vLLM rewrites it to Eagle3PEagleDraftModel
    # (transformers_utils/configs/eagle.py), which no version registers. (LlamaForCausalLM,
    # once used here, is valid: it becomes the registered Eagle3LlamaForCausalLM.)
    w = build_world(architecture="PEagleDraftModel")
    monkeypatch.setenv("PEAGLE_ROLE_ARN", w.role_arn)
    code, _, err = run(capsys, "deploy", "gpt-oss-20b", "--yes")
    assert code == 1
    assert "preflight drafter.architecture" in err and "Eagle3PEagleDraftModel" in err
    assert sagemaker_inventory() == EMPTY


def test_deploy_local_head_pushes_to_private_default_bucket(world, capsys, tmp_path):
    from peagle_sandbox.synthetic_head import synthetic_head

    head = tmp_path / "head"
    head.mkdir()
    for name, body in synthetic_head(target_hidden=2880, target_vocab=201088).items():
        (head / name).write_bytes(body)
    code, out, err = run(capsys, "deploy", "gpt-oss-20b", "--drafter", str(head), "--yes", "--json")
    assert code == 0, err
    bucket = "sagemaker-us-east-1-123456789012"  # moto's account, read through STS
    s3 = boto3.client("s3", region_name=REGION)
    pab = s3.get_public_access_block(Bucket=bucket)["PublicAccessBlockConfiguration"]
    assert all(pab.values()) and len(pab) == 4
    rule = s3.get_bucket_encryption(Bucket=bucket)["ServerSideEncryptionConfiguration"]["Rules"][0]
    assert rule["ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"] == "AES256"
    (sent,) = world.sent("CreateModel")
    (source,) = sent["PrimaryContainer"]["AdditionalModelDataSources"]
    prefix = source["S3DataSource"]["S3Uri"]
    assert prefix.startswith(f"s3://{bucket}/peagle/drafters/") and prefix.endswith("/")
    keys = sorted(o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"])
    key_prefix = prefix[len(f"s3://{bucket}/") :]
    # The head under the mounted prefix; peagle's manifest next to it, not in it.
    assert keys == [
        key_prefix.rstrip("/") + ".peagle-manifest.json",
        *(key_prefix + n for n in ("config.json", "model.safetensors")),
    ]
    assert run(capsys, "delete", NAME, "--yes")[0] == 0
    assert sagemaker_inventory() == EMPTY


def test_human_logs_keep_vllm_bracket_tags(world, capsys, sagemaker_harness, monkeypatch):
    monkeypatch.setenv("COLUMNS", "300")
    from sm_peagle.cli import output

    monkeypatch.setattr(output, "_console", None)
    assert run(capsys, "deploy", "gpt-oss-20b", "--yes")[0] == 0
    line = "INFO 11-21 10:02:58 [metrics.py:96] SpecDecoding metrics: Mean acceptance length: 3.41"
    sagemaker_harness.seed_logs(NAME, [line])
    code, out, _ = run(capsys, "logs", NAME)
    assert code == 0 and "[metrics.py:96] SpecDecoding metrics" in out
