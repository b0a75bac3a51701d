"""Say where the CLI is talking to, so nobody mistakes a sandbox for AWS or vice versa."""

from __future__ import annotations

import os
from typing import Any

from .. import settings


def describe_target(aws: Any, service: str = "SAGEMAKER", region: str | None = None) -> str:
    """The "talking to: ..." line every command that reaches AWS prints first (stderr)."""
    endpoint = os.environ.get(f"AWS_ENDPOINT_URL_{service}") or os.environ.get("AWS_ENDPOINT_URL")
    if url := settings.sandbox_url():
        engine = settings.sandbox_engine_label()
        return f"talking to: peagle SANDBOX at {url} (engine: {engine}; not AWS)"
    region = region or aws.region
    if endpoint:
        return f"talking to: custom AWS endpoint {endpoint} (region {region})"
    return f"talking to: AWS, region {region}"


def describe_client(client: Any) -> str:
    """The same line for a boto3 client already made (S3: its own endpoint setting)."""
    service = client.meta.service_model.service_id.hyphenize().upper().replace("-", "_")
    return describe_target(None, service, client.meta.region_name)


def hello(aws: Any) -> None:
    """Say where the command talks to (stderr): the `on_connect` the CLI gives the SDK."""
    from .output import note

    note(describe_target(aws))


def connected(region: str | None) -> Any:
    """The SDK's AWS context for `region` (NoCredentials in one line if there are none),
    after saying where it talks to."""
    from ..ops.session import connect

    aws = connect(region)
    hello(aws)
    return aws
