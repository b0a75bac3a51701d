"""The stream parser gives the same answer however SageMaker cuts the bytes.

PayloadPart boundaries are arbitrary: inside a UTF-8 character, inside `data:`, between
`\\r` and `\\n`, or several events in one part. Hypothesis picks the cuts.
"""

from __future__ import annotations

import json

import pytest
from botocore.eventstream import EventStreamBuffer
from botocore.exceptions import EventStreamError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sm_peagle.errors import InternalStreamFailure, ModelStreamError, PayloadTooLarge, SpecError
from sm_peagle.runtime.chunks import StreamChunk, Usage, collect
from sm_peagle.runtime.client import StreamResult, iter_payload_parts
from sm_peagle.runtime.eventstream_encode import payload_parts
from sm_peagle.runtime.payloads import MAX_PAYLOAD_BYTES, build_payload, encode_payload
from sm_peagle.runtime.sse import SSEDecoder
from tests.stream_fixtures import (
    ALL_CHUNKS,
    COMPLETION_TOKENS,
    PIECES,
    PROMPT_TOKENS,
    TEXT,
    split_at,
    vllm_chat_stream,
)

NEWLINES = ["\n", "\r\n", "\r"]
STREAMS = {nl: vllm_chat_stream(nl) for nl in NEWLINES}
FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def run(parts: list[bytes]) -> tuple[list[StreamChunk], StreamResult]:
    """Parts arrive at t = 1, 2, 3, … after a send at t = 0."""
    result = StreamResult(iter((p, float(i + 1)) for i, p in enumerate(parts)), 0.0, None)
    return list(result), result


def assert_expected(chunks: list[StreamChunk], result: StreamResult) -> None:
    c = result.completion()
    assert c.text == TEXT
    assert c.usage == Usage(PROMPT_TOKENS, COMPLETION_TOKENS, PROMPT_TOKENS + COMPLETION_TOKENS)
    assert c.finish_reason == "stop"
    assert c.done
    assert len(chunks) == ALL_CHUNKS
    assert c.chunks == len(PIECES)
    assert chunks[0].role_only and not chunks[0].is_content
    assert [ch.tokens_in_chunk for ch in chunks] == [0, *(n for _, n in PIECES), 0]
    assert chunks[-1].raw["choices"] == [] and not chunks[-1].is_content
    assert c.mean_tokens_per_chunk == COMPLETION_TOKENS / len(PIECES)


@FAST
@given(data=st.data(), newline=st.sampled_from(NEWLINES))
def test_any_payloadpart_split_gives_the_same_answer(data, newline) -> None:
    stream = STREAMS[newline]
    cuts = data.draw(st.lists(st.integers(0, len(stream)), max_size=80))
    assert_expected(*run(split_at(stream, cuts)))


@pytest.mark.parametrize("newline", NEWLINES, ids=["lf", "crlf", "cr"])
def test_one_byte_per_part(newline) -> None:
    stream = STREAMS[newline]
    assert_expected(*run([stream[i : i + 1] for i in range(len(stream))]))


@pytest.mark.parametrize("newline", NEWLINES, ids=["lf", "crlf", "cr"])
def test_all_events_in_one_part(newline) -> None:
    chunks, result = run([STREAMS[newline]])
    assert_expected(chunks, result)
    assert {ch.arrived_at for ch in chunks} == {1.0}


def test_splits_inside_utf8_and_inside_data_prefix() -> None:
    stream = STREAMS["\n"]
    emoji = stream.index("🚀".encode())
    data = stream.index(b"data:", 10)
    assert_expected(*run(split_at(stream, [emoji + 1, emoji + 2, emoji + 3, data + 2])))


@FAST
@given(data=st.data(), newline=st.sampled_from(NEWLINES))
def test_through_botocore_frame_decoder(data, newline) -> None:
    """PayloadPart frames (our encoder), re-cut into HTTP chunks at other arbitrary
    offsets, decoded by botocore's EventStreamBuffer, then parsed: same answer."""
    stream = STREAMS[newline]
    frames = b"".join(payload_parts(stream, data.draw(st.lists(st.integers(0, len(stream))))))
    buffer, parts = EventStreamBuffer(), []
    for piece in split_at(frames, data.draw(st.lists(st.integers(0, len(frames)), max_size=40))):
        buffer.add_data(piece)
        for message in buffer:
            assert message.headers[":event-type"] == "PayloadPart"
            parts.append(message.payload)
    assert b"".join(parts) == stream
    assert_expected(*run(parts))


