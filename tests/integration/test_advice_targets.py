"""Every command peagle prints for pasting carries the `--region` the printing command was
given (issue 33, Build 1): on the moto harness, in eu-west-1, a deploy's `next:` line, the
name-clash fixes of a second deploy and a missing endpoint's fix each name
`--region eu-west-1`; pasted without it they would act on the default region. And the
name clash never offers `gc` for the config and model the live endpoint uses (gc keeps
what an endpoint uses, so that fix could never work)."""

from __future__ import annotations

from typing import Any

import boto3
import pytest

from tests.integration.lifecycle_env import (
    HEAD_PREFIX,
    JS_BUCKET,
    MODEL_PREFIX,
    REGION,
    World,
    build_world,
    run,
)
from tests.printed_commands import off_target, printed_commands

OTHER = "eu-west-1"


@pytest.fixture
def eu_world(sagemaker_harness: Any, monkeypatch: pytest.MonkeyPatch) -> World:
    """The lifecycle world, with JumpStart's prefixes copied to the eu-west-1 bucket the
    plan reads there (JumpStart keeps one bucket per region)."""
    monkeypatch.setenv("PEAGLE_POLL_SECONDS", "0.01")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.delenv("PEAGLE_SANDBOX", raising=False)
    monkeypatch.delenv("PEAGLE_SANDBOX_URL", raising=False)
    w = build_world()
    monkeypatch.setenv("PEAGLE_ROLE_ARN", w.role_arn)
    src = boto3.client("s3", region_name=REGION)
    dst = boto3.client("s3", region_name=OTHER)
    bucket = JS_BUCKET.replace(REGION, OTHER)
    dst.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": OTHER})
    for prefix in (MODEL_PREFIX, HEAD_PREFIX):
        for obj in src.list_objects_v2(Bucket=JS_BUCKET, Prefix=prefix)["Contents"]:
            body = src.get_object(Bucket=JS_BUCKET, Key=obj["Key"])["Body"].read()
            dst.put_object(Bucket=bucket, Key=obj["Key"], Body=body)
    return w


def test_printed_commands_carry_the_region(
    eu_world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "deploy", "gpt-oss-20b", "--region", OTHER, "--yes")
    assert code == 0, err
    assert boto3.client("sagemaker", region_name=OTHER).list_endpoints()["Endpoints"]
    next_line = [line for line in out.splitlines() if line.startswith("next:")]
    assert len(next_line) == 1, out
    assert len(printed_commands(next_line[0])) == 3, next_line
    assert off_target(out + err, sandbox=False, region=OTHER) == []

    code, out, err = run(capsys, "deploy", "gpt-oss-20b", "--region", OTHER, "--yes")
    assert code == 1, err
    fixes = printed_commands(err)
    assert fixes, err
    assert off_target(err, sandbox=False, region=OTHER) == []
    # The config and model are the live endpoint's: gc keeps them, so it is not a fix.
    assert not [c for c in fixes if c.split()[1] == "gc"], err
    # One fix for the endpoint and what it uses (not three), and it confirms like the rest.
    assert "endpoint peagle-gpt-oss-20b-p-eagle already exists and uses endpoint config" in err
    assert fixes == [f"peagle delete peagle-gpt-oss-20b-p-eagle --yes --region {OTHER}"], err

    code, out, err = run(capsys, "status", "no-such-endpoint", "--region", OTHER)
    assert code == 1, err
    assert printed_commands(err), err
    assert off_target(err, sandbox=False, region=OTHER) == []


def test_without_region_nothing_is_added(
    eu_world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    """The control: a command given no --region prints commands without one (they follow
    the same default region the command used), and never `--sandbox` on AWS."""
    code, out, err = run(capsys, "status", "no-such-endpoint")
    assert code == 1, err
    commands = printed_commands(err)
    assert commands, err
    assert all("--region" not in c and "--sandbox" not in c for c in commands), commands


def test_leftovers_no_endpoint_uses_still_name_gc(
    eu_world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    """The control for the name clash: a config and model left by an endpoint deleted
    behind peagle's back are garbage, and `gc` (in that region) is their fix."""
    code, _, err = run(capsys, "deploy", "gpt-oss-20b", "--region", OTHER, "--yes")
    assert code == 0, err
    sm = boto3.client("sagemaker", region_name=OTHER)
    sm.delete_endpoint(EndpointName="peagle-gpt-oss-20b-p-eagle")
    code, _, err = run(capsys, "deploy", "gpt-oss-20b", "--region", OTHER, "--yes")
    assert code == 1, err
    fixes = printed_commands(err)
    assert f"peagle gc --region {OTHER}" in fixes, err
    assert "uses it" not in err
    assert off_target(err, sandbox=False, region=OTHER) == []


def test_a_spec_files_region_is_carried_like_the_option(
    eu_world: World, capsys: pytest.CaptureFixture[str], tmp_path: Any
) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"model: gpt-oss-20b\nregion: {OTHER}\n")
    code, out, err = run(capsys, "deploy", "-f", str(spec), "--yes")
    assert code == 0, err
    assert len(printed_commands(out)) == 3, out
    assert off_target(out + err, sandbox=False, region=OTHER) == []
