"""Read the JSON header of a safetensors file without reading its tensors.

A safetensors file is: 8-byte little-endian unsigned header length N, N bytes of JSON
({name: {dtype, shape, data_offsets}, "__metadata__": {...}}), then the tensor bytes.
Everything `drafter check` needs (names, shapes, dtypes) is in the header, so for S3 we
fetch exactly 8 + N bytes with two ranged GETs instead of downloading gigabytes.
"""

from __future__ import annotations

import json
import math
import struct
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "DTYPE_BITS",
    "MAX_HEADER_BYTES",
    "ByteCounter",
    "HeaderError",
    "SafetensorsHeader",
    "TensorInfo",
    "parse_header",
    "read_local_header",
    "read_s3_header",
]

# Real heads have headers of a few KB to a few MB; the Rust loader caps it at 100 MB.
# A larger "length" means the first 8 bytes are not a safetensors length at all.
MAX_HEADER_BYTES = 100 * 1024 * 1024

# Bits per element, as the safetensors format defines the dtype names. A header naming any
# other dtype is refused by the safetensors loader vLLM uses (`drafter.dtypes` fails it).
DTYPE_BITS = {
    "BOOL": 8,
    "U8": 8,
    "I8": 8,
    "F8_E5M2": 8,
    "F8_E4M3": 8,
    "F8_E8M0": 8,
    "F8_E4M3FNUZ": 8,
    "F8_E5M2FNUZ": 8,
    "I16": 16,
    "U16": 16,
    "F16": 16,
    "BF16": 16,
    "I32": 32,
    "U32": 32,
    "F32": 32,
    "I64": 64,
    "U64": 64,
    "F64": 64,
    "C64": 64,
    "F4": 4,
    "F6_E2M3": 6,
    "F6_E3M2": 6,
}


class HeaderError(ValueError):
    """The file is not a valid safetensors file; the message names the file and why."""


@dataclass(frozen=True)
class TensorInfo:
    name: str
    dtype: str
    shape: tuple[int, ...]
    begin: int
    end: int

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.end - self.begin


@dataclass
class SafetensorsHeader:
    name: str
    header_len: int
    tensors: dict[str, TensorInfo]
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def data_bytes(self) -> int:
        return sum(t.nbytes for t in self.tensors.values())

    @property
    def parameter_count(self) -> int:
        return sum(t.numel for t in self.tensors.values())