# SSE decoder on its own: any events, any line endings, comments, any cuts.
_line_text = st.text(
    st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)), max_size=12
)


@FAST
@given(
    events=st.lists(st.lists(_line_text, min_size=1, max_size=3), min_size=1, max_size=6),
    endings=st.lists(st.sampled_from(NEWLINES), min_size=1),
    data=st.data(),
)
def test_sse_decoder_roundtrip(events, endings, data) -> None:
    pieces, i, prev = [], 0, ""

    def end() -> str:
        nonlocal i, prev
        i += 1
        nxt = endings[i % len(endings)]
        if prev == "\r" and nxt == "\n":  # that pair would be ONE line end ("\r\n")
            nxt = "\r\n"
        prev = nxt
        return nxt

    for lines in events:
        pieces.append(f": keep-alive{end()}")
        for line in lines:
            pieces.append(f"data: {line}{end()}")
        pieces.append(end())
    pieces.append(f"data: [DONE]{end()}{end()}")
    raw = "".join(pieces).encode("utf-8")
    decoder, got = SSEDecoder(), []
    for part in split_at(raw, data.draw(st.lists(st.integers(0, len(raw)), max_size=40))):
        got += decoder.feed(part)
    got += decoder.close()
    assert got == ["\n".join(lines) for lines in events]
    assert decoder.done


def test_sse_field_rules() -> None:
    d = SSEDecoder()
    raw = b'\xef\xbb\xbfdata:{"a":\r\ndata:  1}\n\nid: 7\nevent: x\ndata\nretry: 5\n\n'
    assert d.feed(raw) == ['{"a":\n 1}', ""]
    assert (d.last_event_id, d.event_type) == ("7", "x")
    assert d.feed(b"data: tail") == [] and d.close() == ["tail"]  # lenient at EOF


def test_completions_format_and_metrics() -> None:
    events = [
        {
            "object": "text_completion",
            "choices": [{"index": 0, "text": t, "finish_reason": f}],
            "usage": {"prompt_tokens": 3, "completion_tokens": n, "total_tokens": 3 + n},
        }
        for t, n, f in [("Hello", 1, None), (" big", 4, None), (" world", 6, "length")]
    ]
    raw = [f"data: {json.dumps(e)}\n\n".encode() for e in events] + [b"data: [DONE]\n\n"]
    result = StreamResult(iter(zip(raw, [0.5, 0.7, 1.1, 1.1], strict=True)), 0.0, None)
    chunks = list(result)
    c = result.completion()
    assert c.text == "Hello big world" and c.finish_reason == "length"
    assert [ch.tokens_in_chunk for ch in chunks] == [1, 3, 2]
    assert c.ttft == pytest.approx(0.5) and c.e2e == pytest.approx(1.1)
    # ITL: each chunk's gap spread over the tokens it carried.
    assert c.itl == pytest.approx((0.2 / 3,) * 3 + (0.4 / 2,) * 2)
    assert c.tpot == pytest.approx(0.6 / 5)  # 5 tokens after the first chunk
    assert c.output_tokens_per_s == pytest.approx(6 / 1.1)
    assert c.mean_tokens_per_chunk == 2


def test_ttft_ignores_the_role_only_chunk() -> None:
    role = StreamChunk(
        "",
        0.1,
        role_only=True,
        usage=Usage(5, 0, 5),
        tokens_in_chunk=0,
        raw={"choices": [{"delta": {"role": "assistant"}}]},
    )
    tok = StreamChunk("x", 0.4, usage=Usage(5, 3, 8), tokens_in_chunk=3, raw={"choices": [{}]})
    c = collect([role, tok], sent_at=0.0)
    assert c.ttft == pytest.approx(0.4) and c.chunks == 1 and c.output_tokens == 3


