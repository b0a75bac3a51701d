"""`--workers N`: one benchmark level spread over N client processes, records merged.

One Python process parses streams on one core (the GIL); past ~85% of a core its threads
queue and the client, not the endpoint, sets the numbers. Each worker process has its own
RuntimeClient (pool >= its share of the concurrency); all of them wait at a barrier after
their warm-up, so the measured windows start together. Records carry epoch times, so
merging needs no clock translation. Each record also reaches the parent as its request
finishes (the `--requests-out` file is written by the parent alone), and each process
stops its share when the endpoint stops answering (breaker.py, per process).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ..errors import PeagleError
from .datasets import Dataset
from .load import LevelRun, LoadSpec, bench_client, run_level
from .metrics import RequestRecord

__all__ = ["run_level_processes"]


def _split(n: int, parts: int, i: int) -> int:
    return n // parts + (1 if i < n % parts else 0)


def _worker_main(
    w: int,
    workers: int,
    region: str | None,
    endpoint: str,
    dataset: Dataset,
    spec: LoadSpec,
    barrier: Any,
    queue: Any,
    component: str | None = None,
) -> None:
    try:
        rt = bench_client(region, endpoint, spec.concurrency, component)
        run = run_level(rt, dataset, spec, worker=w, workers=workers, barrier=barrier,
                        on_record=lambda r: queue.put((w, r, None)))  # fmt: skip
        queue.put((w, run, None))
    except BaseException as e:  # reported to the parent, which raises it as one line
        barrier.abort()
        queue.put((w, None, f"{type(e).__name__}: {e}"))


def run_level_processes(
    region: str | None,
    endpoint: str,
    dataset: Dataset,
    spec: LoadSpec,
    workers: int,
    component: str | None = None,
    on_record: Callable[[RequestRecord], None] | None = None,
) -> LevelRun:
    """The level spread over `workers` processes (spawned: boto3 and threads do not survive
    fork), started together at a barrier after their warm-up; records merged, each handed
    to `on_record` as it arrives. Stopped when any process's share was stopped."""
    import multiprocessing as mp
    import queue as queue_mod

    workers = max(1, min(workers, spec.concurrency))
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(workers)
    results: Any = ctx.Queue()
    total = spec.planned_requests()
    procs = []
    for w in range(workers):
        share = replace(
            spec,
            concurrency=_split(spec.concurrency, workers, w),
            requests=None if total is None else _split(total, workers, w),
            rate=None if spec.rate is None else spec.rate / workers,
            warmup=-(-spec.warmup // workers),
        )
        p = ctx.Process(
            target=_worker_main,
            args=(w, workers, region, endpoint, dataset, share, barrier, results, component),
            daemon=True,
        )
        p.start()
        procs.append(p)
    runs: list[LevelRun] = []
    try:
        while len(runs) < workers:
            try:
                w, run, err = results.get(timeout=1.0)
            except queue_mod.Empty:
                if any(not p.is_alive() and p.exitcode not in (0, None) for p in procs):
                    raise PeagleError("a benchmark worker process died") from None
                continue
            if err is not None:
                raise PeagleError(f"benchmark worker {w} failed: {err}")
            if isinstance(run, RequestRecord):  # one request finished
                if on_record is not None:
                    on_record(run)
                continue
            runs.append(run)
    finally:
        for p in procs:
            p.join(timeout=5)
            if p.is_alive():
                p.terminate()
    records = sorted((r for run in runs for r in run.records), key=lambda r: r.sent_at)
    return LevelRun(
        records, [c for run in runs for c in run.cpu_seconds], any(r.simulated for r in runs),
        next((r.stopped for r in runs if r.stopped), None),
    )  # fmt: skip
