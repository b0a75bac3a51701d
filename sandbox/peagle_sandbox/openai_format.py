"""vLLM's OpenAI-compatible request and response shapes, as the sandbox reads and writes them.

Field order and the ``usage`` layout follow vLLM's pydantic models (``prompt_tokens``,
``total_tokens``, ``completion_tokens``), so byte-level parsers see what a real container
sends. Only what the simulated engine uses is read from the request; the rest is ignored.

Per-request acceptance (vLLM >= 0.29, `--per-request-spec-decode-metrics summary|detailed`):
`metrics.speculative_decoding` on the final usage chunk of a stream (sent only when the
request asked for usage) and at the end of a non-streamed response, computed as vLLM's
`RequestSpecDecodeMetrics.to_dict` (`v1/metrics/stats.py`) computes it, from the steps
the simulated engine took.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from peagle_sandbox.engine import CONSTANTS, Step, count_tokens

__all__ = [
    "PER_REQUEST_ENV",
    "BadRequest",
    "ParsedRequest",
    "Responder",
    "parse_request",
    "per_request_level",
    "spec_decode_metrics",
]

# The container variable the DLC turns into `--per-request-spec-decode-metrics`.
PER_REQUEST_ENV = "SM_VLLM_PER_REQUEST_SPEC_DECODE_METRICS"

SIMULATED_MODEL = "peagle-sandbox-SIMULATED"


class BadRequest(ValueError):
    """What vLLM would answer with HTTP 400 (SageMaker wraps it in a ModelError)."""


@dataclass(frozen=True)
class ParsedRequest:
    kind: str  # "chat" or "completion"
    prompt_key: str  # canonical prompt text: seeds the generated text
    prompt_tokens: int
    max_tokens: int
    stream: bool
    include_usage: bool
    continuous_usage: bool
    ignore_eos: bool
    body: dict[str, Any]


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # [{"type": "text", "text": ...}, ...]
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def parse_request(raw: bytes, *, max_model_len: int | None = None) -> ParsedRequest:
    """Validate a chat/completions payload the way vLLM would, or raise BadRequest."""
    try:
        body = json.loads(raw or b"null")
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise BadRequest(f"Invalid JSON payload: {e}") from None
    if not isinstance(body, dict):
        raise BadRequest("payload must be a JSON object with 'messages' or 'prompt'")
    c = CONSTANTS
    if "messages" in body:
        messages = body["messages"]
        if not isinstance(messages, list) or not messages:
            raise BadRequest("'messages' must be a non-empty list")
        parts = [f"{m.get('role')}:{_content_text(m.get('content'))}" for m in messages]
        prompt_key = "\n".join(parts)
        prompt_tokens = (
            sum(count_tokens(_content_text(m.get("content"))) for m in messages)
            + c.chat_tokens_per_message * len(messages)
            + c.chat_tokens_reply_primer
        )
        kind = "chat"
    elif "prompt" in body:
        prompt = body["prompt"]
        if isinstance(prompt, list):
            prompt = " ".join(map(str, prompt))
        if not isinstance(prompt, str):
            raise BadRequest("'prompt' must be a string")
        prompt_key, prompt_tokens, kind = prompt, max(count_tokens(prompt), 1), "completion"
    else:
        raise BadRequest("payload needs 'messages' (chat) or 'prompt' (completion)")
    limit = max_model_len or c.default_max_model_len
    if prompt_tokens >= limit:
        raise BadRequest(
            f"This model's maximum context length is {limit} tokens. However, your request has "
            f"{prompt_tokens} input tokens. Please reduce the length of the input messages."
        )
    requested = body.get("max_completion_tokens", body.get("max_tokens"))
    if requested is None:
        max_tokens = limit - prompt_tokens
    elif isinstance(requested, int) and not isinstance(requested, bool) and requested >= 1:
        max_tokens = min(requested, limit - prompt_tokens)
    else:
        raise BadRequest(f"max_tokens must be at least 1, got {requested!r}.")
    options = body.get("stream_options") or {}
    stream = bool(body.get("stream", False))
    return ParsedRequest(
        kind=kind,
        prompt_key=prompt_key,
        prompt_tokens=prompt_tokens,
        max_tokens=max_tokens,
        stream=stream,
        include_usage=stream and bool(options.get("include_usage")),
        continuous_usage=stream and bool(options.get("continuous_usage_stats")),
        ignore_eos=bool(body.get("ignore_eos", False)),
        body=body,
    )


def per_request_level(env: Mapping[str, str]) -> str | None:
    """`summary` or `detailed` when the endpoint's container asks vLLM for per-request
    acceptance, else None (unset, `none`, `false`, or a value vLLM would refuse)."""
    word = env.get(PER_REQUEST_ENV, "").strip().lower()
    return word if word in ("summary", "detailed") else None


def spec_decode_metrics(steps: Iterable[Step], k: int, level: str) -> dict[str, Any]:
    """vLLM's `metrics.speculative_decoding` for one request. Every verify step (a step
    that drafted) adds one to histogram[accepted]; the prefill step drafts nothing and is
    no verify step. The mean acceptance length includes the bonus token; the rate is
    draft-only. `detailed` adds the ordered per-step arrays."""
    histogram = [0] * (k + 1)
    drafted_total = 0
    per_accepted: list[int] = []
    per_drafted: list[int] = []
    for step in steps:
        if step.drafted <= 0:
            continue
        histogram[step.accepted] += 1
        drafted_total += step.drafted
        per_accepted.append(step.accepted)
        per_drafted.append(step.drafted)
    num_steps = sum(histogram)
    accepted = sum(j * n for j, n in enumerate(histogram))
    out: dict[str, Any] = {
        "mean_acceptance_length": 1.0 + accepted / num_steps if num_steps else 1.0,
        "draft_acceptance_rate": accepted / drafted_total if drafted_total else 0.0,
        "acceptance_histogram": histogram,
        "num_spec_steps": num_steps,
        "num_accepted_draft_tokens": accepted,
        "num_draft_tokens": drafted_total,
        "num_spec_tokens": k,
    }
    if level == "detailed" and per_accepted:  # vLLM omits empty arrays
        out["per_step_accepted"] = per_accepted
        out["per_step_drafted"] = per_drafted
    return out


def _usage(prompt: int, completion: int) -> dict[str, int]:
    total = prompt + completion
    return {"prompt_tokens": prompt, "total_tokens": total, "completion_tokens": completion}


def sse(obj: dict[str, Any] | str) -> bytes:
    data = obj if isinstance(obj, str) else _dumps(obj)
    return f"data: {data}\n\n".encode()


def _dumps(obj: Any) -> str:
    # Compact and raw UTF-8, as pydantic's model_dump_json (what vLLM uses) writes it.
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


class Responder:
    """Builds one request's chunks (streaming) or response (non-streaming) in vLLM's format."""

    def __init__(
        self, request: ParsedRequest, request_id: str, created: float | None = None
    ) -> None:
        self.request = request
        # `created`: the container's time, i.e. the sandbox clock's (the runtime passes it).
        self.created = int(time.time() if created is None else created)
        prefix = "chatcmpl-" if request.kind == "chat" else "cmpl-"
        self.id = prefix + request_id.replace("-", "")
        self.object = "chat.completion.chunk" if request.kind == "chat" else "text_completion"

    def _chunk(self, choices: list[dict[str, Any]], completion: int | None) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "object": self.object,
            "created": self.created,
            "model": SIMULATED_MODEL,
            "choices": choices,
        }
        if completion is not None:
            out["usage"] = _usage(self.request.prompt_tokens, completion)
        return out

    def _continuous(self, completion: int) -> int | None:
        r = self.request
        return completion if r.include_usage and r.continuous_usage else None

    def first_chunks(self) -> list[bytes]:
        """The role-only chunk vLLM sends before any content (chat only)."""
        if self.request.kind != "chat":
            return []
        choice = {
            "index": 0,
            "delta": {"role": "assistant", "content": ""},
            "logprobs": None,
            "finish_reason": None,
        }
        return [sse(self._chunk([choice], self._continuous(0)))]

    def content_chunk(self, text: str, completion_so_far: int, finish_reason: str | None) -> bytes:
        if self.request.kind == "chat":
            choice: dict[str, Any] = {
                "index": 0,
                "delta": {"content": text},
                "logprobs": None,
                "finish_reason": finish_reason,
            }
        else:
            choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": finish_reason}
        if finish_reason is not None:
            choice["stop_reason"] = None
        return sse(self._chunk([choice], self._continuous(completion_so_far)))

    def last_chunks(
        self, completion: int, spec_decode: dict[str, Any] | None = None
    ) -> list[bytes]:
        """The usage-only chunk (when asked for) and the [DONE] sentinel. vLLM puts the
        per-request metrics on that usage chunk only, so without usage they are not sent."""
        out = []
        if self.request.include_usage:
            chunk = self._chunk([], completion)
            if spec_decode is not None:
                chunk["metrics"] = {"speculative_decoding": spec_decode}
            out.append(sse(chunk))
        return out + [sse("[DONE]")]

    def full_response(
        self,
        text: str,
        completion: int,
        finish_reason: str,
        spec_decode: dict[str, Any] | None = None,
    ) -> bytes:
        """The non-streaming chat.completion / text_completion body."""
        if self.request.kind == "chat":
            obj, choice = (
                "chat.completion",
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": text,
                        "refusal": None,
                        "annotations": None,
                        "audio": None,
                        "function_call": None,
                        "tool_calls": [],
                        "reasoning_content": None,
                    },
                    "logprobs": None,
                    "finish_reason": finish_reason,
                    "stop_reason": None,
                },
            )
        else:
            obj, choice = (
                "text_completion",
                {
                    "index": 0,
                    "text": text,
                    "logprobs": None,
                    "finish_reason": finish_reason,
                    "stop_reason": None,
                    "prompt_logprobs": None,
                },
            )
        body = {
            "id": self.id,
            "object": obj,
            "created": self.created,
            "model": SIMULATED_MODEL,
            "choices": [choice],
            "usage": {
                **_usage(self.request.prompt_tokens, completion),
                "prompt_tokens_details": None,
            },
            "prompt_logprobs": None,
            "kv_transfer_params": None,
        }
        if spec_decode is not None:
            body["metrics"] = {"speculative_decoding": spec_decode}
        return _dumps(body).encode()
