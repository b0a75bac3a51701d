"""Inference components on the REAL vLLM engine through the sandbox (`--engine vllm`):
one endpoint hosting two components of the tiny model, `p-eagle` (aligned P-EAGLE head,
K=3, from the component model's `eagle` channel) and `baseline`, each on its own engine.

Oracles (none from the code under test):
- routing: an invocation naming a component moves only that component's engine's own
  Prometheus counters (`/metrics` on the engine port, which the sandbox can reach and
  SageMaker cannot), by exactly the completion tokens it returned;
- configuration: the p-eagle engine drafts (vLLM's `spec_decode_*` counters; the aligned
  head's drafts are all accepted at temperature 0 by design, >= 90% asserted as in
  test_greedy.py), the baseline engine never does; each engine's own log (the
  component's log group) shows the command it ran;
- greedy decoding is lossless under speculative decoding (vLLM's rule): both components
  return the same text for the same prompt at temperature 0;
- lifecycle: 0 copies stops the engine (its process group and port are gone) and the
  component refuses invocations with SageMaker's ValidationError (the message's wording
  is the sandbox's labelled assumption, `sandbox/components.py`); 1 copy starts a new
  engine; delete leaves no process, no port, no record and no resource. A component
  whose engine vLLM refuses ends Failed with vLLM's own line and the deploy rolls back.

Two engines run at once here (about 3 GB each); each start takes 20-40 s on 2 CPUs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from peagle_sandbox.procs import group_alive
from peagle_sandbox.vllm_engine.install import EngineEnv
from tests.conformance.engine_proc import engine_counters as counters
from tests.e2e.test_sandbox_engine_host import Cli, assert_nothing_left, port_free
from tests.plan_helpers import TINY_TWO_COMPONENTS

NAME = "peagle-tiny-llama-p-eagle"
PEAGLE, BASELINE = f"{NAME}-p-eagle", f"{NAME}-baseline"
PROMPT = "user: how many tokens does the drafter propose?\nassistant:"
# The tiny target's context is 2048 (max_position_embeddings); vLLM refuses more.
VLLM_ERROR = "User-specified max_model_len (4096) is greater than the derived max_model_len"
FAILING_SPEC = """model: tiny-llama
endpoint: {hosting: inference-components, instance_type: ml.g7e.12xlarge}
speculative: {mode: p-eagle, num_speculative_tokens: 3}
container: {engine_args: {max_model_len: 4096}}
inference_components:
  accelerators_per_copy: 1
  components: [{name: p-eagle}, {name: baseline}]
