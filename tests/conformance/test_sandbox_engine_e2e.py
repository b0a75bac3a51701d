"""End to end on the REAL vLLM engine through the sandbox (`--engine vllm`): deploy the
tiny P-EAGLE model (aligned head, K=3), stream an invocation, `peagle bench -c 1,4`, and
cross-check peagle's numbers against the engine's own Prometheus counters (`/metrics` on
the engine port, which the sandbox can reach and SageMaker cannot); then baseline; then
`delete` leaves no process, no port and no resource. One engine at a time.

Since issue 27 a level's acceptance is vLLM's per-request report (exact); the log lines
are still read here, as the windowed fallback would read them.

Logging-window effect (measured, stated in the assertions): vLLM logs one `SpecDecoding
metrics` line per ~10 s interval with work, covering that whole interval. Summed over
every line logged after the counter snapshot, the accepted/drafted counts equal the
counters' deltas exactly. Per level, peagle attributes every line overlapping the level's
window, so a line spanning the c=1/c=4 boundary counts for both levels: each level's
acceptance length is then a blend of its neighbour's. Measured on vLLM 0.31.0 (2 CPUs,
model-default temperature): counters 2.187, peagle's levels 2.215 and 2.175, i.e. within
0.03; 0.25 is allowed here. Output tokens: peagle's total plus the bench's unrecorded
pool-opening streams (1 token each) equals the counter's delta exactly.
"""

from __future__ import annotations

import json
import re
import time
import urllib.request
from pathlib import Path
from typing import Any

from peagle_sandbox.procs import group_alive
from peagle_sandbox.vllm_engine.install import EngineEnv
from tests.conformance.engine_proc import engine_counters as counters
from tests.e2e.test_sandbox_engine_host import Cli, descendants, port_free

P_EAGLE = "peagle-tiny-llama-p-eagle"
BASELINE = "peagle-tiny-llama-baseline"
SPEC_LINE = re.compile(r"SpecDecoding metrics: .*Accepted: (\d+) tokens, Drafted: (\d+) tokens")


def spec_lines(cli: Cli, name: str, since: float) -> list[tuple[int, int]]:
    logs = cli.client("logs")
    events = logs.filter_log_events(
        logGroupName=f"/aws/sagemaker/Endpoints/{name}", startTime=int(since * 1000)
    )["events"]
    return [
        (int(m.group(1)), int(m.group(2))) for e in events if (m := SPEC_LINE.search(e["message"]))
    ]


def ground_truth(cli: Cli) -> dict[str, dict[str, Any]]:
    """The sandbox's record of every stream it relayed, by request id."""
    url = f"{cli.state()['url']}/_peagle/ground-truth?endpoint={P_EAGLE}"
    with urllib.request.urlopen(url, timeout=10) as r:
        return {t["request_id"]: t for t in json.loads(r.read())["requests"]}


def wait_for_new_line(cli: Cli, name: str, since: float, timeout: float = 25.0) -> None:
    """vLLM logs the interval holding earlier traffic up to ~10 s later: wait for it."""
    deadline = time.monotonic() + timeout
    while not spec_lines(cli, name, since) and time.monotonic() < deadline:
        time.sleep(1.0)


def engine_of(cli: Cli, name: str) -> dict[str, Any]:
    [engine] = [e for e in cli.engines() if e["endpoint"] == name]
    return engine


def test_p_eagle_on_the_real_engine(sandbox: Cli, engine: EngineEnv) -> None:
    try:
        check_p_eagle(sandbox, engine)
    finally:  # one engine at a time, even after a failure
        sandbox("--sandbox", "delete", P_EAGLE, "--yes", code=None)


