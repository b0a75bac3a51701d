"""Typed stream chunks and completions, parsed from vLLM's OpenAI-compatible JSON.

Metrics are computed the honest way:

- token counts come from vLLM's `usage.completion_tokens` (requested on every chunk via
  `stream_options.continuous_usage_stats`), never from chunk counts or characters: under
  speculative decoding one chunk often carries several tokens;
- TTFT is request sent -> first chunk that carries generated tokens; the role-only first
  chunk vLLM sends does not count;
- ITL is the gap between content chunks divided by the tokens in the later chunk;
- every timestamp is `time.perf_counter()` taken when the bytes arrived at the transport,
  before any parsing, so parsing cost never shows up as model latency;
- acceptance is vLLM's own per-request count (`--per-request-spec-decode-metrics`, vLLM >=
  0.29): `metrics.speculative_decoding` of the final usage chunk (streamed) or of the
  response (not streamed), kept verbatim in `Completion.spec_decode`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..errors import ModelInvocationError, ModelStreamError
from .sse import SSEDecoder

__all__ = [
    "ChunkParser",
    "Completion",
    "CompletionBuilder",
    "StreamChunk",
    "StreamParser",
    "Usage",
    "collect",
    "completion_from_response",
    "spec_decode_of",
]


# slots, not frozen: a frozen dataclass sets every field through object.__setattr__, and two
# of these are built per streamed event, the client's hottest path.
@dataclass(slots=True)
class Usage:
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int

    @classmethod
    def from_json(cls, doc: Any) -> Usage | None:
        if not isinstance(doc, dict) or doc.get("completion_tokens") is None:
            return None
        prompt = int(doc.get("prompt_tokens") or 0)
        completion = int(doc["completion_tokens"])
        total = doc.get("total_tokens")
        return cls(prompt, completion, int(total) if total is not None else prompt + completion)

    def to_dict(self) -> dict[str, int]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
        }


@dataclass(slots=True)
class StreamChunk:
    """One parsed SSE event. `text` is the content delta (chat) or text (completions);
    `reasoning` the reasoning-parser delta (gpt-oss and other reasoning models)."""

    text: str
    arrived_at: float
    role_only: bool = False
    finish_reason: str | None = None
    usage: Usage | None = None
    tokens_in_chunk: int | None = None  # completion_tokens delta; None without usage
    reasoning: str = ""
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def is_content(self) -> bool:
        """Carries generated tokens (content or reasoning), not just a role or usage."""
        if self.text or self.reasoning:
            return True
        return bool(self.raw.get("choices")) and (self.tokens_in_chunk or 0) > 0


@dataclass(frozen=True)
class Completion:
    """A whole answer. Times are seconds; `ttft` is None for non-streamed calls."""

    text: str
    finish_reason: str | None
    usage: Usage | None
    chunks: int  # content chunks (0 for non-streamed calls)
    e2e: float
    ttft: float | None = None
    tpot: float | None = None  # after the first content chunk, per output token
    mean_tokens_per_chunk: float | None = None
    itl: tuple[float, ...] = ()
    reasoning: str = ""
    done: bool = True  # the stream ended with [DONE] (always True when not streamed)
    # vLLM's `metrics.speculative_decoding` for this request, verbatim (keys
    # mean_acceptance_length, draft_acceptance_rate, acceptance_histogram, num_spec_steps,
    # num_accepted_draft_tokens, num_draft_tokens, num_spec_tokens; `detailed` adds
    # per_step_accepted/per_step_drafted). None when the engine did not report it.
    spec_decode: dict[str, Any] | None = None

    @property
    def output_tokens(self) -> int | None:
        return self.usage.completion_tokens if self.usage else None

    @property
    def acceptance_length(self) -> float | None:
        """Tokens per verify step (bonus included) by vLLM's count for this request; None
        when not reported or nothing was drafted."""
        from .acceptance import tokens_per_step

        return tokens_per_step(self.spec_decode) if self.spec_decode else None

    @property
    def draft_acceptance_rate(self) -> float | None:
        """Accepted / drafted tokens by vLLM's count for this request, or None."""
        from .acceptance import draft_rate

        return draft_rate(self.spec_decode) if self.spec_decode else None

    @property
    def output_tokens_per_s(self) -> float | None:
        """Completion tokens / end-to-end seconds: what a caller actually experiences."""
        if self.usage is None or self.e2e <= 0:
            return None
        return self.usage.completion_tokens / self.e2e

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "finish_reason": self.finish_reason,
            "usage": self.usage.to_dict() if self.usage else None,
            "ttft_s": self.ttft,
            "e2e_s": self.e2e,
            "tpot_s": self.tpot,
            "output_tokens_per_s": self.output_tokens_per_s,
            "mean_tokens_per_chunk": self.mean_tokens_per_chunk,
            "content_chunks": self.chunks,
            "spec_decode": self.spec_decode,
        }


