"""drafter push + S3 inspect against moto: layout, resumability, header-only reads."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from sm_peagle.drafter import check_drafter, inspect_drafter
from sm_peagle.errors import PeagleError, SpecError
from sm_peagle.lifecycle.drafter_upload import MANIFEST, manifest_key, push_drafter
from sm_peagle.vllm.versions import VllmVersion
from tests.drafter_fixtures import TARGET_HIDDEN, TARGET_VOCAB, corrupt_header, make_head

BUCKET = "peagle-drafters"
PREFIX = "heads/gpt-oss-20b/"
URI = f"s3://{BUCKET}/{PREFIX}"
SHARDS = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]


@pytest.fixture
def s3(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    for var, val in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(var, val)
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket=BUCKET)
        yield client


def objects(client: Any, prefix: str = "") -> dict[str, int]:
    resp = client.list_objects_v2(Bucket=BUCKET, Prefix=prefix)
    return {o["Key"]: o["Size"] for o in resp.get("Contents", [])}


def check(ins: Any, **kw: Any) -> dict[str, Any]:
    args = dict(
        target_hidden_size=TARGET_HIDDEN,
        target_vocab_size=TARGET_VOCAB,
        vllm_version=VllmVersion("0.18.0"),
        mode="p-eagle",
        k=3,
        trained_k=5,
    )
    args.update(kw)
    return {c.name: c for c in check_drafter(ins, **args)}


class FailingClient:
    """Delegates to a real client, but the upload of `fail_name` raises once."""

    def __init__(self, client: Any, fail_name: str) -> None:
        self._client, self._fail_name = client, fail_name
        self._lock = threading.Lock()
        self.calls = 0

    def upload_file(self, filename: str, bucket: str, key: str, **kw: Any) -> None:
        with self._lock:
            self.calls += 1
        if key.endswith(self._fail_name):
            raise ConnectionError("connection reset by peer")
        self._client.upload_file(filename, bucket, key, **kw)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


def test_push_layout_manifest_and_channel(s3: Any, tmp_path: Path) -> None:
    src = make_head(tmp_path / "head", "peagle-sharded")
    (src / ".DS_Store").write_bytes(b"\0\0")
    seen: list[int] = []
    result = push_drafter(
        src, f"s3://{BUCKET}/heads/gpt-oss-20b", s3_client=s3, progress=seen.append
    )

    names = ["config.json", *SHARDS, "model.safetensors.index.json"]
    remote = objects(s3)
    # The manifest sits next to the mounted prefix, never inside it.
    assert sorted(remote) == sorted([PREFIX + n for n in names] + [manifest_key(PREFIX)])
    assert all(size > 0 and not key.endswith("/") for key, size in remote.items())
    assert result.uploaded == names and result.skipped == []
    assert result.bytes_uploaded == sum((src / n).stat().st_size for n in names)
    assert sum(seen) == result.bytes_uploaded
    assert any(".DS_Store" in note for note in result.notes)

    manifest = json.loads(s3.get_object(Bucket=BUCKET, Key=manifest_key(PREFIX))["Body"].read())
    assert manifest["files"] == [
        {
            "name": n,
            "size": (src / n).stat().st_size,
            "sha256": hashlib.sha256((src / n).read_bytes()).hexdigest(),
        }
        for n in names
    ]
    assert result.additional_model_data_source() == {
        "ChannelName": "eagle",
        "S3DataSource": {"S3Uri": URI, "S3DataType": "S3Prefix", "CompressionType": "None"},
    }
    json.dumps(result.to_dict())


def test_second_push_uploads_nothing_then_only_changes(s3: Any, tmp_path: Path) -> None:
    src = make_head(tmp_path / "head", "peagle-sharded")
    push_drafter(src, URI, s3_client=s3)
    again = push_drafter(src, URI, s3_client=s3)
    assert again.bytes_uploaded == 0 and again.uploaded == []
    assert len(again.skipped) == 4

    cfg = json.loads((src / "config.json").read_text())
    cfg["ptd_token_id"] = 7
    (src / "config.json").write_text(json.dumps(cfg))
    changed = push_drafter(src, URI, s3_client=s3)
    assert changed.uploaded == ["config.json"]
    assert changed.bytes_uploaded == (src / "config.json").stat().st_size


def test_interrupted_push_resumes(s3: Any, tmp_path: Path) -> None:
    src = make_head(tmp_path / "head", "peagle-sharded")
    names = {"config.json", *SHARDS, "model.safetensors.index.json"}
    flaky = FailingClient(s3, fail_name=SHARDS[1])
    with pytest.raises(PeagleError, match=f"upload of {SHARDS[1]}.*failed") as err:
        push_drafter(src, URI, s3_client=flaky)
    assert "re-run" in (err.value.remedy or "")

    present = {k[len(PREFIX) :] for k in objects(s3, PREFIX)}
    assert manifest_key(PREFIX) not in objects(s3)  # written last, after every file made it
    assert SHARDS[1] not in present and present  # some files did finish

    retry = push_drafter(src, URI, s3_client=s3)
    assert set(retry.skipped) == present
    assert set(retry.uploaded) == names - present
    assert retry.bytes_uploaded == sum((src / n).stat().st_size for n in names - present)
    assert sorted(k[len(PREFIX) :] for k in objects(s3, PREFIX)) == sorted(names)
    assert manifest_key(PREFIX) in objects(s3)


def test_legacy_manifest_inside_the_prefix_is_moved_out(s3: Any, tmp_path: Path) -> None:
    """Older versions wrote the manifest under the prefix, where SageMaker mounts it into
    the container: a push now writes it next to the prefix and removes the old one."""
    src = make_head(tmp_path / "head")
    first = push_drafter(src, URI, s3_client=s3)
    legacy = json.dumps({"format": 1, "files": []}).encode()
    s3.put_object(Bucket=BUCKET, Key=PREFIX + MANIFEST, Body=legacy)
    again = push_drafter(src, URI, s3_client=s3)
    assert sorted(again.skipped) == sorted(first.uploaded)  # sha256 metadata still matches
    assert PREFIX + MANIFEST not in objects(s3, PREFIX)
    assert manifest_key(PREFIX) in objects(s3)
    assert any("moved" in n for n in again.notes)


def test_push_refuses_ambiguous_names(s3: Any, tmp_path: Path) -> None:
    src = make_head(tmp_path / "head")
    (src / "Config.JSON").write_text("{}")
    with pytest.raises(SpecError, match="same as"):
        push_drafter(src, URI, s3_client=s3)
    (src / "Config.JSON").unlink()
    (src / "notes v2.txt").write_text("x")
    with pytest.raises(SpecError, match="notes v2.txt"):
        push_drafter(src, URI, s3_client=s3)
    assert objects(s3) == {}  # refused before uploading anything
    with pytest.raises(SpecError, match="bucket root"):
        push_drafter(src, f"s3://{BUCKET}/", s3_client=s3)


def test_s3_inspect_reads_headers_only(s3: Any, tmp_path: Path) -> None:
    src = make_head(tmp_path / "head", "peagle-llama", big=True)
    push_drafter(src, URI, s3_client=s3)

    # Count what each GetObject really returned, independently of the code under test.
    got: dict[str, int] = {}
    ranges: dict[str, list[str]] = {}

    def before(params: dict, context: dict, **_: Any) -> None:
        context["key"] = params["Key"]
        ranges.setdefault(params["Key"], []).append(params.get("Range", ""))

    def after(parsed: dict, context: dict, **_: Any) -> None:
        got[context["key"]] = got.get(context["key"], 0) + parsed["ContentLength"]

    s3.meta.events.register("provide-client-params.s3.GetObject", before)
    s3.meta.events.register("after-call.s3.GetObject", after)

    ins = inspect_drafter(URI, s3_client=s3)
    size = objects(s3)[PREFIX + "model.safetensors"]
    assert size > 3 * 2**20  # three 1 MiB MLP tensors
    assert got[PREFIX + "model.safetensors"] < 8 * 1024
    n = ins.bytes_read - 8
    assert ranges[PREFIX + "model.safetensors"] == ["bytes=0-7", f"bytes=8-{8 + n - 1}"]
    assert ins.bytes_read == got[PREFIX + "model.safetensors"]

    assert all(c.status == "pass" for c in check(ins).values())
    local = inspect_drafter(str(src)).to_dict()
    remote = ins.to_dict()
    for key in ("source", "bytes_read", "files"):
        local.pop(key), remote.pop(key)
    assert local == remote


def test_s3_sharded_head_reads_each_header(s3: Any, tmp_path: Path) -> None:
    push_drafter(make_head(tmp_path / "head", "peagle-sharded"), URI, s3_client=s3)
    ins = inspect_drafter(URI, s3_client=s3)
    assert ins.weight_files == SHARDS
    assert all(c.status == "pass" for c in check(ins).values())


def test_planted_folder_key_fails_layout(s3: Any, tmp_path: Path) -> None:
    push_drafter(make_head(tmp_path / "head"), URI, s3_client=s3)
    s3.put_object(Bucket=BUCKET, Key=PREFIX + "extra/", Body=b"")
    ins = inspect_drafter(URI, s3_client=s3)
    assert ins.folder_keys == [PREFIX + "extra/"]
    checks = check(ins)
    assert checks["drafter.layout"].status == "fail"
    assert f"{PREFIX}extra/" in checks["drafter.layout"].message
    assert [n for n, c in checks.items() if c.status == "fail"] == ["drafter.layout"]
    again = push_drafter(tmp_path / "head", URI, s3_client=s3)
    assert again.folder_keys == [PREFIX + "extra/"]


def test_corrupt_header_on_s3_reads_8_bytes(s3: Any, tmp_path: Path) -> None:
    src = make_head(tmp_path / "head")
    corrupt_header(src / "model.safetensors", "too-long")
    push_drafter(src, URI, s3_client=s3)
    ins = inspect_drafter(URI, s3_client=s3)
    assert ins.bytes_read == 8
    c = check(ins)["drafter.weights"]
    assert c.status == "fail" and "model.safetensors: corrupt safetensors header" in c.message


def test_s3_source_errors(s3: Any) -> None:
    with pytest.raises(SpecError, match="no objects under"):
        inspect_drafter(f"s3://{BUCKET}/empty/", s3_client=s3)
    with pytest.raises(SpecError, match="cannot list"):
        inspect_drafter("s3://no-such-bucket-x/p/", s3_client=s3)
    with pytest.raises(SpecError, match="malformed"):
        inspect_drafter("s3://", s3_client=s3)
