"""Generate load on one endpoint and record every request as the client saw it.

Closed loop (default): N threads share ONE RuntimeClient whose HTTP pool holds at least N
connections (botocore's default pool of 10 would make streams queue for a connection and
inflate TTFT); each thread sends its next request as soon as the previous one ends. Open
loop (`rate`): arrivals at `rate` requests/s, at most `concurrency` in flight; gaps are
gamma-distributed with shape `burstiness` (1 = Poisson, < 1 burstier, > 1 more regular, as
`vllm bench serve --burstiness`); the time a request waited for a free slot is recorded
(queue_s), never hidden. Every request records when it was meant to be sent
(`scheduled_at`: the moment its closed-loop slot freed, or its open-loop arrival) and when
it could be (`ready_at`: later than the arrival when every slot was busy), so a client too
busy to send on time shows as send lag instead of as endpoint latency. `workers > 1`
spreads either over processes, each with its own client, and merges the records: one
Python process parses on one core (GIL), and a saturated client under-reports the endpoint.

Retries are off for benchmark clients (botocore max_attempts=0: one attempt in total): a
throttled request is a failure with a reason, not a silently slower success.

Each finished request goes, as it finishes, to `on_record` (the `--requests-out` file) and
to the level's `Breaker` (breaker.py), which stops the level once the endpoint stops
answering: no request is sent after that.
"""

from __future__ import annotations

import contextlib
import itertools
import random
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import ModelStreamError, PeagleError
from .breaker import Breaker
from .datasets import Dataset
from .metrics import RequestRecord

__all__ = [
    "LevelRun",
    "LoadSpec",
    "arrival_gaps",
    "bench_client",
    "chunk_timing",
    "record_from_completion",
    "run_level",
]

_TLS = threading.local()
_WARM_POOLS: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()
_AFTER_CALL = "after-call.sagemaker-runtime.InvokeEndpointWithResponseStream"


@dataclass(frozen=True)
class LoadSpec:
    concurrency: int
    requests: int | None = None
    duration_s: float | None = None
    rate: float | None = None
    burstiness: float = 1.0
    warmup: int = 0
    max_tokens: int = 256
    temperature: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    seed: int = 0

    def planned_requests(self) -> int | None:
        """Neither a count nor a duration: 4 requests per concurrent stream (at least 8)."""
        if self.requests is None and self.duration_s is None:
            return max(8, 4 * self.concurrency)
        return self.requests


@dataclass
class LevelRun:
    records: list[RequestRecord]
    cpu_seconds: list[float]  # one per client process
    simulated: bool = False  # a response carried the sandbox's x-peagle-simulated header
    stopped: dict[str, Any] | None = None  # the Breaker stopped the level: why (else None)


def bench_client(region: str | None, endpoint: str, pool: int, component: str | None = None) -> Any:
    """A RuntimeClient for benchmarking: pool >= concurrency, no retries; with
    `component`, every request carries it as InferenceComponentName."""
    from ..aws import AwsContext
    from ..runtime.client import RuntimeClient

    return RuntimeClient(
        AwsContext(region, max_attempts=0),
        endpoint,
        max_pool_connections=max(pool, 1),
        inference_component=component,
    )


def _after_call(parsed: Any = None, **_: Any) -> None:
    # Runs on the thread that made the call, before invoke_endpoint_with_response_stream
    # returns: a thread-local hands the request id and the sandbox marker to that thread.
    meta = (parsed or {}).get("ResponseMetadata") or {}
    _TLS.request_id = meta.get("RequestId")
    _TLS.simulated = (meta.get("HTTPHeaders") or {}).get("x-peagle-simulated") == "true"


def install_hooks(rt: Any) -> None:
    rt.client.meta.events.register(_AFTER_CALL, _after_call, unique_id="peagle-bench-after-call")


def _message(e: BaseException) -> str:
    text = e.one_line() if isinstance(e, PeagleError) else f"{type(e).__name__}: {e}"
    return text[:300]


def _error_kind(e: BaseException) -> str:
    code = getattr(e, "code", None)
    if isinstance(e, ModelStreamError) and code:
        return f"{type(e).__name__}:{code}"
    status = getattr(e, "original_status_code", None)
    return f"{type(e).__name__}:{status}" if status else type(e).__name__


# vLLM's per-request `metrics.speculative_decoding` keys a record keeps (the summary; the
# `detailed` per-step arrays stay out of the results file).
SPEC_DECODE_KEYS = (
    "mean_acceptance_length", "draft_acceptance_rate", "acceptance_histogram",
    "num_spec_steps", "num_accepted_draft_tokens", "num_draft_tokens", "num_spec_tokens",
)  # fmt: skip


