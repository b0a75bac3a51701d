"""peagle's benchmark numbers against the sandbox's ground truth.

A fresh sandbox (its own state dir) serves three endpoints: gpt-oss-20b with P-EAGLE K=3,
EAGLE-3 K=3 and no speculation. `bench_endpoint` runs each at concurrency 1, 8 and 64; then
every level is compared with what the sandbox recorded for the same requests (matched by
SageMaker request id): the time each engine step's bytes were handed to the socket and the
tokens in that step.

Asserted here (exact whatever the machine's load): output tokens per request and per level,
tokens per chunk (the sandbox streams one chunk per engine step), every send time before the
server's arrival time, measured TTFT not below the true TTFT and measured tokens/s not above
the true tokens/s (a client cannot read a byte before it is written).

Not asserted here: how close the timings come to the truth. That depends on what else the
machine runs, so `benchmarks/bench_accuracy.py` measures it (concurrency 1, 8, 64 and 128)
and the README shows its figures.
"""

from __future__ import annotations

import os

import pytest

from benchmarks.bench_accuracy import ground_truth, long_prompt_dataset

pytestmark = pytest.mark.e2e

CONFIGS = [("p-eagle", 3), ("eagle3", 3), ("baseline", None)]
LEVELS = [1, 8, 64]
REQUESTS = {1: 4, 8: 16, 64: 64}
# Clock slack between the client's perf_counter-derived epoch and the server's time.time().
CLOCK_SLACK = 0.005


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory):
    """A sandbox of our own; the process env points at it for the module, then is restored."""
    saved = dict(os.environ)
    os.environ["PEAGLE_STATE_DIR"] = str(tmp_path_factory.mktemp("sandbox-state"))
    for name in [n for n in os.environ if n.startswith("AWS_")]:
        del os.environ[name]
    from peagle_sandbox import manager

    info = manager.start(creating_seconds=1.0, metrics_interval=1.0)
    try:
        manager.activate(info)
        yield info
    finally:
        manager.stop()
        os.environ.clear()
        os.environ.update(saved)


@pytest.fixture(scope="module")
def endpoints(sandbox):
    import sm_peagle

    names = {}
    for mode, k in CONFIGS:
        name = f"acc-{mode}-{k or 0}"
        extra = {"k": k} if k else {}
        sm_peagle.deploy("gpt-oss-20b", mode=mode, name=name, role=sandbox.role_arn, **extra)
        names[(mode, k)] = name
    return names


def measure_level(rt, ds, c: int, sandbox, name: str) -> tuple[dict, dict, dict]:
    from peagle_sandbox.groundtruth import level_truth
    from sm_peagle.benchmarking.load import LoadSpec, run_level
    from sm_peagle.benchmarking.metrics import summarize_level

    run = run_level(rt, ds, LoadSpec(concurrency=c, requests=REQUESTS[c], max_tokens=96))
    assert run.simulated  # the sandbox's response header was seen
    level = summarize_level(run.records, concurrency=c, cpu_seconds=run.cpu_seconds)
    gt = ground_truth(sandbox.url, name)
    for r in level["records"]:
        assert r["ok"], r
        g = gt[r["request_id"]]  # every request is matched to the sandbox's record by id
        assert g["status"] == "ok"
        assert r["output_tokens"] == g["completion_tokens"]  # exact, per request
        assert r["input_tokens"] == g["prompt_tokens"]
        # Causality, not timing: the client stamps its send time before the server sees
        # the request, whatever the machine's load (CLOCK_SLACK covers clock conversion).
        assert r["sent_at"] <= g["arrival"] + CLOCK_SLACK, (r["sent_at"], g["arrival"])
    truth = level_truth(level["records"], gt)
    measured = {
        "output_tokens": level["output_tokens"],
        "ttft": level["ttft_s"]["mean"],
        "tpot": level["tpot_s"]["mean"],
        "otps": level["output_tokens_per_s"],
        "tokens_per_chunk": level["mean_tokens_per_chunk"],
    }
    return measured, truth, level


