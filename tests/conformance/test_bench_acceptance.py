"""Exact per-level acceptance on the REAL vLLM engine (issue 27's conformance acceptance).

The sandbox's real engine (vLLM 0.31.0 CPU, the tiny aligned P-EAGLE pair, K=3, the CPU
sampling fix) serves a P-EAGLE deployment whose plan set
`SM_VLLM_PER_REQUEST_SPEC_DECODE_METRICS=summary`. `sm_peagle.bench(-c 1,4)` runs at
temperature 1 (so acceptance varies) in a child process with the sandbox's environment; its
`say` callback marks each level's start and end. There the child:

- lets another client (straight to the engine's OpenAI port) send a burst of traffic right
  before the level starts and right after it ends, outside the level's requests;
- waits until vLLM's counters settle and reads them from the engine's /metrics.

What must hold, from vLLM's own counters (`vllm:spec_decode_num_accepted_tokens_total`,
`..._num_draft_tokens_total` (drafted tokens) and `..._num_drafts_total` (spec steps), the
names in vLLM 0.31.0 v1/spec_decode/metrics.py `SpecDecodingProm`):

- each level's per-request accepted and drafted counts (and spec steps) sum EXACTLY to the
  counters' deltas over that level's window, and so over the whole run;
- each level's acceptance (`source: per-request`) is the counters' ratio over its window:
  1 + accepted / drafts, and accepted / drafted tokens;
- the other client's traffic moved the counters outside the windows and changed nothing;
- baseline on the same image still starts (the flag is never set without speculation).

One engine at a time (2 CPUs): P-EAGLE, then baseline, each deleted after use.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

from peagle_sandbox.vllm_engine.install import EngineEnv
from tests.e2e.test_sandbox_engine_host import Cli

P_EAGLE = "peagle-tiny-llama-p-eagle"
BASELINE = "peagle-tiny-llama-baseline"
COUNTERS = (
    "spec_decode_num_accepted_tokens_total",
    "spec_decode_num_draft_tokens_total",
    "spec_decode_num_drafts_total",
)

# The child: the SDK's bench, with the other client and the counter reads at each level's
# start and end (the `say` lines "level concurrency C: ..." and "c=C: N/N ok ...").
DRIVER = textwrap.dedent(
    """
    import json, re, sys, time, urllib.request
    import sm_peagle

    endpoint, engine_url, out = sys.argv[1], sys.argv[2], sys.argv[3]
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    NAMES = %(names)r

    def counters():
        text = opener.open(engine_url + "/metrics", timeout=10).read().decode()
        got = {}
        for name in NAMES:
            m = re.search(r"^vllm:" + name + r"{[^}]*} ([0-9.e+]+)$", text, re.M)
            got[name] = float(m.group(1)) if m else 0.0
        return got

    def settled():
        last = counters()
        while True:
            time.sleep(0.5)
            now = counters()
            if now == last:
                return now
            last = now

    model = json.loads(opener.open(engine_url + "/v1/models", timeout=10).read())
    model = model["data"][0]["id"]
    other = {"n": 0, "before": settled()}

    def other_client():
        # Another user of the same engine: two sampled completions, waited for.
        for _ in range(2):
            body = {"model": model, "prompt": "other traffic " * 8, "max_tokens": 48,
                    "temperature": 1.0}
            req = urllib.request.Request(engine_url + "/v1/completions",
                                         data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
            opener.open(req, timeout=300).read()
            other["n"] += 1

    marks = []

    def say(line):
        print(line, file=sys.stderr, flush=True)
        if line.startswith("level concurrency "):
            other_client()  # right before the level
            marks.append(("start", int(line.split()[2].rstrip(":")), settled()))
        elif re.match(r"c=\\d+: ", line):
            marks.append(("end", int(line[2:line.index(":")]), settled()))
            other_client()  # right after it

    result = sm_peagle.bench(endpoint, concurrency="1,4", requests=8, max_tokens=48,
                             temperature=1.0, acceptance_wait=0, say=say)
    json.dump({"doc": result.to_dict(), "marks": marks, "other_requests": other["n"],
               "other_before": other["before"], "after": settled()}, open(out, "w"))
    """
) % {"names": COUNTERS}


def engine_of(cli: Cli, name: str) -> dict[str, Any]:
    [engine] = [e for e in cli.engines() if e["endpoint"] == name]
    return engine


def sandbox_env(cli: Cli) -> dict[str, str]:
    """What `peagle sandbox env` exports, for the child's SDK (as a user's script gets it)."""
    env = {}
    for line in cli("sandbox", "env").stdout.splitlines():
        if line.startswith("export "):
            key, _, value = shlex.split(line[len("export ") :])[0].partition("=")
            env[key] = value
    return env


def test_per_request_acceptance_equals_the_engines_counters(
    sandbox: Cli, engine: EngineEnv, tmp_path: Path
) -> None:
    started = time.monotonic()
    try:
        check_p_eagle(sandbox, engine, tmp_path)
    finally:  # one engine at a time, even after a failure
        sandbox("--sandbox", "delete", P_EAGLE, "--yes", code=None)
    print(f"p-eagle part: {time.monotonic() - started:.0f} s")


def check_p_eagle(sandbox: Cli, engine: EngineEnv, tmp_path: Path) -> None:
    out = sandbox("--sandbox", "deploy", "tiny-llama", "--mode", "p-eagle", "-k", "3", "--yes")
    assert f"{P_EAGLE} is InService" in out.stdout
    logs = sandbox("--sandbox", "logs", P_EAGLE).stdout
    # The plan set the flag, and the engine took it (its config line says so).
    assert "per_request_spec_decode_metrics='summary'" in logs
    eng = engine_of(sandbox, P_EAGLE)
    child_env = {**sandbox.env, **sandbox_env(sandbox)}  # as a user's script would have it
    proc = subprocess.run(
        [sys.executable, "-c", DRIVER, P_EAGLE, eng["url"], str(tmp_path / "run.json")],
        env=child_env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    got = json.loads((tmp_path / "run.json").read_text())
    doc, marks = got["doc"], got["marks"]
    assert doc["label"] == f"SANDBOX (vllm {engine.version}, CPU, tiny model)"
    assert [(m[0], m[1]) for m in marks] == [("start", 1), ("end", 1), ("start", 4), ("end", 4)]
    assert got["other_requests"] == 2 * 4  # before and after each of the two levels

    windows = {c: (s, e) for (_, c, s), (_, _, e) in zip(marks[::2], marks[1::2], strict=True)}
    totals = dict.fromkeys(COUNTERS, 0.0)
    for level in doc["levels"]:
        c = level["concurrency"]
        start, end = windows[c]
        delta = {k: end[k] - start[k] for k in COUNTERS}
        records = level["records"]
        assert len(records) == 8 and all(r["ok"] and r["spec_decode"] for r in records)
        accepted = sum(r["spec_decode"]["num_accepted_draft_tokens"] for r in records)
        drafted = sum(r["spec_decode"]["num_draft_tokens"] for r in records)
        steps = sum(r["spec_decode"]["num_spec_steps"] for r in records)
        # Exactly the engine's counters over the level's own window.
        assert accepted == delta["spec_decode_num_accepted_tokens_total"], (c, delta)
        assert drafted == delta["spec_decode_num_draft_tokens_total"], (c, delta)
        assert steps == delta["spec_decode_num_drafts_total"], (c, delta)
        acc = level["acceptance"]
        assert acc["source"] == "per-request" and acc["status"] == "measured"
        assert (acc["accepted_tokens"], acc["drafted_tokens"], acc["drafts"]) == (
            accepted, drafted, steps,
        )  # fmt: skip
        ratio = (
            1
            + delta["spec_decode_num_accepted_tokens_total"] / delta["spec_decode_num_drafts_total"]
        )
        assert abs(acc["mean_acceptance_length"] - ratio) < 1e-12
        rate = (
            delta["spec_decode_num_accepted_tokens_total"]
            / delta["spec_decode_num_draft_tokens_total"]
        )
        assert abs(acc["draft_acceptance_rate"] - rate) < 1e-12
        assert 0.0 < rate < 1.0  # temperature 1: acceptance varies (neither none nor all)
        print(
            f"c={c}: acceptance length {acc['mean_acceptance_length']:.4f} = counters {ratio:.4f}"
        )
        for k in COUNTERS:
            totals[k] += delta[k]
    # Over the whole run too; the other client's traffic moved the counters outside the
    # levels' windows (it drafted), and none of it is in peagle's numbers.
    whole = [r for lv in doc["levels"] for r in lv["records"]]
    assert (
        sum(r["spec_decode"]["num_accepted_draft_tokens"] for r in whole)
        == totals["spec_decode_num_accepted_tokens_total"]
    )
    assert (
        sum(r["spec_decode"]["num_draft_tokens"] for r in whole)
        == totals["spec_decode_num_draft_tokens_total"]
    )
    outside = (
        got["after"]["spec_decode_num_draft_tokens_total"]
        - got["other_before"]["spec_decode_num_draft_tokens_total"]
        - totals["spec_decode_num_draft_tokens_total"]
    )
    assert outside > 0  # the other client's drafts, all outside the windows


def test_baseline_on_the_same_image_still_starts(sandbox: Cli) -> None:
    try:
        out = sandbox("--sandbox", "deploy", "tiny-llama", "--mode", "baseline", "--yes")
        assert f"{BASELINE} is InService" in out.stdout
        logs = sandbox("--sandbox", "logs", BASELINE).stdout
        assert "per_request_spec_decode_metrics='none'" in logs  # never set without drafts
        inv = json.loads(sandbox("--sandbox", "invoke", BASELINE, "hello", "--json").stdout)
        assert inv["usage"]["completion_tokens"] > 0 and inv.get("spec_decode") is None
    finally:
        sandbox("--sandbox", "delete", BASELINE, "--yes", code=None)
