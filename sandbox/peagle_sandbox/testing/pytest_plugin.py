"""pytest fixtures for offline SageMaker tests on moto.

Register with ``pytest_plugins = ["peagle_sandbox.testing.pytest_plugin"]`` in the root conftest, or
import the fixtures into a test module.

- ``aws_credentials``: fake, isolated AWS environment (no real profile or endpoint can leak in).
- ``aws``: ``aws_credentials`` + ``moto.mock_aws()`` (in-process fake, fresh backends).
- ``sagemaker_harness``: ``aws`` + an installed :class:`SageMakerHarness`.
- ``moto_server`` / ``moto_server_harness``: a ``ThreadedMotoServer`` on 127.0.0.1 with the
  harness installed; ``moto_server`` is its base URL, for ``endpoint_url=`` or subprocesses.
  Don't combine with ``sagemaker_harness`` in one test: only one harness can be installed.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from moto import mock_aws
from moto.core.base_backend import BackendDict
from moto.server import ThreadedMotoServer

from peagle_sandbox.testing.moto_sagemaker import SageMakerHarness

FAKE_REGION = "us-east-1"


@pytest.fixture
def aws_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Fake credentials and region; nothing from the developer's real AWS setup applies."""
    for name in list(os.environ):
        # AWS_ENDPOINT_URL[_<SERVICE>] would send boto3 past moto; profiles could point at a
        # real account's SSO/role config.
        if name.startswith("AWS_ENDPOINT_URL") or name in {"AWS_PROFILE", "AWS_DEFAULT_PROFILE"}:
            monkeypatch.delenv(name)
    fake = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SECURITY_TOKEN": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": FAKE_REGION,
        "AWS_REGION": FAKE_REGION,
        # Point config/credential files at paths that don't exist, so ~/.aws is never read.
        "AWS_CONFIG_FILE": str(tmp_path / "no-aws-config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "no-aws-credentials"),
    }
    for name, value in fake.items():
        monkeypatch.setenv(name, value)


@pytest.fixture
def aws(aws_credentials: None) -> Iterator[None]:
    """Everything boto3 does in the test goes to moto's in-process fake (fresh state)."""
    with mock_aws():
        yield


@pytest.fixture
def sagemaker_harness(aws: None) -> Iterator[SageMakerHarness]:
    """An installed harness (region us-east-1); uninstalled after the test."""
    with SageMakerHarness(region=FAKE_REGION) as harness:
        yield harness


@dataclass(frozen=True)
class MotoServerHandle:
    url: str
    harness: SageMakerHarness


@pytest.fixture
def _moto_server_handle(aws_credentials: None) -> Iterator[MotoServerHandle]:
    # The server thread shares this process's moto backends, so the harness installed here
    # (class-level patches) serves its requests, and seed_logs/resources see its state.
    # BackendDict.reset() isolates tests from each other, as mock_aws does on enter/exit.
    BackendDict.reset()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        with SageMakerHarness(region=FAKE_REGION) as harness:
            yield MotoServerHandle(url=f"http://{host}:{port}", harness=harness)
    finally:
        server.stop()
        BackendDict.reset()


@pytest.fixture
def moto_server(_moto_server_handle: MotoServerHandle) -> str:
    """Base URL (``http://127.0.0.1:<port>``) of a threaded moto server with the harness."""
    return _moto_server_handle.url


@pytest.fixture
def moto_server_harness(_moto_server_handle: MotoServerHandle) -> SageMakerHarness:
    """The harness installed for ``moto_server`` (schedules, seed_logs, resources)."""
    return _moto_server_handle.harness
