"""peagle's event-stream FrameDecoder against botocore's own EventStreamBuffer: any
sequence of frames, cut into any chunks, decodes to the same messages; corrupt or
impossible input raises EventStreamDecodeError."""

from __future__ import annotations

import struct
import uuid
from binascii import crc32

import pytest
from botocore.eventstream import DuplicateHeader, EventStreamBuffer
from hypothesis import given, settings
from hypothesis import strategies as st

from sm_peagle.errors import ModelStreamError
from sm_peagle.runtime.eventstream_decode import EventStreamDecodeError, FrameDecoder
from sm_peagle.runtime.eventstream_encode import (
    encode_headers,
    encode_message,
    internal_stream_failure,
    model_stream_error,
    payload_part,
)
from sm_peagle.runtime.stream_read import iter_raw_payload_parts


def frame(header_block: bytes, payload: bytes) -> bytes:
    """A frame around an arbitrary (hand-built) header block."""
    total = 12 + len(header_block) + len(payload) + 4
    prelude = struct.pack(">II", total, len(header_block))
    prelude += struct.pack(">I", crc32(prelude) & 0xFFFFFFFF)
    body = prelude + header_block + payload
    return body + struct.pack(">I", crc32(body) & 0xFFFFFFFF)


def header(name: bytes, kind: int, value: bytes) -> bytes:
    return bytes([len(name)]) + name + bytes([kind]) + value


# Every header value type, as raw bytes: 0 true, 1 false, 2 byte, 3 short, 4 int, 5 long,
# 6 bytes, 7 string, 8 timestamp, 9 uuid.
_raw = st.binary(max_size=40)
HEADER_VALUES = st.one_of(
    st.just((0, b"")),
    st.just((1, b"")),
    st.integers(-128, 127).map(lambda v: (2, struct.pack(">b", v))),
    st.integers(-(2**15), 2**15 - 1).map(lambda v: (3, struct.pack(">h", v))),
    st.integers(-(2**31), 2**31 - 1).map(lambda v: (4, struct.pack(">i", v))),
    st.integers(-(2**63), 2**63 - 1).map(lambda v: (5, struct.pack(">q", v))),
    _raw.map(lambda v: (6, struct.pack(">H", len(v)) + v)),
    st.text(max_size=20).map(lambda t: (7, struct.pack(">H", len(t.encode())) + t.encode())),
    st.integers(0, 2**62).map(lambda v: (8, struct.pack(">q", v))),
    st.uuids().map(lambda u: (9, u.bytes)),
)
# Names that are not the ones peagle reads (so any value type is fair).
OTHER_NAMES = st.text(alphabet="abcdefgh-:", min_size=1, max_size=12).filter(
    lambda n: n not in {":message-type", ":event-type", ":exception-type"}
)
STRING_OR_NONE = st.none() | st.sampled_from(["event", "exception", "error", "PayloadPart", "x"])


@st.composite
def odd_frame(draw: st.DrawFn) -> bytes:
    """Random headers of every type, maybe the ones peagle reads (strings), any order."""
    parts = [
        header(draw(OTHER_NAMES).encode(), *draw(HEADER_VALUES))
        for _ in range(draw(st.integers(0, 6)))
    ]
    for name in (":message-type", ":event-type", ":exception-type"):
        value = draw(STRING_OR_NONE)
        if value is not None:
            parts.insert(draw(st.integers(0, len(parts))), encode_headers({name: value}))
    return frame(b"".join(parts), draw(_raw))


FRAMES = st.one_of(
    st.binary(max_size=300).map(payload_part),
    st.text(max_size=30).map(lambda m: model_stream_error(m, "StreamBroken")),
    st.text(max_size=30).map(internal_stream_failure),
    st.builds(
        lambda b, n, u: encode_message({"flag": b, "n": n, "id": u, ":message-type": "event"}),
        st.booleans(),
        st.integers(-(2**63), 2**63 - 1),
        st.uuids(),
    ),
    odd_frame(),
)


def botocore_decode(data: bytes) -> list[tuple[object, object, object, bytes]]:
    buf = EventStreamBuffer()
    buf.add_data(data)
    return [
        (
            m.headers.get(":message-type"),
            m.headers.get(":event-type"),
            m.headers.get(":exception-type"),
            m.payload,
        )
        for m in buf
    ]


def ours(data: bytes, cuts: list[int]) -> list[tuple[object, object, object, bytes]]:
    decoder = FrameDecoder()
    bounds = [0, *sorted(c for c in cuts if 0 < c < len(data)), len(data)]
    got = []
    for a, b in zip(bounds, bounds[1:], strict=False):
        got += decoder.feed(data[a:b])
    decoder.close()
    return [(f.message_type, f.event_type, f.exception_type, f.payload) for f in got]


