"""Invoke a SageMaker endpoint that runs vLLM: whole answers, streams, sync and async.

    rt = RuntimeClient(AwsContext("us-west-2"), "my-endpoint", max_pool_connections=32)
    result = rt.stream("Why is the sky blue?", max_tokens=256)
    for chunk in result:
        print(chunk.text, end="", flush=True)
    print(result.completion().ttft)

boto3/botocore are imported lazily (through AwsContext). The async variants run the
blocking botocore calls on this client's own thread pool, sized like the HTTP pool:
`asyncio.to_thread`'s shared default executor (min(32, CPUs + 4) workers) would
silently cap a high-concurrency benchmark and show up as inflated TTFT.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

from ..errors import (
    AwsUnreachable,
    Call,
    InternalStreamFailure,
    ModelInvocationError,
    ModelStreamError,
    NotFound,
    PeagleError,
    text,
)
from .async_stream import AsyncStreamResult
from .chunks import Completion, CompletionBuilder, StreamChunk, StreamParser
from .chunks import completion_from_response as _completion_from_response
from .payloads import build_payload, encode_payload, prepare_payload
from .stream_read import iter_raw_payload_parts
from .stream_read import stream_exception as _stream_exception
from .stream_read import transport_error as _transport_error

__all__ = ["AsyncStreamResult", "RuntimeClient", "StreamResult", "iter_payload_parts"]


def iter_payload_parts(body: Any) -> Iterator[tuple[bytes, float]]:
    """(bytes, perf_counter at arrival) per PayloadPart; typed errors for error events.

    botocore's EventStream: its raw HTTP body (`_raw_stream`) is decoded by peagle's own
    frame decoder (see stream_read: a fraction of botocore's CPU per frame, and it keeps
    ModelStreamError's ErrorCode, which botocore's error parser drops). Fallbacks, for a
    botocore without `_raw_stream`: its decoded frames (`_event_generator`), headers read
    here for the same reason; else (stubs) parsed event dicts, errors yielded or raised."""
    raw = getattr(body, "_raw_stream", None)
    if raw is not None and callable(getattr(raw, "stream", None)):
        yield from iter_raw_payload_parts(raw)
        return
    frames = getattr(body, "_event_generator", None)
    if frames is not None:
        try:
            for message in frames:
                arrived = time.perf_counter()
                headers = message.headers
                kind = headers.get(":message-type")
                if kind == "event":
                    if headers.get(":event-type") == "PayloadPart":
                        yield message.payload, arrived
                    continue  # unknown event types: ignore, for forward compatibility
                if kind == "exception":
                    try:
                        doc = json.loads(message.payload or b"{}")
                    except ValueError:
                        doc = {"Message": message.payload.decode("utf-8", "replace")}
                    raise _stream_exception(headers.get(":exception-type"), doc)
                raise InternalStreamFailure(
                    str(headers.get(":error-message") or "stream error"),
                    code=str(headers.get(":error-code") or "InternalStreamFailure"),
                )
        except PeagleError:
            raise
        except Exception as e:  # corrupt frame (CRC), connection reset, read timeout
            raise _transport_error(e) from e
        return
    from botocore.exceptions import EventStreamError

    events = iter(body)
    while True:
        try:
            event = next(events)
        except StopIteration:
            return
        except EventStreamError as e:
            error = e.response.get("Error", {})
            raise _stream_exception(error.get("Code"), {"Message": error.get("Message")}) from e
        arrived = time.perf_counter()
        if "PayloadPart" in event:
            yield event["PayloadPart"].get("Bytes", b""), arrived
        for shape in ("ModelStreamError", "InternalStreamFailure"):
            if shape in event:
                raise _stream_exception(shape, event[shape] or {})


def _runtime_error(e: Exception, endpoint: str) -> PeagleError:
    """botocore ClientError (and connection errors) -> one typed, one-line error."""
    from botocore import exceptions as bx

    response = getattr(e, "response", None)
    if not isinstance(response, dict):
        # No HTTP answer at all (refused, reset, timed out) is typed AwsUnreachable, so a
        # benchmark can tell an endpoint that stopped answering from one that answers
        # with an error (benchmarking/breaker.py).
        unreachable = isinstance(e, bx.ConnectionError | bx.HTTPClientError)
        return (AwsUnreachable if unreachable else PeagleError)(
            f"could not reach SageMaker runtime for {endpoint}: {e}",
            remedy="check the region / network, or AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME",
        )
    error = response.get("Error", {})
    code, message = error.get("Code", ""), error.get("Message", str(e))
    if code == "ModelError":
        status = response.get("OriginalStatusCode")
        original = response.get("OriginalMessage")
        return ModelInvocationError(
            f"the model on {endpoint} answered {status}: {original or message}",
            original_status_code=int(status) if status is not None else None,
            original_message=original,
            log_stream_arn=response.get("LogStreamArn"),
            remedy=text("see `{logs}`", logs=Call("logs", endpoint)),
        )
    if code == "ValidationError" and ("not found" in message or "Could not find" in message):
        return NotFound(
            f"endpoint {endpoint} not found: {message}", remedy=text("see `{ls}`", ls=Call("ls"))
        )
    if code == "ModelNotReadyException":
        return PeagleError(
            f"{endpoint}: {message}",
            remedy=text("wait: `{status}`", status=Call("status", endpoint)),
        )
    return PeagleError(f"{code or 'error'} from SageMaker runtime: {message}")


class StreamResult:
    """An Iterator[StreamChunk] over one streamed answer, plus the aggregate.

    `completion()` drains what is left and returns the Completion (TTFT, tokens, …).
    A failure mid-stream raises ModelStreamError with `.partial_text` set.
    """

    def __init__(self, parts: Iterator[tuple[bytes, float]], sent_at: float, close: Any) -> None:
        self.sent_at = sent_at
        self._parts = parts
        self._close = close
        self._parser = StreamParser()
        self._builder = CompletionBuilder(sent_at)
        self._last_arrival = sent_at
        self._chunks = self._generate()

    @property
    def text(self) -> str:  # content received so far
        return self._parser.partial_text

    @property
    def spec_decode(self) -> dict[str, Any] | None:
        """vLLM's per-request acceptance (`Completion.spec_decode`), once the stream's final
        usage chunk has arrived; None before that, or when the engine does not report it."""
        return self._builder.spec_decode

    def __iter__(self) -> StreamResult:
        return self

    def __next__(self) -> StreamChunk:
        return next(self._chunks)

    def _generate(self) -> Iterator[StreamChunk]:
        feed, add = self._parser.feed, self._builder.add  # once per frame: keep lookups out
        try:
            for data, arrived in self._parts:
                self._last_arrival = arrived
                for chunk in feed(data, arrived):
                    add(chunk)
                    yield chunk
            try:
                tail = self._parser.close(self._last_arrival)
            except ValueError:  # a last event cut off mid-JSON: reported as truncation
                tail = []
            for chunk in tail:
                self._builder.add(chunk)
                yield chunk
            if not self._parser.done and self._builder.finish_reason is None:
                raise ModelStreamError(
                    "the stream ended without [DONE] or a finish_reason", code="StreamTruncated"
                )
        except ModelStreamError as e:
            e.partial_text = e.partial_text or self.text
            raise
        except ValueError as e:  # an event whose data is not JSON
            raise ModelStreamError(
                f"bad event from the model: {e}", code="BadEvent", partial_text=self.text
            ) from e
        finally:
            self.close()

    def completion(self, *, drain: bool = True) -> Completion:
        """The aggregate; with drain=False, of what was consumed so far (done=False)."""
        if drain:
            for _ in self:
                pass
        return self._builder.build(done=self._parser.done, ended_at=self._last_arrival)

    def close(self) -> None:
        if self._close is not None:
            close, self._close = self._close, None
            with contextlib.suppress(Exception):  # already closed / connection gone
                close()


class RuntimeClient:
    """SageMaker runtime calls for one endpoint. Safe to share between threads."""

    def __init__(
        self,
        aws: Any,
        endpoint_name: str,
        *,
        max_pool_connections: int = 10,
        target_variant: str | None = None,
        inference_component: str | None = None,
    ) -> None:
        self.aws = aws
        self.endpoint_name = endpoint_name
        self.max_pool_connections = max(1, int(max_pool_connections))
        self._target: dict[str, str] = {}
        if target_variant:
            self._target["TargetVariant"] = target_variant
        if inference_component:
            self._target["InferenceComponentName"] = inference_component
        self._client: Any = None
        self._sent = threading.local()
        self._executor: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    @property
    def client(self) -> Any:
        with self._lock:
            if self._client is None:
                # Config overrides make AwsContext build a dedicated (uncached) client: its
                # HTTP pool must be as large as the number of concurrent streams, or
                # requests queue for a connection and TTFT is inflated.
                self._client = self.aws.client(
                    "sagemaker-runtime", max_pool_connections=self.max_pool_connections
                )
                self._client.meta.events.register("before-send.sagemaker-runtime", self._mark_sent)
            return self._client

    def _mark_sent(self, **_: Any) -> None:
        # "Sent" is when botocore hands the signed request to the HTTP layer: the client's
        # one-off first-call work (endpoint rules, signing set-up) is not the model's TTFT.
        # Per thread, because concurrent streams share this client.
        self._sent.at = time.perf_counter()

    def _sent_at(self, fallback: float) -> float:
        at = getattr(self._sent, "at", None)
        self._sent.at = None
        return at if at is not None and at >= fallback else fallback

    def _body(self, payload: dict | None, stream: bool, args: tuple, params: dict) -> bytes:
        if payload is not None:
            if args[0] is not None or args[1] is not None or params:
                raise PeagleError("pass either payload= or messages/prompt, not both")
            return encode_payload(prepare_payload(payload, stream=stream))
        return encode_payload(build_payload(*args, stream=stream, **params))

    def invoke(
        self,
        messages: Any = None,
        prompt: str | list[str] | None = None,
        *,
        payload: dict[str, Any] | None = None,
        **params: Any,
    ) -> Completion:
        """One whole answer (InvokeEndpoint). `params`: max_tokens, temperature, system,
        or any vLLM sampling parameter; `payload`: a complete request body instead."""
        body = self._body(payload, False, (messages, prompt), params)
        client = self.client
        sent = time.perf_counter()
        try:
            resp = client.invoke_endpoint(
                EndpointName=self.endpoint_name,
                Body=body,
                ContentType="application/json",
                Accept="application/json",
                **self._target,
            )
            raw = resp["Body"].read()
        except Exception as e:
            raise _runtime_error(e, self.endpoint_name) from None
        ended = time.perf_counter()
        sent = self._sent_at(sent)
        try:
            doc = json.loads(raw)
        except ValueError:
            raise ModelInvocationError(f"the model answered with non-JSON: {raw[:200]!r}") from None
        return _completion_from_response(doc, sent_at=sent, ended_at=ended)

    def stream(
        self,
        messages: Any = None,
        prompt: str | list[str] | None = None,
        *,
        payload: dict[str, Any] | None = None,
        **params: Any,
    ) -> StreamResult:
        """A streamed answer (InvokeEndpointWithResponseStream): iterate StreamChunks,
        then `.completion()`. The request is sent before this returns."""
        body = self._body(payload, True, (messages, prompt), params)
        client = self.client
        sent = time.perf_counter()
        try:
            resp = client.invoke_endpoint_with_response_stream(
                EndpointName=self.endpoint_name,
                Body=body,
                ContentType="application/json",
                Accept="text/event-stream",
                **self._target,
            )
        except Exception as e:
            raise _runtime_error(e, self.endpoint_name) from None
        events = resp["Body"]
        sent = self._sent_at(sent)
        return StreamResult(iter_payload_parts(events), sent, getattr(events, "close", None))

    def _pool(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(
                    max_workers=self.max_pool_connections, thread_name_prefix="peagle-rt"
                )
            return self._executor

    async def ainvoke(
        self, messages: Any = None, prompt: str | list[str] | None = None, **params: Any
    ) -> Completion:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self._pool(), partial(self.invoke, messages, prompt, **params)
        )

    def astream(
        self, messages: Any = None, prompt: str | list[str] | None = None, **params: Any
    ) -> AsyncStreamResult:
        """`async for chunk in rt.astream(...)`; the request is sent on first iteration."""
        return AsyncStreamResult(partial(self.stream, messages, prompt, **params), self._pool())

    def close(self) -> None:
        with self._lock:
            executor, self._executor = self._executor, None
            client, self._client = self._client, None
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)
        if client is not None and hasattr(client, "close"):
            client.close()
