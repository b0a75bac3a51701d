"""`peagle apply` / `diff`: idempotent, shows the diff, updates in place (moto)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from tests.integration.lifecycle_env import sagemaker_inventory
from tests.integration.test_lifecycle import NAME, run


def write_spec(path: Path, k: int) -> Path:
    path.write_text(
        yaml.safe_dump(
            {
                "model": "gpt-oss-20b",
                "region": "us-east-1",
                "speculative": {"mode": "p-eagle", "num_speculative_tokens": k},
                "tags": {"team": "inference"},
            }
        )
    )
    return path


def mutating(world) -> list[str]:
    return [
        op for op, _ in world.requests if op.startswith(("Create", "Update", "Delete", "AddTags"))
    ]


def test_apply_twice_is_a_noop_then_k_change_updates_in_place(world, capsys, tmp_path):
    spec = write_spec(tmp_path / "deployment.yaml", 3)
    code, out, _ = run(capsys, "diff", "-f", spec, "--json")
    assert code == 0 and json.loads(out)["action"] == "create"

    code, out, err = run(capsys, "apply", "-f", spec, "--yes", "--json")
    assert code == 0, err
    assert json.loads(out)["action"] == "create" and json.loads(out)["applied"] is True
    # ... and the last, once it is InService: the endpoint marked complete (peagle:completed)
    assert mutating(world) == ["CreateModel", "CreateEndpointConfig", "CreateEndpoint", "AddTags"]

    code, out, _ = run(capsys, "apply", "-f", spec, "--yes", "--json")
    assert code == 0 and json.loads(out) == {
        "label": "AWS",  # issue 26: every --json document says where it came from
        "endpoint": NAME,
        "action": "noop",
        "spec_changes": [],
        "request_changes": [],
        "applied": False,
    }
    assert len(mutating(world)) == 4  # the second apply sent nothing that changes AWS

    write_spec(spec, 5)
    code, out, _ = run(capsys, "diff", "-f", spec)
    assert code == 0
    assert "~ speculative.num_speculative_tokens: 3 -> 5" in out
    assert "create_model.PrimaryContainer.Environment.SM_VLLM_SPECULATIVE_CONFIG" in out
    assert len(mutating(world)) == 4  # diff changes nothing

    code, out, err = run(capsys, "apply", "-f", spec, "--yes", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["action"] == "update" and doc["applied"] is True
    assert [c["path"] for c in doc["spec_changes"]] == ["speculative.num_speculative_tokens"]
    assert mutating(world)[4:] == [
        "CreateModel",
        "CreateEndpointConfig",
        "UpdateEndpoint",
        # The endpoint's tags now describe the new spec (and the update completed): added
        # over the old values, and nothing to delete, as no key was dropped.
        "AddTags",
        "DeleteEndpointConfig",
        "DeleteModel",
    ]
    code, out, _ = run(capsys, "status", NAME, "--json")
    assert json.loads(out)["k"] == 5

    code, out, _ = run(capsys, "apply", "-f", spec, "--yes", "--json")
    assert json.loads(out)["action"] == "noop"  # the endpoint's sha tag followed the update

    assert run(capsys, "delete", NAME, "--yes")[0] == 0
    assert sagemaker_inventory() == {"models": [], "endpoint_configs": [], "endpoints": []}


def test_apply_dry_run_creates_nothing(world, capsys, tmp_path):
    spec = write_spec(tmp_path / "d.yaml", 4)
    code, out, _ = run(capsys, "apply", "-f", spec, "--dry-run")
    assert code == 0 and "does not exist: apply will create it" in out
    assert mutating(world) == []


def test_region_on_apply_and_diff_overrides_the_spec(world, capsys, tmp_path):
    """The spec says us-east-1; `--region` points apply and diff elsewhere, as on every
    other command that talks to AWS."""
    spec = write_spec(tmp_path / "r.yaml", 4)
    assert run(capsys, "apply", "-f", spec, "--yes", "--json")[0] == 0
    code, out, _ = run(capsys, "diff", "-f", spec, "--json")
    assert code == 0 and json.loads(out)["action"] == "noop"
    code, out, _ = run(capsys, "diff", "-f", spec, "--region", "us-west-2", "--json")
    assert code == 0 and json.loads(out)["action"] == "create"  # nothing there yet
    before = len(mutating(world))
    code, out, _ = run(capsys, "apply", "-f", spec, "--region", "us-west-2", "--dry-run")
    assert code == 0 and "does not exist: apply will create it" in out
    assert len(mutating(world)) == before
