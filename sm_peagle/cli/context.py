"""Say where the CLI is talking to, so nobody mistakes a sandbox for AWS or vice versa."""

from __future__ import annotations

import os
from typing import Any


def describe_target(aws: Any, service: str = "SAGEMAKER", region: str | None = None) -> str:
    """The "talking to: ..." line every command that reaches AWS prints first (stderr)."""
    endpoint = os.environ.get(f"AWS_ENDPOINT_URL_{service}") or os.environ.get("AWS_ENDPOINT_URL")
    if os.environ.get("PEAGLE_SANDBOX_URL"):
        engine = os.environ.get("PEAGLE_SANDBOX_ENGINE_LABEL") or "SIMULATED"
        url = os.environ["PEAGLE_SANDBOX_URL"]
        return f"talking to: peagle SANDBOX at {url} (engine: {engine}; not AWS)"
    region = region or aws.region
    if endpoint:
        return f"talking to: custom AWS endpoint {endpoint} (region {region})"
    return f"talking to: AWS, region {region}"


def describe_client(client: Any) -> str:
    """The same line for a boto3 client already made (S3: its own endpoint setting)."""
    service = client.meta.service_model.service_id.hyphenize().upper().replace("-", "_")
    return describe_target(None, service, client.meta.region_name)
