"""The default deploy wait, as a deploy shows it (issue 24, item 9).

The rule (lifecycle/waiter.py default_timeout): without --timeout, a deploy waits for the
endpoint config's variant's ModelDataDownloadTimeoutInSeconds plus its
ContainerStartupHealthCheckTimeoutInSeconds (SageMaker's two start-up windows, each 60 to
3600 s in the API reference) plus a 15-minute margin for provisioning. What a deploy
waits for is visible on AWS: its operation's `peagle:operation-until` tag is the start
plus that wait plus a rollback's worst case (lifecycle/operation.py: each of the endpoint,
its config and its model is waited for up to 900 s when deleted, one after the other).

The windows are read from the CreateEndpointConfig request as sent; the start from the
operation id (`op-<UTC start>-...`, the same second the deadline is counted from).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

import sm_peagle
from tests.integration.lifecycle_env import REGION, World, run

MARGIN = 15 * 60
ROLLBACK = 3 * 900
DOWNLOAD, STARTUP = 1200, 600  # values of our own, not JumpStart's


def _spec(tmp_path: Path, role: str, **endpoint: int) -> Path:
    lines = [f"model: gpt-oss-20b\nregion: {REGION}\nrole: {role}\nendpoint:"]
    lines += [f"  {key}: {value}" for key, value in endpoint.items()]
    path = tmp_path / "spec.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _waited(harness: Any) -> tuple[int, int, int]:
    """(download window, start-up window, seconds the deploy allowed itself to wait)."""
    (config,) = harness.requests.params("CreateEndpointConfig")
    (variant,) = config["ProductionVariants"]
    (endpoint,) = harness.requests.params("CreateEndpoint")
    tags = {t["Key"]: t["Value"] for t in endpoint["Tags"]}
    started = datetime.strptime(tags["peagle:operation"][3:19], "%Y%m%dT%H%M%SZ")
    until = datetime.fromisoformat(tags["peagle:operation-until"].replace("Z", "+00:00"))
    allowed = (until - started.replace(tzinfo=UTC)).total_seconds() - ROLLBACK
    return (
        variant["ModelDataDownloadTimeoutInSeconds"],
        variant["ContainerStartupHealthCheckTimeoutInSeconds"],
        int(allowed),
    )


@pytest.mark.parametrize("face", ["cli", "sdk"])
def test_a_deploy_waits_for_both_windows_plus_15_minutes(
    world: World, sagemaker_harness: Any, capsys: Any, tmp_path: Path, face: str
) -> None:
    spec = _spec(
        tmp_path, world.role_arn,
        model_data_download_timeout=DOWNLOAD, container_startup_health_check_timeout=STARTUP,
    )  # fmt: skip
    sagemaker_harness.requests.clear()
    if face == "cli":
        code, _, err = run(capsys, "deploy", "-f", str(spec), "--no-wait", "--yes")
        assert code == 0, err
    else:
        sm_peagle.deploy(spec, wait=False)
    download, startup, allowed = _waited(sagemaker_harness)
    assert (download, startup) == (DOWNLOAD, STARTUP)  # the spec's windows were sent
    assert allowed == DOWNLOAD + STARTUP + MARGIN


def test_an_explicit_timeout_replaces_the_default(
    world: World, sagemaker_harness: Any, capsys: Any, tmp_path: Path
) -> None:
    """The control: the deadline follows --timeout when given, so the test above reads
    the default wait and not something else."""
    spec = _spec(tmp_path, world.role_arn, model_data_download_timeout=DOWNLOAD)
    sagemaker_harness.requests.clear()
    code, _, err = run(capsys, "deploy", "-f", str(spec), "--no-wait", "--timeout", "45m", "--yes")
    assert code == 0, err
    assert _waited(sagemaker_harness)[2] == 45 * 60
