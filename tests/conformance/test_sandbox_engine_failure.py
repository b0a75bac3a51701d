"""Failure path on the REAL vLLM engine through the sandbox: an endpoint whose engine
cannot start for a real cause peagle's checks do not catch before deploy.

The cause: `max_model_len: 4096` on the tiny model, whose `max_position_embeddings` is
2048. `peagle plan` passes it (peagle does not know a model's context length), the
entrypoint passes it on as `--max-model-len 4096`, and vLLM refuses it while building its
ModelConfig ("User-specified max_model_len (4096) is greater than the derived
max_model_len ..."). The endpoint must end `Failed` with that line as its FailureReason,
`peagle deploy` must exit 1 showing it and roll back, and nothing may be left: no
resource, no process, no port.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.test_sandbox_engine_host import Cli, descendants

NAME = "peagle-tiny-llama-p-eagle"
VLLM_ERROR = "User-specified max_model_len (4096) is greater than the derived max_model_len"
SPEC = """model: tiny-llama
speculative: {mode: p-eagle, num_speculative_tokens: 3}
container: {engine_args: {max_model_len: 4096}}
"""


def test_vllm_refusal_fails_the_endpoint_and_leaves_nothing(sandbox: Cli, tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC)
    plan = json.loads(sandbox("plan", "--file", str(spec), "--json").stdout)
    assert plan["create_model"]["PrimaryContainer"]["Environment"]["SM_VLLM_MAX_MODEL_LEN"] == (
        "4096"
    )
    assert not [c for c in plan["checks"] if c["status"] == "fail"]  # peagle lets it through

    out = sandbox("--sandbox", "deploy", "--file", str(spec), "--yes", code=1)
    reason = [ln for ln in out.stderr.splitlines() if ln.startswith("FailureReason:")]
    assert reason and VLLM_ERROR in reason[0], out.stderr  # vLLM's own words
    assert "engine exited with code" in reason[0]
    assert "rolling back" in out.stderr

    # The engine's full output stayed in the endpoint's log group (SageMaker keeps it).
    assert VLLM_ERROR in sandbox("--sandbox", "logs", NAME).stdout
    assert sandbox.engines() == [] and descendants(sandbox.state()["pid"]) == []
    ls = sandbox("--sandbox", "ls", "--json").stdout
    assert NAME not in ls
    assert not list(Path(sandbox.env["PEAGLE_STATE_DIR"], "engines").glob("*.pgid"))