class Requester:
    """Sends request number `g` (its prompt: dataset item g) and returns its record.

    `clock` is the perf_counter-like clock every time here is read from (the runtime
    client's send and arrival times use time.perf_counter; tests inject one clock for
    both, so a late client is seen without sleeping). `start_level()` marks when the
    measured requests may start: a closed-loop thread's first request is due then, each
    later one when its previous one ended."""

    def __init__(
        self, rt: Any, dataset: Dataset, spec: LoadSpec, worker: int,
        clock: Callable[[], float] = time.perf_counter, wall: Callable[[], float] = time.time,
    ) -> None:  # fmt: skip
        self.rt, self.dataset, self.spec, self.worker = rt, dataset, spec, worker
        self.clock = clock
        self.simulated = False
        # perf_counter -> epoch, so records from several processes share one clock.
        self.offset = wall() - clock()
        self.level_start: float | None = None
        self._slot = threading.local()  # per thread: when its previous request ended

    def start_level(self) -> None:
        self.level_start = self.clock()
        self._slot = threading.local()  # threads of an earlier phase do not carry over

    def _freed(self) -> float | None:
        freed = getattr(self._slot, "freed", None)
        return self.level_start if freed is None else freed

    def send(self, g: int, max_tokens: int | None = None) -> Any:
        """Send request `g`; returns its StreamResult once the response headers are in."""
        item = self.dataset.item(g)
        params: dict[str, Any] = {"max_tokens": item.get("max_tokens", self.spec.max_tokens)}
        if self.spec.temperature is not None:
            params["temperature"] = self.spec.temperature
        params.update(self.spec.extra)
        if max_tokens is not None:
            params["max_tokens"] = max_tokens
        if "messages" in item:
            return self.rt.stream(messages=item["messages"], **params)
        return self.rt.stream(prompt=item["prompt"], **params)

    def open_pool(self, connections: int, index: Callable[[int], int]) -> None:
        """Hold `connections` streams open at once (1-token requests, unrecorded), so the
        pool has that many connections before anything is measured: otherwise the first
        measured burst pays every TCP (on AWS: TLS) handshake together and a busy client
        reads the first tokens late, inflating TTFT with client work."""
        barrier = threading.Barrier(connections)

        def hold(i: int) -> None:
            result = None
            with contextlib.suppress(Exception):
                result = self.send(index(i), max_tokens=1)
            with contextlib.suppress(threading.BrokenBarrierError):
                barrier.wait(timeout=120)  # every connection is in use at this moment
            if result is not None:
                with contextlib.suppress(Exception):
                    result.completion()

        threads = [
            threading.Thread(target=hold, args=(i,), daemon=True) for i in range(connections)
        ]
        for t in threads:
            t.start()
        _join(threads, threading.Event())

    def __call__(self, g: int, scheduled: float | None = None) -> RequestRecord:
        """Send request `g` and wait for its answer. `scheduled`: its open-loop arrival
        (clock time); None in a closed loop, where it is due when this thread's previous
        request ended (or at `start_level`)."""
        _TLS.request_id, _TLS.simulated = None, False
        freed = self._freed()
        if scheduled is None:
            due = ready = freed
        else:  # it could go when it arrived, or when this thread's slot freed after that
            due, ready = scheduled, max(scheduled, freed) if freed is not None else scheduled
        started = self.clock()
        result = None
        chunks: list[tuple[float, int]] = []
        try:
            result = self.send(g)
            request_id = _TLS.request_id
            self.simulated = self.simulated or bool(_TLS.simulated)
            chunks = chunk_timing(result, 0.0)  # consumes the stream
            c = result.completion()
        except Exception as e:  # PeagleError mostly; anything else must not kill the thread
            sent = result.sent_at if result is not None else started
            ended = self.clock()
            self._slot.freed = ended
            return RequestRecord(
                index=g,
                ok=False,
                sent_at=sent + self.offset,
                ended_at=ended + self.offset,
                request_id=_TLS.request_id,
                error=_message(e),
                error_kind=_error_kind(e),
                scheduled_at=None if due is None else due + self.offset,
                ready_at=None if ready is None else ready + self.offset,
                worker=self.worker,
            )
        self._slot.freed = result.sent_at + c.e2e  # the last byte: the slot is free
        return record_from_completion(
            c, index=g, sent_at=result.sent_at + self.offset, request_id=request_id,
            scheduled_at=None if due is None else due + self.offset,
            ready_at=None if ready is None else ready + self.offset, worker=self.worker,
            chunks=[(t - result.sent_at, n) for t, n in chunks],  # seconds after the send
        )  # fmt: skip


