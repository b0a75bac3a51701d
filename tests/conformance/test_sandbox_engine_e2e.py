"""End to end on the REAL vLLM engine through the sandbox (`--engine vllm`), with the tiny
P-EAGLE pair (aligned head, K=3, the CPU sampling fix) and its baseline, cross-checked
against the engine's own Prometheus counters (`/metrics` on the engine port, which the
sandbox can reach and SageMaker cannot) and its own log.

Why one module: each deploy starts a fresh vLLM engine, 60-90 s of a 2-CPU machine, and CI
must stay under 30 minutes. So P-EAGLE is deployed ONCE (class `TestPEagle`, its tests in
order on that one engine), deleted, then baseline ONCE (`TestBaseline`): one engine at a
time, each class's fixture deleting its endpoint even after a failure and then asserting
that no process, port or resource is left. Since the engine is shared, no test assumes a
fresh engine: each takes counter deltas between snapshots read after the counters settle.

What is checked on P-EAGLE:

- Per-request acceptance (issue 27). peagle's plan sets
  SM_VLLM_PER_REQUEST_SPEC_DECODE_METRICS=summary for the tiny pair on this engine's version;
  the container entrypoint turns it into `--per-request-spec-decode-metrics summary` (the DLC
  rule); vLLM then returns `metrics.speculative_decoding` with the stream's final usage
  chunk, which `invoke --json` carries. For one request alone on the engine, its counts are
  exactly the deltas of the engine's counters: accepted tokens, drafted tokens, drafts
  (= verify steps).
- Exact per-level acceptance (issue 27's conformance acceptance). `sm_peagle.bench(-c 1,4)`
  runs at temperature 1 (so acceptance varies) in a child process with the sandbox's
  environment; its `say` callback marks each level's start and end. There the child lets
  another client (straight to the engine's OpenAI port) send a burst of traffic right before
  the level starts and right after it ends, and reads the counters once they settle. Each
  level's per-request accepted and drafted counts (and spec steps) sum EXACTLY to the
  counters' deltas over its window (`vllm:spec_decode_num_accepted_tokens_total`,
  `..._num_draft_tokens_total` (drafted tokens), `..._num_drafts_total` (spec steps): vLLM
  0.31.0 v1/spec_decode/metrics.py `SpecDecodingProm`); its acceptance is the counters'
  ratio; the other client's traffic moved the counters outside the windows only.
- `peagle bench -c 1,4` through the CLI: token counts vs the sandbox's ground truth and the
  generation counter, and the `SpecDecoding metrics` log lines vs the counters.
  Logging-window effect (measured, stated in the assertions): vLLM logs one `SpecDecoding
  metrics` line per stats interval with work (2 s here: `STATS_INTERVAL_S`, the sandbox's
  `--metrics-interval`; 10 s by default), covering that whole interval. Summed over
  every line logged after the counter snapshot, the accepted/drafted counts equal the
  counters' deltas exactly. Per level, the windowed fallback attributes every line
  overlapping the level's window, so a line spanning the c=1/c=4 boundary counts for both
  levels: each level's acceptance length is then a blend of its neighbour's. Measured on
  vLLM 0.31.0 (2 CPUs, model-default temperature): counters 2.187, peagle's levels 2.215
  and 2.175, i.e. within 0.03; 0.25 is allowed here. Output tokens: peagle's total plus the
  bench's unrecorded pool-opening streams (1 token each) equals the counter's delta exactly.
- Bench provenance (issue 28): the result records the model runner and the rejection method
  the engine actually used, read here from its own log with vLLM 0.31.0's words: "Model
  Runner V2 requires Triton; using the V1 model runner instead." or "Using V2 Model Runner";
  the rejection method from the engine's `non-default args` line or, when that line does not
  set it, vLLM's default as the installed vLLM's own `config/speculative.py` declares it.
  Whether that is lossy is the facts' rule (`sm_peagle.vllm.lossy.lossy_reason`).

Speculation health (issue 37): the aligned pair is deployed with `--monitor`, and so is
the random (unaligned) head (`TestUnalignedHead`, the one more engine this adds: about a
minute and a half of CI). The metric filters and alarm evaluation of the sandbox's AWS side
(the moto harness) judge each endpoint from the real engine's own SpecDecoding lines: the
AcceptedTokens and DraftedTokens sums equal the lines' counts, the unaligned head's alarm
goes to ALARM (3 of 5 periods below 1 + 0.05 x (1 + K) = 1.2) while the aligned one's is
OK, `peagle health` says off/degraded and paying, and an endpoint with no traffic says "no
data" (its alarm INSUFFICIENT_DATA: TreatMissingData=missing). Periods with data are made
by a burst, a bounded wait for vLLM's next line (one stats interval), then `sandbox clock
advance 60s` (health_traffic.py).

Baseline on the same image still starts: the plan never gives it the flag, which vLLM
refuses without a speculative config; and vLLM itself does refuse the flag there, as the
source facts say (`config/vllm.py`): a direct `vllm serve`, no sandbox, run last.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from peagle_sandbox.procs import group_alive
from peagle_sandbox.vllm_engine.install import EngineEnv
from sm_peagle.vllm.lossy import lossy_reason
from tests.conformance.engine_proc import STATS_INTERVAL_S, ServeProcess
from tests.conformance.engine_proc import engine_counters as counters
from tests.conformance.health_traffic import (
    PERIOD_S,
    advance,
    alarm,
    burst_until_line,
    health,
    metric_sums,
    sandbox_epoch,
    spec_events,
)
from tests.conformance.rollout_cases import canary_completes, canary_rolls_back
from tests.conformance.rollout_traffic import sandbox_env
from tests.e2e.clock_gc import check_gc_sees_them_age
from tests.e2e.test_sandbox_engine_host import Cli, assert_nothing_left, port_free
from tests.unit.test_bench_schema import keys_and_strings

P_EAGLE = "peagle-tiny-llama-p-eagle"
BASELINE = "peagle-tiny-llama-baseline"
UNALIGNED = "peagle-tiny-random-head"
RANDOM_HEAD = "s3://peagle-sandbox-models/heads/p-eagle-random/"
VAR = "SM_VLLM_PER_REQUEST_SPEC_DECODE_METRICS"
SPEC_LINE = re.compile(r"SpecDecoding metrics: .*Accepted: (\d+) tokens, Drafted: (\d+) tokens")
COUNTERS = (
    "spec_decode_num_accepted_tokens_total",
    "spec_decode_num_draft_tokens_total",
    "spec_decode_num_drafts_total",
)


@dataclass(frozen=True)
class Deployed:
    """One endpoint on the real engine: the deploy's output and the sandbox's engine record."""

    name: str
    deploy: subprocess.CompletedProcess[str]
    engine: dict[str, Any]


def engine_of(cli: Cli, name: str) -> dict[str, Any]:
    [engine] = [e for e in cli.engines() if e["endpoint"] == name]
    return engine


def settled(url: str) -> dict[str, float]:
    """The counters once two reads 0.5 s apart agree: the engine shared by this module's
    tests may still be publishing an earlier request's last step."""
    last = counters(url)
    while True:
        time.sleep(0.5)
        now = counters(url)
        if now == last:
            return now
        last = now