def spec_decode_of(doc: Any) -> dict[str, Any] | None:
    """vLLM's per-request acceptance object in a response or stream chunk, or None.

    It sits under `metrics.speculative_decoding` (vLLM >= 0.29 with
    `--per-request-spec-decode-metrics summary|detailed`; only for n == 1); in a stream only
    the final usage chunk carries it."""
    if not isinstance(doc, dict):
        return None
    metrics = doc.get("metrics")
    if not isinstance(metrics, dict):
        return None
    spec = metrics.get("speculative_decoding")
    return spec if isinstance(spec, dict) else None


def _vllm_error(doc: dict[str, Any]) -> tuple[str, str] | None:
    # vLLM reports a failure inside an open stream as {"error": {...}} (newer) or as a
    # top-level {"object": "error", ...} (older); either way the HTTP status was 200.
    err = doc.get("error")
    if isinstance(err, dict):
        return str(err.get("message", err)), str(err.get("type") or "ModelError")
    if doc.get("object") == "error":
        return str(doc.get("message", "")), str(doc.get("type") or "ModelError")
    return None


class ChunkParser:
    """JSON event data -> StreamChunk. Stateful: tokens_in_chunk is the difference of
    consecutive cumulative `usage.completion_tokens` values."""

    def __init__(self) -> None:
        self._completion_tokens = 0
        self.text_so_far: list[str] = []

    def parse(self, data: str, arrived_at: float) -> StreamChunk:
        doc = json.loads(data)
        if not isinstance(doc, dict):
            raise ModelStreamError(f"unexpected stream event {data[:200]!r}", code="BadEvent")
        if "error" in doc or doc.get("object") == "error":  # cheap test before the call
            err = _vllm_error(doc)
            if err is not None:
                raise ModelStreamError(err[0], code=err[1], partial_text="".join(self.text_so_far))
        raw_usage = doc.get("usage")
        usage = Usage.from_json(raw_usage) if raw_usage else None
        tokens = None
        if usage is not None:
            tokens = usage.completion_tokens - self._completion_tokens
            self._completion_tokens = usage.completion_tokens
        choices = doc.get("choices") or []
        choice = choices[0] if choices else {}
        delta = choice.get("delta")
        if isinstance(delta, dict):  # chat.completion.chunk
            text = delta.get("content") or ""
            reasoning = delta.get("reasoning_content") or delta.get("reasoning") or ""
            role_only = "role" in delta and not text and not reasoning and not tokens
        else:  # text_completion
            text, reasoning, role_only = choice.get("text") or "", "", False
        finish = choice.get("finish_reason")
        if text:
            self.text_so_far.append(text)
        return StreamChunk(
            text=text,
            arrived_at=arrived_at,
            role_only=role_only and finish is None,
            finish_reason=finish,
            usage=usage,
            tokens_in_chunk=tokens,
            reasoning=reasoning,
            raw=doc,
        )


class StreamParser:
    """Bytes as they arrive -> StreamChunks. `feed(part, arrived_at)` with the
    perf_counter() the transport took when the part arrived."""

    def __init__(self) -> None:
        self.sse = SSEDecoder()
        self.chunks = ChunkParser()

    @property
    def done(self) -> bool:
        return self.sse.done

    @property
    def partial_text(self) -> str:
        return "".join(self.chunks.text_so_far)

    def feed(self, data: bytes, arrived_at: float) -> list[StreamChunk]:
        events = self.sse.feed(data)
        if not events:  # about half the PayloadParts complete no event
            return events  # type: ignore[return-value]  # an empty list either way
        parse = self.chunks.parse
        return [parse(d, arrived_at) for d in events]

    def close(self, arrived_at: float) -> list[StreamChunk]:
        return [self.chunks.parse(d, arrived_at) for d in self.sse.close()]