class ByteCounter:
    """Counts bytes fetched per object, so tests (and the CLI) can prove reads stay small."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.by_key: dict[str, int] = {}
        self.ranges: list[tuple[str, str]] = []

    def add(self, key: str, range_header: str, nbytes: int) -> None:
        with self._lock:
            self.by_key[key] = self.by_key.get(key, 0) + nbytes
            self.ranges.append((key, range_header))

    @property
    def total(self) -> int:
        return sum(self.by_key.values())


def _header_len(prefix: bytes, name: str, file_size: int | None) -> int:
    if len(prefix) < 8:
        raise HeaderError(
            f"{name}: file is {len(prefix)} bytes, too short for a safetensors header"
        )
    (n,) = struct.unpack("<Q", prefix[:8])
    if n == 0 or n > MAX_HEADER_BYTES:
        raise HeaderError(
            f"{name}: corrupt safetensors header: header length {n} is not in "
            f"1..{MAX_HEADER_BYTES} (not a safetensors file?)"
        )
    if file_size is not None and 8 + n > file_size:
        raise HeaderError(
            f"{name}: corrupt safetensors header: header length {n} is larger "
            f"than the file ({file_size} bytes; truncated upload?)"
        )
    return n


def parse_header(
    header_len: int, raw: bytes, *, name: str, file_size: int | None = None
) -> SafetensorsHeader:
    """Validate the JSON header bytes the way the safetensors loader does."""
    if len(raw) != header_len:
        raise HeaderError(
            f"{name}: corrupt safetensors header: expected {header_len} header "
            f"bytes, got {len(raw)} (truncated file?)"
        )
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise HeaderError(f"{name}: corrupt safetensors header: not JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise HeaderError(f"{name}: corrupt safetensors header: JSON is not an object")
    metadata = doc.pop("__metadata__", None) or {}
    if not isinstance(metadata, dict):
        raise HeaderError(f"{name}: corrupt safetensors header: __metadata__ is not an object")
    tensors: dict[str, TensorInfo] = {}
    for tname, spec in doc.items():
        tensors[tname] = _tensor(name, tname, spec)
    _check_offsets(name, tensors, header_len, file_size)
    return SafetensorsHeader(name, header_len, tensors, metadata)


def _tensor(fname: str, tname: str, spec: Any) -> TensorInfo:
    bad = f"{fname}: corrupt safetensors header: tensor {tname!r}"
    if not isinstance(spec, dict):
        raise HeaderError(f"{bad} entry is not an object")
    dtype, shape, offs = spec.get("dtype"), spec.get("shape"), spec.get("data_offsets")
    if not isinstance(dtype, str):
        raise HeaderError(f"{bad} has no dtype")
    if not isinstance(shape, list) or not all(_is_uint(d) for d in shape):
        raise HeaderError(f"{bad} has an invalid shape {shape!r}")
    if not (
        isinstance(offs, list)
        and len(offs) == 2
        and all(_is_uint(o) for o in offs)
        and offs[0] <= offs[1]
    ):
        raise HeaderError(f"{bad} has invalid data_offsets {offs!r}")
    info = TensorInfo(tname, dtype, tuple(shape), offs[0], offs[1])
    bits = DTYPE_BITS.get(dtype)
    # An unknown dtype is kept here (the header still parses) and refused by drafter.dtypes.
    if bits is not None and math.ceil(info.numel * bits / 8) != info.nbytes:
        raise HeaderError(
            f"{bad} is {dtype}{list(shape)} ({math.ceil(info.numel * bits / 8)} "
            f"bytes) but data_offsets span {info.nbytes} bytes"
        )
    return info


def _is_uint(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _check_offsets(
    name: str, tensors: dict[str, TensorInfo], header_len: int, file_size: int | None
) -> None:
    # The loader requires tensors to tile the data section exactly: no gaps, no overlap.
    pos = 0
    for t in sorted(tensors.values(), key=lambda t: (t.begin, t.end)):
        if t.begin != pos:
            raise HeaderError(
                f"{name}: corrupt safetensors header: tensor {t.name!r} starts at "
                f"byte {t.begin}, expected {pos} (overlapping or gapped offsets)"
            )
        pos = t.end
    if file_size is not None and 8 + header_len + pos != file_size:
        raise HeaderError(
            f"{name}: corrupt safetensors header: tensors end at data byte {pos} "
            f"but the file has {file_size - 8 - header_len} data bytes "
            f"(truncated or padded file?)"
        )


def read_local_header(path: str | Path) -> SafetensorsHeader:
    """Parse the header of a local file (reads 8 + N bytes only)."""
    p = Path(path)
    size = p.stat().st_size
    with p.open("rb") as f:
        n = _header_len(f.read(8), p.name, size)
        return parse_header(n, f.read(n), name=p.name, file_size=size)


def read_s3_header(
    s3_client: Any,
    bucket: str,
    key: str,
    *,
    name: str | None = None,
    file_size: int | None = None,
    counter: ByteCounter | None = None,
) -> SafetensorsHeader:
    """Parse the header of an S3 object with two ranged GETs (bytes 0-7, then the header)."""
    label = name or key
    if file_size is not None and file_size < 8:
        # A ranged GET on an empty object is a 416 error; the size already says it all.
        raise HeaderError(f"{label}: file is {file_size} bytes, too short for a safetensors header")
    prefix = _get_range(s3_client, bucket, key, 0, 7, counter)
    n = _header_len(prefix, label, file_size)
    raw = _get_range(s3_client, bucket, key, 8, 8 + n - 1, counter)
    return parse_header(n, raw, name=label, file_size=file_size)


def _get_range(
    s3_client: Any, bucket: str, key: str, first: int, last: int, counter: ByteCounter | None
) -> bytes:
    rng = f"bytes={first}-{last}"
    body = s3_client.get_object(Bucket=bucket, Key=key, Range=rng)["Body"]
    try:
        # Read at most the requested length even if a server ignores Range.
        data = body.read(last - first + 1)
    finally:
        body.close()
    if counter is not None:
        counter.add(key, rng, len(data))
    return data
