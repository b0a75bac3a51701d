"""Fixtures shared by the lifecycle and apply tests: a moto world and a request recorder."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sm_peagle.aws import AwsContext
from tests.integration.lifecycle_env import REGION, World, build_world


@pytest.fixture
def world(sagemaker_harness: Any, monkeypatch: pytest.MonkeyPatch) -> World:
    monkeypatch.setenv("PEAGLE_POLL_SECONDS", "0.01")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    w = build_world()
    monkeypatch.setenv("PEAGLE_ROLE_ARN", w.role_arn)
    # Record the requests of every client the CLI makes through the one AWS seam.
    original = AwsContext.client

    def client(self: AwsContext, service: str, region: str | None = None, **cfg: Any) -> Any:
        c = original(self, service, region, **cfg)
        if service in ("sagemaker", "application-autoscaling") and not getattr(
            c, "_recorded", False
        ):
            c._recorded = True

            def before(params: dict, model: Any, **_: Any) -> None:
                w.requests.append((model.name, json.loads(json.dumps(params, default=str))))

            event = f"provide-client-params.{c.meta.service_model.service_id.hyphenize()}.*"
            c.meta.events.register(event, before)
        return c

    monkeypatch.setattr(AwsContext, "client", client)
    return w
