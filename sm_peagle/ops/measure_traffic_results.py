"""The results of `invoke` and `chat`: one answer (`InvokeResult`, also each chat turn)
and a chat's transcript (`ChatTranscript`). `to_dict()` is the `peagle invoke --json` /
`peagle chat --json` document. Pure: no AWS, no CLI.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from ..runtime.chunks import Completion

__all__ = ["ChatTranscript", "InvokeResult"]

# The keys of one answer's document, in order: what `peagle invoke --json` printed.
DOCUMENT_KEYS = (
    "text",
    "finish_reason",
    "usage",
    "ttft_s",
    "e2e_s",
    "output_tokens_per_s",
    "mean_tokens_per_chunk",
    "tpot_s",
    "spec_decode",  # vLLM's metrics.speculative_decoding, verbatim; null when not reported
)


@dataclass(frozen=True)
class InvokeResult(Completion):
    """One answer of `invoke` (or one turn of a chat): the Completion, and its document.

    Attributes:
        text: The answer.
        finish_reason: Why generation stopped (`stop`, `length`, ...), or None.
        usage: Token counts (`prompt_tokens`, `completion_tokens`, `total_tokens`), or None.
        chunks: Content chunks received (0 without streaming).
        e2e: Seconds from sending to the last byte.
        ttft: Seconds to the first content chunk (None without streaming).
        tpot: Seconds per output token after the first chunk, or None.
        mean_tokens_per_chunk: Output tokens per content chunk, or None.
        itl: Seconds between content chunks.
        reasoning: The reasoning text (gpt-oss and other reasoning models), else "".
        done: The stream ended with [DONE] (always True without streaming).
        spec_decode: vLLM's speculative-decoding metrics for this request, verbatim, or
            None when the engine did not report them.
    """

    @classmethod
    def of(cls, completion: Completion) -> InvokeResult:
        """The result of `completion` (the same fields)."""
        if isinstance(completion, cls):
            return completion
        return cls(**{f.name: getattr(completion, f.name) for f in fields(Completion)})

    def to_dict(self) -> dict[str, Any]:
        """The `peagle invoke --json` document (one turn's, in a chat's)."""
        doc = super().to_dict()
        return {k: doc[k] for k in DOCUMENT_KEYS}


@dataclass(frozen=True)
class ChatTranscript:
    """A chat so far: its messages and each answered turn's numbers.

    Attributes:
        endpoint: The endpoint talked to, as named.
        component: The inference component talked to, as named, or None.
        messages: The conversation (`role`, `content`), system message first if any.
        turns: Each answered turn, in order (a failed turn is left out).
    """

    endpoint: str
    component: str | None
    messages: tuple[dict[str, str], ...]
    turns: tuple[InvokeResult, ...]

    def to_dict(self) -> dict[str, Any]:
        """The `peagle chat --json` document."""
        return {
            "endpoint": self.endpoint,
            "component": self.component,
            "messages": [dict(m) for m in self.messages],
            "turns": [t.to_dict() for t in self.turns],
        }
