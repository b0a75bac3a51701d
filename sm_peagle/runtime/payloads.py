"""OpenAI-style request bodies for vLLM's SageMaker `/invocations` route.

vLLM's `/invocations` tries a chat completion first and a plain completion second, so
the same route takes `messages` (chat) or `prompt` (completions). Bodies over
SageMaker's 6 MiB limit are refused here, before anything is sent, with a typed error:
SageMaker would otherwise answer with an opaque 413 after the upload.
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import Param, PayloadTooLarge, SpecError, text

__all__ = [
    "MAX_PAYLOAD_BYTES",
    "STREAM_OPTIONS",
    "build_payload",
    "check_max_tokens",
    "check_temperature",
    "check_top_p",
    "encode_payload",
    "normalize_messages",
    "prepare_payload",
]

MAX_PAYLOAD_BYTES = 6 * 1024 * 1024  # InvokeEndpoint(WithResponseStream) request limit

# Without these vLLM reports no usage while streaming; with them every chunk carries the
# cumulative token counts (so multi-token chunks are counted exactly) and a final
# usage-only chunk with empty `choices` follows the last token.
STREAM_OPTIONS = {"include_usage": True, "continuous_usage_stats": True}


def check_max_tokens(max_tokens: Any, field: str = "max_tokens") -> int:
    """vLLM's SamplingParams rule: max_tokens >= 1 (SpecError before anything is sent).
    `field`: the parameter that gave it, as messages name it."""
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise SpecError(
            text(
                "{f} must be at least 1 (vLLM refuses max_tokens < 1), got {got!r}",
                f=Param(field),
                got=max_tokens,
            ),
            remedy="ask for at least one token, e.g. 256",
            field=field,
            value=max_tokens,
            rule="a whole number >= 1",
        )
    return max_tokens


# vLLM's SamplingParams._verify_args (vllm/sampling_params.py, 0.31.0): temperature must be
# finite and in [0, 2] (0: greedy), top_p in (0, 1]; the same ranges OpenAI documents for
# its chat API. A value outside them is answered 400 after the request left, so it is
# refused here, before anything is sent.
MAX_TEMPERATURE = 2.0
TEMPERATURE_FIX = "0 for greedy decoding, or a number up to 2 such as 0.7"
TOP_P_FIX = "a share of the probability mass above 0 and at most 1, e.g. 0.9 (1: no cut)"


def _number(value: Any) -> float | None:
    """`value` as a float when it is a real number (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def check_temperature(temperature: Any, field: str = "temperature") -> float | None:
    """vLLM's SamplingParams rule: a finite temperature from 0 to 2, 0 being greedy (None:
    the model's default). SpecError before anything is sent."""
    if temperature is None:
        return None
    value = _number(temperature)
    if value is None:
        raise SpecError(
            text("{f} must be a number from 0 to 2, got {got!r}", f=Param(field), got=temperature),
            remedy=TEMPERATURE_FIX,
            field=field,
            value=temperature,
            rule="0 <= temperature <= 2",
        )
    if not 0.0 <= value <= MAX_TEMPERATURE:  # NaN fails both; infinity the upper bound
        raise SpecError(
            text(
                "{f} must be from 0 to 2 (vLLM refuses a temperature outside [0, 2]), got {got!r}",
                f=Param(field),
                got=temperature,
            ),
            remedy=TEMPERATURE_FIX,
            field=field,
            value=temperature,
            rule="0 <= temperature <= 2",
        )
    return value


def check_top_p(top_p: Any, field: str = "top_p") -> float | None:
    """vLLM's SamplingParams rule: 0 < top_p <= 1 (None: the model's default). SpecError
    before anything is sent."""
    if top_p is None:
        return None
    value = _number(top_p)
    if value is None or not 0.0 < value <= 1.0:  # NaN fails too
        raise SpecError(
            text(
                "{f} must be above 0 and at most 1 (vLLM refuses top_p outside (0, 1]), "
                "got {got!r}",
                f=Param(field),
                got=top_p,
            ),
            remedy=TOP_P_FIX,
            field=field,
            value=top_p,
            rule="0 < top_p <= 1",
        )
    return value


def normalize_messages(messages: Any, system: str | None = None) -> list[dict[str, Any]]:
    """A string becomes one user message; `system` is prepended unless one is there."""
    if isinstance(messages, str):
        if not messages.strip():
            raise SpecError("prompt: empty; give some text", field="prompt", value=messages)
        out: list[dict[str, Any]] = [{"role": "user", "content": messages}]
    elif isinstance(messages, list | tuple):
        out = [dict(m) for m in messages]
        for m in out:
            if "role" not in m or "content" not in m:
                raise SpecError(
                    f"each message needs 'role' and 'content', got {m!r}",
                    field="messages",
                    value=m,
                    rule="a string or a list of {'role': ..., 'content': ...}",
                )
    else:
        raise SpecError(
            f"messages must be a string or a list of dicts, got {type(messages)}",
            field="messages",
            rule="a string or a list of {'role': ..., 'content': ...}",
        )
    if system and not (out and out[0].get("role") == "system"):
        out.insert(0, {"role": "system", "content": system})
    return out


def build_payload(
    messages: Any = None,
    prompt: str | list[str] | None = None,
    *,
    system: str | None = None,
    max_tokens: int | None = None,
    temperature: float | None = None,
    stream: bool = False,
    **extra: Any,
) -> dict[str, Any]:
    """A chat body (`messages`) or a completions body (`prompt`); exactly one of them.
    `extra` passes straight through (top_p, stop, seed, model, …)."""
    if (messages is None) == (prompt is None):
        # Only a Python caller can give both or neither (the CLI always gives one).
        raise SpecError(
            "pass exactly one of messages= (chat) or prompt= (completions)", field="messages"
        )
    if messages is not None:
        body: dict[str, Any] = {"messages": normalize_messages(messages, system)}
    else:
        if system:
            raise SpecError("system= applies to chat messages, not to a raw prompt", field="system")
        body = {"prompt": prompt}
    if max_tokens is not None:
        body["max_tokens"] = check_max_tokens(max_tokens)
    if temperature is not None:
        check_temperature(temperature)
        body["temperature"] = temperature
    if extra.get("top_p") is not None:
        check_top_p(extra["top_p"], "top_p")
    body.update(extra)
    return prepare_payload(body, stream=stream)


def prepare_payload(payload: dict[str, Any], *, stream: bool) -> dict[str, Any]:
    """Make `stream` match the API being called and, when streaming, ask for usage on
    every chunk. Caller-given stream_options win over the defaults (a copy is returned)."""
    body = dict(payload)
    body["stream"] = stream
    if stream:
        body["stream_options"] = {**STREAM_OPTIONS, **(body.get("stream_options") or {})}
    else:
        body.pop("stream_options", None)  # vLLM rejects stream_options without stream
    return body


def encode_payload(payload: dict[str, Any], *, limit: int = MAX_PAYLOAD_BYTES) -> bytes:
    """UTF-8 JSON bytes; PayloadTooLarge (nothing sent) if over SageMaker's limit."""
    data = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    if len(data) > limit:
        raise PayloadTooLarge(len(data), limit)
    return data
