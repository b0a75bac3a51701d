"""Per-request acceptance on the REAL vLLM engine (CPU), through the sandbox's SageMaker path.

peagle's plan sets SM_VLLM_PER_REQUEST_SPEC_DECODE_METRICS=summary for the tiny P-EAGLE
pair on this engine's version; the container entrypoint turns it into
`--per-request-spec-decode-metrics summary` (the DLC rule); vLLM then returns
`metrics.speculative_decoding` with the stream's final usage chunk, which `invoke --json`
carries. For one request alone on the engine, its counts are exactly the deltas of the
engine's own Prometheus counters (`/metrics`, which the sandbox can reach and SageMaker
cannot): accepted tokens, drafted tokens, drafts (= verify steps).

Baseline on the same image still starts (the plan does not give it the flag, which vLLM
refuses without a speculative config), and vLLM itself does refuse the flag there, as the
source facts say (`config/vllm.py`). One engine at a time.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from peagle_sandbox.vllm_engine.install import EngineEnv
from tests.conformance.engine_proc import ServeProcess
from tests.conformance.engine_proc import engine_counters as counters
from tests.e2e.test_sandbox_engine_host import Cli

P_EAGLE = "peagle-tiny-llama-p-eagle"
BASELINE = "peagle-tiny-llama-baseline"
VAR = "SM_VLLM_PER_REQUEST_SPEC_DECODE_METRICS"


def engine_url(cli: Cli, name: str) -> str:
    [engine] = [e for e in cli.engines() if e["endpoint"] == name]
    return str(engine["url"])


def test_the_real_engine_returns_each_requests_acceptance(sandbox: Cli, engine: EngineEnv) -> None:
    try:
        sandbox("--sandbox", "deploy", "tiny-llama", "--mode", "p-eagle", "-k", "3", "--yes")
        described = sandbox.client("sagemaker").describe_model(
            ModelName=sandbox.client("sagemaker").describe_endpoint_config(
                EndpointConfigName=sandbox.client("sagemaker").describe_endpoint(
                    EndpointName=P_EAGLE
                )["EndpointConfigName"]
            )["ProductionVariants"][0]["ModelName"]
        )
        assert described["PrimaryContainer"]["Environment"][VAR] == "summary"
        logs = sandbox("--sandbox", "logs", P_EAGLE).stdout
        assert "--per-request-spec-decode-metrics summary" in logs  # the entrypoint's exec line
        assert "'per_request_spec_decode_metrics': 'summary'" in logs  # vLLM's own echo

        url = engine_url(sandbox, P_EAGLE)
        before = counters(url)
        out = sandbox("--sandbox", "invoke", P_EAGLE, "Explain parallel drafting.",
                      "--max-tokens", "48", "--temperature", "1", "--json")  # fmt: skip
        after = counters(url)
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

        human = sandbox("--sandbox", "invoke", P_EAGLE, "Hello.", "--max-tokens", "32")
        assert "tokens/step" in human.stderr and "of drafts), per request" in human.stderr
    finally:  # one engine at a time, even after a failure
        sandbox("--sandbox", "delete", P_EAGLE, "--yes", code=None)


def test_baseline_on_the_same_image_starts_without_the_flag(sandbox: Cli) -> None:
    try:
        out = sandbox("--sandbox", "deploy", "tiny-llama", "--mode", "baseline", "--yes")
        assert f"{BASELINE} is InService" in out.stdout
        logs = sandbox("--sandbox", "logs", BASELINE).stdout
        assert "per-request-spec-decode-metrics" not in logs
        doc = json.loads(
            sandbox(
                "--sandbox", "invoke", BASELINE, "Hello.", "--max-tokens", "16", "--json"
            ).stdout
        )
        assert doc["usage"]["completion_tokens"] > 0 and doc["spec_decode"] is None
    finally:
        sandbox("--sandbox", "delete", BASELINE, "--yes", code=None)


def test_vllm_itself_refuses_the_flag_without_speculation(
    engine: EngineEnv, tmp_path: Path
) -> None:
    """What the plan and the entrypoint guard against, seen on the engine (source facts)."""
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
