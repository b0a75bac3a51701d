"""Issue 18's `peagle adopt` end to end on the sandbox (SIMULATED engine), through the real
CLI in subprocesses: an endpoint made with raw boto3 calls shaped like JumpStart's
`lmi-optimized` deployment of GPT-OSS-20B (K=3, the bundled spec's requests, built by
tests/integration/test_adopt.py's helper) is served as JumpStart configured it; `adopt
--dry-run` shows the spec and the verdict that K=3 is below the head's recommended K;
without --yes and without a TTY nothing is tagged; `adopt --yes` tags it; `invoke` and
`bench` work on it (mode/K from the adopted spec, acceptance from the endpoint's own
SpecDecoding log lines); `update -k 7` makes the engine really serve K=7; `diff` against
the adopted spec file shows nothing, then only K; `delete` leaves nothing.

What the engine served is read from the sandbox's ground truth (the mode and K of each
request, the draft tokens of each step), never from peagle's own output.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from sm_peagle.planning.spec.loading import load_spec
from tests.e2e.test_sandbox import Sandbox
from tests.integration.test_adopt import CONFIG, MODEL, NAME, create_jumpstart_endpoint

pytestmark = pytest.mark.e2e

SCHEMA_FILE = Path(__file__).resolve().parents[2] / "docs" / "peagle.bench-4.schema.json"
# The P-EAGLE head's model card (amazon/GPT-OSS-20B-P-EAGLE) recommends K=7; JumpStart's
# lmi-optimized config runs K=3 (the bundled spec's SM_VLLM_SPECULATIVE_CONFIG).
RECOMMENDED_K, JUMPSTART_K = 7, 3
SPEC_LINE = re.compile(r"SpecDecoding metrics:.*Accepted: (\d+) tokens, Drafted: (\d+)")


@pytest.fixture(scope="module")
def sb(tmp_path_factory: pytest.TempPathFactory) -> Any:
    sb = Sandbox(tmp_path_factory.mktemp("sandbox-adopt"))
    sb.cli("sandbox", "start", "--creating-seconds", "1", "--metrics-interval", "1")
    sb.state = json.loads(sb.cli("sandbox", "status", "--json").stdout)
    env = {
        "AWS_ENDPOINT_URL": sb.url,
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_CONFIG_FILE": "/dev/null",
        "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
    }
    with pytest.MonkeyPatch.context() as mp:  # the helper's boto3 clients reach the sandbox
        for key, value in env.items():
            mp.setenv(key, value)
        create_jumpstart_endpoint(sb.state["role_arn"])
    sm = sb.client("sagemaker")
    deadline = time.monotonic() + 60  # a bound on a stuck endpoint, not a timing claim
    while sm.describe_endpoint(EndpointName=NAME)["EndpointStatus"] != "InService":
        assert time.monotonic() < deadline
        time.sleep(0.2)
    yield sb
    sb.cli("sandbox", "stop", check=False)


def peagle_tags(sb: Sandbox) -> dict[str, dict[str, str]]:
    """peagle:* tags of the endpoint, its config and its model(s), by resource name."""
    sm = sb.client("sagemaker")
    ep = sm.describe_endpoint(EndpointName=NAME)
    cfg = sm.describe_endpoint_config(EndpointConfigName=ep["EndpointConfigName"])
    arns = {NAME: ep["EndpointArn"], cfg["EndpointConfigName"]: cfg["EndpointConfigArn"]}
    for v in cfg["ProductionVariants"]:
        arns[v["ModelName"]] = sm.describe_model(ModelName=v["ModelName"])["ModelArn"]
    return {
        n: {t["Key"]: t["Value"] for t in sm.list_tags(ResourceArn=a)["Tags"]
            if t["Key"].startswith("peagle:")}
        for n, a in arns.items()
    }  # fmt: skip


def served(sb: Sandbox, request_ids: set[str] | None = None) -> list[dict[str, Any]]:
    """The sandbox's records of finished requests (those ids only, when given)."""
    rows = [r for r in sb.ground_truth(NAME) if r["status"] == "ok"]
    return [r for r in rows if request_ids is None or r["request_id"] in request_ids]


def drafts_per_step(record: dict[str, Any]) -> set[int]:
    return {s["drafted"] for s in record["steps"] if s["drafted"]}