def spec_lines(cli: Cli, name: str, since: float) -> list[tuple[int, int]]:
    logs = cli.client("logs")
    events = logs.filter_log_events(
        logGroupName=f"/aws/sagemaker/Endpoints/{name}", startTime=int(since * 1000)
    )["events"]
    return [
        (int(m.group(1)), int(m.group(2))) for e in events if (m := SPEC_LINE.search(e["message"]))
    ]


def wait_for_new_line(cli: Cli, name: str, since: float, timeout: float = 25.0) -> None:
    """vLLM logs the interval holding earlier traffic up to one stats interval later: wait
    for it."""
    deadline = time.monotonic() + timeout
    while not spec_lines(cli, name, since) and time.monotonic() < deadline:
        time.sleep(1.0)


def ground_truth(cli: Cli) -> dict[str, dict[str, Any]]:
    """The sandbox's record of every stream it relayed, by request id."""
    url = f"{cli.state()['url']}/_peagle/ground-truth?endpoint={P_EAGLE}"
    with urllib.request.urlopen(url, timeout=10) as r:
        return {t["request_id"]: t for t in json.loads(r.read())["requests"]}


def deployed(cli: Cli, name: str, *deploy_args: str) -> Iterator[Deployed]:
    """Deploy, yield, then delete even after a failure; then nothing may be left."""
    engine: dict[str, Any] | None = None
    try:
        out = cli("--sandbox", "deploy", "tiny-llama", *deploy_args, "--yes")
        engine = engine_of(cli, name)
        yield Deployed(name, out, engine)
    finally:  # one engine at a time, even after a failure
        gone = cli("--sandbox", "delete", name, "--yes", code=None)
    assert gone.returncode == 0 and engine is not None, gone.stderr
    assert_nothing_left(cli)  # no engine, no process, no pgid file, no resource of any kind
    assert not group_alive(engine["pid"]) and port_free(engine["port"])
    assert "tiny-llama" not in cli("--sandbox", "ls", "--json").stdout


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


