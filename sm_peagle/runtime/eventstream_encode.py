"""Encode AWS event-stream frames, as SageMaker's InvokeEndpointWithResponseStream sends.

For the local sandbox and the tests: what this produces is decoded by botocore's own
`botocore.eventstream.EventStreamBuffer` and `EventStream`, unmodified.

Frame layout (all integers big-endian):

    [total length u32][headers length u32][prelude CRC32 u32]
    [headers ...][payload ...]
    [message CRC32 u32]

The prelude CRC covers the first 8 bytes; the message CRC covers everything before it
(prelude + prelude CRC + headers + payload). A header is
`[name length u8][name utf-8][type u8][value]`; strings (type 7) and byte arrays (type 6)
carry a u16 length prefix.

SageMaker's response stream model (service-2.json, `ResponseStream`):

- `PayloadPart` is an *event* whose only member `Bytes` is the `eventpayload` blob, so
  the frame payload is the raw bytes themselves (not JSON, not base64);
- `ModelStreamError` {Message, ErrorCode} and `InternalStreamFailure` {Message} are
  modeled *exceptions*: `:message-type` = exception, `:exception-type` = the shape name,
  and a JSON payload with the members.
"""

from __future__ import annotations

import json
import struct
import uuid
from binascii import crc32

__all__ = [
    "MAX_PAYLOAD_PART",
    "STREAM_CONTENT_TYPE",
    "encode_headers",
    "encode_message",
    "internal_stream_failure",
    "model_stream_error",
    "payload_part",
    "payload_parts",
]

STREAM_CONTENT_TYPE = "application/vnd.amazon.eventstream"  # the HTTP response's type
MAX_PAYLOAD_PART = 16 * 1024 * 1024  # botocore refuses payloads over 24 MiB per frame

_U32 = struct.Struct(">I")


def _header_value(value: object) -> bytes:
    if isinstance(value, bool):  # before int: bool is an int
        return bytes([0 if value else 1])
    if isinstance(value, int):
        if -(2**31) <= value < 2**31:
            return b"\x04" + struct.pack(">i", value)
        return b"\x05" + struct.pack(">q", value)
    if isinstance(value, uuid.UUID):
        return b"\x09" + value.bytes
    if isinstance(value, bytes | bytearray):
        return b"\x06" + struct.pack(">H", len(value)) + bytes(value)
    if isinstance(value, str):
        raw = value.encode("utf-8")
        return b"\x07" + struct.pack(">H", len(raw)) + raw
    raise TypeError(f"unsupported event-stream header value {value!r}")


def encode_headers(headers: dict[str, object]) -> bytes:
    out = bytearray()
    for name, value in headers.items():
        raw = name.encode("utf-8")
        if not 0 < len(raw) < 256:
            raise ValueError(f"header name must be 1-255 bytes: {name!r}")
        out += bytes([len(raw)]) + raw + _header_value(value)
    return bytes(out)


def encode_message(headers: dict[str, object], payload: bytes = b"") -> bytes:
    """One complete event-stream frame."""
    head = encode_headers(headers)
    total = 12 + len(head) + len(payload) + 4
    prelude = _U32.pack(total) + _U32.pack(len(head))
    prelude += _U32.pack(crc32(prelude) & 0xFFFFFFFF)
    body = prelude + head + payload
    return body + _U32.pack(crc32(body) & 0xFFFFFFFF)


def payload_part(data: bytes) -> bytes:
    """A PayloadPart event carrying `data` (any slice of the container's response)."""
    if len(data) > MAX_PAYLOAD_PART:
        raise ValueError("split large payloads with payload_parts()")
    return encode_message(
        {
            ":event-type": "PayloadPart",
            ":content-type": "application/octet-stream",
            ":message-type": "event",
        },
        bytes(data),
    )


def payload_parts(data: bytes, cuts: list[int] | None = None) -> list[bytes]:
    """`data` as PayloadPart frames, split at the byte offsets in `cuts` (which may fall
    anywhere, as SageMaker's do: inside an SSE event or a UTF-8 character)."""
    points = sorted({c for c in (cuts or []) if 0 < c < len(data)})
    bounds = [0, *points, len(data)]
    return [payload_part(data[a:b]) for a, b in zip(bounds, bounds[1:], strict=False) if b > a]


def _exception(shape: str, body: dict[str, str]) -> bytes:
    return encode_message(
        {
            ":exception-type": shape,
            ":content-type": "application/json",
            ":message-type": "exception",
        },
        json.dumps(body).encode("utf-8"),
    )


def model_stream_error(message: str, error_code: str = "ModelInvocationTimeExceeded") -> bytes:
    """ErrorCode is ModelInvocationTimeExceeded or StreamBroken on SageMaker."""
    return _exception("ModelStreamError", {"Message": message, "ErrorCode": error_code})


def internal_stream_failure(message: str) -> bytes:
    return _exception("InternalStreamFailure", {"Message": message})
