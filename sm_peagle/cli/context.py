"""Say where the CLI is talking to, so nobody mistakes a sandbox for AWS or vice versa."""

from __future__ import annotations

import os
from typing import Any


def describe_target(aws: Any) -> str:
    endpoint = os.environ.get("AWS_ENDPOINT_URL_SAGEMAKER") or os.environ.get("AWS_ENDPOINT_URL")
    if os.environ.get("PEAGLE_SANDBOX_URL"):
        engine = os.environ.get("PEAGLE_SANDBOX_ENGINE_LABEL") or "SIMULATED"
        url = os.environ["PEAGLE_SANDBOX_URL"]
        return f"talking to: peagle SANDBOX at {url} (engine: {engine}; not AWS)"
    if endpoint:
        return f"talking to: custom AWS endpoint {endpoint} (region {aws.region})"
    return f"talking to: AWS, region {aws.region}"