def spec_decoding_lines(sb: Sandbox) -> list[tuple[float, int, int]]:
    """(time, accepted, drafted) of each SpecDecoding line in the endpoint's log group."""
    events = sb.client("logs").filter_log_events(logGroupName=f"/aws/sagemaker/Endpoints/{NAME}")[
        "events"
    ]
    out = []
    for e in events:
        m = SPEC_LINE.search(e["message"])
        if m:
            out.append((e["timestamp"] / 1000, int(m.group(1)), int(m.group(2))))
    return out


def test_1_the_raw_boto3_endpoint_is_served_as_jumpstart_configured_it(sb: Sandbox) -> None:
    response = sb.client("sagemaker-runtime").invoke_endpoint_with_response_stream(
        EndpointName=NAME,
        Body=json.dumps({"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 24,
                         "stream": True}),
        ContentType="application/json",
    )  # fmt: skip
    request_id = response["ResponseMetadata"]["HTTPHeaders"]["x-peagle-request-id"]
    assert b"".join(e["PayloadPart"]["Bytes"] for e in response["Body"]).endswith(b"[DONE]\n\n")
    (record,) = served(sb, {request_id})
    assert (record["mode"], record["k"]) == ("p-eagle", JUMPSTART_K)
    assert drafts_per_step(record) == {JUMPSTART_K}


def test_2_dry_run_shows_the_spec_and_the_k_verdict_and_tags_nothing(sb: Sandbox) -> None:
    doc = json.loads(sb.cli("--sandbox", "adopt", NAME, "--dry-run", "--json").stdout)
    assert doc["action"] == "dry-run" and doc["tagged"] == [] and doc["differences"] == []
    assert doc["spec"]["model"] == "gpt-oss-20b"
    assert doc["spec"]["speculative"]["num_speculative_tokens"] == JUMPSTART_K
    assert doc["spec"]["endpoint"]["name"] == NAME
    assert not [c for c in doc["checks"] if c["status"] == "fail"], doc["checks"]
    verdict = f"K={JUMPSTART_K} but the head's recommended K is {RECOMMENDED_K}"
    assert any(verdict in c["message"] for c in doc["checks"]), doc["checks"]

    text = sb.cli("--sandbox", "adopt", NAME, "--dry-run").stdout
    assert "num_speculative_tokens: 3" in text and verdict in text
    # pasted, the advice reaches the sandbox (issue 33)
    assert f"peagle --sandbox update {NAME} -k {RECOMMENDED_K}" in text
    assert "The spec plans to the same requests as the endpoint runs" in text
    assert "dry run: nothing was tagged" in text
    assert peagle_tags(sb) == {NAME: {}, CONFIG: {}, MODEL: {}}


