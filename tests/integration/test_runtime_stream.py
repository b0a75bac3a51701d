"""RuntimeClient against a local HTTP server speaking the SageMaker runtime wire format,
so botocore's real client does the signing, the HTTP, the event-stream frame decoding
(prelude + CRC checks) and the error parsing."""

from __future__ import annotations

import asyncio
import json

import pytest

from sm_peagle.aws import AwsContext
from sm_peagle.endpoint import Endpoint
from sm_peagle.errors import (
    InternalStreamFailure,
    ModelInvocationError,
    ModelStreamError,
    NotFound,
    PayloadTooLarge,
)
from sm_peagle.runtime.client import RuntimeClient
from sm_peagle.runtime.eventstream_encode import (
    internal_stream_failure,
    model_stream_error,
    payload_parts,
)
from sm_peagle.runtime.payloads import MAX_PAYLOAD_BYTES
from tests.stream_fixtures import (
    ALL_CHUNKS,
    COMPLETION_TOKENS,
    ENDPOINT,
    PIECES,
    TEXT,
    fake_runtime,
    model_error_reply,
    split_at,
    vllm_chat_stream,
)


@pytest.fixture
def fake(aws_credentials, monkeypatch):
    with fake_runtime(monkeypatch) as server:
        yield server


@pytest.fixture
def rt(fake):
    client = RuntimeClient(AwsContext(), ENDPOINT, max_pool_connections=4)
    yield client
    client.close()


STREAM = vllm_chat_stream("\r\n")
FRAMES = payload_parts(STREAM, list(range(5, len(STREAM), 5)))
CUTS = {
    "part-per-http-chunk": lambda: FRAMES,
    "byte-per-part": lambda: payload_parts(STREAM, list(range(len(STREAM)))),
    "one-part": lambda: payload_parts(STREAM),
    # frames themselves cut across HTTP chunks at odd offsets
    "frames-split-over-http": lambda: split_at(b"".join(FRAMES), list(range(3, 10**5, 37))),
}


@pytest.mark.parametrize("cut", CUTS)
def test_stream_parses_identically_whatever_the_framing(fake, rt, cut) -> None:
    fake.stream_reply = lambda _req: CUTS[cut]()
    result = rt.stream("hi", max_tokens=16)
    chunks = list(result)
    c = result.completion()
    assert (c.text, c.finish_reason, c.output_tokens) == (TEXT, "stop", COMPLETION_TOKENS)
    assert len(chunks) == ALL_CHUNKS and c.chunks == len(PIECES) and c.done
    assert 0 < c.ttft <= c.e2e


def test_stream_request_asks_for_usage_on_every_chunk(fake, rt) -> None:
    rt.stream("hi", max_tokens=16, temperature=0.0).completion()
    (req,) = fake.requests
    assert req["path"] == f"/endpoints/{ENDPOINT}/invocations-response-stream"
    assert req["headers"]["Content-Type"] == "application/json"
    assert req["body"] == {
        "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": 16,
        "temperature": 0.0,
        "stream": True,
        "stream_options": {"include_usage": True, "continuous_usage_stats": True},
    }


def test_ttft_counts_from_send_to_first_content(fake, rt) -> None:
    # Three HTTP chunks, each sent after a 0.03 s pause: the role-only event; the first two
    # content events ("h", 1 token; "éllo", 2); the other three content events (1 + 3 + 2
    # tokens), the usage-only event and [DONE]. Load can only delay arrivals, so the only
    # time bounds asserted are lower bounds; the rest is exact.
    starts = [STREAM.rfind(b"data: ", 0, STREAM.index(t.encode())) for t in ('"h"', '" →"')]
    bounds = [0, *starts, len(STREAM)]
    fake.delay = 0.03  # before every HTTP chunk, the first included
    fake.stream_reply = lambda _req: [
        b"".join(payload_parts(STREAM[a:b])) for a, b in zip(bounds, bounds[1:], strict=False)
    ]
    result = rt.stream("hi")
    chunks = list(result)
    c = result.completion()
    assert (c.text, c.output_tokens, c.chunks, len(chunks)) == (TEXT, 9, 5, ALL_CHUNKS)
    assert c.mean_tokens_per_chunk == 9 / 5
    # The first content ("h") can only arrive with the second HTTP chunk, after two pauses;
    # the stream ends after three.
    assert c.ttft >= 2 * 0.03 and c.e2e >= 3 * 0.03 and c.ttft <= c.e2e
    # One inter-token latency per token after the first: 2 + 1 + 3 + 2 = 8. They add up to
    # the time from the first content chunk to the last, which TPOT spreads over 8 tokens.
    content = [ch for ch in chunks if ch.is_content]
    assert len(c.itl) == 8
    assert sum(c.itl) == pytest.approx(content[-1].arrived_at - content[0].arrived_at)
    assert c.tpot == pytest.approx(sum(c.itl) / 8)


