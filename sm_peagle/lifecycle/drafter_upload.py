"""Upload a drafter directory to S3 in the layout SageMaker mounts for it.

A side effect, so it lives in lifecycle/ (drafter/ holds only the pure head readers and
rules it calls: `name_problems`, `parse_s3_uri`). It was `sm_peagle.drafter.push`.

With S3DataType=S3Prefix and CompressionType=None, SageMaker copies every object under
the prefix to /opt/ml/additional-model-data-sources/<channel>/<key minus prefix>. So the
keys must be exactly the relative file paths: a zero-byte "folder/" object or two names
that differ only in case break the mount. Pushes are resumable: each object carries its
sha256 in metadata and the manifest is written last, so a re-run skips what is there.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Callable
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..drafter.inspection import name_problems, parse_s3_uri
from ..errors import PeagleError, SpecError

__all__ = [
    "MANIFEST",
    "PushResult",
    "default_transfer_config",
    "make_push_client",
    "manifest_key",
    "push_drafter",
]

MANIFEST = "peagle-manifest.json"  # legacy location, inside the prefix (mounted: removed)
MANIFEST_SUFFIX = ".peagle-manifest.json"


def manifest_key(prefix: str) -> str:
    """Next to the prefix, not in it: `heads/120b/` -> `heads/120b.peagle-manifest.json`.
    SageMaker mounts every key under the prefix into the container; the manifest is
    peagle's bookkeeping, not part of the head."""
    return prefix.rstrip("/") + MANIFEST_SUFFIX


_MIB = 1024 * 1024
# Files uploaded at once; each file also uses multipart concurrency for big shards.
_FILES_IN_PARALLEL = 4


@dataclass
class _LocalFile:
    name: str
    path: Path
    size: int
    sha256: str = ""


@dataclass
class PushResult:
    s3_uri: str
    uploaded: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    bytes_uploaded: int = 0
    notes: list[str] = field(default_factory=list)
    stale_keys: list[str] = field(default_factory=list)  # under the prefix, not in this head
    folder_keys: list[str] = field(default_factory=list)  # zero-byte "dir/" objects found

    def additional_model_data_source(self, channel: str = "eagle") -> dict[str, Any]:
        """The entry for CreateModel's PrimaryContainer.AdditionalModelDataSources."""
        return {
            "ChannelName": channel,
            "S3DataSource": {
                "S3Uri": self.s3_uri,
                "S3DataType": "S3Prefix",
                "CompressionType": "None",
            },
        }

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _concurrency() -> int:
    # Uploads are network-bound, so a few threads per core; capped to stay polite.
    return max(4, min(32, 2 * (os.cpu_count() or 2)))


def default_transfer_config() -> Any:
    """TransferConfig for multi-GB shards: 64 MiB parts (10,000-part limit = 640 GB)."""
    from boto3.s3.transfer import TransferConfig

    return TransferConfig(
        multipart_threshold=64 * _MIB,
        multipart_chunksize=64 * _MIB,
        max_concurrency=_concurrency(),
        use_threads=True,
    )


def make_push_client(region: str | None = None, aws: Any = None) -> Any:
    """An S3 client whose connection pool fits the parallel uploads (the default of 10 is
    smaller than files x parts in flight, which makes urllib3 discard connections); on
    `aws`'s target (an AwsContext: its endpoint URL, credentials) when given."""
    from ..aws import AwsContext

    pool = _FILES_IN_PARALLEL * _concurrency() + 4
    if aws is not None:
        ctx = aws.derive(max_pool_connections=pool)
    else:
        ctx = AwsContext(region, max_pool_connections=pool)
    # S3 needs no region to be configured: botocore follows the bucket's region redirect.
    return ctx.client("s3", region=ctx.session.region_name or "us-east-1")


