"""A component whose container is given inline (`inline_container: true`: no model, the
Specification carries Image/Environment/ArtifactUrl, facts §10) is updated in place by
`apply` when its container changes: one UpdateInferenceComponent with the new container
and no CreateModel (there is no model to make). Unchanged, it is left alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tests.integration.lifecycle_env import REGION, left_in_moto, run

NAME = "peagle-gpt-oss-20b-baseline"


def write_spec(path: Path, env: dict[str, str] | None = None) -> Path:
    doc: dict[str, Any] = {
        "model": "gpt-oss-20b",
        "region": REGION,
        "speculative": {"mode": "baseline"},
        "endpoint": {"hosting": "inference-components", "instance_type": "ml.g7e.2xlarge"},
        "inference_components": {
            "components": [{"name": "baseline", "inline_container": True}],
        },
    }
    if env:
        doc["container"] = {"env": env}
    path.write_text(yaml.safe_dump(doc))
    return path


def test_a_changed_inline_container_is_updated_without_a_model(
    world: Any, capsys: Any, tmp_path: Path
) -> None:
    code, _, err = run(capsys, "apply", "-f", str(write_spec(tmp_path / "a.yaml")), "--yes")
    assert code == 0, err
    (created,) = world.sent("CreateInferenceComponent")
    assert "ModelName" not in created["Specification"]
    component = created["InferenceComponentName"]

    world.requests.clear()
    spec = write_spec(tmp_path / "b.yaml", env={"PEAGLE_TEST_MARK": "1"})
    code, _, err = run(capsys, "apply", "-f", str(spec), "--yes")
    assert code == 0, err
    (update,) = world.sent("UpdateInferenceComponent")
    assert update["InferenceComponentName"] == component
    env = update["Specification"]["Container"]["Environment"]
    assert env["PEAGLE_TEST_MARK"] == "1"
    assert {k: v for k, v in env.items() if k != "PEAGLE_TEST_MARK"} == (
        created["Specification"]["Container"]["Environment"]
    )
    assert world.sent("CreateModel") == [] and world.sent("DeleteModel") == []

    world.requests.clear()
    code, _, err = run(capsys, "apply", "-f", str(spec), "--yes")
    assert code == 0, err
    assert world.sent("UpdateInferenceComponent") == []  # the same container: left alone

    assert run(capsys, "delete", NAME, "--yes")[0] == 0
    assert left_in_moto() == {}
