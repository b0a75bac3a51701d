"""`drafter push` refuses what `deploy --drafter` refuses, before uploading anything, and
`--force` (SDK `force=True`) pushes it anyway, saying which checks failed (issue 24,
item 4).

The head is structurally right for gpt-oss-20b (the plan's drafter checks pass on it
whole); cut short, its safetensors file is what a broken upload or copy leaves. What S3
received is read where moto receives it (the harness's request log).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import sm_peagle
from peagle_sandbox.synthetic_head import synthetic_head
from sm_peagle.cli.faces import CliFace
from sm_peagle.errors import CheckFailed
from tests.integration.lifecycle_env import JS_BUCKET, World, run

DEST = f"s3://{JS_BUCKET}/mine/head/"
UPLOADS = ("PutObject", "CreateMultipartUpload", "UploadPart", "CompleteMultipartUpload")


def _head(root: Path) -> Path:
    root.mkdir()
    for rel, data in synthetic_head(target_hidden=2880, target_vocab=201088).items():
        (root / rel).write_bytes(data)
    return root


def _truncated(root: Path) -> Path:
    head = _head(root)
    weights = head / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-16])  # the last tensor's bytes cut short
    return head


def _uploads(harness: Any) -> list[str]:
    return [op for op in harness.requests.operations() if op in UPLOADS]


def _failed(checks: list[Any]) -> list[str]:
    return [c.name for c in checks if c.status == "fail"]


def test_the_whole_head_passes_what_the_truncated_one_fails(world: World, tmp_path: Path) -> None:
    """The control: deploy's plan finds nothing wrong with the head until it is cut."""
    whole = sm_peagle.plan("gpt-oss-20b", drafter=str(_head(tmp_path / "whole")))
    assert [c.name for c in whole.checks if c.name.startswith("drafter.")] and not [
        c.name for c in whole.checks if c.name.startswith("drafter.") and c.status == "fail"
    ]
    cut = sm_peagle.plan("gpt-oss-20b", drafter=str(_truncated(tmp_path / "cut")))
    assert "drafter.weights" in _failed(cut.checks)


def test_push_refuses_the_head_deploy_refuses_and_uploads_nothing(
    world: World, sagemaker_harness: Any, capsys: Any, tmp_path: Path
) -> None:
    head = _truncated(tmp_path / "head")
    sagemaker_harness.requests.clear()
    # deploy --drafter refuses it (exit 2), nothing created, nothing uploaded ...
    code, _, err = run(capsys, "deploy", "gpt-oss-20b", "--drafter", str(head), "--yes")
    assert code == 2 and "drafter.weights" in err.strip().splitlines()[-1]
    sent = sagemaker_harness.requests.operations()
    assert [op for op in sent if not op.startswith(("Describe", "List", "Get", "Head"))] == []
    # ... and so does push, from the SDK and the CLI, with the same line.
    with pytest.raises(CheckFailed) as e:
        sm_peagle.drafter_push(head, DEST)
    assert _failed(e.value.checks) == ["drafter.weights"] and e.value.exit_code == 2
    assert "(force=True pushes it anyway)" in e.value.message
    code, out, err = run(capsys, "drafter", "push", str(head), DEST)
    assert code == 2 and out == ""
    # The same error, worded for the CLI (`--force`).
    assert err.strip().splitlines() == [f"error: {e.value.one_line(CliFace('drafter'))}"]
    assert "(--force pushes it anyway)" in err
    assert _uploads(sagemaker_harness) == []
    assert [op for op in sagemaker_harness.requests.operations() if op.startswith("Put")] == []


def test_force_pushes_it_anyway_and_says_which_checks_failed(
    world: World, sagemaker_harness: Any, capsys: Any, tmp_path: Path
) -> None:
    head = _truncated(tmp_path / "head")
    files = sorted(p.name for p in head.iterdir())
    sagemaker_harness.requests.clear()
    said: list[str] = []
    client = sm_peagle.Client(progress=said.append)
    result = client.drafter_push(head, DEST, force=True)
    assert sorted(result.uploaded) == files
    warnings = [line for line in said if line.startswith("warning: pushing anyway (force=True)")]
    assert len(warnings) == 1 and "drafter.weights" in warnings[0]
    assert any("drafter.weights failed" in n for n in result.notes)
    put = {p["Key"] for p in sagemaker_harness.requests.params("PutObject")}
    assert {f"mine/head/{name}" for name in files} <= put
    # The CLI: the same warning on stderr, exit 0 (a second push skips what is there).
    code, out, err = run(capsys, "drafter", "push", str(head), DEST, "--force")
    assert code == 0, err
    assert "warning: pushing anyway (--force): drafter.weights" in err
