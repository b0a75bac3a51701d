"""Chunk parsing and per-request metrics, with every expected number worked out by hand
from the definitions in runtime/chunks.py's docstring: TTFT = first chunk carrying tokens
- send; TPOT = (last content chunk - first content chunk) / tokens after the first chunk;
ITL = gap between content chunks / tokens in the later one; tokens from usage."""

from __future__ import annotations

import json

import pytest

from sm_peagle.errors import ModelInvocationError, ModelStreamError
from sm_peagle.runtime.chunks import (
    ChunkParser,
    CompletionBuilder,
    StreamChunk,
    StreamParser,
    Usage,
    collect,
    completion_from_response,
)


def event(
    content: str | None = None,
    *,
    tokens: int | None = None,
    role: bool = False,
    finish: str | None = None,
    reasoning: str | None = None,
) -> str:
    delta: dict = {}
    if role:
        delta["role"] = "assistant"
    if content is not None:
        delta["content"] = content
    if reasoning is not None:
        delta["reasoning_content"] = reasoning
    doc: dict = {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    if tokens is not None:
        doc["usage"] = {
            "prompt_tokens": 10,
            "completion_tokens": tokens,
            "total_tokens": 10 + tokens,
        }
    return json.dumps(doc)


def parsed(events: list[tuple[str, float]]) -> list[StreamChunk]:
    p = ChunkParser()
    return [p.parse(data, t) for data, t in events]


def test_tpot_subtracts_the_tokens_the_first_content_chunk_really_carried() -> None:
    # Sent at 0. Role chunk at 0.1; 3 tokens at 0.5; 2 more at 0.7; 3 more at 1.0 (total 8).
    chunks = parsed(
        [
            (event(role=True, content="", tokens=0), 0.1),
            (event("abc", tokens=3), 0.5),
            (event("de", tokens=5), 0.7),
            (event("fgh", tokens=8, finish="stop"), 1.0),
        ]
    )
    c = collect(chunks, 0.0)
    assert c.ttft == pytest.approx(0.5)  # not 0.1: the role-only chunk carries no token
    # 5 tokens after the first chunk in 0.5 s: 0.1 s each (assuming 1 would give 0.5 / 7).
    assert c.tpot == pytest.approx(0.1)
    # 0.2 s for 2 tokens, then 0.3 s for 3 tokens: 0.1 s each.
    assert c.itl == pytest.approx((0.1,) * 5)
    assert c.chunks == 3 and c.mean_tokens_per_chunk == pytest.approx(8 / 3)
    assert (c.text, c.finish_reason, c.e2e) == ("abcdefgh", "stop", 1.0)
    assert c.output_tokens == 8 and c.output_tokens_per_s == pytest.approx(8.0)
    assert [ch.tokens_in_chunk for ch in chunks] == [0, 3, 2, 3]


def test_without_usage_the_first_chunk_counts_as_one_token() -> None:
    # Only the last chunk reports usage (6 tokens): 5 after the first, over 1.0 - 0.2 s.
    chunks = parsed([(event("a"), 0.2), (event("b"), 0.6), (event("c", tokens=6), 1.0)])
    c = collect(chunks, 0.0)
    assert c.tpot == pytest.approx(0.8 / 5)
    # The middle chunk has no token count: one token for its 0.4 s gap; the last, 6.
    assert c.itl == pytest.approx((0.4,) + (0.4 / 6,) * 6)


def test_one_content_chunk_has_no_tpot() -> None:
    c = collect(parsed([(event("all", tokens=4, finish="stop"), 0.3)]), 0.0)
    assert (c.ttft, c.tpot, c.itl, c.chunks) == (pytest.approx(0.3), None, (), 1)
    assert c.mean_tokens_per_chunk == 4.0


def test_no_content_at_all() -> None:
    c = collect(parsed([(event(role=True, content=""), 0.2)]), 0.0)
    assert (c.ttft, c.tpot, c.mean_tokens_per_chunk, c.chunks, c.usage) == (
        None,
        None,
        None,
        0,
        None,
    )
    assert c.output_tokens is None and c.output_tokens_per_s is None
    assert CompletionBuilder(5.0).build().e2e == 0.0  # nothing arrived: ends when sent


def test_explicit_end_time_and_done_flag() -> None:
    b = CompletionBuilder(1.0)
    b.add(parsed([(event("x", tokens=1), 1.5)])[0])
    c = b.build(done=False, ended_at=4.0)
    assert c.e2e == 3.0 and c.done is False


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        ({"prompt_tokens": 7, "completion_tokens": 5}, Usage(7, 5, 12)),  # total = 7 + 5
        ({"prompt_tokens": 7, "completion_tokens": 5, "total_tokens": 20}, Usage(7, 5, 20)),
        ({"completion_tokens": 5}, Usage(0, 5, 5)),
        ({"prompt_tokens": None, "completion_tokens": "5"}, Usage(0, 5, 5)),
        ({"prompt_tokens": 7}, None),
        ({"prompt_tokens": 7, "completion_tokens": None}, None),
        ([1, 2], None),
        (None, None),
    ],
)
def test_usage_from_json(doc, expected) -> None:
    assert Usage.from_json(doc) == expected


