"""`--strict` reaches every place a head is checked, S3 heads included (issue 33, item 7):
a head in S3 is read by deploy preflight, not by the plan, and `--strict` used to stop at
the plan, so a head vLLM loads silently wrong deployed from S3 under `--strict`. Now it is
refused (exit 2, one line saying --strict failed the warning) before anything is created.

The heads are peagle's synthetic head for gpt-oss-20b (whole: no warning with its trained
K) and the same head with a layer its weights do not hold (`drafter.unloaded` warns:
vLLM loads it silently wrong). What moto received is read from the request log.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml

import sm_peagle
from sm_peagle.errors import CheckFailed
from tests.integration.lifecycle_env import JS_BUCKET, REGION, World, run, sagemaker_inventory
from tests.integration.test_drafter_second_pass_cli import STRICT, made, mutating, whole

EMPTY = {"endpoints": [], "endpoint_configs": [], "models": []}


def upload(head: Path, prefix: str) -> str:
    s3 = boto3.client("s3", region_name=REGION)
    for f in head.iterdir():
        s3.put_object(Bucket=JS_BUCKET, Key=f"{prefix}{f.name}", Body=f.read_bytes())
    return f"s3://{JS_BUCKET}/{prefix}"


def spec_file(tmp_path: Path, uri: str) -> Path:
    path = tmp_path / "deployment.yaml"
    doc = {"model": "gpt-oss-20b", "region": REGION, "drafter": {"source": uri, "trained_k": 10}}
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.fixture
def silent_s3_head(world: World, tmp_path: Path) -> Path:
    return spec_file(tmp_path, upload(made(tmp_path, "two-layers"), "mine/two-layers/"))


def test_strict_refuses_an_s3_head_with_a_warning_and_creates_nothing(
    world: World, capsys: Any, silent_s3_head: Path
) -> None:
    world.requests.clear()
    code, out, err = run(capsys, "deploy", "-f", str(silent_s3_head), "--strict", "--yes")
    lines = err.strip().splitlines()
    assert code == 2, err
    assert lines[-1].startswith("error: drafter.unloaded: "), err
    assert STRICT in lines[-1] and "nothing was created" in lines[-1]
    assert "Traceback" not in out + err
    assert [op for op in mutating(world) if op.startswith(("Create", "Update"))] == []
    assert sagemaker_inventory() == EMPTY


def test_strict_refuses_it_from_the_sdk_and_apply_too(
    world: World, capsys: Any, silent_s3_head: Path
) -> None:
    world.requests.clear()
    with pytest.raises(CheckFailed) as e:
        sm_peagle.deploy(str(silent_s3_head), strict=True)
    assert [c.name for c in e.value.failed] == ["drafter.unloaded"]
    assert e.value.exit_code == 2
    with pytest.raises(CheckFailed):
        sm_peagle.apply(str(silent_s3_head), strict=True)
    code, _, err = run(capsys, "apply", "-f", str(silent_s3_head), "--strict", "--yes")
    assert code == 2 and "error: drafter.unloaded: " in err and STRICT in err
    assert mutating(world) == []
    assert sagemaker_inventory() == EMPTY


def test_without_strict_the_same_head_deploys_with_the_warning(
    world: World, capsys: Any, silent_s3_head: Path
) -> None:
    """The control: the warning is the only thing --strict refused."""
    code, _, err = run(capsys, "deploy", "-f", str(silent_s3_head), "--yes")
    assert code == 0, err
    assert "warning: drafter.unloaded: " in err
    assert len(sagemaker_inventory()["endpoints"]) == 1


def test_strict_deploys_a_clean_s3_head(world: World, capsys: Any, tmp_path: Path) -> None:
    """The control: --strict fails warnings, not heads; the whole head has none."""
    spec = spec_file(tmp_path, upload(whole(tmp_path / "whole"), "mine/whole/"))
    code, _, err = run(capsys, "deploy", "-f", str(spec), "--strict", "--yes")
    assert code == 0, err
    assert len(sagemaker_inventory()["endpoints"]) == 1


def test_strict_deploys_the_jumpstart_head(world: World, capsys: Any) -> None:
    """JumpStart's own head is an S3 head too, read by the same preflight: --strict
    reaches it, and the world's whole head (trained K from the catalog) has no warning."""
    world.requests.clear()
    code, _, err = run(capsys, "deploy", "gpt-oss-20b", "--strict", "--yes")
    assert code == 0, err
    assert "warning: drafter." not in err
    assert len(sagemaker_inventory()["endpoints"]) == 1