@pytest.mark.parametrize("mode,k", CONFIGS, ids=[m for m, _ in CONFIGS])
def test_counts_match_ground_truth(sandbox, endpoints, mode, k):
    """Token and chunk counts are exact at every level; times only obey causality.

    How close peagle's TTFT, TPOT and tokens/s come to the truth depends on what else the
    machine runs, so it is measured by benchmarks/bench_accuracy.py (figures in the
    README), not asserted here. What load cannot change: a client reads a byte only after
    the server wrote it, so its TTFT is never below the true TTFT and its tokens/s never
    above the true tokens/s.
    """
    from sm_peagle.benchmarking.load import bench_client

    name = endpoints[(mode, k)]
    ds = long_prompt_dataset()
    rt = bench_client(None, name, max(LEVELS))
    try:
        for c in LEVELS:
            m, t, _ = measure_level(rt, ds, c, sandbox, name)
            assert m["output_tokens"] == t["output_tokens"]
            assert m["tokens_per_chunk"] == pytest.approx(t["tokens_per_chunk"], rel=1e-9)
            if mode == "baseline":
                assert t["tokens_per_chunk"] == 1.0  # one token per target step
            else:
                assert t["tokens_per_chunk"] > 1.0  # drafts were accepted
            assert m["ttft"] >= t["ttft"] - CLOCK_SLACK, (c, m, t)
            assert m["otps"] <= t["otps"] * (1 + 1e-6) + CLOCK_SLACK, (c, m, t)
            assert m["tpot"] > 0
    finally:
        rt.close()


def test_acceptance_length_from_logs_matches_engine(sandbox, endpoints):
    """The SpecDecoding lines the sandbox logs, read back like on AWS, give the engine's
    own acceptance length for the steps they cover."""
    from sm_peagle.aws import AwsContext
    from sm_peagle.benchmarking.acceptance import acceptance_for_levels

    name = endpoints[("p-eagle", 3)]
    gt = ground_truth(sandbox.url, name)
    if not gt:  # run on its own (e.g. with -k), it makes its own traffic
        from sm_peagle.benchmarking.load import bench_client

        rt = bench_client(None, name, 1)
        try:
            measure_level(rt, long_prompt_dataset(), 1, sandbox, name)
        finally:
            rt.close()
        gt = ground_truth(sandbox.url, name)
    assert gt, f"the sandbox recorded no request for {name}"
    steps = [s for r in gt.values() for s in r["steps"] if s["drafted"]]
    start, end = min(s["t"] for s in steps), max(s["t"] for s in steps)
    (acc,) = acceptance_for_levels(
        AwsContext(), name, [(start, end)], mode="p-eagle", k=3, wait_s=10, poll_s=0.5
    )
    assert acc["status"] == "measured" and acc["method"] == "counts"
    # The lines used cover all of this endpoint's traffic, so the truth is every step's.
    assert acc["covered_from"] <= start and acc["covered_to"] >= end
    truth = 1 + sum(s["accepted"] for s in steps) / len(steps)
    assert acc["mean_acceptance_length"] == pytest.approx(truth, rel=1e-6)


def test_progress_counts_every_finished_request_once(sandbox, endpoints):
    """The live counter a terminal shows (`peagle bench`): one call per measured request,
    1..N in order, none for the pool-warming requests."""
    from sm_peagle.benchmarking.load import LoadSpec, bench_client, run_level

    seen: list[int] = []
    rt = bench_client(None, endpoints[("p-eagle", 3)], 3)
    try:
        run = run_level(rt, long_prompt_dataset(), LoadSpec(concurrency=3, requests=7,
                        max_tokens=8), progress=seen.append)  # fmt: skip
    finally:
        rt.close()
    assert len(run.records) == 7
    assert seen == [1, 2, 3, 4, 5, 6, 7]