def test_usage_to_dict() -> None:
    assert Usage(1, 2, 3).to_dict() == {
        "prompt_tokens": 1,
        "completion_tokens": 2,
        "total_tokens": 3,
    }


def test_role_only_content_and_reasoning_flags() -> None:
    role, reasoning, special, finish_only, usage_only = parsed(
        [
            (event(role=True, content=""), 0.1),
            (event(reasoning="think", tokens=1), 0.2),
            (event("", tokens=2), 0.3),  # a token with no text (e.g. a special token)
            (event(role=True, content="", finish="stop"), 0.4),
            (json.dumps({"choices": [], "usage": {"completion_tokens": 2}}), 0.5),
        ]
    )
    assert role.role_only and not role.is_content
    assert reasoning.reasoning == "think" and reasoning.is_content and not reasoning.role_only
    assert special.is_content and special.tokens_in_chunk == 1 and special.text == ""
    assert not finish_only.role_only and finish_only.finish_reason == "stop"
    assert not usage_only.is_content and usage_only.tokens_in_chunk == 0
    assert (
        parsed([(json.dumps({"choices": [{"delta": {"reasoning": "r"}}]}), 0.1)])[0].reasoning
        == "r"
    )


def test_text_completion_chunks() -> None:
    (c,) = parsed([(json.dumps({"choices": [{"text": "hi", "finish_reason": None}]}), 0.1)])
    assert (c.text, c.reasoning, c.role_only, c.is_content) == ("hi", "", False, True)


@pytest.mark.parametrize(
    ("doc", "code", "message"),
    [
        ({"error": {"message": "boom", "type": "BadRequestError"}}, "BadRequestError", "boom"),
        ({"error": {"message": "boom"}}, "ModelError", "boom"),
        ({"object": "error", "message": "old", "type": "X"}, "X", "old"),
        ({"object": "error", "message": "old"}, "ModelError", "old"),
    ],
)
def test_error_events_raise_with_the_partial_text(doc, code, message) -> None:
    p = ChunkParser()
    p.parse(event("part", tokens=1), 0.1)
    with pytest.raises(ModelStreamError) as e:
        p.parse(json.dumps(doc), 0.2)
    assert (e.value.code, e.value.partial_text) == (code, "part")
    assert message in str(e.value)


def test_non_object_event_is_a_bad_event() -> None:
    with pytest.raises(ModelStreamError) as e:
        ChunkParser().parse("[1]", 0.1)
    assert e.value.code == "BadEvent"


def test_stream_parser_feeds_and_closes() -> None:
    sp = StreamParser()
    assert sp.feed(b"data: " + event("a", tokens=1).encode(), 0.1) == []
    (first,) = sp.feed(b"\n\ndata: " + event("b", tokens=2).encode(), 0.2)
    assert first.text == "a" and first.arrived_at == 0.2  # stamped when its event completed
    (last,) = sp.close(0.3)
    assert (last.text, last.arrived_at, last.tokens_in_chunk) == ("b", 0.3, 1)
    assert sp.partial_text == "ab" and sp.done is False
    sp.feed(b"\n\ndata: [DONE]\n\n", 0.4)
    assert sp.done is True


