"""The SSE decoder case by case, each expected value from the WHATWG "event stream
interpretation" rules (html.spec.whatwg.org, server-sent events, section 9.2.6), not from
the decoder: deterministic cases for what Hypothesis only finds by luck."""

from __future__ import annotations

import pytest

from sm_peagle.runtime.sse import SSEDecoder


def feed_all(*parts: bytes, close: bool = False) -> tuple[list[str], SSEDecoder]:
    d = SSEDecoder()
    out: list[str] = []
    for p in parts:
        out += d.feed(p)
    if close:
        out += d.close()
    return out, d


def test_a_new_decoder_has_seen_nothing() -> None:
    d = SSEDecoder()
    assert d.done is False and d.event_type is None and d.last_event_id is None
    assert d.feed(b"") == [] and d.close() == []


@pytest.mark.parametrize(
    ("line", "value"),
    [
        (b"data:x", "x"),  # no space after the colon: the value starts right there
        (b"data: x", "x"),  # one space is dropped
        (b"data:  x", " x"),  # only one
        (b"data:", ""),
        (b"data", ""),  # a field name alone: the value is the empty string
    ],
)
@pytest.mark.parametrize("newline", [b"\n", b"\r\n", b"\r"])
def test_data_value_after_the_colon(line: bytes, value: str, newline: bytes) -> None:
    # "\n" takes the LF fast path; "\r\n" and "\r" the general one: both follow the rule.
    assert feed_all(line + newline + newline)[0] == [value]


def test_lf_fast_path_multi_line_event_and_several_events_in_one_part() -> None:
    events, d = feed_all(b"data:a\ndata: b\n\ndata:c\n\n")
    assert events == ["a\nb", "c"] and not d.done


def test_a_part_without_a_complete_line_yields_nothing_yet() -> None:
    d = SSEDecoder()
    assert d.feed(b"data: x") == []
    assert d.feed(b"\n") == []  # the line is complete, the event is not
    assert d.feed(b"\n") == ["x"]


@pytest.mark.parametrize(
    ("parts", "expected"),
    [
        # A part that ends in a bare "\r": the "\n" opening the next part belongs to it, so
        # "\r" + "\n" is ONE line end and "a" and "b" are one two-line event.
        ((b"data: a\r", b"\ndata: b\r\n\r\n"), ["a\nb"]),
        # ... and a "\r" that opens the next part is a second line end: a blank line.
        ((b"data: a\r", b"\r"), ["a"]),
        # A lone "\r" followed by anything else ended the line by itself.
        ((b"data: a\r", b"data: b\n\n"), ["a\nb"]),
        ((b"data: a\r", b"\n", b"\r\n"), ["a"]),
        # The part after a bare "\r" has no "\r" at all: its leading "\n" still belongs
        # to the "\r" before it, not a blank line that would dispatch "a" alone.
        ((b"data: a\r", b"\ndata: b\n\n"), ["a\nb"]),
    ],
)
def test_cr_at_the_end_of_a_part(parts: tuple[bytes, ...], expected: list[str]) -> None:
    assert feed_all(*parts)[0] == expected


def test_cr_then_lf_in_the_same_part_is_one_line_end() -> None:
    # If "\r\n" counted as two line ends, the blank line would dispatch "a" alone.
    assert feed_all(b"data: a\r\ndata: b\r\n\r\n")[0] == ["a\nb"]


def test_mixed_line_ends_in_one_part() -> None:
    assert feed_all(b"data: a\ndata: b\rdata: c\r\n\n")[0] == ["a\nb\nc"]


def test_byte_order_mark_only_at_the_start_even_when_split() -> None:
    assert feed_all(b"\xef", b"\xbb", b"\xbfdata: x\n\n")[0] == ["x"]
    assert feed_all(b"\xef\xbb\xbfdata: x\n\n")[0] == ["x"]
    # Later, the same bytes are part of a field name ("\ufeffdata"), which is unknown.
    assert feed_all(b"data: x\n\n\xef\xbb\xbfdata: y\n\n")[0] == ["x"]
    # Bytes that only start like a BOM are kept.
    assert feed_all(b"\xef", b"\xbbdata\n\n")[0] == []


def test_comments_fields_and_ignored_lines() -> None:
    events, d = feed_all(
        b": keep-alive\n"
        b"event: delta\n"
        b"id: 7\n"
        b"retry: 10\n"
        b"unknown: z\n"
        b"data: x\n\n"
        b"id: a\x00b\n"  # an id with NUL is ignored
        b"data: y\n\n"
    )
    assert events == ["x", "y"]
    assert (d.event_type, d.last_event_id) == ("delta", "7")


@pytest.mark.parametrize("newline", [b"\n", b"\r\n"])
def test_blank_lines_without_data_dispatch_nothing(newline: bytes) -> None:
    assert feed_all(newline * 3 + b": c" + newline + newline)[0] == []


@pytest.mark.parametrize("newline", [b"\n", b"\r"])
def test_done_sets_done_and_is_not_an_event(newline: bytes) -> None:
    events, d = feed_all(b"data: x" + newline * 2 + b"data: [DONE]" + newline * 2)
    assert events == ["x"] and d.done is True


@pytest.mark.parametrize(
    ("parts", "expected"),
    [
        ((b"data: x",), ["x"]),  # no line end at all
        ((b"data: x\n",), ["x"]),  # no blank line
        ((b"data: x\r",), ["x"]),
        ((b"data: x\n\n",), ["x"]),  # already dispatched: close adds nothing
        ((b"",), []),
    ],
)
def test_close_delivers_a_truncated_last_event(parts: tuple[bytes, ...], expected) -> None:
    assert feed_all(*parts, close=True)[0] == expected


def test_utf8_split_inside_a_character_decodes_once_the_line_is_whole() -> None:
    text = "π≈3.14 ✓".encode()
    cut = text.index("≈".encode()) + 1  # inside the 3-byte character
    assert feed_all(b"data: " + text[:cut], text[cut:] + b"\n\n")[0] == ["π≈3.14 ✓"]
    assert feed_all(b"data: " + text[:cut], text[cut:] + b"\r\n\r\n")[0] == ["π≈3.14 ✓"]


def test_a_part_whose_only_line_end_comes_first_keeps_the_rest() -> None:
    assert feed_all(b"\ndata: x", b"\n\n")[0] == ["x"]


def test_a_bom_in_a_later_part_is_not_stripped() -> None:
    # Only the stream's first bytes may be a BOM; in a later part it begins a field name.
    assert feed_all(b"data: x\n\n", b"\xef\xbb\xbfdata: y\n\n")[0] == ["x"]


@pytest.mark.parametrize("newline", [b"\n", b"\r\n"])
def test_invalid_utf8_is_replaced_not_fatal(newline: bytes) -> None:
    # WHATWG: decode as UTF-8 with replacement; one bad byte becomes U+FFFD.
    assert feed_all(b"data: a\xffb" + newline * 2)[0] == ["a\ufffdb"]


def test_a_bare_colon_is_an_empty_comment() -> None:
    assert feed_all(b":\ndata: x\n:\n\n")[0] == ["x"]
    assert feed_all(b":\r\ndata: x\r\n\r\n")[0] == ["x"]
