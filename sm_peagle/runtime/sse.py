"""Incremental server-sent-events decoder for vLLM's `"stream": true` responses.

SageMaker re-chunks the container's byte stream into PayloadParts at arbitrary
boundaries: one SSE event can be split across parts (even inside a UTF-8 character or
inside `data:`), and one part can hold several events. So the decoder keeps a rolling
*byte* buffer and decodes UTF-8 only once a whole line is present (a line terminator
byte can never occur inside a multi-byte UTF-8 sequence, so complete lines always
decode cleanly).

Follows the WHATWG SSE parsing rules that matter here: `\\n`, `\\r\\n` and a lone `\\r`
all end a line; a blank line dispatches the event; lines starting with `:` are comments
(keep-alives); several `data:` lines in one event are joined with `\\n`; one space after
the colon is dropped; a leading UTF-8 BOM is ignored.
"""

from __future__ import annotations

__all__ = ["DONE", "SSEDecoder"]

DONE = "[DONE]"
_BOM = b"\xef\xbb\xbf"


class SSEDecoder:
    """`feed(bytes) -> list[str]`: the data of every event completed by these bytes.

    OpenAI's `data: [DONE]` terminator is not returned as an event: it sets `done`.
    """

    def __init__(self) -> None:
        self._buf = bytearray()
        self._data: list[str] = []
        self._has_data = False
        # A chunk may end right after "\r": whether a "\n" follows is only known when the
        # next chunk arrives, and "\r\n" must count as ONE line end (not a line + a blank
        # line, which would dispatch an event early and break multi-line data).
        self._skip_lf = False
        self._started = False
        self.done = False
        self.event_type: str | None = None  # last `event:` field (vLLM sends none)
        self.last_event_id: str | None = None

    def feed(self, data: bytes) -> list[str]:
        if not data:
            return []
        buf = self._buf
        buf += data
        if not self._started:
            # The BOM check needs 3 bytes; a shorter prefix of it may still grow into one.
            if len(buf) < len(_BOM) and _BOM.startswith(bytes(buf)):
                return []
            if buf.startswith(_BOM):
                del buf[: len(_BOM)]
            self._started = True
        events: list[str] = []
        if not self._skip_lf and b"\r" not in buf:
            # Fast path (vLLM sends only "\n"): split complete lines in C, and handle the
            # two lines every event has, "data: ..." and the blank one, inline.
            last = buf.rfind(b"\n")
            if last == -1:
                return events
            lines = bytes(buf[:last]).split(b"\n")
            del buf[: last + 1]
            for raw in lines:
                if not raw:
                    if self._has_data:
                        self._line(raw, events)
                elif raw.startswith(b"data:"):
                    value = raw[6:] if raw[5:6] == b" " else raw[5:]
                    self._data.append(value.decode("utf-8", errors="replace"))
                    self._has_data = True
                else:
                    self._line(raw, events)
            return events
        start = 0
        n = len(buf)
        while start < n:
            if self._skip_lf:
                self._skip_lf = False
                if buf[start] == 0x0A:
                    start += 1
                    continue
            cr = buf.find(b"\r", start)
            lf = buf.find(b"\n", start)
            if cr == -1 and lf == -1:
                break
            if cr == -1 or (lf != -1 and lf < cr):
                end, nxt = lf, lf + 1
            else:
                end, nxt = cr, cr + 1
                if nxt < n:
                    if buf[nxt] == 0x0A:
                        nxt += 1
                else:
                    self._skip_lf = True
            self._line(bytes(buf[start:end]), events)
            start = nxt
        del buf[:start]
        return events

    def close(self) -> list[str]:
        """End of stream. Lenient on purpose: a last event whose terminating blank line
        (or even its final line ending) never came is still delivered, because a
        truncated stream is detected separately (no `[DONE]`, no finish_reason)."""
        events: list[str] = []
        if self._buf:
            self._line(bytes(self._buf), events)
            self._buf.clear()
        self._line(b"", events)
        return events

    def _line(self, raw: bytes, events: list[str]) -> None:
        if not raw:
            if self._has_data:
                data = "\n".join(self._data)
                self._data.clear()
                self._has_data = False
                if data == DONE:
                    self.done = True
                else:
                    events.append(data)
            return
        if raw[0] == 0x3A:  # ":" comment, e.g. a keep-alive
            return
        line = raw.decode("utf-8", errors="replace")
        field, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if field == "data":
            self._data.append(value)
            self._has_data = True
        elif field == "event":
            self.event_type = value
        elif field == "id" and "\0" not in value:
            self.last_event_id = value
        # "retry" and unknown fields are ignored, as the spec says.