def chunk_timing(chunks: Iterable[Any], sent_at: float) -> list[tuple[float, int]]:
    """(arrival - `sent_at`, tokens) of every StreamChunk that times the answer as vLLM
    bench serve does: each chunk carrying choices, from the first one carrying generated
    tokens (a role-only chunk is not one; the trailing usage-only chunk carries no
    choices). Tokens are the chunk's usage delta (1 when the stream has no usage)."""
    out: list[tuple[float, int]] = []
    for ch in chunks:
        if ch.is_content or (out and ch.raw.get("choices")):
            n = ch.tokens_in_chunk
            out.append((ch.arrived_at - sent_at, 1 if n is None else n))
    return out


def record_from_completion(
    c: Any, *, index: int, sent_at: float, request_id: str | None = None,
    scheduled_at: float | None = None, ready_at: float | None = None, worker: int = 0,
    chunks: Sequence[tuple[float, int]] | None = None,
) -> RequestRecord:  # fmt: skip
    """A finished stream's Completion -> its record. Without `usage` the request counts as
    failed: peagle never guesses tokens from chunks or characters.

    `chunks`: (seconds after the send, tokens) of every chunk carrying choices, from the
    first one carrying tokens: TTFT, E2EL, TPOT and the per-chunk ITL are then vLLM bench
    serve's (metrics.py). Without them, TTFT and E2EL are the Completion's and no ITL is
    kept. The request's vLLM per-request acceptance (`c.spec_decode`) is kept verbatim."""
    usage = c.usage
    ok = usage is not None
    out = usage.completion_tokens if usage else None
    if chunks:
        ttft: float | None = chunks[0][0]
        e2el = chunks[-1][0]
        itl = tuple(b[0] - a[0] for a, b in zip(chunks, chunks[1:], strict=False))
        chunk_tokens = tuple(n for _, n in chunks[1:])
    else:
        ttft, e2el, itl, chunk_tokens = c.ttft, c.e2e, (), ()
    tpot = None
    if out is not None and out > 1 and ttft is not None:
        tpot = (e2el - ttft) / (out - 1)
    sd = getattr(c, "spec_decode", None)
    spec = {k: sd[k] for k in SPEC_DECODE_KEYS if k in sd} if isinstance(sd, dict) else None
    return RequestRecord(
        index=index,
        ok=ok,
        sent_at=sent_at,
        ended_at=sent_at + c.e2e,
        ttft_s=ttft,
        tpot_s=tpot,
        e2e_s=e2el,
        input_tokens=usage.prompt_tokens if usage else None,
        output_tokens=usage.completion_tokens if usage else None,
        content_chunks=c.chunks,
        finish_reason=c.finish_reason,
        request_id=request_id,
        error=None if ok else "the stream carried no usage (stream_options.include_usage)",
        error_kind=None if ok else "NoUsage",
        scheduled_at=scheduled_at,
        ready_at=ready_at,
        worker=worker,
        spec_decode=spec or None,
        itl_s=itl,
        chunk_tokens=chunk_tokens,
    )


def _join(threads: list[threading.Thread], stop: threading.Event) -> None:
    """Join in short slices so Ctrl-C reaches the main thread; then stop new requests."""
    try:
        for t in threads:
            while t.is_alive():
                t.join(0.2)
    except KeyboardInterrupt:
        stop.set()
        raise


def _counting(
    call: Callable[..., RequestRecord], progress: Callable[[int], None]
) -> Callable[..., RequestRecord]:
    """`call`, reporting after each request how many have finished (failed ones too)."""
    done = itertools.count(1)
    lock = threading.Lock()

    def counted(*args: Any) -> RequestRecord:
        try:
            return call(*args)
        finally:
            with lock:  # counts reach progress in order (it only writes a short line)
                progress(next(done))

    return counted


def _observed(
    call: Callable[..., RequestRecord],
    breaker: Breaker,
    on_record: Callable[[RequestRecord], None] | None,
) -> Callable[..., RequestRecord]:
    """`call`, each record handed to the breaker, then to `on_record` as it finishes (so
    an interrupted run has already written every request it measured)."""

    def observed(*args: Any) -> RequestRecord:
        record = call(*args)
        breaker.observe(record)
        if on_record is not None:
            on_record(record)
        return record

    return observed


