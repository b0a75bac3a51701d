"""A KMS key on a local-storage instance (issue 33, item 6): AWS's CreateEndpointConfig
reference (KmsKeyId) says "If you specify a value for KmsKeyId when using any nitro-based
instances with local storage, the call to CreateEndpointConfig fails", and ml.g7e has local
NVMe storage. The SDK and the CLI refuse it the same way, naming `network.kms_key_id`,
exit 2, before any request that creates something."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

import sm_peagle
from sm_peagle.errors import CheckFailed
from tests.integration.lifecycle_env import World, run

KEY = "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
READ = re.compile(r"^(Describe|List|Get|Head)")


def _spec(world: World) -> dict[str, Any]:
    return {
        "model": "gpt-oss-20b",
        "role": world.role_arn,
        "endpoint": {"instance_type": "ml.g7e.2xlarge"},
        "network": {"kms_key_id": KEY},
    }


def test_kms_on_g7e_is_refused_by_sdk_and_cli_naming_the_field(
    world: World, sagemaker_harness: Any, capsys: pytest.CaptureFixture, tmp_path: Path
) -> None:
    spec = _spec(world)
    sagemaker_harness.requests.clear()  # the world's own set-up (role, JumpStart objects)
    world.requests.clear()
    with pytest.raises(CheckFailed) as caught:
        sm_peagle.deploy(spec)
    assert [c.name for c in caught.value.failed] == ["network.kms_key_id"]
    assert caught.value.exit_code == 2

    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    for argv in (["deploy", "-f", str(path), "--yes"], ["plan", "-f", str(path)]):
        code, out, err = run(capsys, *argv)
        assert code == 2, err
        lines = [ln for ln in err.splitlines() if ln.strip()]
        (line,) = [ln for ln in lines if ln.startswith("error:")]
        assert line == f"error: {caught.value.one_line()}"
        assert line.startswith("error: network.kms_key_id: ml.g7e.2xlarge has local NVMe")
        assert "Traceback" not in err
    code, out, _ = run(capsys, "--json", "deploy", "-f", str(path), "--yes")
    doc = json.loads(out)
    assert code == 2 and doc["error"]["type"] == "CheckFailed"
    assert [e["name"] for e in doc["error"]["errors"]] == ["network.kms_key_id"]

    sent = [r.operation for r in sagemaker_harness.requests.all()] + [o for o, _ in world.requests]
    assert [op for op in sent if not READ.match(op)] == []
