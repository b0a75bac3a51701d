"""Materialise a model's S3 data under a per-endpoint root standing for `/opt/ml`, as a
SageMaker host does before it starts the container:

- `ModelDataSource` -> `<root>/model/`, each `AdditionalModelDataSources` channel ->
  `<root>/additional-model-data-sources/<ChannelName>/`; the classic `ModelDataUrl`
  (a model.tar.gz) is extracted into `<root>/model/`;
- `S3Prefix` + `CompressionType: None`: every key minus the prefix becomes a file path;
  `S3Object` is one object (`Gzip`: a tar.gz, extracted);
- a zero-byte "folder" key (ending in `/`) breaks the download, as it breaks SageMaker's:
  `MaterialiseError` with a reason the endpoint then reports as `FailureReason`.

Reads go through an S3 client on the sandbox's own URL (the same objects the control
plane stores), never to AWS.
"""

from __future__ import annotations

import tarfile
from pathlib import Path, PurePosixPath
from typing import Any

__all__ = ["MaterialiseError", "materialise"]

CHANNELS_DIR = "additional-model-data-sources"


class MaterialiseError(Exception):
    """The model data cannot be laid out; the message is the endpoint's FailureReason."""


def _split(uri: str) -> tuple[str, str]:
    if not uri.startswith("s3://"):
        raise MaterialiseError(f"S3Uri {uri!r} is not an s3:// URI")
    bucket, _, key = uri[len("s3://") :].partition("/")
    return bucket, key


def _safe_path(dest: Path, relative: str, uri: str) -> Path:
    """`dest/relative`, refusing names that would leave `dest` (SageMaker's "ambiguous
    name" failure, and a path-traversal guard here)."""
    parts = PurePosixPath(relative).parts
    if not parts or any(p in ("..", ".") for p in parts) or relative.startswith("/"):
        raise MaterialiseError(f"cannot download {uri}: ambiguous object name {relative!r}")
    return dest.joinpath(*parts)


def _download_prefix(s3: Any, uri: str, dest: Path, what: str) -> int:
    bucket, prefix = _split(uri)
    if prefix and not prefix.endswith("/"):
        prefix += "/"  # SageMaker treats an S3Prefix as a directory
    keys: list[tuple[str, int]] = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        keys += [(o["Key"], int(o["Size"])) for o in page.get("Contents", [])]
    folders = [k for k, size in keys if k.endswith("/")]
    if folders:
        raise MaterialiseError(
            f"Failed to download {what} from {uri}: zero-byte 'folder' object "
            f"s3://{bucket}/{folders[0]} cannot be written as a file (remove folder keys, "
            "e.g. upload with `aws s3 cp --recursive` instead of creating folders)"
        )
    if not keys:
        raise MaterialiseError(f"Failed to download {what}: no objects under {uri}")
    for key, _size in keys:
        target = _safe_path(dest, key[len(prefix) :], uri)
        target.parent.mkdir(parents=True, exist_ok=True)
        s3.download_file(bucket, key, str(target))
    return len(keys)


def _download_object(s3: Any, uri: str, dest: Path, gzip: bool, what: str) -> int:
    bucket, key = _split(uri)
    dest.mkdir(parents=True, exist_ok=True)
    name = PurePosixPath(key).name or "model"
    target = dest / name
    try:
        s3.download_file(bucket, key, str(target))
    except Exception as e:  # botocore ClientError (404) and friends: one line
        raise MaterialiseError(f"Failed to download {what} from {uri}: {e}") from None
    if not gzip:
        return 1
    try:
        with tarfile.open(target, "r:gz") as tar:
            tar.extractall(dest, filter="data")
    except (tarfile.TarError, OSError) as e:
        raise MaterialiseError(f"Failed to extract {what} {uri}: {e}") from None
    finally:
        target.unlink(missing_ok=True)
    return sum(1 for p in dest.rglob("*") if p.is_file())


def _source(s3: Any, source: dict[str, Any], dest: Path, what: str) -> int:
    data = source.get("S3DataSource") or {}
    uri = str(data.get("S3Uri") or "")
    gzip = data.get("CompressionType") == "Gzip"
    if data.get("S3DataType", "S3Prefix") == "S3Object":
        return _download_object(s3, uri, dest, gzip, what)
    if gzip:
        raise MaterialiseError(f"{what}: S3Prefix with CompressionType Gzip is not valid")
    dest.mkdir(parents=True, exist_ok=True)
    return _download_prefix(s3, uri, dest, what)


def materialise(s3: Any, container: dict[str, Any], root: Path) -> list[str]:
    """Lay out the container's model data under `root`; one note per source."""
    notes = []
    if container.get("ModelDataSource"):
        n = _source(s3, container["ModelDataSource"], root / "model", "model data")
        notes.append(f"/opt/ml/model <- {n} file(s)")
    elif container.get("ModelDataUrl"):
        url = container["ModelDataUrl"]
        gz = url.endswith(".tar.gz")
        n = _download_object(s3, url, root / "model", gz, "model data")
        notes.append(f"/opt/ml/model <- {url} ({n} file(s))")
    for channel in container.get("AdditionalModelDataSources") or []:
        name = str(channel.get("ChannelName") or "")
        dest = root / CHANNELS_DIR / name
        n = _source(s3, channel, dest, f"channel {name}")
        notes.append(f"/opt/ml/{CHANNELS_DIR}/{name} <- {n} file(s)")
    return notes
