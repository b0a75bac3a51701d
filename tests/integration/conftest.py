"""Fixtures shared by the lifecycle and apply tests: a moto world and a request recorder."""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.lifecycle_env import REGION, World, build_world, record_requests


@pytest.fixture
def world(sagemaker_harness: Any, monkeypatch: pytest.MonkeyPatch) -> World:
    monkeypatch.setenv("PEAGLE_POLL_SECONDS", "0.01")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    w = build_world()
    monkeypatch.setenv("PEAGLE_ROLE_ARN", w.role_arn)
    record_requests(w, monkeypatch, "sagemaker", "application-autoscaling")
    return w