def _closed(
    call: Callable[[int], RequestRecord],
    threads: int,
    total: int | None,
    duration: float | None,
    index: Callable[[int], int],
    stop: threading.Event | None = None,
) -> list[RequestRecord]:
    """Each thread sends its next request when the previous one ends, until `total`, the
    `duration` or `stop` (set by Ctrl-C or the breaker: nothing is sent after it)."""
    counter = itertools.count()
    lock = threading.Lock()
    stop = stop or threading.Event()
    records: list[RequestRecord] = []
    deadline = None if duration is None else time.perf_counter() + duration

    def loop() -> None:
        while not stop.is_set():
            with lock:
                i = next(counter)
            if total is not None and i >= total:
                return
            if deadline is not None and time.perf_counter() >= deadline:
                return
            records.append(call(index(i)))  # list.append is atomic under the GIL

    pool = [threading.Thread(target=loop, daemon=True) for _ in range(max(threads, 1))]
    for t in pool:
        t.start()
    _join(pool, stop)
    return records


def arrival_gaps(rate: float, burstiness: float = 1.0, seed: int = 0) -> Iterator[float]:
    """Endless inter-arrival gaps (seconds): gamma with shape `burstiness` and mean 1/rate,
    so the coefficient of variation is 1/sqrt(burstiness); burstiness 1 is exponential
    (Poisson arrivals). Same seed, same gaps."""
    if rate <= 0 or burstiness <= 0:
        raise ValueError("rate and burstiness must be positive")
    rng = random.Random(seed)  # the same arrival pattern on every run with the same seed
    theta = 1.0 / (rate * burstiness)
    while True:
        yield rng.gammavariate(burstiness, theta)


def _open(
    call: Callable[..., RequestRecord],
    cap: int,
    total: int | None,
    duration: float | None,
    gaps: Iterator[float],
    index: Callable[[int], int],
    stop: threading.Event | None = None,
) -> list[RequestRecord]:
    """Arrivals on the schedule, at most `cap` in flight, until `total`, the `duration` or
    `stop` (the breaker, or Ctrl-C): requests still waiting for a slot are then not sent."""
    from concurrent.futures import ThreadPoolExecutor

    stop = stop or threading.Event()

    def unless_stopped(g: int, scheduled: float) -> RequestRecord | None:
        return None if stop.is_set() else call(g, scheduled)

    results: list[RequestRecord | None] = []
    start = due = time.perf_counter()
    with ThreadPoolExecutor(max_workers=max(cap, 1), thread_name_prefix="peagle-bench") as pool:
        futures = []
        try:
            for i in itertools.count():
                if total is not None and i >= total:
                    break
                due += next(gaps)
                if duration is not None and due - start > duration:
                    break
                if stop.wait(max(0.0, due - time.perf_counter())):
                    break
                futures.append(pool.submit(unless_stopped, index(i), due))
        except BaseException:  # Ctrl-C: the queued requests are not sent
            stop.set()
            raise
        for f in futures:
            results.append(f.result())
    return [r for r in results if r is not None]


def run_level(
    rt: Any,
    dataset: Dataset,
    spec: LoadSpec,
    *,
    worker: int = 0,
    workers: int = 1,
    barrier: Any = None,
    progress: Callable[[int], None] | None = None,
    on_record: Callable[[RequestRecord], None] | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> LevelRun:
    """One level in this process. Request i of worker w uses dataset item i*workers + w, so
    processes never send the same prompt sequence. `progress(n)` is called after each
    measured request finishes, n counting them (a terminal's live counter);
    `on_record(record)` gets each measured request as it finishes. The level stops early
    when the endpoint stops answering (breaker.py; `LevelRun.stopped` says why)."""
    install_hooks(rt)
    requester = Requester(rt, dataset, spec, worker, clock=clock)
    breaker = Breaker(spec.concurrency)
    call: Callable[..., RequestRecord] = _observed(requester, breaker, on_record)
    if progress is not None:
        call = _counting(call, progress)

    def index(i: int) -> int:
        return i * workers + worker

    if _WARM_POOLS.get(rt, 0) < spec.concurrency:
        requester.open_pool(spec.concurrency, index)  # stays pooled for later levels
        _WARM_POOLS[rt] = spec.concurrency
    if spec.warmup:
        # Full-length unrecorded requests, e.g. to let the endpoint reach a steady state.
        _closed(requester, min(spec.warmup, spec.concurrency), spec.warmup, None, index)
    if barrier is not None:
        barrier.wait()
    requester.start_level()  # measured requests are due from now on
    cpu0 = time.process_time()
    total = spec.planned_requests()
    if spec.rate:
        records = _open(
            call,
            spec.concurrency,
            total,
            spec.duration_s,
            arrival_gaps(spec.rate, spec.burstiness, spec.seed + worker),
            index,
            breaker.stop,
        )
    else:
        records = _closed(call, spec.concurrency, total, spec.duration_s, index, breaker.stop)
    cpu = time.process_time() - cpu0
    return LevelRun(
        sorted(records, key=lambda r: r.sent_at), [cpu], requester.simulated, breaker.stopped
    )
