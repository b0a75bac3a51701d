"""The README's first command, `peagle --sandbox deploy gpt-oss-20b --yes`, warns about
nothing in the P-EAGLE head the sandbox seeds: the placeholder holds every tensor vLLM
0.18.0's EAGLE-3 head loads (its decoder layer and its own embedding), so a newcomer is not
told that their first deploy would draft from uninitialised memory.

The real `peagle` CLI in subprocesses against a SIMULATED sandbox it started."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.e2e.test_sandbox import Sandbox, running_sandbox

pytestmark = pytest.mark.e2e

# Where JumpStart keeps gpt-oss-20b's P-EAGLE head, which the sandbox seeds (facts 4).
HEAD = "s3://jumpstart-cache-prod-us-east-1/lmi-eagle-heads/models/gpt-oss-20b-p-eagle/"
# The second-pass rules a head with missing tensors trips (a placeholder without its
# decoder layer or embedding warned on both), and the shape rules those tensors must pass.
LOADING_RULES = {
    "drafter.tensor_names",
    "drafter.tensor_shapes",
    "drafter.unloaded",
    "drafter.borrowed",
}


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    yield from running_sandbox(tmp_path_factory.mktemp("seed-head"))


def test_first_deploy_prints_no_drafter_warning(sandbox: Sandbox) -> None:
    out = sandbox.cli("--sandbox", "deploy", "gpt-oss-20b", "--yes")
    assert "talking to: SANDBOX (SIMULATED) at " in out.stderr  # the command's real stderr
    assert "InService" in out.stdout + out.stderr
    drafter_warnings = [
        line for line in out.stderr.splitlines() if line.startswith("warning: drafter.")
    ]
    assert drafter_warnings == [], out.stderr


def test_seeded_head_passes_every_drafter_check(sandbox: Sandbox) -> None:
    out = sandbox.cli("--sandbox", "drafter", "check", HEAD, "--model", "gpt-oss-20b", "--json")
    checks = {c["name"]: c for c in json.loads(out.stdout)["checks"]}
    assert set(checks) >= LOADING_RULES, sorted(checks)
    not_passed = {
        name: (c["status"], c["message"])
        for name, c in checks.items()
        if name.startswith("drafter.") and c["status"] != "pass"
    }
    assert not_passed == {}
    # --strict turns any warning into exit 2: the head passes it too.
    strict = sandbox.cli(
        "--sandbox", "drafter", "check", HEAD, "--model", "gpt-oss-20b", "--strict", check=False
    )
    assert strict.returncode == 0, strict.stderr + strict.stdout


def test_seeded_head_has_its_own_embedding_and_decoder_layer(sandbox: Sandbox) -> None:
    """What `drafter inspect` shows a newcomer: an embedding of the target's vocabulary
    (gpt-oss-20b: 201,088 tokens) at the head's own hidden size, and the decoder layer's
    tensors saved as `midlayer.*`, as published EAGLE-3 heads are."""
    doc = json.loads(sandbox.cli("--sandbox", "drafter", "inspect", HEAD, "--json").stdout)
    tensors = doc["tensors"]
    assert tensors["embed_tokens.weight"]["shape"] == [201088, doc["hidden_size"]]
    layer = {n for n in tensors if n.startswith("midlayer.")}
    assert {"midlayer.self_attn.q_proj.weight", "midlayer.mlp.down_proj.weight"} <= layer


@pytest.mark.parametrize(
    ("head", "mode"), [("p-eagle-aligned", "p-eagle"), ("eagle3-aligned", "eagle3")]
)
def test_tiny_llama_placeholder_heads_pass_strict(sandbox: Sandbox, head: str, mode: str) -> None:
    """Without an engine home the sandbox seeds tiny-llama's heads as zero-filled
    placeholders: they hold every tensor the generated heads hold, so `--strict` (any
    warning fails) passes them on the vLLM the heads are generated for (the engine's
    0.31.0: on 0.18.0 vLLM does not read their aux-layer ids, a warning that is true of the
    real heads too), as it does the gpt-oss-20b seed."""
    uri = f"s3://peagle-sandbox-models/heads/{head}/"
    config = sandbox.client("s3").get_object(
        Bucket="peagle-sandbox-models", Key=f"heads/{head}/config.json"
    )
    assert "placeholder" in json.loads(config["Body"].read())["note"]  # not the real files
    out = sandbox.cli(
        "--sandbox", "drafter", "check", uri, "--model", "tiny-llama", "--mode", mode,
        "--vllm-version", "0.31.0", "--strict", "--json", check=False,
    )  # fmt: skip
    checks = json.loads(out.stdout)["checks"]
    assert [(c["name"], c["message"]) for c in checks if c["status"] != "pass"] == []
    assert out.returncode == 0, out.stderr
    assert {c["name"] for c in checks} >= LOADING_RULES
