"""Issue 14 (a newcomer's first hour), the items that need AWS state: each against moto,
through the real CLI entry point, asserting the exit code and the message. Expected values
come from the rule the README states, not from the code under test."""

from __future__ import annotations

import json
import re
from typing import Any

import boto3

from sm_peagle.lifecycle.spec_tags import tag_dict
from tests.integration.lifecycle_env import REGION, run, sagemaker_inventory

NAME = "peagle-gpt-oss-20b-p-eagle"
IMAGE = "763104351884.dkr.ecr.us-east-1.amazonaws.com/vllm:0.18.0-gpu-py312-cu129-ubuntu22.04"


def sm() -> Any:
    return boto3.client("sagemaker", region_name=REGION)


def plain_endpoint(name: str, role: str, model: str | None = None) -> None:
    """An endpoint made without peagle (no peagle:managed tag); `model` to share one."""
    if model is None:
        model = f"{name}-mdl"
        sm().create_model(ModelName=model, ExecutionRoleArn=role, PrimaryContainer={"Image": IMAGE})
    variant = {
        "VariantName": "AllTraffic",
        "ModelName": model,
        "InstanceType": "ml.g7e.2xlarge",
        "InitialInstanceCount": 1,
    }
    sm().create_endpoint_config(EndpointConfigName=f"{name}-cfg", ProductionVariants=[variant])
    sm().create_endpoint(EndpointName=name, EndpointConfigName=f"{name}-cfg")


def test_delete_refuses_an_endpoint_peagle_did_not_create_unless_force(world, capsys):
    plain_endpoint("theirs", world.role_arn)
    code, _, err = run(capsys, "delete", "theirs", "--yes")
    assert code == 2 and "not created by peagle" in err and "--force" in err
    assert "theirs" in sagemaker_inventory()["endpoints"]  # nothing was deleted
    code, out, _ = run(capsys, "delete", "theirs", "--yes", "--force")
    assert code == 0 and "theirs" not in sagemaker_inventory()["endpoints"]


def test_delete_keeps_a_model_another_endpoint_uses_and_says_each_name_once(world, capsys):
    assert run(capsys, "deploy", "gpt-oss-20b", "--yes")[0] == 0
    cfg = sm().describe_endpoint(EndpointName=NAME)["EndpointConfigName"]
    model = sm().describe_endpoint_config(EndpointConfigName=cfg)["ProductionVariants"][0][
        "ModelName"
    ]
    plain_endpoint("sharer", world.role_arn, model=model)
    code, out, err = run(capsys, "delete", NAME, "--yes")
    assert code == 0
    inv = sagemaker_inventory()
    assert model in inv["models"] and "sharer" in inv["endpoints"]  # still in use: kept
    assert NAME not in inv["endpoints"] and cfg not in inv["endpoint_configs"]
    assert f"kept {model}: endpoint sharer uses it" in err
    for name in (NAME, cfg):  # each deletion reported once, not twice
        whole = re.findall(rf"(?<![\w-]){re.escape(name)}(?![\w-])", out + err)
        assert len(whole) == 1, out + err


def test_update_tags_reach_the_endpoint_and_diff_sees_lagging_tags(world, capsys, tmp_path):
    spec = tmp_path / "d.yaml"
    spec.write_text("model: gpt-oss-20b\nregion: us-east-1\ntags: {team: a}\n")
    assert run(capsys, "apply", "-f", str(spec), "--yes")[0] == 0
    spec.write_text("model: gpt-oss-20b\nregion: us-east-1\ntags: {team: b, cost: x}\n")
    assert run(capsys, "apply", "-f", str(spec), "--yes")[0] == 0
    arn = sm().describe_endpoint(EndpointName=NAME)["EndpointArn"]
    tags = tag_dict(sm().list_tags(ResourceArn=arn)["Tags"])
    assert (tags["team"], tags["cost"]) == ("b", "x")
    code, out, _ = run(capsys, "diff", "-f", str(spec), "--detailed-exitcode")
    assert code == 0 and "up to date" in out
    # The endpoint's tag drifts (changed outside peagle): diff says so, exit 3.
    sm().delete_tags(ResourceArn=arn, TagKeys=["team"])
    code, out, _ = run(capsys, "diff", "-f", str(spec), "--detailed-exitcode")
    assert code == 3 and "endpoint.tags.team" in out
    assert run(capsys, "apply", "-f", str(spec), "--yes")[0] == 0
    assert tag_dict(sm().list_tags(ResourceArn=arn)["Tags"])["team"] == "b"
    assert run(capsys, "diff", "-f", str(spec), "--detailed-exitcode")[0] == 0
    run(capsys, "delete", NAME, "--yes")


