"""AWS event-stream framing, and the irregular PayloadPart splits SageMaker really produces.

A message is: prelude (total length u32, headers length u32, CRC32 of those 8 bytes), headers
(name length u8, name, type 7 = string, value length u16, value), payload, CRC32 of
everything before it; all big-endian. botocore's ``EventStreamBuffer`` decodes it unmodified.

SageMaker does not forward the container's bytes one SSE event per PayloadPart: parts are
cut wherever its buffers happen to flush, mid-JSON, mid-``data:`` or mid-UTF-8 character,
and several events can arrive in one part. ``IrregularSplitter`` reproduces that with a
seeded RNG, so client parsers are tested against the hard cases, reproducibly.
"""

from __future__ import annotations

import binascii
import json
import random
import struct
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

__all__ = [
    "IrregularSplitter",
    "SplitPolicy",
    "encode_message",
    "model_stream_error",
    "payload_part",
]

_STRING = 7


def _crc(data: bytes, value: int = 0) -> int:
    return binascii.crc32(data, value) & 0xFFFFFFFF


def encode_message(headers: dict[str, str], payload: bytes) -> bytes:
    """One event-stream message with string headers."""
    encoded = b""
    for name, value in headers.items():
        n, v = name.encode(), value.encode()
        encoded += struct.pack(">B", len(n)) + n + struct.pack(">BH", _STRING, len(v)) + v
    total = 12 + len(encoded) + len(payload) + 4
    prelude = struct.pack(">II", total, len(encoded))
    prelude += struct.pack(">I", _crc(prelude))
    body = prelude + encoded + payload
    return body + struct.pack(">I", _crc(body))


def payload_part(data: bytes) -> bytes:
    """A ``PayloadPart`` event carrying raw bytes."""
    headers = {
        ":event-type": "PayloadPart",
        ":content-type": "application/octet-stream",
        ":message-type": "event",
    }
    return encode_message(headers, data)


def model_stream_error(message: str, error_code: str = "ModelStreamError") -> bytes:
    """The exception event SageMaker sends when the container fails mid-stream."""
    headers = {
        ":exception-type": "ModelStreamError",
        ":content-type": "application/json",
        ":message-type": "exception",
    }
    payload = json.dumps({"Message": message, "ErrorCode": error_code}).encode()
    return encode_message(headers, payload)


@dataclass(frozen=True)
class SplitPolicy:
    """How irregular the parts are. ``hold_probability``: keep an event's bytes back to send
    with the next one (several events per part); ``max_cuts``: extra cut points per flush;
    ``tricky_cut_probability``: prefer cuts inside ``data:`` or a multi-byte character."""

    max_cuts: int = 3
    hold_probability: float = 0.2
    tricky_cut_probability: float = 0.5


def _tricky_positions(buf: bytes) -> list[int]:
    """Cut points that split a UTF-8 character or the ``data:`` field name."""
    out = [i for i in range(1, len(buf)) if buf[i] & 0xC0 == 0x80]  # continuation bytes
    start = buf.find(b"data:")
    while start != -1:
        out += [p for p in range(start + 1, start + 5) if 0 < p < len(buf)]
        start = buf.find(b"data:", start + 1)
    return out


class IrregularSplitter:
    """Turns a paced stream of ``(bytes, tag)`` events into framed PayloadParts.

    ``on_written(tag, t)`` is called once all of an event's bytes have been handed to the
    socket: the code after each ``yield`` runs only when the WSGI server asks for the next
    part, i.e. after it wrote the previous one, so ``t`` is a true send time.
    """

    def __init__(self, rng: random.Random, policy: SplitPolicy | None = None) -> None:
        self.rng = rng
        self.policy = policy or SplitPolicy()
        self.parts = 0

    def cut_points(self, buf: bytes) -> list[int]:
        if len(buf) < 2:
            return []
        n = self.rng.randint(0, self.policy.max_cuts)
        tricky = _tricky_positions(buf)
        cuts: set[int] = set()
        for _ in range(n):
            if tricky and self.rng.random() < self.policy.tricky_cut_probability:
                cuts.add(self.rng.choice(tricky))
            else:
                cuts.add(self.rng.randint(1, len(buf) - 1))
        return sorted(cuts)

    def frames(
        self,
        events: Iterable[tuple[bytes, Any]],
        on_written: Callable[[Any, float], None] | None = None,
    ) -> Iterator[bytes]:
        pending = bytearray()
        tags: list[tuple[int, Any]] = []  # (end offset in pending, tag)

        def flush() -> Iterator[bytes]:
            data = bytes(pending)
            bounds = [0, *self.cut_points(data), len(data)]
            sent = 0
            for a, b in zip(bounds, bounds[1:], strict=False):
                self.parts += 1
                yield payload_part(data[a:b])
                sent = b
                now = time.time()
                while tags and tags[0][0] <= sent:
                    _, tag = tags.pop(0)
                    if on_written is not None:
                        on_written(tag, now)
            pending.clear()

        for data, tag in events:
            pending.extend(data)
            tags.append((len(pending), tag))
            if self.rng.random() < self.policy.hold_probability:
                continue  # goes out together with the next event
            yield from flush()
        if pending:
            yield from flush()