def push_drafter(
    src_dir: str | Path,
    s3_uri: str,
    *,
    s3_client: Any,
    progress: Callable[[int], None] | None = None,
    transfer_config: Any = None,
) -> PushResult:
    """Upload `src_dir` to `s3_uri` (resumable; unchanged files are not re-uploaded).

    `progress(n)` is called with each chunk of bytes transferred (serialised under a lock;
    s3transfer may pass a negative n to roll progress back when it retries a part).
    Raises SpecError for bad input (nothing uploaded) and PeagleError if S3 fails midway
    (re-running resumes).
    """
    bucket, prefix = parse_s3_uri(s3_uri)
    if not prefix:
        raise SpecError(
            f"{s3_uri} is a bucket root; SageMaker would mount the whole bucket",
            remedy="push to a prefix such as s3://bucket/drafters/my-head/",
        )
    result = PushResult(s3_uri=f"s3://{bucket}/{prefix}")
    files = _local_files(Path(src_dir), result.notes)
    _hash_all(files)

    remote = _list_remote(s3_client, bucket, prefix)
    _note_remote(remote, bucket, prefix, {f.name for f in files}, result)
    manifest = _read_manifest(s3_client, bucket, manifest_key(prefix))
    if not manifest and prefix + MANIFEST in remote:
        manifest = _read_manifest(s3_client, bucket, prefix + MANIFEST)

    todo: list[_LocalFile] = []
    for f in files:
        key = prefix + f.name
        if key in remote and _already_uploaded(s3_client, bucket, key, f, manifest):
            result.skipped.append(f.name)
        else:
            todo.append(f)
    _upload_all(
        s3_client,
        bucket,
        prefix,
        todo,
        result,
        progress,
        transfer_config or default_transfer_config(),
    )

    # Last, so a manifest at the prefix means every file it lists finished uploading.
    body = {
        "format": 1,
        "files": [{"name": f.name, "size": f.size, "sha256": f.sha256} for f in files],
    }
    _aws(
        lambda: s3_client.put_object(
            Bucket=bucket,
            Key=manifest_key(prefix),
            Body=json.dumps(body, indent=1).encode(),
            ContentType="application/json",
        ),
        f"writing s3://{bucket}/{manifest_key(prefix)}",
    )
    if prefix + MANIFEST in remote:
        _aws(
            lambda: s3_client.delete_object(Bucket=bucket, Key=prefix + MANIFEST),
            f"removing the old s3://{bucket}/{prefix}{MANIFEST}",
        )
        result.notes.append(f"moved {MANIFEST} out of the mounted prefix")
    return result


def _note_remote(
    remote: dict[str, int], bucket: str, prefix: str, local_names: set[str], result: PushResult
) -> None:
    """What is already under the prefix that the mount would trip on: folder objects, and
    keys this head does not have (mounted with it all the same)."""
    for key in sorted(remote):
        rel = key[len(prefix) :]
        if key.endswith("/"):
            result.folder_keys.append(key)
            result.notes.append(
                f"folder object s3://{bucket}/{key} exists and breaks the mount; delete it"
            )
        elif rel == MANIFEST:  # written here by older peagle versions: moved out by the push
            continue
        elif rel not in local_names:
            result.stale_keys.append(key)
            result.notes.append(
                f"s3://{bucket}/{key} is not part of this head but will be "
                "mounted with it; delete it if stale"
            )


def _local_files(root: Path, notes: list[str]) -> list[_LocalFile]:
    if not root.is_dir():
        raise SpecError(f"drafter directory {root} does not exist or is not a directory")
    files: list[_LocalFile] = []
    for p in sorted(root.rglob("*")):
        if not p.is_file():
            continue
        rel = p.relative_to(root).as_posix()
        if any(part.startswith(".") for part in rel.split("/")):
            notes.append(f"skipped hidden file {rel}")
        elif rel == MANIFEST:
            notes.append(f"skipped local {MANIFEST}; a fresh one is written")
        else:
            files.append(_LocalFile(rel, p, p.stat().st_size))
    if not files:
        raise SpecError(f"no files to push in {root}")
    bad = name_problems([f.name for f in files])
    if bad:
        raise SpecError(
            f"ambiguous file names for the SageMaker mount: {', '.join(bad)}",
            remedy="rename to [A-Za-z0-9._-] names, unique ignoring case",
        )
    return files


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        # hashlib releases the GIL on large buffers, so shards hash in parallel.
        while chunk := fh.read(8 * _MIB):
            h.update(chunk)
    return h.hexdigest()


