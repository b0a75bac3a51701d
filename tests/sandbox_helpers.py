"""Shared by the sandbox tests (tests/e2e and tests/conformance): boto3 clients for a
running sandbox, and the "nothing left" inventory after a delete or a rollback."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import boto3


def sandbox_client(url: str, service: str) -> Any:
    """A boto3 client for `service` of the sandbox at `url` (any credentials do)."""
    return boto3.client(
        service,
        endpoint_url=url,
        region_name="us-east-1",
        aws_access_key_id="x",
        aws_secret_access_key="x",
    )


def leftovers(client: Callable[[str], Any]) -> dict[str, list[Any]]:
    """Every kind of resource a deployment can leave (models, configs, endpoints,
    inference components, scalable targets, scaling policies, alarms), listed through
    `client(service)`; only the kinds with something left, so `== {}` means nothing."""
    sm, aas, cw = (client(s) for s in ("sagemaker", "application-autoscaling", "cloudwatch"))
    left = {
        "models": sm.list_models()["Models"],
        "configs": sm.list_endpoint_configs()["EndpointConfigs"],
        "endpoints": sm.list_endpoints()["Endpoints"],
        "components": sm.list_inference_components()["InferenceComponents"],
        "targets": aas.describe_scalable_targets(ServiceNamespace="sagemaker")["ScalableTargets"],
        "policies": aas.describe_scaling_policies(ServiceNamespace="sagemaker")["ScalingPolicies"],
        "alarms": cw.describe_alarms()["MetricAlarms"],
    }
    return {k: v for k, v in left.items() if v}


def point_at_sandbox(state: dict[str, Any], monkeypatch: Any, tmp_path: Any) -> None:
    """This test process pointed at a running sandbox exactly as `--sandbox` points a
    command at it (its state document, `peagle sandbox status --json`): no AWS_/PEAGLE_
    setting of the developer's own leaks in."""
    import os

    from peagle_sandbox.manager import SandboxInfo, activate

    for name in list(os.environ):
        if name.startswith(("AWS_", "PEAGLE_")):
            monkeypatch.delenv(name)
    values: dict[str, str] = {}
    activate(SandboxInfo.from_state(state, tmp_path / "state.json"), values)
    for name, value in values.items():
        monkeypatch.setenv(name, value)
