"""Both acceptance paths end to end, through the installed CLI against the SIMULATED
sandbox, judged by the sandbox's ground truth (every simulated step's accepted and drafted
tokens, by request id):

- on an image whose vLLM reports acceptance per request (the facts' first version with
  `--per-request-spec-decode-metrics`) the plan sets
  `SM_VLLM_PER_REQUEST_SPEC_DECODE_METRICS=summary` and each level's acceptance is
  `per-request`: exactly the level's own steps;
- on the newest published image older than that it is `windowed`, from the SpecDecoding
  log lines, and says on stderr and in the document that those lines reach outside the
  level (the sandbox logs one every 2 s here; a level lasts less).
"""

from __future__ import annotations

import json
import urllib.request

import pytest

from sm_peagle.catalog.images import classic_versions
from sm_peagle.vllm.versions import per_request_metrics_min
from tests.e2e.test_sweep import peagle, sandbox_env, schema_validator

pytestmark = pytest.mark.e2e

NEW, OLD = "acc-new", "acc-old"
FIRST = per_request_metrics_min()  # from the vLLM source facts
assert FIRST is not None, "the vLLM source facts name no version with the flag"
# A deploy needs an image AWS published: the newest one before the flag.
BEFORE = max(v for v in classic_versions() if v < FIRST)


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("acceptance-sources")
    env = sandbox_env(tmp)
    started = peagle(env, "sandbox", "start", "--creating-seconds", "1",
                     "--metrics-interval", "2", "--json")  # fmt: skip
    assert started.returncode == 0, started.stderr
    info = json.loads(started.stdout)
    try:
        for name, version in ((NEW, FIRST), (OLD, BEFORE)):
            done = peagle(env, "--sandbox", "deploy", "tiny-llama", "--mode", "p-eagle", "-k",
                          "3", "--vllm-version", str(version), "--name", name, "--yes")  # fmt: skip
            assert done.returncode == 0, done.stderr[-2000:]
        yield env, info
    finally:
        peagle(env, "sandbox", "stop")


def truth(url: str, endpoint: str) -> dict[str, dict]:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(f"{url}/_peagle/ground-truth?endpoint={endpoint}", timeout=10) as resp:
        return {r["request_id"]: r for r in json.loads(resp.read())["requests"]}


def bench(env: dict, name: str) -> tuple[dict, str]:
    done = peagle(env, "--sandbox", "bench", name, "-c", "1,2", "--requests", "4",
                  "--max-tokens", "32", "--acceptance-wait", "6s", "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    doc = json.loads(done.stdout)
    schema_validator().validate(doc)
    return doc, done.stderr


def test_a_new_image_gets_exact_per_request_acceptance(sandbox) -> None:
    env, info = sandbox
    doc, err = bench(env, NEW)
    gt = truth(info["url"], NEW)
    for level in doc["levels"]:
        acc = level["acceptance"]
        assert acc["source"] == "per-request" and acc.get("warning") is None
        # The level's own steps, as the sandbox recorded them (pool-opening requests
        # are not among the level's records, so they are not counted).
        steps = [s for r in level["records"] for s in gt[r["request_id"]]["steps"] if s["drafted"]]
        accepted = sum(s["accepted"] for s in steps)
        drafted = sum(s["drafted"] for s in steps)
        assert (acc["accepted_tokens"], acc["drafted_tokens"], acc["drafts"]) == (
            accepted, drafted, len(steps),
        )  # fmt: skip
        assert acc["mean_acceptance_length"] == pytest.approx(1 + accepted / len(steps))
        assert acc["draft_acceptance_rate"] == pytest.approx(accepted / drafted)
        c = level["concurrency"]
        assert f"c={c}: 4/4 ok" in err and "(per request)" in err
    assert "windowed acceptance" not in err


def test_an_old_image_is_windowed_and_warns_about_other_traffic(sandbox) -> None:
    env, _ = sandbox
    doc, err = bench(env, OLD)
    assert doc["vllm_version"] == str(BEFORE)
    for level in doc["levels"]:
        acc = level["acceptance"]
        assert acc["source"] == "windowed" and acc["status"] == "measured", acc
        assert acc["covered_from"] < level["started_at"] or acc["covered_to"] > level["ended_at"]
        assert acc["warning"].startswith("windowed acceptance: the ")
        c = level["concurrency"]
        assert f"warning: c={c}: windowed acceptance: the " in err
        assert all(r["spec_decode"] is None for r in level["records"])
