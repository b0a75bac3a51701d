"""The async side of the runtime client: `AsyncStreamResult`, the async twin of
`client.StreamResult`. The blocking botocore stream runs on the client's own thread
pool (see client.py for why not asyncio's default executor); chunks cross to the event
loop through an asyncio.Queue."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from ..errors import ModelStreamError
from .chunks import Completion, StreamChunk

if TYPE_CHECKING:  # annotations only: client imports this module
    from .client import StreamResult

__all__ = ["AsyncStreamResult"]

_END = object()


class AsyncStreamResult:
    """Async twin of StreamResult: `async for chunk in result`, `await result.completion()`.

    A worker thread iterates the blocking stream and hands chunks to the event loop
    through an asyncio.Queue; arrival times are taken on that thread, when bytes arrive.
    """

    def __init__(self, start: Callable[[], StreamResult], executor: ThreadPoolExecutor) -> None:
        self._start = start
        self._executor = executor
        self._result: StreamResult | None = None
        self._iterator: AsyncIterator[StreamChunk] | None = None

    @property
    def spec_decode(self) -> dict[str, Any] | None:
        """vLLM's per-request acceptance once the final usage chunk has arrived (see
        StreamResult.spec_decode); None before that."""
        return self._result.spec_decode if self._result is not None else None

    def __aiter__(self) -> AsyncIterator[StreamChunk]:
        if self._iterator is None:
            self._iterator = self._run()
        return self._iterator

    async def _run(self) -> AsyncIterator[StreamChunk]:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[Any, BaseException | None]] = asyncio.Queue()
        stop = threading.Event()

        def put(item: Any, err: BaseException | None = None) -> None:
            try:
                loop.call_soon_threadsafe(queue.put_nowait, (item, err))
            except RuntimeError:  # the loop is gone: nobody is listening any more
                stop.set()

        def pump() -> None:
            try:
                self._result = self._start()
                for chunk in self._result:
                    if stop.is_set():
                        break
                    put(chunk)
                put(_END)
            except BaseException as e:  # handed to the awaiting side
                put(_END, e)
            finally:
                if self._result is not None:
                    self._result.close()

        loop.run_in_executor(self._executor, pump)
        try:
            while True:
                item, err = await queue.get()
                if item is _END:
                    if err is not None:
                        raise err
                    return
                yield item
        finally:
            stop.set()  # an early break: the worker stops at the next part

    async def completion(self) -> Completion:
        if self._iterator is None:
            async for _ in self:
                pass
        if self._result is None:
            raise ModelStreamError("the stream never started", code="NotStarted")
        return self._result.completion(drain=False)
