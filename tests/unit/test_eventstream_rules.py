"""The event-stream decoder's rules, case by case, on frames built here from AWS's
documented format (prelude: total length u32, headers length u32, prelude CRC32; headers;
payload; message CRC32) and botocore's limits (headers <= 128 KiB, payload <= 24 MiB)."""

from __future__ import annotations

import struct
from binascii import crc32

import pytest

from sm_peagle.runtime.eventstream_decode import (
    EventStreamDecodeError,
    Frame,
    FrameDecoder,
    parse_headers,
)


def frame(header_block: bytes, payload: bytes, *, total: int | None = None) -> bytes:
    total = 12 + len(header_block) + len(payload) + 4 if total is None else total
    prelude = struct.pack(">II", total, len(header_block))
    prelude += struct.pack(">I", crc32(prelude) & 0xFFFFFFFF)
    body = prelude + header_block + payload
    return body + struct.pack(">I", crc32(body) & 0xFFFFFFFF)


def string(name: bytes, value: str) -> bytes:
    raw = value.encode()
    return bytes([len(name)]) + name + b"\x07" + struct.pack(">H", len(raw)) + raw


def typed(name: bytes, kind: int, value: bytes) -> bytes:
    return bytes([len(name)]) + name + bytes([kind]) + value


PART = string(b":message-type", "event") + string(b":event-type", "PayloadPart")


def test_the_five_headers_peagle_reads() -> None:
    block = (
        string(b":message-type", "error")
        + string(b":event-type", "e")
        + string(b":exception-type", "x")
        + string(b":error-code", "ModelError")
        + string(b":error-message", "boom")
        + string(b":content-type", "application/json")  # read past, not kept
    )
    assert parse_headers(block) == ("error", "e", "x", "ModelError", "boom")
    assert parse_headers(b"") == (None, None, None, None, None)


@pytest.mark.parametrize(
    ("kind", "value"),
    [(4, struct.pack(">i", 7)), (6, struct.pack(">H", 5) + b"bytes"), (0, b"")],
)
def test_a_wanted_header_that_is_not_a_string_reads_as_none(kind: int, value: bytes) -> None:
    block = typed(b":event-type", kind, value) + string(b":message-type", "event")
    assert parse_headers(block) == ("event", None, None, None, None)


def test_every_value_type_is_walked_with_its_size() -> None:
    # 0 true, 1 false (no value), 2 byte (1), 3 short (2), 4 int (4), 5 long (8),
    # 8 timestamp (8), 9 uuid (16), 6 bytes (u16 length): the header after them still reads.
    block = b"".join(
        typed(bytes([ord("a") + i]), kind, b"\x00" * size)
        for i, (kind, size) in enumerate(
            [(0, 0), (1, 0), (2, 1), (3, 2), (4, 4), (5, 8), (8, 8), (9, 16)]
        )
    )
    block += typed(b"z", 6, struct.pack(">H", 3) + b"abc") + string(b":event-type", "ok")
    assert parse_headers(block)[1] == "ok"


@pytest.mark.parametrize(
    ("block", "message"),
    [
        (typed(b"h", 10, b""), "unknown header value type 10"),
        (string(b"h", "a") + string(b"h", "b"), "duplicate header b'h'"),
        (b"\x03abc", "header runs past the header block"),  # no type byte after the name
        (typed(b"h", 7, b"\x00"), "header runs past the header block"),  # half a length
        (typed(b"h", 7, struct.pack(">H", 9) + b"short"), "header runs past the header block"),
        (typed(b"h", 4, b"\x00\x00"), "header runs past the header block"),  # half an int
    ],
)
def test_bad_header_blocks(block: bytes, message: str) -> None:
    with pytest.raises(EventStreamDecodeError) as e:
        parse_headers(block)
    assert str(e.value) == message and e.value.frames == []


def decode(data: bytes | bytearray | memoryview) -> list[Frame]:
    d = FrameDecoder()
    frames = d.feed(data)
    d.close()
    return frames


def test_a_payload_part_and_any_bytes_like_input() -> None:
    raw = frame(PART, b'{"x":1}')
    expected = [Frame("event", "PayloadPart", None, b'{"x":1}', None, None)]
    assert decode(raw) == decode(bytearray(raw)) == decode(memoryview(raw)) == expected


def test_limits_are_inclusive() -> None:
    # 131072 bytes of headers exactly: two byte-array headers of 65535 and 65527 bytes.
    big = typed(b"a", 6, struct.pack(">H", 65535) + b"\0" * 65535)
    big += typed(b"b", 6, struct.pack(">H", 65527) + b"\0" * 65527)
    assert len(big) == 128 * 1024
    assert len(decode(frame(big, b""))) == 1
    with pytest.raises(EventStreamDecodeError, match="^headers length 131073 over the limit$"):
        decode(frame(big + b"\0", b""))
    payload = b"\0" * (24 * 1024 * 1024)
    assert decode(frame(b"", payload))[0].payload == payload
    with pytest.raises(EventStreamDecodeError, match="^payload length 25165825 over the limit$"):
        decode(frame(b"", payload + b"\0"))


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (frame(b"", b"", total=15), "inconsistent lengths: total 15, headers 0"),
        (frame(PART, b"", total=20), f"inconsistent lengths: total 20, headers {len(PART)}"),
    ],
)
def test_impossible_lengths(raw: bytes, message: str) -> None:
    with pytest.raises(EventStreamDecodeError) as e:
        decode(raw + b"\0" * 64)
    assert str(e.value) == message


def test_crc_mismatches_name_the_part_that_is_wrong() -> None:
    raw = bytearray(frame(PART, b"payload"))
    raw[8] ^= 1  # the prelude CRC
    with pytest.raises(EventStreamDecodeError, match="^prelude CRC32 mismatch$"):
        decode(raw)
    raw = bytearray(frame(PART, b"payload"))
    raw[-1] ^= 1  # the message CRC
    with pytest.raises(EventStreamDecodeError, match="^message CRC32 mismatch$"):
        decode(raw)


def test_good_frames_before_bad_bytes_come_with_the_error() -> None:
    good = frame(PART, b"one")
    bad = bytearray(frame(PART, b"two"))
    bad[-1] ^= 1
    with pytest.raises(EventStreamDecodeError) as e:
        FrameDecoder().feed(good + bad)
    assert [f.payload for f in e.value.frames] == [b"one"]


def test_partial_frames_wait_and_close_reports_them() -> None:
    raw = frame(PART, b"payload")
    d = FrameDecoder()
    assert d.feed(raw[:5]) == [] and d.pending == 5
    assert d.feed(raw[5:20]) == [] and d.pending == 20
    assert [f.payload for f in d.feed(raw[20:] + raw[:3])] == [b"payload"] and d.pending == 3
    with pytest.raises(EventStreamDecodeError, match=r"^stream ended inside a frame \(3 bytes\)$"):
        d.close()
    d.feed(raw[3:])
    d.close()  # nothing pending: no error


def test_at_most_64_distinct_header_blocks_are_remembered() -> None:
    d = FrameDecoder()
    for i in range(70):
        d.feed(frame(PART + string(b"n", str(i)), b""))
    assert len(d._headers) == 64
    # Blocks beyond the cache still decode.
    (f,) = d.feed(frame(PART + string(b"n", "70"), b"x"))
    assert (f.event_type, f.payload) == ("PayloadPart", b"x")
