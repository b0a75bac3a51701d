"""`peagle --sandbox sweep` end to end through the installed CLI: 5 configurations
(baseline once, EAGLE-3 and P-EAGLE at K=3 and 7) x 3 concurrency levels, results written,
nothing left in SageMaker, and `peagle report DIR --json` reproducing the results."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.e2e.test_cli_fast_path import peagle_script

pytestmark = pytest.mark.e2e

SCHEMA_FILE = Path(__file__).resolve().parents[2] / "docs" / "peagle.bench-4.schema.json"
CONFIGS = ["baseline", "eagle3 K=3", "eagle3 K=7", "p-eagle K=3", "p-eagle K=7"]


def sandbox_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "PEAGLE_"))}
    env.update(
        PEAGLE_STATE_DIR=str(tmp_path / "state"),
        PEAGLE_CACHE_DIR=str(tmp_path / "cache"),
        HOME=str(tmp_path),
        COLUMNS="160",
    )
    return env


def peagle(env: dict[str, str], *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(peagle_script()), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture
def sandbox(tmp_path):
    env = sandbox_env(tmp_path)
    started = peagle(
        env, "sandbox", "start", "--creating-seconds", "1", "--metrics-interval", "1", "--json"
    )
    assert started.returncode == 0, started.stderr
    try:
        yield env, json.loads(started.stdout)
    finally:
        peagle(env, "sandbox", "stop")


def slug(label: str) -> str:
    return label.lower().replace(" k=", "-k-")


def schema_validator():
    import jsonschema  # in the [test] extra

    schema = json.loads(SCHEMA_FILE.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def leftovers(url: str) -> dict[str, list[str]]:
    import boto3

    sm = boto3.client(
        "sagemaker",
        region_name="us-east-1",
        endpoint_url=url,
        aws_access_key_id="peagle-sandbox",
        aws_secret_access_key="peagle-sandbox",
    )
    return {
        "endpoints": [e["EndpointName"] for e in sm.list_endpoints()["Endpoints"]],
        "configs": [c["EndpointConfigName"] for c in sm.list_endpoint_configs()["EndpointConfigs"]],
        "models": [m["ModelName"] for m in sm.list_models()["Models"]],
    }


def test_sweep_end_to_end(sandbox, tmp_path, capsys):
    env, info = sandbox
    out = tmp_path / "results"
    started = time.monotonic()
    result = peagle(
        env, "--sandbox", "sweep", "gpt-oss-20b", "--modes", "baseline,eagle3,p-eagle",
        "-k", "3,7", "--concurrency", "1,4,8", "--requests", "8", "--max-tokens", "32",
        "--acceptance-wait", "5s", "--output", str(out),
    )  # fmt: skip
    elapsed = time.monotonic() - started
    with capsys.disabled():
        print(f"\nsweep: 5 configurations x 3 levels x 8 requests in {elapsed:.1f}s")
    assert result.returncode == 0, result.stderr[-3000:]
    # Said once: each configuration deploys on the session the sweep connected (issue 34).
    assert result.stderr.count("talking to: ") == 1, result.stderr[-3000:]

    # Everything written: per configuration, combined, CSV, markdown (and the chart).
    doc = json.loads((out / "sweep.json").read_text())
    validator = schema_validator()
    validator.validate(doc)
    assert [r["configuration"] for r in doc["runs"]] == CONFIGS
    for label in CONFIGS:
        validator.validate(json.loads((out / f"{slug(label)}.json").read_text()))
    assert doc["label"] == "SANDBOX (SIMULATED)" and doc["simulated"] is True
    assert doc["failures"] == [] and doc["cleanup"]["kept"] == []
    assert len(doc["cleanup"]["deleted"]) == 5
    for run in doc["runs"]:
        assert [lv["concurrency"] for lv in run["levels"]] == [1, 4, 8]
        for lv in run["levels"]:
            assert lv["requests"] == {"total": 8, "ok": 8, "failed": 0, "failure_reasons": {}}
            assert lv["output_tokens"] == sum(r["output_tokens"] for r in lv["records"])
        spec = run["mode"] != "baseline"
        assert all(
            lv["acceptance"]["status"] == ("measured" if spec else "by definition")
            for lv in run["levels"]
        )
    assert [row["concurrency"] for row in doc["table"]["rows"]] == [1, 4, 8]
    assert set(doc["recommendation"]) == {"p-eagle", "eagle3"}
    csv_lines = (out / "sweep.csv").read_text().splitlines()
    assert len(csv_lines) == 1 + 5 * 3 and csv_lines[1].startswith("SANDBOX (SIMULATED),")
    md = (out / "sweep.md").read_text()
    assert "SIMULATED" in md and "best P-EAGLE / best EAGLE-3" in md and "Recommended K" in md
    assert "every configuration: ml.g7e.2xlarge" in md
    plot_hint = "pip install 'sm-peagle[plot]'"
    if importlib.util.find_spec("matplotlib") is not None:
        assert (out / "sweep.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    else:
        assert not (out / "sweep.png").exists()
        assert "chart skipped: --plot needs matplotlib" in result.stderr
        assert plot_hint in result.stderr
        bad = peagle(env, "report", str(out), "--plot", str(tmp_path / "x.png"))
        # A missing optional dependency is bad input (exit 2), refused before any work.
        assert bad.returncode == 2
        (line,) = bad.stderr.strip().splitlines()
        assert line.startswith("error: --plot needs matplotlib, which is not installed (fix: ")
        assert plot_hint in line

    # Nothing left behind in the sandbox's SageMaker.
    assert leftovers(info["url"]) == {"endpoints": [], "configs": [], "models": []}

    # `peagle report` re-renders the same document from the directory (no AWS needed).
    again = peagle({**env, "AWS_ACCESS_KEY_ID": ""}, "report", str(out), "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout) == doc


def test_ctrl_c_mid_benchmark_leaves_nothing_behind(sandbox, tmp_path):
    """SIGINT while a configuration is being benchmarked: that endpoint is still deleted,
    the next configuration is never deployed, and the exit code says interrupted."""
    import signal
    import urllib.request

    env, info = sandbox
    proc = subprocess.Popen(
        [str(peagle_script()), "--sandbox", "sweep", "gpt-oss-20b", "--modes",
         "baseline,p-eagle", "-k", "3", "--concurrency", "2", "--requests", "400",
         "--max-tokens", "32", "--output", str(tmp_path / "out")],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:  # wait until requests are being served
            with opener.open(f"{info['url']}/_peagle/ground-truth", timeout=5) as resp:
                if json.loads(resp.read())["requests"]:
                    break
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err[-2000:]
    assert "interrupted" in err and "deleted peagle-sweep-" in err
    assert "p-eagle K=3: deploying" not in err  # the sweep stopped at the interrupted config
    assert leftovers(info["url"]) == {"endpoints": [], "configs": [], "models": []}


def test_a_failing_configuration_is_reported_and_the_rest_run(sandbox, tmp_path):
    env, info = sandbox
    out = tmp_path / "out"
    result = peagle(
        env, "--sandbox", "sweep", "gpt-oss-20b", "--modes", "p-eagle", "-k", "3,11",
        "--concurrency", "1", "--requests", "2", "--max-tokens", "16",
        "--acceptance-wait", "0", "--output", str(out), "--json",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    doc = json.loads(result.stdout)
    assert [r["configuration"] for r in doc["runs"]] == ["p-eagle K=3"]
    (failure,) = doc["failures"]
    assert failure["configuration"] == "p-eagle K=11" and "trained K=10" in failure["error"]
    assert leftovers(info["url"]) == {"endpoints": [], "configs": [], "models": []}
