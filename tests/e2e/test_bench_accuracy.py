"""peagle's benchmark numbers against the sandbox's ground truth.

A fresh sandbox (its own state dir) serves three endpoints: gpt-oss-20b with P-EAGLE K=3,
EAGLE-3 K=3 and no speculation. `bench_endpoint` runs each at concurrency 1, 8 and 64; then
every level is compared with what the sandbox recorded for the same requests (matched by
SageMaker request id): the time each engine step's bytes were handed to the socket and the
tokens in that step.

Truth, per level:
- output tokens: the sum of tokens the engine emitted (must be exact, per request too);
- TTFT: first token step written - the client's send time (same host clock);
- TPOT: (last step written - first step written) / (tokens after the first step);
- output tokens/s: all tokens / (last step written - first request sent);
- tokens per chunk: tokens / engine steps (the sandbox streams one chunk per step).

The client's own costs (botocore reading headers and decoding frames, ~0.5 ms per request
on this 2-core machine) are inside peagle's numbers and not in the truth; at the sandbox's
~25-30 ms TTFT they are ~2%, so the prompts here are long enough (as real benchmark prompts
are) that prefill dominates.
"""

from __future__ import annotations

import json
import os
import statistics
import urllib.request

import pytest

pytestmark = pytest.mark.e2e

CONFIGS = [("p-eagle", 3), ("eagle3", 3), ("baseline", None)]
LEVELS = [1, 8, 64]
REQUESTS = {1: 4, 8: 16, 64: 64}
TOLERANCE = 0.02
TIMED = ("ttft", "tpot", "otps")
ATTEMPTS = 3


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory):
    """A sandbox of our own; the process env points at it for the module, then is restored."""
    saved = dict(os.environ)
    os.environ["PEAGLE_STATE_DIR"] = str(tmp_path_factory.mktemp("sandbox-state"))
    for name in [n for n in os.environ if n.startswith("AWS_")]:
        del os.environ[name]
    from sm_peagle.sandbox import manager

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


def long_prompt_dataset():
    """Chat prompts of ~1,500 words: ~55 ms of simulated prefill, as a code-review or RAG
    request would have, so a fixed ~0.5 ms client cost is well under 2% of TTFT."""
    from sm_peagle.bench.datasets import Dataset

    words = ("def", "return", "self", "value", "index", "buffer", "parse", "token", "cache")
    items = []
    for i in range(12):
        body = " ".join(words[(i + j) % len(words)] for j in range(1500))
        items.append({"messages": [{"role": "user", "content": f"Review #{i}: {body}"}]})
    return Dataset("accuracy-long", "written for this test", tuple(items))


def ground_truth(url: str, endpoint: str) -> dict[str, dict]:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(f"{url}/_peagle/ground-truth?endpoint={endpoint}", timeout=10) as resp:
        return {r["request_id"]: r for r in json.loads(resp.read())["requests"]}


def rel(measured: float, truth: float) -> float:
    return abs(measured - truth) / truth


def truth_of(level: dict, gt: dict[str, dict]) -> dict[str, float]:
    ttft, tpot, last = [], [], []
    tokens = steps = 0
    for r in level["records"]:
        assert r["ok"], r
        g = gt[r["request_id"]]  # every request is matched to the sandbox's record by id
        assert g["status"] == "ok"
        assert r["output_tokens"] == g["completion_tokens"]  # exact, per request
        assert r["input_tokens"] == g["prompt_tokens"]
        emitted = [s for s in g["steps"] if s["tokens"]]
        tokens += g["completion_tokens"]
        steps += len(emitted)
        ttft.append(emitted[0]["t"] - r["sent_at"])
        after_first = g["completion_tokens"] - emitted[0]["tokens"]
        if after_first > 0:
            tpot.append((emitted[-1]["t"] - emitted[0]["t"]) / after_first)
        last.append(emitted[-1]["t"])
    first_sent = min(r["sent_at"] for r in level["records"])
    return {
        "output_tokens": tokens,
        "ttft": statistics.fmean(ttft),
        "tpot": statistics.fmean(tpot),
        "otps": tokens / (max(last) - first_sent),
        "tokens_per_chunk": tokens / steps,
    }


def measure_level(rt, ds, c: int, sandbox, name: str) -> tuple[dict, dict, dict]:
    from sm_peagle.bench.load import LoadSpec, run_level
    from sm_peagle.bench.metrics import summarize_level

    run = run_level(rt, ds, LoadSpec(concurrency=c, requests=REQUESTS[c], max_tokens=96))
    assert run.simulated  # the sandbox's response header was seen
    level = summarize_level(run.records, concurrency=c, cpu_seconds=run.cpu_seconds)
    truth = truth_of(level, ground_truth(sandbox.url, name))  # exact tokens asserted here
    measured = {
        "output_tokens": level["output_tokens"],
        "ttft": level["ttft_s"]["mean"],
        "tpot": level["tpot_s"]["mean"],
        "otps": level["output_tokens_per_s"],
        "tokens_per_chunk": level["mean_tokens_per_chunk"],
    }
    # Counts are exact on every attempt, whatever the machine is doing.
    assert measured["output_tokens"] == truth["output_tokens"]
    assert measured["tokens_per_chunk"] == pytest.approx(truth["tokens_per_chunk"], rel=1e-9)
    return measured, truth, {key: rel(measured[key], truth[key]) for key in truth}


@pytest.mark.parametrize("mode,k", CONFIGS, ids=[m for m, _ in CONFIGS])
def test_numbers_match_ground_truth(sandbox, endpoints, mode, k, capsys):
    """Timings within 2%. The client and the sandbox share this machine's CPUs with
    whatever else runs on it, and a process that steals a core makes any client read
    its bytes late; so a level whose timings miss is measured again (at most 3 attempts),
    and every attempt is printed."""
    from sm_peagle.bench.load import bench_client

    name = endpoints[(mode, k)]
    ds = long_prompt_dataset()
    rt = bench_client(None, name, max(LEVELS))
    final = []
    try:
        for c in LEVELS:
            for attempt in range(1, ATTEMPTS + 1):
                m, t, e = measure_level(rt, ds, c, sandbox, name)
                with capsys.disabled():
                    print(
                        f"\n{mode} c={c} attempt {attempt}: "
                        + " ".join(f"{key} {m[key]:.5g}/{t[key]:.5g} ({e[key]:+.2%})" for key in e)
                    )
                if all(e[key] <= TOLERANCE for key in TIMED):
                    break
            final.append((c, m, t, e))
    finally:
        rt.close()
    for c, m, t, e in final:
        for key in TIMED:
            assert e[key] <= TOLERANCE, (mode, c, key, m[key], t[key])


def test_acceptance_length_from_logs_matches_engine(sandbox, endpoints):
    """The SpecDecoding lines the sandbox logs, read back like on AWS, give the engine's
    own acceptance length for the steps they cover."""
    from sm_peagle.aws import AwsContext
    from sm_peagle.bench.acceptance import acceptance_for_levels

    name = endpoints[("p-eagle", 3)]
    gt = ground_truth(sandbox.url, name)
    if not gt:
        pytest.skip("no traffic recorded for this endpoint yet")
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