def _hash_all(files: list[_LocalFile]) -> None:
    with ThreadPoolExecutor(max_workers=min(len(files), os.cpu_count() or 2)) as pool:
        for f, digest in zip(files, pool.map(lambda f: _sha256(f.path), files), strict=True):
            f.sha256 = digest


def _aws(call: Callable[[], Any], what: str) -> Any:
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        return call()
    except (ClientError, BotoCoreError) as exc:
        raise PeagleError(
            f"S3 failed while {what}: {exc}",
            remedy="check the bucket and your permissions, then re-run",
        ) from exc


def _list_remote(client: Any, bucket: str, prefix: str) -> dict[str, int]:
    def run() -> dict[str, int]:
        out: dict[str, int] = {}
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            for obj in page.get("Contents", []):
                out[obj["Key"]] = obj["Size"]
        return out

    return _aws(run, f"listing s3://{bucket}/{prefix}")


def _read_manifest(client: Any, bucket: str, key: str) -> dict[str, tuple[int, str]]:
    """The manifest at `key`; {} if there is none (a first push) or it is unreadable."""
    from botocore.exceptions import ClientError

    def run() -> bytes | None:
        try:
            with client.get_object(Bucket=bucket, Key=key)["Body"] as body:
                return body.read()
        except ClientError as e:
            if e.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
                return None
            raise

    raw = _aws(run, f"reading s3://{bucket}/{key}")
    if raw is None:
        return {}
    try:
        doc = json.loads(raw)
        return {e["name"]: (int(e["size"]), str(e["sha256"])) for e in doc["files"]}
    except (ValueError, KeyError, TypeError):
        return {}  # unreadable manifest: fall back to per-object sha256 metadata


def _already_uploaded(
    client: Any, bucket: str, key: str, f: _LocalFile, manifest: dict[str, tuple[int, str]]
) -> bool:
    from botocore.exceptions import ClientError

    try:
        head = client.head_object(Bucket=bucket, Key=key)
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
            return False  # deleted since the listing: just upload it
        raise PeagleError(
            f"S3 failed while checking s3://{bucket}/{key}: {exc}",
            remedy="check the bucket and your permissions, then re-run",
        ) from exc
    if head.get("ContentLength") != f.size:
        return False
    if manifest.get(f.name) == (f.size, f.sha256):
        return True
    # No manifest yet (an interrupted push): trust the sha256 we stored on the object.
    return head.get("Metadata", {}).get("sha256") == f.sha256


def _upload_all(
    client: Any,
    bucket: str,
    prefix: str,
    todo: list[_LocalFile],
    result: PushResult,
    progress: Callable[[int], None] | None,
    config: Any,
) -> None:
    if not todo:
        return
    lock = threading.Lock()

    def on_bytes(n: int) -> None:
        if progress is not None:
            with lock:  # s3transfer calls back from many threads; keep the caller simple
                progress(n)

    def upload(f: _LocalFile) -> _LocalFile:
        client.upload_file(
            str(f.path),
            bucket,
            prefix + f.name,
            Config=config,
            ExtraArgs={"Metadata": {"sha256": f.sha256}},
            Callback=on_bytes,
        )
        return f

    pool = ThreadPoolExecutor(max_workers=min(len(todo), _FILES_IN_PARALLEL))
    futures = {pool.submit(upload, f): f for f in todo}
    try:
        wait(futures, return_when=FIRST_EXCEPTION)
    finally:
        # Stop queued files on the first failure, but let in-flight ones finish so the
        # re-run has less to do.
        pool.shutdown(wait=True, cancel_futures=True)
    error: tuple[_LocalFile, BaseException] | None = None
    for fut, f in futures.items():
        if fut.cancelled():
            continue
        if (exc := fut.exception()) is not None:
            error = error or (f, exc)
            continue
        result.uploaded.append(f.name)
        result.bytes_uploaded += f.size
    result.uploaded.sort()
    if error is not None:
        f, exc = error
        raise PeagleError(
            f"upload of {f.name} to s3://{bucket}/{prefix}{f.name} failed: {exc} "
            f"({len(result.uploaded)} of {len(todo)} files uploaded)",
            remedy="re-run the same push; files already uploaded are skipped",
        ) from exc