def check_p_eagle(sandbox: Cli, engine: EngineEnv) -> None:
    label = f"vllm {engine.version} (CPU, tiny model)"
    out = sandbox("--sandbox", "deploy", "tiny-llama", "--mode", "p-eagle", "-k", "3", "--yes")
    assert f"{P_EAGLE} is InService" in out.stdout
    logs = sandbox("--sandbox", "logs", P_EAGLE).stdout
    assert "peagle-entrypoint: exec vllm serve" in logs and "/ping answered 200" in logs
    took = re.search(r"/ping answered 200 after ([0-9.]+) s", logs)
    print(f"engine start-up (deploy -> /ping 200): {took and took.group(1)} s")
    eng = engine_of(sandbox, P_EAGLE)

    # A streamed invocation, through the SageMaker runtime's event stream.
    inv = sandbox("--sandbox", "invoke", P_EAGLE, "Explain parallel drafting.", "--json")
    first = json.loads(inv.stdout)
    assert first["usage"]["completion_tokens"] > 0 and first["text"]
    rt = sandbox.client("sagemaker-runtime")
    body = {"prompt": "hello", "max_tokens": 8, "stream": True}
    resp = rt.invoke_endpoint_with_response_stream(EndpointName=P_EAGLE, Body=json.dumps(body))
    assert resp["ResponseMetadata"]["HTTPHeaders"]["x-peagle-engine"] == label
    parts = b"".join(e["PayloadPart"]["Bytes"] for e in resp["Body"] if "PayloadPart" in e)
    assert parts.rstrip().endswith(b"data: [DONE]")

    # Let the interval holding those requests be logged, then snapshot the counters.
    wait_for_new_line(sandbox, P_EAGLE, time.time() - 30)
    time.sleep(11)
    before, since = counters(eng["url"]), time.time()
    seen_before = set(ground_truth(sandbox))
    bench = sandbox(
        "--sandbox",
        "bench",
        P_EAGLE,
        "-c",
        "1,4",
        "--requests",
        "8",
        "--max-tokens",
        "64",
        "--json",
    )
    doc = json.loads(bench.stdout)
    wait_for_new_line(sandbox, P_EAGLE, time.time())  # the interval holding the bench's end
    after = counters(eng["url"])
    delta = {k: after[k] - before[k] for k in after}

    # Never "measured on AWS": the product's label of the sandbox's real engine.
    assert doc["engine"] == label
    assert doc["label"] == f"SANDBOX (vllm {engine.version}, CPU, tiny model)"
    records = [r for lv in doc["levels"] for r in lv["records"]]
    assert len(records) == 16 and all(r["ok"] for r in records)
    # Token counts are the usage vLLM sent (the sandbox's record of each stream) ...
    truth = {k: v for k, v in ground_truth(sandbox).items() if k not in seen_before}
    for rec in records:
        assert rec["output_tokens"] == truth[rec["request_id"]]["completion_tokens"]
    # ... and with the bench's unrecorded pool-opening requests (one 1-token stream per
    # connection per level, `benchmarking/load.py: open_pool`) they are the engine's own counter.
    total = sum(lv["output_tokens"] for lv in doc["levels"])
    assert total == sum(r["output_tokens"] for r in records)
    recorded = {r["request_id"] for r in records}
    pool = [t for k, t in truth.items() if k not in recorded]
    assert len(pool) == 1 + 4 and sum(t["completion_tokens"] for t in pool) == len(pool)
    assert total + len(pool) == delta["generation_tokens_total"]

    # Acceptance comes from vLLM itself, per request (the plan sets the flag on 0.31.0;
    # tests/conformance/test_bench_acceptance.py checks it against the counters exactly) ...
    levels = [lv["acceptance"] for lv in doc["levels"]]
    assert all(a["status"] == "measured" and a["source"] == "per-request" for a in levels)
    assert all(a["mean_acceptance_length"] > 1.5 for a in levels)
    # ... whose counts, summed since the snapshot, are exactly the counters' deltas.
    lines = spec_lines(sandbox, P_EAGLE, since)
    assert sum(a for a, _ in lines) == delta["spec_decode_num_accepted_tokens_total"]
    assert sum(d for _, d in lines) == delta["spec_decode_num_draft_tokens_total"]
    from_counters = (
        1 + delta["spec_decode_num_accepted_tokens_total"] / delta["spec_decode_num_drafts_total"]
    )
    per_level = [round(a["mean_acceptance_length"], 3) for a in levels]
    print(f"acceptance length: counters {from_counters:.3f}, peagle per level {per_level}")
    for a in levels:  # the logging-window effect (module doc)
        assert abs(a["mean_acceptance_length"] - from_counters) < 0.25

    sandbox("--sandbox", "delete", P_EAGLE, "--yes")
    assert sandbox.engines() == [] and descendants(sandbox.state()["pid"]) == []
    assert not group_alive(eng["pid"]) and port_free(eng["port"])


def test_baseline_on_the_real_engine_then_nothing_is_left(sandbox: Cli) -> None:
    sandbox("--sandbox", "deploy", "tiny-llama", "--mode", "baseline", "--yes")
    eng = engine_of(sandbox, BASELINE)
    since = time.time()
    bench = sandbox(
        "--sandbox",
        "bench",
        BASELINE,
        "-c",
        "1",
        "--requests",
        "4",
        "--max-tokens",
        "32",
        "--json",
    )
    doc = json.loads(bench.stdout)
    [level] = doc["levels"]
    assert level["acceptance"]["mean_acceptance_length"] == 1.0
    assert counters(eng["url"])["spec_decode_num_drafts_total"] == 0  # no drafting at all
    assert 0 < level["output_tokens"] <= 4 * 32
    time.sleep(11)
    assert spec_lines(sandbox, BASELINE, since) == []  # vLLM logs none without drafting

    sandbox("--sandbox", "delete", BASELINE, "--yes")
    assert sandbox.engines() == [] and descendants(sandbox.state()["pid"]) == []
    assert not group_alive(eng["pid"]) and port_free(eng["port"])
    ls = sandbox("--sandbox", "ls", "--json").stdout
    assert "tiny-llama" not in ls
    assert not list(Path(sandbox.env["PEAGLE_STATE_DIR"], "engines").glob("*.pgid"))
