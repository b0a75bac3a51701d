"""Decode AWS event-stream frames incrementally: the read side of `eventstream_encode`.

botocore's `EventStreamBuffer` decodes every frame in pure Python (a parser object per
message, a dict per header set, struct calls per header), which dominated peagle's CPU
per streamed token. This decoder does the same checks with less work per frame:

- CRC32s are `zlib.crc32` over memoryview slices (C, no copies);
- the header block is parsed once per distinct byte string and cached: SageMaker sends
  the same three headers on every PayloadPart, so the steady state is one dict lookup;
- when a chunk starts on a frame boundary (the common case) it is decoded in place,
  without first being copied into the carry-over buffer.

Limits and errors match botocore's (headers <= 128 KiB, payload <= 24 MiB): anything it
would refuse raises `EventStreamDecodeError` here. A partial frame left at end of input
is not an error for the decoder (botocore ignores it too); the caller decides.
"""

from __future__ import annotations

import struct
from typing import NamedTuple
from zlib import crc32

__all__ = [
    "MAX_HEADERS_LENGTH",
    "MAX_PAYLOAD_LENGTH",
    "EventStreamDecodeError",
    "Frame",
    "FrameDecoder",
    "parse_headers",
]

PRELUDE_LENGTH = 12  # total length u32, headers length u32, prelude CRC u32
MIN_FRAME_LENGTH = PRELUDE_LENGTH + 4  # + message CRC, with no headers and no payload
MAX_HEADERS_LENGTH = 128 * 1024  # botocore's _MAX_HEADERS_LENGTH
MAX_PAYLOAD_LENGTH = 24 * 1024 * 1024  # botocore's _MAX_PAYLOAD_LENGTH
_MAX_CACHED_HEADER_BLOCKS = 64  # distinct header blocks remembered (a stream uses ~3)

_PRELUDE = struct.Struct(">III")
_U32 = struct.Struct(">I")
_U16 = struct.Struct(">H")

# Fixed value sizes by header type; 6 (bytes) and 7 (string) carry a u16 length instead.
# 0 true, 1 false, 2 byte, 3 short, 4 int, 5 long, 8 timestamp, 9 uuid.
_FIXED_SIZE = {0: 0, 1: 0, 2: 1, 3: 2, 4: 4, 5: 8, 8: 8, 9: 16}
_STRING, _BYTES = 7, 6
# The only headers peagle reads; every other header is skipped (but walked, to stay aligned).
_WANTED = {
    b":message-type": 0,
    b":event-type": 1,
    b":exception-type": 2,
    b":error-code": 3,
    b":error-message": 4,
}