@pytest.mark.parametrize(
    "error_frame, error_type, code",
    [
        (
            model_stream_error("Model invocation time exceeded"),
            ModelStreamError,
            "ModelInvocationTimeExceeded",
        ),
        (model_stream_error("broken", "StreamBroken"), ModelStreamError, "StreamBroken"),
        (internal_stream_failure("internal"), InternalStreamFailure, "InternalStreamFailure"),
    ],
    ids=["timeout", "broken", "internal"],
)
def test_error_event_mid_stream_is_typed_and_keeps_partial_text(
    fake, rt, error_frame, error_type, code
) -> None:
    cut = STREAM.index(b"data:", STREAM.index("世界".encode()))
    fake.stream_reply = lambda _req: [*payload_parts(STREAM[:cut], [7, 200, 401]), error_frame]
    result = rt.stream("hi")
    seen = []
    with pytest.raises(error_type) as info:
        for chunk in result:
            seen.append(chunk.text)
    assert info.value.code == code
    assert info.value.partial_text == "héllo → 世界" == "".join(seen)
    assert code in info.value.one_line()


@pytest.mark.parametrize("drop", [True, False], ids=["connection-lost", "clean-close"])
def test_stream_cut_short_is_an_error(fake, rt, drop) -> None:
    cut = STREAM.index("世界".encode()) + 1  # inside a character, mid-event
    fake.drop_connection = drop
    # a whole frame, then half a frame: botocore never sees a complete second frame
    fake.stream_reply = lambda _req: [payload_parts(STREAM[:cut])[0], FRAMES[0][:9]]
    with pytest.raises(ModelStreamError) as info:
        list(rt.stream("hi"))
    assert info.value.code == ("StreamBroken" if drop else "StreamTruncated")
    assert info.value.partial_text == "héllo →"


def test_invoke_non_streamed(fake, rt) -> None:
    c = rt.invoke("hi", max_tokens=16)
    assert (c.text, c.finish_reason, c.output_tokens) == (TEXT, "stop", COMPLETION_TOKENS)
    assert c.ttft is None and c.e2e > 0
    (req,) = fake.requests
    assert req["path"] == f"/endpoints/{ENDPOINT}/invocations"
    assert req["headers"]["Accept"] == "application/json"
    assert req["body"]["stream"] is False and "stream_options" not in req["body"]


def test_model_error_keeps_the_original_status(fake, rt) -> None:
    fake.invoke_reply = lambda _req: model_error_reply(400, "max_tokens too large")
    with pytest.raises(ModelInvocationError) as info:
        rt.invoke("hi")
    err = info.value
    assert err.original_status_code == 400
    assert "max_tokens too large" in err.original_message
    assert err.log_stream_arn.endswith(f"/aws/sagemaker/Endpoints/{ENDPOINT}")
    assert err.exit_code == 1 and f"sm_peagle.logs({ENDPOINT!r})" in err.one_line()


def test_missing_endpoint_is_not_found(fake, rt) -> None:
    body = {"message": f"Endpoint {ENDPOINT} of account 123456789012 not found."}
    fake.invoke_reply = lambda _req: (
        400,
        {"x-amzn-ErrorType": "ValidationError", "Content-Type": "application/json"},
        json.dumps(body).encode(),
    )
    with pytest.raises(NotFound):
        rt.invoke("hi")


@pytest.mark.parametrize("call", ["invoke", "stream"])
def test_oversized_payload_is_refused_before_sending(fake, rt, call) -> None:
    with pytest.raises(PayloadTooLarge) as info:
        getattr(rt, call)("x" * MAX_PAYLOAD_BYTES)
    assert info.value.size > MAX_PAYLOAD_BYTES
    assert fake.requests == []


def test_async_stream_and_invoke_concurrently(fake, rt) -> None:
    async def one_stream():
        result = rt.astream("hi")
        texts = [chunk.text async for chunk in result]
        return "".join(texts), await result.completion()

    async def main():
        return await asyncio.gather(*(one_stream() for _ in range(6)), rt.ainvoke("hi"))

    *streams, whole = asyncio.run(main())
    for text, c in streams:
        assert text == c.text == TEXT and c.output_tokens == COMPLETION_TOKENS and c.ttft
    assert whole.text == TEXT
    assert len(fake.requests) == 7


def test_async_stream_error_is_raised_in_the_loop(fake, rt) -> None:
    fake.stream_reply = lambda _req: [model_stream_error("slow")]

    async def main():
        async for _ in rt.astream("hi"):
            pass

    with pytest.raises(ModelStreamError) as info:
        asyncio.run(main())
    assert info.value.code == "ModelInvocationTimeExceeded"


def test_sdk_endpoint_handle(fake) -> None:
    ep = Endpoint(ENDPOINT, aws=AwsContext())
    result = ep.stream([{"role": "user", "content": "hi"}], max_tokens=4)
    assert "".join(chunk.text for chunk in result) == TEXT
    assert result.completion().output_tokens == COMPLETION_TOKENS
    assert ep.invoke(prompt="hi").text == TEXT
    assert fake.requests[1]["body"]["prompt"] == "hi"
    assert asyncio.run(ep.ainvoke("hi")).text == TEXT
    assert ep.runtime() is ep.runtime()