@settings(max_examples=300, deadline=None)
@given(st.lists(FRAMES, max_size=12), st.lists(st.integers(0, 5000), max_size=20))
def test_decodes_like_botocore_whatever_the_chunking(frames: list[bytes], cuts) -> None:
    data = b"".join(frames)
    try:
        expected = botocore_decode(data)
    except DuplicateHeader:  # random names may repeat: then both must refuse the frame
        with pytest.raises(EventStreamDecodeError):
            ours(data, cuts)
        return
    assert ours(data, cuts) == expected


def test_duplicate_header_names_are_refused_like_botocore() -> None:
    block = encode_headers({":message-type": "event"}) * 2
    with pytest.raises(DuplicateHeader):
        botocore_decode(frame(block, b""))
    with pytest.raises(EventStreamDecodeError):
        FrameDecoder().feed(frame(block, b""))


def test_every_header_type_is_skipped_correctly() -> None:
    block = b"".join(
        [
            header(b"t", 0, b""),
            header(b"f", 1, b""),
            header(b"b", 2, b"\x7f"),
            header(b"s", 3, b"\x00\x01"),
            header(b"i", 4, b"\x00" * 4),
            header(b"l", 5, b"\x00" * 8),
            header(b"y", 6, b"\x00\x03abc"),
            header(b"ts", 8, b"\x00" * 8),
            header(b"u", 9, uuid.uuid4().bytes),
            encode_headers({":message-type": "event", ":event-type": "PayloadPart"}),
        ]
    )
    (f,) = FrameDecoder().feed(frame(block, b"data"))
    assert (f.message_type, f.event_type, f.payload) == ("event", "PayloadPart", b"data")


GOOD = payload_part(b"hello")


def corrupt(data: bytes, at: int) -> bytes:
    return data[:at] + bytes([data[at] ^ 0x01]) + data[at + 1 :]


@pytest.mark.parametrize(
    "bad",
    [
        corrupt(GOOD, len(GOOD) - 1),  # message CRC
        corrupt(GOOD, len(GOOD) - 6),  # payload byte, so the message CRC no longer matches
        corrupt(GOOD, 9),  # prelude CRC
        corrupt(GOOD, 2),  # total length, so the prelude CRC no longer matches
    ],
    ids=["message-crc", "payload", "prelude-crc", "length"],
)
def test_corrupt_frames_raise_like_botocore(bad: bytes) -> None:
    with pytest.raises(EventStreamDecodeError):
        FrameDecoder().feed(bad)
    with pytest.raises(Exception):  # noqa: B017 - botocore's own error types vary
        botocore_decode(bad)


def prelude(total: int, headers: int) -> bytes:
    head = struct.pack(">II", total, headers)
    return head + struct.pack(">I", crc32(head) & 0xFFFFFFFF)


@pytest.mark.parametrize(
    "data",
    [
        prelude(15, 0) + b"\x00" * 3,  # shorter than prelude + message CRC
        prelude(40, 30),  # headers longer than the frame holds
        prelude(64 * 1024 * 1024, 0),  # oversized payload: refused before buffering it
        prelude(300 * 1024, 200 * 1024),  # oversized header block
    ],
    ids=["too-short", "headers-inconsistent", "payload-too-big", "headers-too-big"],
)
def test_impossible_lengths_raise(data: bytes) -> None:
    with pytest.raises(EventStreamDecodeError):
        FrameDecoder().feed(data)


def test_truncated_input_is_pending_until_close() -> None:
    decoder = FrameDecoder()
    assert decoder.feed(GOOD[:7]) == [] and decoder.pending == 7  # half a prelude
    with pytest.raises(EventStreamDecodeError):
        decoder.close()
    assert decoder.feed(GOOD[7:])[0].payload == b"hello" and decoder.pending == 0


def test_reader_yields_good_frames_before_a_corrupt_one_then_breaks() -> None:
    class Raw:
        def stream(self):
            yield GOOD + corrupt(payload_part(b"x"), 20)

    got = []
    with pytest.raises(ModelStreamError) as info:
        for payload, _ in iter_raw_payload_parts(Raw()):
            got.append(payload)
    assert got == [b"hello"] and info.value.code == "StreamBroken"


def test_reader_keeps_model_stream_error_code() -> None:
    class Raw:
        def stream(self):
            yield GOOD[:5]
            yield GOOD[5:] + model_stream_error("slow", "ModelInvocationTimeExceeded")[:30]
            yield model_stream_error("slow", "ModelInvocationTimeExceeded")[30:]

    got = []
    with pytest.raises(ModelStreamError) as info:
        for payload, _ in iter_raw_payload_parts(Raw()):
            got.append(payload)
    assert got == [b"hello"] and info.value.code == "ModelInvocationTimeExceeded"