def vllm_default_rejection_method(engine: EngineEnv) -> str:
    [source] = engine.home.glob(
        f"venv-{engine.version}/lib/python3*/site-packages/vllm/config/speculative.py"
    )
    m = re.search(r'^\s*rejection_sample_method: \w+ = "(\w+)"', source.read_text(), re.M)
    assert m, "vLLM's speculative config declares no rejection_sample_method default"
    return m.group(1)


@pytest.fixture(scope="class")
def p_eagle(sandbox: Cli) -> Iterator[Deployed]:
    # Two instances: the rollouts at the end of the class canary one of them (issue 38).
    yield from deployed(sandbox, P_EAGLE, "--mode", "p-eagle", "-k", "3", "--monitor",
                        "--instance-count", "2")  # fmt: skip


@pytest.fixture(scope="class")
def unaligned(sandbox: Cli) -> Iterator[Deployed]:
    """The random (unaligned) P-EAGLE head on the same target: it serves, and drafts
    tokens the target (almost) never accepts."""
    yield from deployed(sandbox, UNALIGNED, "--mode", "p-eagle", "-k", "3", "--name", UNALIGNED,
                        "--drafter", RANDOM_HEAD, "--monitor")  # fmt: skip


@pytest.fixture(scope="class")
def baseline(sandbox: Cli) -> Iterator[Deployed]:
    yield from deployed(sandbox, BASELINE, "--mode", "baseline")