class CompletionBuilder:
    """Folds StreamChunks into a Completion as they are consumed."""

    def __init__(self, sent_at: float) -> None:
        self.sent_at = sent_at
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.finish_reason: str | None = None
        self.usage: Usage | None = None
        self.first_at: float | None = None
        self.first_tokens: int | None = None
        self.last_at: float | None = None
        self.content_chunks = 0
        self.itl: list[float] = []
        self.ended_at: float | None = None
        self.spec_decode: dict[str, Any] | None = None

    def add(self, chunk: StreamChunk) -> None:
        self.ended_at = chunk.arrived_at
        if chunk.usage is not None:
            self.usage = chunk.usage
            # vLLM puts the per-request metrics on the final usage chunk only, so the
            # lookup stays off the hot path of chunks without usage.
            if "metrics" in chunk.raw:
                self.spec_decode = spec_decode_of(chunk.raw)
        if chunk.finish_reason is not None:
            self.finish_reason = chunk.finish_reason
        if not (chunk.text or chunk.reasoning or chunk.is_content):  # the common case first
            return
        self.text.append(chunk.text)
        self.reasoning.append(chunk.reasoning)
        self.content_chunks += 1
        if self.first_at is None:
            self.first_at = chunk.arrived_at
            self.first_tokens = chunk.tokens_in_chunk
        elif self.last_at is not None:
            gap = chunk.arrived_at - self.last_at
            n = chunk.tokens_in_chunk if chunk.tokens_in_chunk else 1
            self.itl.extend([gap / n] * n)
        self.last_at = chunk.arrived_at

    def build(self, *, done: bool = True, ended_at: float | None = None) -> Completion:
        end = ended_at if ended_at is not None else (self.ended_at or self.sent_at)
        ttft = None if self.first_at is None else self.first_at - self.sent_at
        tpot = mean = None
        if self.usage is not None and self.content_chunks:
            out = self.usage.completion_tokens
            mean = out / self.content_chunks
            # Tokens after the first content chunk; under speculative decoding that first
            # chunk may already hold several tokens, so subtract what it really carried.
            after_first = out - (self.first_tokens if self.first_tokens is not None else 1)
            if after_first > 0 and self.last_at is not None and self.first_at is not None:
                tpot = (self.last_at - self.first_at) / after_first
        return Completion(
            text="".join(self.text),
            finish_reason=self.finish_reason,
            usage=self.usage,
            chunks=self.content_chunks,
            e2e=end - self.sent_at,
            ttft=ttft,
            tpot=tpot,
            mean_tokens_per_chunk=mean,
            itl=tuple(self.itl),
            reasoning="".join(self.reasoning),
            done=done,
            spec_decode=self.spec_decode,
        )


def collect(chunks: Iterable[StreamChunk], sent_at: float, *, done: bool = True) -> Completion:
    """Aggregate already-parsed chunks (e.g. from a stored stream) into a Completion."""
    builder = CompletionBuilder(sent_at)
    for chunk in chunks:
        builder.add(chunk)
    return builder.build(done=done)


def completion_from_response(doc: Any, *, sent_at: float, ended_at: float) -> Completion:
    """A non-streamed chat.completion or text_completion JSON document."""
    if not isinstance(doc, dict):
        raise ModelInvocationError(f"unexpected response from the model: {str(doc)[:200]!r}")
    err = _vllm_error(doc)
    if err is not None:
        raise ModelInvocationError(f"{err[1]}: {err[0]}", original_message=err[0])
    choices = doc.get("choices") or [{}]
    choice = choices[0]
    message = choice.get("message")
    if isinstance(message, dict):
        text = message.get("content") or ""
        reasoning = message.get("reasoning_content") or message.get("reasoning") or ""
    else:
        text, reasoning = choice.get("text") or "", ""
    return Completion(
        text=text,
        finish_reason=choice.get("finish_reason"),
        usage=Usage.from_json(doc.get("usage")),
        chunks=0,
        e2e=ended_at - sent_at,
        reasoning=reasoning,
        spec_decode=spec_decode_of(doc),
    )