def test_completion_from_response_chat_and_text() -> None:
    chat = {
        "choices": [
            {"message": {"content": "hi", "reasoning_content": "r"}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2},
    }
    c = completion_from_response(chat, sent_at=1.0, ended_at=3.5)
    assert (c.text, c.reasoning, c.finish_reason, c.e2e, c.chunks) == ("hi", "r", "stop", 2.5, 0)
    assert c.usage == Usage(3, 2, 5) and c.ttft is None and c.output_tokens_per_s == 2 / 2.5
    text = completion_from_response({"choices": [{"text": "t"}]}, sent_at=0.0, ended_at=1.0)
    assert (text.text, text.reasoning, text.usage) == ("t", "", None)
    empty = completion_from_response({}, sent_at=0.0, ended_at=1.0)
    assert (empty.text, empty.finish_reason) == ("", None)
    d = c.to_dict()
    assert d["content_chunks"] == 0 and d["e2e_s"] == 2.5 and d["usage"]["total_tokens"] == 5


def test_completion_from_response_errors() -> None:
    with pytest.raises(ModelInvocationError, match="BadRequestError: too long"):
        completion_from_response(
            {"error": {"message": "too long", "type": "BadRequestError"}}, sent_at=0, ended_at=1
        )
    with pytest.raises(ModelInvocationError, match="unexpected response"):
        completion_from_response(["x"], sent_at=0, ended_at=1)


def test_defaults_say_the_stream_was_done() -> None:
    chunks = parsed([(event("a", tokens=1), 1.5)])
    assert collect(chunks, 1.0).done is True and collect(chunks, 1.0, done=False).done is False
    b = CompletionBuilder(1.0)
    assert b.build().done is True


def test_times_are_relative_to_the_send_time() -> None:
    # Sent at 100.0; content at 100.25 and 100.75 (1 token each); ended at 101.0.
    c = collect(parsed([(event("a", tokens=1), 100.25), (event("b", tokens=2), 100.75)]), 100.0)
    assert c.ttft == pytest.approx(0.25) and c.e2e == pytest.approx(0.75)
    # One token after the first chunk: TPOT is that one gap, 0.5 s.
    assert c.tpot == pytest.approx(0.5) and c.itl == pytest.approx((0.5,))


def test_content_without_any_usage_has_no_token_metrics() -> None:
    c = collect(parsed([(event("a"), 0.1), (event("b"), 0.2)]), 0.0)
    assert (c.chunks, c.text, c.usage, c.mean_tokens_per_chunk, c.tpot) == (
        2,
        "ab",
        None,
        None,
        None,
    )
    assert c.to_dict()["usage"] is None


def test_a_chunk_with_tokens_but_no_text_counts_as_content() -> None:
    c = collect(parsed([(event("a", tokens=1), 0.1), (event("", tokens=3), 0.3)]), 0.0)
    assert c.chunks == 2 and c.mean_tokens_per_chunk == 1.5


def test_reasoning_is_joined_across_chunks() -> None:
    c = collect(
        parsed([(event(reasoning="ab", tokens=1), 0.1), (event(reasoning="cd", tokens=2), 0.2)]),
        0.0,
    )
    assert (c.reasoning, c.text) == ("abcd", "")


def test_completion_to_dict_keys_and_values() -> None:
    c = collect(
        parsed([(event("a", tokens=1), 0.5), (event("b", tokens=3, finish="stop"), 1.0)]), 0.0
    )
    assert c.to_dict() == {
        "text": "ab",
        "finish_reason": "stop",
        "usage": {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13},
        "ttft_s": 0.5,
        "e2e_s": 1.0,
        "tpot_s": pytest.approx(0.25),  # 0.5 s over the 2 tokens after the first chunk
        "output_tokens_per_s": 3.0,
        "mean_tokens_per_chunk": 1.5,
        "content_chunks": 2,
        "spec_decode": None,  # the engine reported no per-request acceptance
    }


@pytest.mark.parametrize(
    ("delta", "role_only"),
    [
        ({"role": "assistant", "content": ""}, True),
        ({"role": "assistant", "content": "hi"}, False),  # a role AND text: content
        ({"role": "assistant", "reasoning_content": "r"}, False),
        ({"content": ""}, False),  # no role at all
        ({"content": "x"}, False),
    ],
)
def test_role_only_means_a_role_and_nothing_else(delta: dict, role_only: bool) -> None:
    (c,) = parsed([(json.dumps({"choices": [{"delta": delta}]}), 0.1)])  # no usage
    assert c.role_only is role_only


def test_error_messages_without_a_message() -> None:
    with pytest.raises(ModelStreamError) as e:
        ChunkParser().parse(json.dumps({"error": {"type": "Boom"}}), 0.1)
    assert str(e.value) == "Boom: {'type': 'Boom'}"  # the code, then the error object itself
    with pytest.raises(ModelInvocationError) as e2:
        completion_from_response({"object": "error"}, sent_at=0, ended_at=1)
    assert e2.value.original_message == "" and str(e2.value).startswith("ModelError: ")
    with pytest.raises(ModelInvocationError) as e3:
        completion_from_response({"error": {"message": "m", "type": "T"}}, sent_at=0, ended_at=1)
    assert e3.value.original_message == "m"


def test_bad_documents_are_quoted_up_to_200_characters() -> None:
    long = "[" + "1," * 150 + "1]"  # 303 characters
    with pytest.raises(ModelStreamError) as e:
        ChunkParser().parse(long, 0.1)
    assert str(e.value) == f"BadEvent: unexpected stream event {long[:200]!r}"
    doc = ["x" * 300]
    with pytest.raises(ModelInvocationError) as e2:
        completion_from_response(doc, sent_at=0, ended_at=1)
    assert str(e2.value).startswith(f"unexpected response from the model: {str(doc)[:200]!r}")


def test_response_text_and_reasoning_fallbacks() -> None:
    c = completion_from_response(
        {"choices": [{"message": {"content": None, "reasoning": "r"}}]}, sent_at=0, ended_at=1
    )
    assert (c.text, c.reasoning) == ("", "r")
    c = completion_from_response(
        {"choices": [{"message": {"content": "t"}}]}, sent_at=0, ended_at=1
    )
    assert (c.text, c.reasoning) == ("t", "")
