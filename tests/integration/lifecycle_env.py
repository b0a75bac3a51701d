"""A moto world a real deployment would meet: a role SageMaker trusts, JumpStart's
model and drafter prefixes, and a recorder of every SageMaker request sent."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import boto3
import pytest

from peagle_sandbox.synthetic_head import synthetic_head

REGION = "us-east-1"
ROLE_NAME = "peagle-exec"
TRUST = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Effect": "Allow",
            "Principal": {"Service": "sagemaker.amazonaws.com"},
            "Action": "sts:AssumeRole",
        }
    ],
}
JS_BUCKET = "jumpstart-cache-prod-us-east-1"
MODEL_PREFIX = "openai-reasoning/openai-reasoning-gpt-oss-20b/artifacts/inference-prepack/v1.0.0/"
HEAD_PREFIX = "lmi-eagle-heads/models/gpt-oss-20b-p-eagle/"


@dataclass
class World:
    role_arn: str
    requests: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def sent(self, operation: str) -> list[dict[str, Any]]:
        return [params for op, params in self.requests if op == operation]


def build_world(trust: dict | None = None, **head: Any) -> World:
    iam = boto3.client("iam", region_name=REGION)
    role = iam.create_role(RoleName=ROLE_NAME, AssumeRolePolicyDocument=json.dumps(trust or TRUST))
    s3 = boto3.client("s3", region_name=REGION)
    s3.create_bucket(Bucket=JS_BUCKET)
    for key in ("config.json", "model-00001-of-00002.safetensors"):
        s3.put_object(Bucket=JS_BUCKET, Key=MODEL_PREFIX + key, Body=b"x" * 16)
    # A structurally real head: preflight reads its config.json and safetensors header.
    for key, body in synthetic_head(target_hidden=2880, target_vocab=201088, **head).items():
        s3.put_object(Bucket=JS_BUCKET, Key=HEAD_PREFIX + key, Body=body)
    return World(role["Role"]["Arn"])


def record_requests(world: World, monkeypatch: pytest.MonkeyPatch, *services: str) -> None:
    """From now on, every client of `services` made through the one AWS seam
    (AwsContext.client) records each request's (operation, parameters), as botocore
    sends them, in world.requests. Stacks: a later call adds services."""
    from sm_peagle.aws import AwsContext

    wrapped = AwsContext.client

    def client(self: AwsContext, service: str, region: str | None = None, **cfg: Any) -> Any:
        c = wrapped(self, service, region, **cfg)
        if service in services and not getattr(c, "_recorded", False):
            c._recorded = True

            def before(params: dict, model: Any, **_: Any) -> None:
                world.requests.append((model.name, json.loads(json.dumps(params, default=str))))

            event = f"provide-client-params.{c.meta.service_model.service_id.hyphenize()}.*"
            c.meta.events.register(event, before)
        return c

    monkeypatch.setattr(AwsContext, "client", client)


def sagemaker_inventory() -> dict[str, list[str]]:
    sm = boto3.client("sagemaker", region_name=REGION)
    return {
        "models": [m["ModelName"] for m in sm.list_models()["Models"]],
        "endpoint_configs": [
            c["EndpointConfigName"] for c in sm.list_endpoint_configs()["EndpointConfigs"]
        ],
        "endpoints": [e["EndpointName"] for e in sm.list_endpoints()["Endpoints"]],
    }


def left_in_moto() -> dict[str, list[str]]:
    """Every kind of resource a deployment can leave in moto (`moto_components.leftovers`:
    models, configs, endpoints, components, scalable targets, policies, alarms), only the
    kinds with something left: `{}` means nothing is left."""
    from peagle_sandbox.testing.moto_components import leftovers

    return {k: v for k, v in leftovers("123456789012", REGION).items() if v}


def run(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, str, str]:
    """`peagle <argv>` in this process: (exit code, stdout, stderr)."""
    from sm_peagle.cli.app import main

    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err