class TestPEagle:
    """The tiny P-EAGLE pair (K=3), deployed once; the tests run in this order on it (the
    rollouts last: they replace its engine)."""

    def test_deploy_sets_the_flag_and_vllm_takes_it(self, sandbox: Cli, p_eagle: Deployed) -> None:
        assert f"{P_EAGLE} is InService" in p_eagle.deploy.stdout
        logs = sandbox("--sandbox", "logs", P_EAGLE).stdout
        assert "peagle-entrypoint: exec vllm serve" in logs and "/ping answered 200" in logs
        took = re.search(r"/ping answered 200 after ([0-9.]+) s", logs)
        print(f"engine start-up (deploy -> /ping 200): {took and took.group(1)} s")
        sm = sandbox.client("sagemaker")
        config = sm.describe_endpoint(EndpointName=P_EAGLE)["EndpointConfigName"]
        model = sm.describe_endpoint_config(EndpointConfigName=config)["ProductionVariants"][0]
        described = sm.describe_model(ModelName=model["ModelName"])
        assert described["PrimaryContainer"]["Environment"][VAR] == "summary"
        assert "--per-request-spec-decode-metrics summary" in logs  # the entrypoint's exec line
        assert "'per_request_spec_decode_metrics': 'summary'" in logs  # vLLM's own echo
        assert "per_request_spec_decode_metrics='summary'" in logs  # the engine's config line

    def test_a_streamed_invocation_through_the_runtime(
        self, sandbox: Cli, engine: EngineEnv, p_eagle: Deployed
    ) -> None:
        inv = sandbox("--sandbox", "invoke", P_EAGLE, "Explain parallel drafting.", "--json")
        first = json.loads(inv.stdout)
        assert first["usage"]["completion_tokens"] > 0 and first["text"]
        rt = sandbox.client("sagemaker-runtime")
        body = {"prompt": "hello", "max_tokens": 8, "stream": True}
        resp = rt.invoke_endpoint_with_response_stream(EndpointName=P_EAGLE, Body=json.dumps(body))
        label = f"vllm {engine.version} (CPU, tiny model)"
        assert resp["ResponseMetadata"]["HTTPHeaders"]["x-peagle-engine"] == label
        parts = b"".join(e["PayloadPart"]["Bytes"] for e in resp["Body"] if "PayloadPart" in e)
        assert parts.rstrip().endswith(b"data: [DONE]")

    def test_one_requests_acceptance_is_the_counters_delta(
        self, sandbox: Cli, p_eagle: Deployed
    ) -> None:
        url = str(p_eagle.engine["url"])
        before = settled(url)  # the one request alone on the engine
        out = sandbox("--sandbox", "invoke", P_EAGLE, "Explain parallel drafting.",
                      "--max-tokens", "48", "--temperature", "1", "--json")  # fmt: skip
        after = settled(url)
        spec = json.loads(out.stdout)["spec_decode"]
        delta = {k: after[k] - before[k] for k in after}
        print(f"per-request {spec}; counters' deltas {delta}")
        assert spec["num_accepted_draft_tokens"] == delta["spec_decode_num_accepted_tokens_total"]
        assert spec["num_draft_tokens"] == delta["spec_decode_num_draft_tokens_total"]
        assert spec["num_spec_steps"] == delta["spec_decode_num_drafts_total"]
        assert sum(spec["acceptance_histogram"]) == spec["num_spec_steps"]
        assert spec["num_spec_tokens"] == 3 and len(spec["acceptance_histogram"]) == 4
        steps, accepted = spec["num_spec_steps"], spec["num_accepted_draft_tokens"]
        assert spec["mean_acceptance_length"] == pytest.approx(1 + accepted / steps)

    def test_a_human_invoke_prints_the_acceptance_line(
        self, sandbox: Cli, p_eagle: Deployed
    ) -> None:
        human = sandbox("--sandbox", "invoke", P_EAGLE, "Hello.", "--max-tokens", "32")
        assert "tokens/step" in human.stderr and "of drafts), per request" in human.stderr

    def test_bench_numbers_against_the_counters_ground_truth_and_log(
        self, sandbox: Cli, engine: EngineEnv, p_eagle: Deployed
    ) -> None:
        # Let the interval holding the earlier tests' requests be logged, then snapshot.
        wait_for_new_line(sandbox, P_EAGLE, time.time() - 30)
        time.sleep(STATS_INTERVAL_S + 1)
        url = str(p_eagle.engine["url"])
        before, since = settled(url), time.time()
        seen_before = set(ground_truth(sandbox))
        bench = sandbox("--sandbox", "bench", P_EAGLE, "-c", "1,4", "--requests", "8",
                        "--max-tokens", "64", "--json")  # fmt: skip
        doc = json.loads(bench.stdout)
        wait_for_new_line(sandbox, P_EAGLE, time.time())  # the interval holding the bench's end
        after = settled(url)
        delta = {k: after[k] - before[k] for k in after}

        # Never "measured on AWS": the product's label of the sandbox's real engine.
        assert doc["engine"] == f"vllm {engine.version} (CPU, tiny model)"
        assert doc["label"] == f"SANDBOX (vllm {engine.version}, CPU, tiny model)"
        # Issue 33: no `simulated` key or value anywhere in a real engine's document (up to
        # peagle.bench/2 it said `simulated: true`, meaning "the sandbox"); the engine that
        # answered is named (above).
        assert [t for t in keys_and_strings(doc) if "simulated" in t.lower()] == []
        records = [r for lv in doc["levels"] for r in lv["records"]]
        assert len(records) == 16 and all(r["ok"] for r in records)
        # Token counts are the usage vLLM sent (the sandbox's record of each stream) ...
        truth = {k: v for k, v in ground_truth(sandbox).items() if k not in seen_before}
        for rec in records:
            assert rec["output_tokens"] == truth[rec["request_id"]]["completion_tokens"]
        # ... and with the bench's unrecorded pool-opening requests (one 1-token stream per
        # connection per level, `benchmarking/load.py: open_pool`) they are the engine's counter.
        total = sum(lv["output_tokens"] for lv in doc["levels"])
        assert total == sum(r["output_tokens"] for r in records)
        recorded = {r["request_id"] for r in records}
        pool = [t for k, t in truth.items() if k not in recorded]
        assert len(pool) == 1 + 4 and sum(t["completion_tokens"] for t in pool) == len(pool)
        assert total + len(pool) == delta["generation_tokens_total"]

        # Acceptance comes from vLLM itself, per request (the plan sets the flag on 0.31.0;
        # the per-level test below checks it against the counters exactly) ...
        levels = [lv["acceptance"] for lv in doc["levels"]]
        assert all(a["status"] == "measured" and a["source"] == "per-request" for a in levels)
        assert all(a["mean_acceptance_length"] > 1.5 for a in levels)
        # ... and the log lines, summed since the snapshot, are exactly the counters' deltas.
        lines = spec_lines(sandbox, P_EAGLE, since)
        assert sum(a for a, _ in lines) == delta["spec_decode_num_accepted_tokens_total"]
        assert sum(d for _, d in lines) == delta["spec_decode_num_draft_tokens_total"]
        from_counters = (
            1
            + delta["spec_decode_num_accepted_tokens_total"] / delta["spec_decode_num_drafts_total"]
        )
        per_level = [round(a["mean_acceptance_length"], 3) for a in levels]
        print(f"acceptance length: counters {from_counters:.3f}, peagle per level {per_level}")
        for a in levels:  # the logging-window effect (module doc)
            assert abs(a["mean_acceptance_length"] - from_counters) < 0.25

    def test_per_level_acceptance_equals_the_engines_counters(
        self, sandbox: Cli, engine: EngineEnv, p_eagle: Deployed, tmp_path: Path
    ) -> None:
        child_env = {**sandbox.env, **sandbox_env(sandbox)}  # as a user's script would have it
        url, out = str(p_eagle.engine["url"]), str(tmp_path / "run.json")
        proc = subprocess.run(
            [sys.executable, "-c", DRIVER, P_EAGLE, url, out],
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
            ratio = 1 + (
                delta["spec_decode_num_accepted_tokens_total"]
                / delta["spec_decode_num_drafts_total"]
            )
            assert abs(acc["mean_acceptance_length"] - ratio) < 1e-12
            rate = (
                delta["spec_decode_num_accepted_tokens_total"]
                / delta["spec_decode_num_draft_tokens_total"]
            )
            assert abs(acc["draft_acceptance_rate"] - rate) < 1e-12
            assert 0.0 < rate < 1.0  # temperature 1: acceptance varies (neither none nor all)
            length = acc["mean_acceptance_length"]
            print(f"c={c}: acceptance length {length:.4f} = counters {ratio:.4f}")
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

    def test_bench_records_the_runner_and_rejection_method_used(
        self, sandbox: Cli, engine: EngineEnv, p_eagle: Deployed
    ) -> None:
        bench = sandbox("--sandbox", "bench", P_EAGLE, "-c", "1", "--requests", "2",
                        "--max-tokens", "16", "--acceptance-wait", "0", "--json")  # fmt: skip
        run = json.loads(bench.stdout)["engine_run"]
        logs = sandbox("--sandbox", "logs", P_EAGLE).stdout
        if "Using V2 Model Runner" in logs:
            runner = "V2"
        else:
            assert "using the V1 model runner instead" in logs, logs[-3000:]
            runner = "V1"
        assert run["model_runner"] == runner
        [args] = [ln for ln in logs.splitlines() if "non-default args:" in ln][-1:]
        spec = re.search(r"'speculative_config': (\{[^}]*\})", args)
        assert spec, args
        logged = re.search(r"'rejection_sample_method': '(\w+)'", spec.group(1))
        method = logged.group(1) if logged else vllm_default_rejection_method(engine)
        assert run["rejection_sample_method"] == method
        assert run["rejection_sample_method_from"] == (
            "engine log" if logged else f"vLLM {engine.version} default (not set)"
        )
        assert run["lossy"] is (
            lossy_reason({"rejection_sample_method": method}, engine.version) is not None
        )
        print(f"engine_run: {run['model_runner']}, {method}, lossy {run['lossy']}")

    def test_health_pays_and_its_alarm_stays_ok(self, sandbox: Cli, p_eagle: Deployed) -> None:
        """The aligned head, deployed with `--monitor` (issue 37): after the bench traffic
        above and a greedy burst, the alarm judged from the engine's lines is OK and
        `health` says paying. Last in the class: it moves the sandbox clock."""
        lines = burst_until_line(sandbox, P_EAGLE)
        advance(sandbox, 2 * PERIOD_S)
        assert lines and alarm(sandbox, P_EAGLE)["StateValue"] == "OK"
        doc = health(sandbox, P_EAGLE)
        assert doc["verdict"] == "paying", doc
        assert doc["source"] == "metric" and doc["acceptance_length"] > doc["threshold"] == 1.2

    def test_a_canary_to_the_random_head_rolls_back(self, sandbox: Cli, p_eagle: Deployed) -> None:
        """Issue 38: rolled back by the speculation alarm; the old engine serves after."""
        canary_rolls_back(sandbox, p_eagle.name, RANDOM_HEAD)

    def test_a_canary_to_the_aligned_head_at_k2_completes(
        self, sandbox: Cli, p_eagle: Deployed
    ) -> None:
        """Issue 38: completes; the new engine replaces the old one."""
        canary_completes(sandbox, p_eagle.name)


class TestUnalignedHead:
    """Speculation health (issue 37) where it matters: the random head, deployed with
    `--monitor`, K=3. Its alarm is judged by the metric filters and the alarm evaluation of
    the sandbox's AWS side, from this real engine's own SpecDecoding lines."""

    def test_no_traffic_is_no_data(self, sandbox: Cli, unaligned: Deployed) -> None:
        advance(sandbox, 6 * PERIOD_S)  # five whole periods, none with a line
        assert alarm(sandbox, UNALIGNED)["StateValue"] == "INSUFFICIENT_DATA"
        doc = health(sandbox, UNALIGNED)
        assert doc["verdict"] == "no data", doc
        assert doc["samples"] == 0

    def test_the_alarm_fires_from_the_engines_own_lines(
        self, sandbox: Cli, unaligned: Deployed
    ) -> None:
        start = sandbox_epoch(sandbox)
        lines = []
        for _ in range(3):  # the default alarm: 3 of 5 periods below the threshold
            lines += burst_until_line(sandbox, UNALIGNED)
            advance(sandbox, PERIOD_S)
        advance(sandbox, PERIOD_S)  # the last line's period is complete
        assert spec_events(sandbox, UNALIGNED, start) == lines  # every line the bursts caused
        counts = [tuple(map(int, SPEC_LINE.search(e["message"]).groups())) for e in lines]
        accepted, drafted = sum(a for a, _ in counts), sum(d for _, d in counts)
        assert drafted > 0 and accepted / drafted < 0.05, counts  # random drafts: rejected
        # What the metric filters published is exactly what the engine wrote.
        sums = metric_sums(sandbox, UNALIGNED, start - PERIOD_S, sandbox_epoch(sandbox))
        assert sums == {"AcceptedTokens": accepted, "DraftedTokens": drafted}
        found = alarm(sandbox, UNALIGNED)
        assert found["StateValue"] == "ALARM", found
        assert "less than the threshold (1.2)" in found["StateReason"]  # 1 + 0.05 x (1 + 3)
        doc = health(sandbox, UNALIGNED)
        assert doc["verdict"] in ("off", "degraded"), doc
        assert doc["source"] == "metric" and doc["alarm"]["state"] == "ALARM"
        status = json.loads(sandbox("--sandbox", "status", UNALIGNED, "--json").stdout)
        assert status["speculation"]["alarm_state"] == "ALARM"


class TestBaseline:
    """Baseline (no speculative config) on the same image, deployed once after P-EAGLE."""

    def test_starts_without_the_flag(self, sandbox: Cli, baseline: Deployed) -> None:
        assert f"{BASELINE} is InService" in baseline.deploy.stdout
        logs = sandbox("--sandbox", "logs", BASELINE).stdout
        assert "per-request-spec-decode-metrics" not in logs  # not on the exec line
        assert "per_request_spec_decode_metrics='none'" in logs  # the engine's config line
        doc = json.loads(
            sandbox(
                "--sandbox", "invoke", BASELINE, "Hello.", "--max-tokens", "16", "--json"
            ).stdout
        )
        assert doc["usage"]["completion_tokens"] > 0 and doc["spec_decode"] is None

    def test_bench_drafts_nothing_and_logs_no_spec_lines(
        self, sandbox: Cli, baseline: Deployed
    ) -> None:
        since = time.time()
        bench = sandbox("--sandbox", "bench", BASELINE, "-c", "1", "--requests", "4",
                        "--max-tokens", "32", "--json")  # fmt: skip
        [level] = json.loads(bench.stdout)["levels"]
        assert level["acceptance"]["mean_acceptance_length"] == 1.0
        assert counters(baseline.engine["url"])["spec_decode_num_drafts_total"] == 0  # none
        assert 0 < level["output_tokens"] <= 4 * 32
        time.sleep(STATS_INTERVAL_S + 1)
        assert spec_lines(sandbox, BASELINE, since) == []  # vLLM logs none without drafting


def test_vllm_itself_refuses_the_flag_without_speculation(
    engine: EngineEnv, tmp_path: Path
) -> None:
    """What the plan and the entrypoint guard against, seen on the engine (source facts).
    Last in the module, after both endpoints are gone: one engine at a time."""
    with ServeProcess(
        engine,
        str(engine.models / "tiny-llama"),
        "--per-request-spec-decode-metrics",
        "summary",
        log_path=tmp_path / "serve.log",
    ) as srv:
        with pytest.raises(RuntimeError, match="exited"):
            srv.wait_ready(timeout=300)
        assert "requires speculative decoding" in (tmp_path / "serve.log").read_text()


def test_gc_min_age_sees_resources_two_sandbox_days_old(sandbox: Cli) -> None:
    """gc judges ages on AWS's clock on the real engine's sandbox too (issue 36): after
    `peagle sandbox clock advance 2d`, `gc --min-age 1d --dry-run` lists what it skipped as
    young before. After every engine test: the clock then stays two days ahead."""
    check_gc_sees_them_age(sandbox, sandbox.client("sagemaker"), sandbox.state()["role_arn"])


def test_sandbox_stop_labels_what_it_ran(engine: EngineEnv, sandbox: Cli) -> None:
    """`sandbox stop --json` of the real engine's sandbox says it was the real engine (its
    result was labelled SIMULATED whatever ran). Last: it stops the module's sandbox."""
    doc = json.loads(sandbox("sandbox", "stop", "--json").stdout)
    assert doc["stopped"] is True
    assert doc["label"] == f"SANDBOX (vllm {engine.version}, CPU, tiny model)"