def test_diff_detailed_exitcode_is_3_when_apply_would_create(world, capsys, tmp_path):
    spec = tmp_path / "d.yaml"
    spec.write_text("model: gpt-oss-20b\nregion: us-east-1\n")
    code, out, _ = run(capsys, "diff", "-f", str(spec), "--detailed-exitcode")
    assert code == 3 and "apply will create it" in out
    code, out, _ = run(capsys, "diff", "-f", str(spec))  # without the flag: 0
    assert code == 0


def test_gc_dry_run_names_young_orphans_and_min_age_0_removes_them(world, capsys):
    managed = [{"Key": "peagle:managed", "Value": "true"}]
    sm().create_model(
        ModelName="young-orphan",
        ExecutionRoleArn=world.role_arn,
        PrimaryContainer={"Image": IMAGE},
        Tags=managed,
    )
    code, out, err = run(capsys, "gc", "--dry-run")
    assert code == 0 and "nothing to collect" in out
    assert "skipped 1 resource(s) younger than --min-age 10m" in err and "young-orphan" in err
    # The advice never names a blanket `gc --min-age 0`: that would take the fresh
    # resources of a deploy running elsewhere too.
    assert "--min-age 0" not in err and "`peagle gc` removes them once they are older" in err
    code, out, _ = run(capsys, "gc", "--yes", "--min-age", "0")
    assert code == 0 and "deleted young-orphan" in out


def test_missing_endpoints_exit_1_with_a_message(world, capsys, monkeypatch):
    code, _, err = run(capsys, "logs", "nope")
    assert code == 1 and "endpoint nope does not exist" in err
    monkeypatch.setattr("sys.stdin", _Stdin(""))
    code, _, err = run(capsys, "chat", "nope")
    assert code == 1 and "endpoint nope does not exist" in err


def test_logs_json_is_one_document_and_errors_are_json_too(world, capsys):
    code, out, err = run(capsys, "logs", "nope", "--json")
    doc = json.loads(out)  # exactly one JSON document, the error
    assert code == 1 and doc["error"]["exit_code"] == 1 and doc["error"]["type"] == "NotFound"
    assert "does not exist" in doc["error"]["message"] and "error:" in err


def test_update_says_what_changed(world, capsys):
    assert run(capsys, "deploy", "gpt-oss-20b", "--yes")[0] == 0
    k = json.loads(run(capsys, "status", NAME, "--json")[1])["k"]
    new_k = 2 if k != 2 else 3
    code, out, _ = run(capsys, "update", NAME, "-k", str(new_k), "--yes")
    assert code == 0 and f"K {k} -> {new_k}" in out
    code, out, _ = run(capsys, "update", NAME, "--mode", "baseline", "--yes")
    assert code == 0 and "mode p-eagle -> baseline" in out  # K dropped with the mode
    code, out, _ = run(capsys, "status", NAME)
    assert "baseline" in out and "K=None" not in out
    run(capsys, "delete", NAME, "--yes")


def test_a_typo_in_the_model_is_one_message_online_and_offline(world, capsys, monkeypatch):
    """With credentials peagle asks JumpStart (which has no such key); offline it cannot:
    the message is the same, with a "did you mean"."""
    code, _, online = run(capsys, "deploy", "gpt-oss-20bb", "--yes")
    assert code == 2 and "unknown model 'gpt-oss-20bb'" in online
    assert "did you mean gpt-oss-20b?" in online and "NoSuchKey" not in online
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    code, _, offline = run(capsys, "plan", "gpt-oss-20bb")
    assert code == 2 and "unknown model 'gpt-oss-20bb'" in offline
    assert "did you mean gpt-oss-20b?" in offline


def test_s3_and_pricing_commands_say_where_they_talk(world, capsys, tmp_path):
    from peagle_sandbox.synthetic_head import synthetic_head

    head = tmp_path / "head"
    head.mkdir()
    for key, body in synthetic_head(target_hidden=2880, target_vocab=201088).items():
        (head / key).write_bytes(body)
    boto3.client("s3", region_name=REGION).create_bucket(Bucket="my-heads")
    for argv in (
        ("drafter", "push", str(head), "s3://my-heads/h/"),
        ("drafter", "inspect", "s3://my-heads/h/"),
        ("instances", "--live-prices"),
    ):
        code, _, err = run(capsys, *argv)
        assert code == 0 and err.startswith("talking to: "), (argv, err)


class _Stdin:
    def __init__(self, text: str) -> None:
        self.lines = text.splitlines(keepends=True)

    def isatty(self) -> bool:
        return False

    def readline(self) -> str:
        return self.lines.pop(0) if self.lines else ""
