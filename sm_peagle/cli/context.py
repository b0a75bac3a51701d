"""Say where the CLI is talking to, so nobody mistakes a sandbox for AWS or vice versa."""

from __future__ import annotations

import os
from typing import Any


def describe_target(aws: Any) -> str:
    endpoint = os.environ.get("AWS_ENDPOINT_URL_SAGEMAKER") or os.environ.get("AWS_ENDPOINT_URL")
    if os.environ.get("PEAGLE_SANDBOX_URL"):
        return (
            f"talking to: peagle SANDBOX at {os.environ['PEAGLE_SANDBOX_URL']} (SIMULATED, not AWS)"
        )
    if endpoint:
        return f"talking to: custom AWS endpoint {endpoint} (region {aws.region})"
    return f"talking to: AWS, region {aws.region}"
