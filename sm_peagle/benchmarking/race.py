"""`peagle race A B`: the same prompt streamed to two targets at once, as the seed's live
side-by-side recording of P-EAGLE against standard inference.

A target is an endpoint, or an inference component on an endpoint: `RaceTarget(endpoint,
component)` builds its `RuntimeClient(..., inference_component=component)`; nothing else
here depends on which.

Each side streams in its own thread; `Lane` holds what it has so far (text, tokens from
`usage`, never chunks, TTFT) and is read by the caller's `on_update` (the live view) a
few times a second. The result gives per side TTFT, e2e, output tokens, output tokens/s
(tokens / e2e, what a user waits through) and decode tokens/s (after the first token), and
a one-line verdict on output tokens/s.

Acceptance per lane is vLLM's own count for that lane's request
(`metrics.speculative_decoding`, on images whose vLLM reports it): the engine sends it with
the stream's final usage chunk, so a lane shows it the moment its stream ends, and `None`
while it streams, for baseline and for engines that do not report it. Tokens per chunk is
shown meanwhile but is not acceptance (SageMaker and the engine batch chunks freely).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Lane", "RaceTarget", "race", "verdict"]


@dataclass(frozen=True)
class RaceTarget:
    endpoint: str
    component: str | None = None  # an inference component on `endpoint`

    @property
    def label(self) -> str:
        if not self.component:
            return self.endpoint
        from ..planning.components.hosting import component_short_name

        # `EP/p-eagle`, not `EP/EP-p-eagle`: the short name the user deployed and typed.
        short = component_short_name(self.endpoint, self.component)
        return f"{self.endpoint}/{short or self.component}"

    def client(self, aws: Any) -> Any:
        from ..runtime.client import RuntimeClient

        return RuntimeClient(
            aws, self.endpoint, max_pool_connections=1, inference_component=self.component
        )


@dataclass
class Lane:
    """One side's live state (written by its thread, read under `lock`)."""

    name: str
    target: RaceTarget
    sent_at: float = 0.0
    first_at: float | None = None
    last_at: float | None = None
    text: str = ""
    tokens: int = 0
    chunks: int = 0
    done: bool = False
    error: str | None = None
    finish_reason: str | None = None
    spec_decode: dict[str, Any] | None = None  # vLLM's per-request acceptance, at the end
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def snapshot(self, now: float | None = None) -> dict[str, Any]:
        with self.lock:
            end = self.last_at if self.done and self.last_at else (now or time.perf_counter())
            e2e = max(end - self.sent_at, 0.0) if self.sent_at else None
            ttft = self.first_at - self.sent_at if self.first_at else None
            decode = None
            if self.first_at and self.tokens > 1 and end > self.first_at:
                decode = (self.tokens - 1) / (end - self.first_at)
            return {
                "side": self.name,
                "target": self.target.label,
                "endpoint": self.target.endpoint,
                "component": self.target.component,
                "done": self.done,
                "error": self.error,
                "ttft_s": ttft,
                "e2e_s": e2e,
                "output_tokens": self.tokens,
                "content_chunks": self.chunks,
                "tokens_per_chunk": self.tokens / self.chunks if self.chunks else None,
                "output_tokens_per_s": self.tokens / e2e if e2e and self.tokens else None,
                "decode_tokens_per_s": decode,
                "finish_reason": self.finish_reason,
                "acceptance_length": _get(self.spec_decode, "mean_acceptance_length"),
                "draft_acceptance_rate": _get(self.spec_decode, "draft_acceptance_rate"),
                "spec_decode": self.spec_decode,
                "text": self.text,
            }


def _get(spec: dict[str, Any] | None, key: str) -> Any:
    return spec.get(key) if spec else None


def _run_lane(lane: Lane, rt: Any, request: dict[str, Any], start: threading.Event) -> None:
    start.wait()
    try:
        stream = rt.stream(**request)
        with lane.lock:
            lane.sent_at = stream.sent_at
        for chunk in stream:
            with lane.lock:
                if chunk.usage is not None:
                    lane.tokens = chunk.usage.completion_tokens
                if chunk.is_content:
                    lane.chunks += 1
                    lane.text += chunk.text or chunk.reasoning
                    if lane.first_at is None:
                        lane.first_at = chunk.arrived_at
                    lane.last_at = chunk.arrived_at
                lane.finish_reason = chunk.finish_reason or lane.finish_reason
                if chunk.usage is not None and lane.spec_decode is None:
                    lane.spec_decode = stream.spec_decode  # set by the final usage chunk
    except Exception as e:  # one side failing must not stop the other
        with lane.lock:
            lane.error = e.one_line() if hasattr(e, "one_line") else f"{type(e).__name__}: {e}"
    finally:
        with lane.lock:
            lane.done = True
            if lane.last_at is None:
                lane.last_at = time.perf_counter()


def verdict(a: dict[str, Any], b: dict[str, Any]) -> tuple[str, float | None]:
    """`A 2.9× B on output tokens/s (A: ep-a 116 tok/s, B: ep-b 40 tok/s)`, and A/B."""
    ra, rb = a["output_tokens_per_s"], b["output_tokens_per_s"]
    if a["error"] or b["error"] or not ra or not rb:
        failed = [s["side"] for s in (a, b) if s["error"] or not s["output_tokens_per_s"]]
        return f"no verdict: {' and '.join(failed)} produced no tokens", None
    ratio = ra / rb
    detail = f"(A: {a['target']} {ra:,.0f} tok/s, B: {b['target']} {rb:,.0f} tok/s)"
    if ratio >= 1:
        return f"A {ratio:.1f}× B on output tokens/s {detail}", ratio
    return f"B {1 / ratio:.1f}× A on output tokens/s {detail}", ratio


def race(
    a: RaceTarget,
    b: RaceTarget,
    *,
    aws: Any,
    prompt: str,
    max_tokens: int = 256,
    temperature: float | None = None,
    on_update: Callable[[list[Lane]], None] | None = None,
    interval_s: float = 0.1,
) -> dict[str, Any]:
    """Stream `prompt` to both targets at once; returns the numbers and the verdict."""
    request: dict[str, Any] = {"messages": [{"role": "user", "content": prompt}],
                               "max_tokens": max_tokens}  # fmt: skip
    if temperature is not None:
        request["temperature"] = temperature
    lanes = [Lane("A", a), Lane("B", b)]
    clients = [a.client(aws), b.client(aws)]
    for rt in clients:
        _ = rt.client  # build both botocore clients before the start line
    start = threading.Event()
    threads = [
        threading.Thread(target=_run_lane, args=(lane, rt, request, start), daemon=True)
        for lane, rt in zip(lanes, clients, strict=True)
    ]
    for t in threads:
        t.start()
    start.set()  # both requests leave together
    try:
        while any(t.is_alive() for t in threads):
            if on_update is not None:
                on_update(lanes)
            time.sleep(interval_s)
        if on_update is not None:
            on_update(lanes)
    finally:
        for rt in clients:
            rt.close()
    sa, sb = lanes[0].snapshot(), lanes[1].snapshot()
    line, ratio = verdict(sa, sb)
    return {
        "prompt": prompt,
        "max_tokens": max_tokens,
        "temperature": temperature,
        "a": sa,
        "b": sb,
        "ratio_a_over_b": ratio,
        "verdict": line,
    }