"""


def invoke(cli: Cli, component: str) -> tuple[str, int, dict[str, str]]:
    """(text, completion tokens, response headers) of a greedy completion."""
    body = {"prompt": PROMPT, "max_tokens": 24, "temperature": 0, "ignore_eos": True}
    resp = cli.client("sagemaker-runtime").invoke_endpoint(
        EndpointName=NAME,
        InferenceComponentName=component,
        Body=json.dumps(body),
        ContentType="application/json",
    )
    doc = json.loads(resp["Body"].read())
    headers = resp["ResponseMetadata"]["HTTPHeaders"]
    return doc["choices"][0]["text"], doc["usage"]["completion_tokens"], headers


def component_log(cli: Cli, component: str) -> str:
    logs = cli.client("logs")
    group = f"/aws/sagemaker/InferenceComponents/{component}"
    events = logs.filter_log_events(logGroupName=group)["events"]
    return "\n".join(e["message"] for e in events)


def engines_by_component(cli: Cli) -> dict[str, dict[str, Any]]:
    return {e["component"]: e for e in cli.engines()}


def gone(engine: dict[str, Any]) -> bool:
    return not group_alive(engine["pid"]) and port_free(engine["port"])


def test_two_components_each_on_its_own_engine(sandbox: Cli, engine: EngineEnv) -> None:
    try:
        check_two_components(sandbox, engine)
    finally:  # never leave two engines running for the next test
        sandbox("--sandbox", "delete", NAME, "--yes", code=None)


def check_two_components(sandbox: Cli, engine: EngineEnv) -> None:
    out = sandbox("--sandbox", "deploy", *TINY_TWO_COMPONENTS, "--yes", "--json")
    assert json.loads(out.stdout)["status"] == "InService"
    sm = sandbox.client("sagemaker")
    for name in (PEAGLE, BASELINE):
        desc = sm.describe_inference_component(InferenceComponentName=name)
        assert desc["InferenceComponentStatus"] == "InService"
        assert desc["RuntimeConfig"] == {"DesiredCopyCount": 1, "CurrentCopyCount": 1}
    engines = engines_by_component(sandbox)
    assert set(engines) == {PEAGLE, BASELINE}
    assert all(e["endpoint"] == NAME and e["ready"] for e in engines.values())
    assert engines[PEAGLE]["pid"] != engines[BASELINE]["pid"]

    # Each engine ran its own component model's container: the entrypoint's command is in
    # the component's own log group, with the drafter channel only for p-eagle.
    p_log, b_log = component_log(sandbox, PEAGLE), component_log(sandbox, BASELINE)
    for log in (p_log, b_log):
        assert "peagle-entrypoint: exec vllm serve" in log and "/ping answered 200" in log
    assert "additional-model-data-sources/eagle" in p_log and "parallel_drafting" in p_log
    assert "--speculative-config" not in b_log and "parallel_drafting" not in b_log

    # Routing: each invocation moves only its own engine's counters, by its own tokens.
    label = f"vllm {engine.version} (CPU, tiny model)"
    texts = {}
    for name, other in ((PEAGLE, BASELINE), (BASELINE, PEAGLE)):
        before = {n: counters(e["url"]) for n, e in engines.items()}
        texts[name], tokens, headers = invoke(sandbox, name)
        after = {n: counters(e["url"]) for n, e in engines.items()}
        assert headers["x-peagle-engine"] == label and tokens == 24
        assert after[name]["generation_tokens_total"] - before[name]["generation_tokens_total"] == (
            tokens
        )
        assert after[other] == before[other]
        if name == PEAGLE:  # the aligned head: all drafts accepted at T=0 by design
            drafted = (
                after[name]["spec_decode_num_draft_tokens_total"]
                - (before[name]["spec_decode_num_draft_tokens_total"])
            )
            accepted = (
                after[name]["spec_decode_num_accepted_tokens_total"]
                - (before[name]["spec_decode_num_accepted_tokens_total"])
            )
            print(f"p-eagle component: {accepted:.0f} of {drafted:.0f} drafted tokens accepted")
            assert drafted > 0 and accepted >= 0.9 * drafted  # test_greedy.py's bound
    assert counters(engines[BASELINE]["url"])["spec_decode_num_drafts_total"] == 0
    print(f"greedy text of both components: {texts[PEAGLE]!r}")
    assert texts[PEAGLE] == texts[BASELINE]  # greedy output is lossless under drafting

    # `peagle race` of the two components (the comparison on one instance): each
    # lane's stream came from its own engine, whose generation counter moved by exactly
    # the tokens that lane reports.
    before = {n: counters(e["url"]) for n, e in engines.items()}
    out = sandbox("--sandbox", "race", NAME, "--component", "p-eagle", "--component",
                  "baseline", "--max-tokens", "16", "--temperature", "0", "--json")  # fmt: skip
    after = {n: counters(e["url"]) for n, e in engines.items()}
    result = json.loads(out.stdout)
    for lane, name in (("a", PEAGLE), ("b", BASELINE)):
        assert result[lane]["component"] == name and result[lane]["error"] is None
        moved = after[name]["generation_tokens_total"] - before[name]["generation_tokens_total"]
        assert result[lane]["output_tokens"] > 0 and moved == result[lane]["output_tokens"]
    assert after[BASELINE]["spec_decode_num_drafts_total"] == 0
    assert (
        after[PEAGLE]["spec_decode_num_drafts_total"]
        > before[PEAGLE]["spec_decode_num_drafts_total"]
    )
    print(f"race on the real engine: {result['verdict']}")

    # Scale baseline to zero: its engine is gone and it refuses; p-eagle still answers.
    sandbox("--sandbox", "update", NAME, "--component", "baseline", "--copies", "0", "--yes")
    assert gone(engines[BASELINE]) and set(engines_by_component(sandbox)) == {PEAGLE}
    with pytest.raises(ClientError) as refused:
        invoke(sandbox, BASELINE)
    error = refused.value.response
    assert error["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert error["Error"]["Code"] == "ValidationError"
    assert error["Error"]["Message"].startswith(f"Inference Component {BASELINE} has no capacity")
    assert invoke(sandbox, PEAGLE)[0] == texts[PEAGLE]

    # Back to one copy: a new engine, which answers as before.
    sandbox("--sandbox", "update", NAME, "--component", "baseline", "--copies", "1", "--yes")
    engines[BASELINE] = engines_by_component(sandbox)[BASELINE]
    assert invoke(sandbox, BASELINE)[0] == texts[BASELINE]

    sandbox("--sandbox", "delete", NAME, "--yes")
    assert all(gone(e) for e in engines.values())
    assert_nothing_left(sandbox)


def test_a_component_vllm_refuses_fails_and_the_deploy_rolls_back(
    sandbox: Cli, tmp_path: Path
) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(FAILING_SPEC)
    plan = json.loads(sandbox("plan", "--file", str(spec), "--json").stdout)
    assert not [c for c in plan["checks"] if c["status"] == "fail"]  # peagle lets it through
    assert [
        m["PrimaryContainer"]["Environment"]["SM_VLLM_MAX_MODEL_LEN"]
        for m in plan["component_models"]
    ] == ["4096", "4096"]

    out = sandbox("--sandbox", "deploy", "--file", str(spec), "--yes", code=1)
    assert f"inference component {PEAGLE} is Failed: engine exited with code" in out.stderr
    reason = [ln for ln in out.stderr.splitlines() if ln.startswith("FailureReason:")]
    assert reason and VLLM_ERROR in reason[0], out.stderr  # vLLM's own words
    assert "rolling back" in out.stderr

    # The engine's output stayed in the component's log group (CloudWatch keeps it).
    assert VLLM_ERROR in component_log(sandbox, PEAGLE)
    assert_nothing_left(sandbox)