class EventStreamDecodeError(ValueError):
    """The bytes are not a valid event stream (bad CRC, impossible lengths, bad header).

    `frames` are the complete, valid frames that preceded the bad bytes in the same
    `feed`: botocore yields those before it raises, so a reader can too."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.frames: list[Frame] = []


class Frame(NamedTuple):
    message_type: str | None
    event_type: str | None
    exception_type: str | None
    payload: bytes
    error_code: str | None = None  # only on :message-type "error" frames
    error_message: str | None = None


_HeaderFields = tuple[str | None, str | None, str | None, str | None, str | None]


def parse_headers(block: bytes) -> _HeaderFields:
    """(message type, event type, exception type, error code, error message) from one
    frame's header block. Walks every header so skipped values keep the offsets right;
    a repeated name is an error, as in botocore. A wanted name with a non-string value
    yields None (peagle then treats the frame as unknown, never as a PayloadPart)."""
    found: list[str | None] = [None] * 5
    seen: set[bytes] = set()  # botocore refuses a repeated header name (DuplicateHeader)
    pos, end = 0, len(block)
    while pos < end:
        name_len = block[pos]
        pos += 1
        name = block[pos : pos + name_len]
        pos += name_len
        if name in seen:
            raise EventStreamDecodeError(f"duplicate header {name!r}")
        seen.add(name)
        if pos >= end:
            raise EventStreamDecodeError("header runs past the header block")
        kind = block[pos]
        pos += 1
        slot = _WANTED.get(name)
        if kind in (_STRING, _BYTES):
            if pos + 2 > end:
                raise EventStreamDecodeError("header runs past the header block")
            (size,) = _U16.unpack_from(block, pos)
            pos += 2
            if slot is not None:
                found[slot] = block[pos : pos + size].decode("utf-8") if kind == _STRING else None
        else:
            size = _FIXED_SIZE.get(kind, -1)
            if size < 0:
                raise EventStreamDecodeError(f"unknown header value type {kind}")
            if slot is not None:
                found[slot] = None
        pos += size
        if pos > end:
            raise EventStreamDecodeError("header runs past the header block")
    return found[0], found[1], found[2], found[3], found[4]


class FrameDecoder:
    """Incremental: `feed` any slice of the byte stream, get back the frames it completed."""

    __slots__ = ("_buf", "_headers", "_need")

    def __init__(self) -> None:
        self._buf = bytearray()  # bytes of a frame not yet complete
        self._need = 0  # bytes the buffered frame needs in all (0: prelude not yet read)
        self._headers: dict[bytes, _HeaderFields] = {}

    @property
    def pending(self) -> int:
        """Bytes held back for an incomplete frame (non-zero at EOF = truncated stream)."""
        return len(self._buf)

    def close(self) -> None:
        """End of input: raise if a frame was cut short (the stream reader does not call
        this; it leaves a truncated body to the SSE layer, as botocore does)."""
        if self._buf:
            raise EventStreamDecodeError(f"stream ended inside a frame ({len(self._buf)} bytes)")

    def feed(self, data: bytes | bytearray | memoryview) -> list[Frame]:
        buf = self._buf
        if buf:
            buf += data
            if len(buf) < self._need:
                return []  # a big frame still arriving: no copy, no re-check per chunk
            source = bytes(buf)
            buf.clear()
        else:  # on a frame boundary (the common case): decode straight from the chunk
            source = data if isinstance(data, bytes) else bytes(data)
        frames: list[Frame] = []
        try:
            used = self._decode(source, frames)
        except EventStreamDecodeError as e:
            e.frames = frames
            raise
        if used < len(source):
            buf += source[used:]
        return frames

    def _decode(self, data: bytes, frames: list[Frame]) -> int:
        """Append every complete frame in `data` to `frames`; return bytes consumed.

        Plain bytes slices, not memoryviews: frames are small (a few hundred bytes), so
        the copies cost less than memoryview objects would, and a large frame is sliced
        only once, when complete (`_need`)."""
        pos, size = 0, len(data)
        cache = self._headers
        new = tuple.__new__  # Frame(...) runs NamedTuple's Python-level __new__
        self._need = 0
        while size - pos >= PRELUDE_LENGTH:
            total, headers_len, prelude_crc = _PRELUDE.unpack_from(data, pos)
            # Check the prelude as soon as it is here (as botocore does), so a garbage
            # length is refused before we wait for (or buffer) that many bytes.
            if crc32(data[pos : pos + 8]) != prelude_crc:
                raise EventStreamDecodeError("prelude CRC32 mismatch")
            if headers_len > MAX_HEADERS_LENGTH:
                raise EventStreamDecodeError(f"headers length {headers_len} over the limit")
            payload_len = total - headers_len - MIN_FRAME_LENGTH
            if total < MIN_FRAME_LENGTH or payload_len < 0:
                raise EventStreamDecodeError(
                    f"inconsistent lengths: total {total}, headers {headers_len}"
                )
            if payload_len > MAX_PAYLOAD_LENGTH:
                raise EventStreamDecodeError(f"payload length {payload_len} over the limit")
            end = pos + total
            if end > size:
                self._need = total  # incomplete frame: wait for the rest
                break
            crc_at = end - 4
            if crc32(data[pos:crc_at]) != _U32.unpack_from(data, crc_at)[0]:
                raise EventStreamDecodeError("message CRC32 mismatch")
            headers_at = pos + PRELUDE_LENGTH
            payload_at = headers_at + headers_len
            block = data[headers_at:payload_at]
            fields = cache.get(block)
            if fields is None:
                fields = parse_headers(block)
                if len(cache) < _MAX_CACHED_HEADER_BLOCKS:
                    cache[block] = fields
            kind, event, exc, code, message = fields
            frames.append(new(Frame, (kind, event, exc, data[payload_at:crc_at], code, message)))
            pos = end
        return pos