def test_3_without_yes_and_without_a_tty_it_refuses_in_one_line(sb: Sandbox) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "sm_peagle.cli", "--sandbox", "adopt", NAME],
        env=sb.env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("error")]
    assert len(errors) == 1 and "pass --yes" in errors[0], proc.stderr
    assert peagle_tags(sb) == {NAME: {}, CONFIG: {}, MODEL: {}}
    # The same as `peagle delete` without --yes.
    proc = subprocess.run(
        [sys.executable, "-m", "sm_peagle.cli", "--sandbox", "delete", NAME],
        env=sb.env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.returncode == 2 and "pass --yes" in proc.stderr


def test_4_adopt_tags_it_and_diff_finds_nothing(sb: Sandbox) -> None:
    spec_file = sb.root / "adopted.yaml"
    out = sb.cli("--sandbox", "adopt", NAME, "--yes", "--json", "-o", str(spec_file))
    doc = json.loads(out.stdout)
    assert doc["action"] == "adopted" and len(doc["tagged"]) == 3
    tags = peagle_tags(sb)
    assert {n: t.get("peagle:managed") for n, t in tags.items()} == {
        NAME: "true",
        CONFIG: "true",
        MODEL: "true",
    }
    assert yaml.safe_load(spec_file.read_text()) == doc["spec"]
    proc = sb.cli("--sandbox", "diff", "-f", str(spec_file), "--detailed-exitcode")
    assert "up to date" in proc.stdout


def test_5_invoke_works_on_it(sb: Sandbox) -> None:
    before = {r["request_id"] for r in sb.ground_truth(NAME)}
    sb.cli("--sandbox", "invoke", NAME, "Hello", "--no-stream", "--max-tokens", "16")
    (record,) = [r for r in served(sb) if r["request_id"] not in before]
    assert (record["mode"], record["k"]) == ("p-eagle", JUMPSTART_K)


def test_6_bench_reads_mode_and_k_from_the_adopted_spec(sb: Sandbox) -> None:
    spec = load_spec(sb.root / "adopted.yaml")
    out = sb.cli("--sandbox", "bench", NAME, "-c", "1", "-n", "4", "--max-tokens", "32",
                 "--acceptance-wait", "20s", "--json")  # fmt: skip
    doc = json.loads(out.stdout)
    jsonschema.Draft202012Validator(json.loads(SCHEMA_FILE.read_text())).validate(doc)
    assert (
        (doc["model"], doc["mode"], doc["k"])
        == (spec.model, spec.speculative.mode.value, spec.speculative.num_speculative_tokens)
        == ("gpt-oss-20b", "p-eagle", JUMPSTART_K)
    )
    (level,) = doc["levels"]
    records = served(sb, {r["request_id"] for r in level["records"]})
    assert len(records) == 4 and {(r["mode"], r["k"]) for r in records} == {
        ("p-eagle", JUMPSTART_K)
    }
    by_id = {r["request_id"]: r for r in records}
    assert [r["output_tokens"] for r in level["records"]] == [
        by_id[r["request_id"]]["completion_tokens"] for r in level["records"]
    ]
    # Acceptance: measured from this endpoint's own SpecDecoding lines, exactly those
    # its window names (the first line's interval starts at covered_from).
    acc = level["acceptance"]
    # JumpStart's vLLM 0.18.0 has no per-request metrics: the windowed log lines.
    assert acc["status"] == "measured" and acc["source"] == "windowed", acc
    assert "SpecDecoding" in acc["from"], acc
    used = [
        (a, d) for t, a, d in spec_decoding_lines(sb)
        if acc["covered_from"] + 5e-4 < t <= acc["covered_to"] + 5e-4
    ]  # fmt: skip
    assert len(used) == acc["lines"]
    assert (sum(a for a, _ in used), sum(d for _, d in used)) == (
        acc["accepted_tokens"],
        acc["drafted_tokens"],
    )
    assert len(acc["per_position"]) == JUMPSTART_K


def test_7_update_k_makes_the_engine_serve_the_new_k(sb: Sandbox) -> None:
    out = sb.cli("--sandbox", "update", NAME, "-k", "7", "--yes")
    assert "K 3 -> 7" in out.stdout + out.stderr
    before = {r["request_id"] for r in sb.ground_truth(NAME)}
    sb.cli("--sandbox", "invoke", NAME, "Hello", "--no-stream", "--max-tokens", "32")
    (record,) = [r for r in served(sb) if r["request_id"] not in before]
    assert (record["mode"], record["k"]) == ("p-eagle", 7)
    assert drafts_per_step(record) == {7}
    events = sb.client("logs").filter_log_events(logGroupName=f"/aws/sagemaker/Endpoints/{NAME}")[
        "events"
    ]
    assert any("num_speculative_tokens=7" in e["message"] for e in events)
    # The JumpStart-made config and model were peagle's after adopt: update retired them.
    sm = sb.client("sagemaker")
    assert CONFIG not in {c["EndpointConfigName"] for c in sm.list_endpoint_configs()[
        "EndpointConfigs"]}  # fmt: skip
    assert MODEL not in {m["ModelName"] for m in sm.list_models()["Models"]}


def test_8_diff_against_the_adopted_spec_shows_only_k_and_gc_finds_nothing(sb: Sandbox) -> None:
    proc = sb.cli("--sandbox", "diff", "-f", str(sb.root / "adopted.yaml"), "--json",
                  "--detailed-exitcode", check=False)  # fmt: skip
    assert proc.returncode == 3, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["spec_changes"] == [
        {"path": "speculative.num_speculative_tokens", "old": 7, "new": JUMPSTART_K}
    ]
    assert [c["path"] for c in doc["request_changes"]] == [
        "create_model.PrimaryContainer.Environment.SM_VLLM_SPECULATIVE_CONFIG"
    ]
    gc = json.loads(sb.cli("--sandbox", "gc", "--dry-run", "--min-age", "0s", "--json").stdout)
    assert (gc["endpoint_configs"], gc["models"]) == ([], [])


def test_9_delete_leaves_nothing(sb: Sandbox) -> None:
    sb.cli("--sandbox", "delete", NAME, "--yes")
    sm = sb.client("sagemaker")
    assert sm.list_models()["Models"] == []
    assert sm.list_endpoint_configs()["EndpointConfigs"] == []
    assert sm.list_endpoints()["Endpoints"] == []
    scaling = sb.client("application-autoscaling").describe_scalable_targets(
        ServiceNamespace="sagemaker"
    )
    assert scaling["ScalableTargets"] == []
