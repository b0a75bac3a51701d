"""AWS event-stream framing, and the irregular PayloadPart splits SageMaker really produces.

The frames themselves come from peagle's encoder (``sm_peagle.contract.encode_message``: one
encoder for the sandbox and the tests, checked against botocore's own ``EventStreamBuffer``).

SageMaker does not forward the container's bytes one SSE event per PayloadPart: parts are
cut wherever its buffers happen to flush, mid-JSON, mid-``data:`` or mid-UTF-8 character,
and several events can arrive in one part. ``IrregularSplitter`` reproduces that with a
seeded RNG, so client parsers are tested against the hard cases, reproducibly.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from sm_peagle.contract import encode_message, model_stream_error, payload_part

__all__ = [
    "IrregularSplitter",
    "SplitPolicy",
    "encode_message",
    "model_stream_error",
    "payload_part",
]


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
