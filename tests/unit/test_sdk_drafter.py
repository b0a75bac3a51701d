"""`sm_peagle.drafter_inspect`, `drafter_check` and `drafter_push`: the documents the CLI
prints, and every refusal raised before anything is read or uploaded, with the same error
from the SDK and the CLI. A truncated head is refused by push before the first byte goes
to S3 (it used to be uploaded, then refused by `deploy --drafter`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import pytest

import sm_peagle
from sm_peagle.cli.faces import CliFace, cli_doc
from sm_peagle.errors import CheckFailed, SpecError
from tests.drafter_fixtures import make_head
from tests.plan_helpers import run_cli

BUCKET = "peagle-heads"
DEST = f"s3://{BUCKET}/heads/h/"


@pytest.fixture
def bucket(aws: None) -> Any:
    client = boto3.client("s3", region_name="us-east-1")
    client.create_bucket(Bucket=BUCKET)
    return client


def _keys(client: Any) -> list[str]:
    return [o["Key"] for o in client.list_objects_v2(Bucket=BUCKET).get("Contents", [])]


@pytest.fixture
def no_s3(monkeypatch: pytest.MonkeyPatch) -> None:
    """Making an S3 client fails the test: a refusal must come before it."""
    from sm_peagle.lifecycle import drafter_upload as push

    def made(*a, **k):
        raise AssertionError("an S3 client was made despite a bad argument")

    monkeypatch.setattr(push, "make_push_client", made)


def truncated_head(tmp_path: Path) -> Path:
    head = make_head(tmp_path / "head")
    weights = head / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:64])
    return head


def test_push_refuses_a_truncated_head_before_uploading(tmp_path: Path, capsys, bucket) -> None:
    head = truncated_head(tmp_path)
    with pytest.raises(CheckFailed) as e:
        sm_peagle.drafter_push(head, DEST)
    assert "drafter.weights" in e.value.message and e.value.exit_code == 2
    assert e.value.message.endswith("nothing was uploaded (force=True pushes it anyway)")
    code, out, err = run_cli(capsys, "drafter", "push", str(head), DEST)
    assert code == 2 and out == ""
    # The same error, worded for the CLI: its flag instead of the keyword.
    assert err.startswith(f"error: {e.value.message.render(CliFace('drafter'))}")
    assert "nothing was uploaded (--force pushes it anyway)" in err
    assert _keys(bucket) == []  # nothing uploaded, no manifest either
    # drafter check refuses the same head for the same reason.
    checked = sm_peagle.drafter_check(str(head))
    assert not checked.ok and "drafter.weights" in [
        c.name for c in checked.checks if c.status == "fail"
    ]


def test_push_refuses_a_head_without_config(tmp_path: Path, capsys, bucket) -> None:
    head = make_head(tmp_path / "head")
    (head / "config.json").unlink()
    with pytest.raises(CheckFailed, match="drafter.config"):
        sm_peagle.drafter_push(head, DEST)
    code, _, err = run_cli(capsys, "drafter", "push", str(head), DEST)
    assert code == 2 and "drafter.config" in err
    assert _keys(bucket) == []


def test_push_result_is_the_cli_json(tmp_path: Path, capsys, bucket) -> None:
    head = make_head(tmp_path / "head")
    said: list[str] = []
    sent: list[tuple[int, int]] = []
    result = sm_peagle.Client(progress=said.append).drafter_push(
        head, DEST, channel="draft", on_bytes=lambda n, t: sent.append((n, t))
    )
    assert isinstance(result, sm_peagle.DrafterPush)
    names = sorted(p.name for p in head.iterdir())
    assert sorted(result.uploaded) == names and result.skipped == []
    total = sum(p.stat().st_size for p in head.iterdir())
    assert sum(n for n, _ in sent) == total and {t for _, t in sent} == {total}
    assert said[0].startswith("talking to: ") and said[1].startswith(f"pushing {head}")
    assert result.entry == {
        "ChannelName": "draft",
        "S3DataSource": {"S3Uri": DEST, "S3DataType": "S3Prefix", "CompressionType": "None"},
    }
    code, out, err = run_cli(
        capsys, "drafter", "push", str(head), DEST, "--channel", "draft", "--json"
    )
    assert code == 0, err
    doc = json.loads(out)
    assert doc == {
        "label": "AWS",
        **result.to_dict(),
        "uploaded": [],
        "skipped": doc["skipped"],
        "bytes_uploaded": 0,
    }
    assert sorted(doc["skipped"]) == names  # the second push skips what is there


BAD_PUSH = [
    (("./x", "s3:/bad"), ["./x", "s3:/bad"], "malformed S3 URI"),
    (("./x", "s3://bucket"), ["./x", "s3://bucket"], "is a bucket root"),
    ((None, "s3://bkt/p/"), [], "push needs SRC"),
    (("./no-such-dir", "s3://bkt/p/"), ["./no-such-dir", "s3://bkt/p/"], "does not exist"),
]


@pytest.mark.parametrize(("args", "argv", "message"), BAD_PUSH)
def test_push_bad_arguments_fail_before_a_client(capsys, no_s3, args, argv, message) -> None:
    with pytest.raises(SpecError) as e:
        sm_peagle.drafter_push(*args)
    assert message in e.value.message
    code, out, err = run_cli(capsys, "drafter", "push", *argv)
    assert code == 2 and out == "" and message in err and len(err.splitlines()) == 1


def test_push_src_and_from_hf_together_is_refused(capsys, no_s3) -> None:
    with pytest.raises(SpecError, match="either source= or from_hf=") as e:
        sm_peagle.drafter_push("./x", "s3://bkt/p/", from_hf="org/head")
    assert e.value.field == "from_hf"
    code, _, err = run_cli(capsys, "drafter", "push", "./x", "s3://bkt/p/", "--from-hf", "o/h")
    assert code == 2 and "either SRC or --from-hf" in err


# (SDK keywords, CLI arguments, what Python says, what the CLI says)
BAD_CHECK = [
    ({"mode": "medusa"}, ["--mode", "medusa"], *["unknown drafter mode 'medusa'"] * 2),
    ({"vllm_version": "banana"}, ["--vllm-version", "banana"], "vllm_version=:", "--vllm-version:"),
    (
        {"model": "no-such-model"},
        ["--model", "no-such-model"],
        *["unknown model 'no-such-model'"] * 2,
    ),
]


@pytest.mark.parametrize(("kwargs", "argv", "message", "cli_message"), BAD_CHECK)
def test_check_bad_arguments_before_the_head_is_read(
    tmp_path: Path, capsys, monkeypatch, kwargs, argv, message, cli_message
) -> None:
    from sm_peagle import drafter

    def read(*a, **k):
        raise AssertionError("the head was read despite a bad argument")

    monkeypatch.setattr(drafter, "inspect_drafter", read, raising=False)
    head = str(tmp_path)
    with pytest.raises(SpecError) as e:
        sm_peagle.drafter_check(head, **kwargs)
    assert message in e.value.message
    code, out, err = run_cli(capsys, "drafter", "check", head, *argv)
    assert code == 2 and out == "" and cli_message in err and len(err.splitlines()) == 1


def test_check_result_is_the_cli_json(tmp_path: Path, capsys) -> None:
    head = str(make_head(tmp_path / "head"))
    result = sm_peagle.drafter_check(head, target_hidden_size=64, target_vocab_size=1000, k=3)
    assert isinstance(result, sm_peagle.DrafterCheck)
    code, out, _ = run_cli(
        capsys,
        "drafter",
        "check",
        head,
        "--target-hidden-size",
        "64",
        "--target-vocab-size",
        "1000",
        "-k",
        "3",
        "--json",
    )
    # The CLI's document is the result's, in the CLI's words (a fix's --model, not model=)
    doc = cli_doc(result.to_dict(), "drafter")
    assert json.loads(out) == json.loads(json.dumps({"label": "AWS", **doc}))
    assert code == (0 if result.ok else 2)
    if not result.ok:
        with pytest.raises(CheckFailed):
            result.raise_for_failures()


def test_inspect_is_the_cli_json_and_an_empty_dir_is_no_head(tmp_path: Path, capsys) -> None:
    head = str(make_head(tmp_path / "head"))
    ins = sm_peagle.drafter_inspect(head)
    code, out, _ = run_cli(capsys, "drafter", "inspect", head, "--json")
    assert code == 0 and json.loads(out) == json.loads(
        json.dumps({"label": "AWS", **ins.to_dict()})
    )
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(SpecError) as e:
        sm_peagle.drafter_inspect(str(empty))
    assert "no drafter head here" in e.value.message
    code, _, err = run_cli(capsys, "drafter", "inspect", str(empty))
    assert code == 2 and e.value.message in err