def test_vllm_error_event_mid_stream_keeps_partial_text() -> None:
    stream = STREAMS["\n"]
    cut = stream.index(b"data:", stream.index("世界".encode()))
    err = b'data: {"error": {"message": "engine dead", "type": "InternalServerError"}}\n\n'
    result = StreamResult(iter([(stream[:cut], 1.0), (err, 2.0)]), 0.0, None)
    with pytest.raises(ModelStreamError) as info:
        list(result)
    assert info.value.code == "InternalServerError"
    assert info.value.partial_text == "héllo → 世界"


def test_truncated_stream_is_an_error() -> None:
    stream = STREAMS["\n"]
    cut = stream.index("🚀".encode()) + 2  # dies mid-character, before finish_reason
    with pytest.raises(ModelStreamError) as info:
        list(StreamResult(iter([(stream[:cut], 1.0)]), 0.0, None))
    assert info.value.code == "StreamTruncated"
    assert info.value.partial_text == "héllo → 世界"


def test_parsed_event_dicts_with_yielded_or_raised_errors() -> None:
    """Bodies that yield parsed dicts (stubs, future botocore) work too."""
    ok = [{"PayloadPart": {"Bytes": b"ab"}}, {"PayloadPart": {"Bytes": b"c"}}]
    assert [p for p, _ in iter_payload_parts(ok)] == [b"ab", b"c"]
    yielded = [*ok, {"ModelStreamError": {"Message": "slow", "ErrorCode": "StreamBroken"}}]
    with pytest.raises(ModelStreamError) as info:
        list(iter_payload_parts(yielded))
    assert info.value.code == "StreamBroken"

    def raising():
        yield ok[0]
        raise EventStreamError(
            {"Error": {"Code": "InternalStreamFailure", "Message": "boom"}}, "Invoke"
        )

    with pytest.raises(InternalStreamFailure):
        list(iter_payload_parts(raising()))


def test_payloads() -> None:
    body = build_payload("hi", system="be brief", max_tokens=8, stream=True, top_p=0.9)
    assert body["messages"][0] == {"role": "system", "content": "be brief"}
    assert body["stream_options"] == {"include_usage": True, "continuous_usage_stats": True}
    assert body["top_p"] == 0.9 and body["stream"] is True
    plain = build_payload(prompt="x", stream=False, stream_options={"include_usage": True})
    assert "stream_options" not in plain and plain["prompt"] == "x"
    with pytest.raises(SpecError):
        build_payload("a", prompt="b")
    with pytest.raises(PayloadTooLarge) as info:
        encode_payload(build_payload("x" * MAX_PAYLOAD_BYTES))
    assert info.value.size > MAX_PAYLOAD_BYTES and info.value.exit_code == 2


def test_encoder_frames_through_botocores_public_event_stream() -> None:
    """botocore's own EventStream + sagemaker-runtime model: a PayloadPart frame's
    payload IS the Bytes blob, and a ModelStreamError frame is raised as EventStreamError
    whose parsed error keeps only Message (ErrorCode is dropped), which is why
    iter_payload_parts reads the decoded frames itself."""
    import botocore.session
    from botocore.eventstream import EventStream
    from botocore.parsers import EventStreamJSONParser

    from sm_peagle.runtime.eventstream_encode import model_stream_error

    model = botocore.session.get_session().get_service_model("sagemaker-runtime")
    shape = model.shape_for("ResponseStream")

    class Raw:
        def stream(self):
            yield from split_at(b"".join([*payload_parts(b"hi \xf0\x9f", [2])]), [5, 30])
            yield model_stream_error("slow", "ModelInvocationTimeExceeded")

    events = EventStream(Raw(), shape, EventStreamJSONParser(), "InvokeEndpointWithResponseStream")
    got = []
    with pytest.raises(EventStreamError) as info:
        for event in events:
            got.append(event)
    assert got == [{"PayloadPart": {"Bytes": b"hi"}}, {"PayloadPart": {"Bytes": b" \xf0\x9f"}}]
    assert info.value.response["Error"] == {"Code": "ModelStreamError", "Message": "slow"}
    # Our reader, on the same bytes, keeps the ErrorCode.
    again = EventStream(Raw(), shape, EventStreamJSONParser(), "InvokeEndpointWithResponseStream")
    with pytest.raises(ModelStreamError) as ours:
        list(iter_payload_parts(again))
    assert ours.value.code == "ModelInvocationTimeExceeded"
