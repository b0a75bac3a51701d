"""The training data as `drafter_train`'s preflight reads it (local, or the first MiB of an
S3 object and its size), judged by the job's own row rule, and the disk the job is sized
for from it (`VolumeSizeInGB`, carried on the TrainSpec that `build_request` reads)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from ..errors import Param, SpecError, text

__all__ = ["local_data", "s3_data", "size_disk"]


def local_data(data: str, val_fraction: float) -> Any:
    """The local jsonl's `DataStats` (every row judged); SpecError for a missing file, a
    file that is not UTF-8 (the job reads it strictly) or a row the job would refuse."""
    from ..training.checks import read_rows

    path = Path(data).expanduser()
    if not path.is_file():
        raise SpecError(
            text("{p}: {d} is not a file", p=Param("data"), d=data),
            remedy="give a jsonl of prompts (a local file or s3://bucket/key.jsonl)",
            field="data",
            value=data,
        )
    try:
        body = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise SpecError(
            text("{p}: {d} is not UTF-8 (byte {b})", p=Param("data"), d=data, b=exc.start),
            remedy="save the jsonl as UTF-8",
            field="data",
            value=data,
        ) from None
    return read_rows(body.splitlines(), data, val_fraction=val_fraction)


def s3_data(s3: Any, uri: str, val_fraction: float) -> Any:
    """S3 data's `DataStats` from its first MiB (one ranged GET) and its size (one HEAD,
    s3:GetObject's permission): rows after the first MiB are not read before the job."""
    from botocore.exceptions import BotoCoreError, ClientError

    from ..lifecycle import training as lt
    from ..training.checks import read_rows

    lines = lt.read_s3_prompts(s3, uri)
    bucket, _, key = uri[len("s3://") :].partition("/")
    try:
        size = int(s3.head_object(Bucket=bucket, Key=key)["ContentLength"])
    except (BotoCoreError, ClientError):  # the GET read it: no size only leaves it unsized
        size = None
    return read_rows(lines, uri, complete=False, val_fraction=val_fraction, total_bytes=size)


def size_disk(spec: Any, info: Any, stats: Any, notes: list[str]) -> Any:
    """`spec` with the VolumeSizeInGB its disk estimate asks for (SpecError when no
    training volume is that large); the estimate, and how it was made, go to `notes`."""
    from ..training.checks import plan_disk

    plan = plan_disk(
        stats, info, max_new_tokens=spec.max_new_tokens, instance_type=spec.instance_type
    )
    notes.append(plan.note)
    return replace(spec, volume_gb=plan.volume_gb)
