"""Read a SageMaker response stream's raw HTTP body with peagle's own frame decoder.

botocore's `EventStream` keeps the urllib3 response it wraps as `_raw_stream` and
decodes it in pure Python; reading those bytes ourselves (`FrameDecoder`) costs a
fraction of the CPU per token and keeps ModelStreamError's ErrorCode, which botocore's
error parser drops. A chunk's first frame is stamped when the bytes come off the socket,
before any decoding, so decoding cost never shows up as TTFT.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator
from typing import Any, Protocol

from ..errors import InternalStreamFailure, ModelStreamError, PeagleError
from .eventstream_decode import EventStreamDecodeError, Frame, FrameDecoder

__all__ = ["RawStream", "iter_raw_payload_parts", "stream_exception", "transport_error"]


class RawStream(Protocol):
    """What botocore hands EventStream: urllib3's HTTPResponse (or a test double)."""

    def stream(self) -> Iterable[bytes]: ...


def stream_exception(shape: str | None, body: dict[str, Any]) -> ModelStreamError:
    message = str(body.get("Message") or body.get("message") or "stream failed")
    if shape == "InternalStreamFailure":
        return InternalStreamFailure(message, code="InternalStreamFailure")
    return ModelStreamError(message, code=body.get("ErrorCode") or shape)


def transport_error(e: Exception) -> ModelStreamError:
    name = type(e).__name__
    code = "ReadTimeout" if "Timeout" in name else "StreamBroken"
    return ModelStreamError(f"the response stream broke ({name}: {e})", code=code)


def frame_error(frame: Frame) -> ModelStreamError:
    """The typed error for a non-event frame (exception or error message type)."""
    if frame.message_type == "exception":
        try:
            doc = json.loads(frame.payload or b"{}")
        except ValueError:
            doc = {"Message": frame.payload.decode("utf-8", "replace")}
        return stream_exception(frame.exception_type, doc)
    return InternalStreamFailure(
        frame.error_message or "stream error", code=frame.error_code or "InternalStreamFailure"
    )


def iter_raw_payload_parts(raw: RawStream) -> Iterator[tuple[bytes, float]]:
    """(bytes, perf_counter at arrival) per PayloadPart; typed errors for error frames.

    `raw.stream()` is called exactly as botocore calls it (urllib3's default: one
    HTTP chunk, at most 64 KiB, per read), so reads block no longer than they did. A
    partial frame at end of body is dropped, as botocore does: the SSE layer above
    then reports the stream as truncated."""
    decoder = FrameDecoder()
    feed, clock = decoder.feed, time.perf_counter  # once per frame: keep lookups out
    try:
        for chunk in raw.stream():
            arrived = clock()
            broken = None
            try:
                frames = feed(chunk)
            except EventStreamDecodeError as e:
                # botocore yields the good frames before the bad one; so do we.
                frames, broken = e.frames, e
            for frame in frames:  # inlined: this loop runs once per streamed chunk
                if frame.message_type == "event":
                    if frame.event_type == "PayloadPart":
                        yield frame.payload, arrived
                        # Later frames of the same chunk: when the consumer reaches them,
                        # as botocore's per-frame path stamped them (ITL/TPOT inside one
                        # read stay as before); the first is stamped before decoding.
                        arrived = clock()
                    continue  # unknown event types: ignore, for forward compatibility
                raise frame_error(frame)
            if broken is not None:
                raise broken
    except PeagleError:
        raise
    except Exception as e:  # corrupt frame (CRC), connection reset, read timeout
        raise transport_error(e) from e
