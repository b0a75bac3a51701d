"""The second-pass drafter checks (issue 25) from the CLI and the SDK, against moto: each
class gets one error line naming the property, what vLLM does and the fix; `drafter
push` and `deploy --drafter` run the same checks before anything is sent or uploaded;
`--strict` (SDK strict=True) fails a warning on plan, deploy, apply, drafter check and
drafter push alike.

The heads are peagle's synthetic head for gpt-oss-20b (whole: every check passes) with
one property changed. What moto received is read from the harness's request log.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml
from safetensors.numpy import load_file, save_file

import sm_peagle
from peagle_sandbox.synthetic_head import synthetic_head
from sm_peagle.errors import CheckFailed
from tests.integration.lifecycle_env import JS_BUCKET, REGION, World, run

DEST = f"s3://{JS_BUCKET}/mine/head/"
UPLOADS = ("PutObject", "CreateMultipartUpload", "UploadPart", "CompleteMultipartUpload")
REFUSES = "refuses it at start"
FIRST = "starts and passes the health check, then fails every request"
SILENT = "loads it silently wrong"
STRICT = "(a warning; --strict fails it)"


def whole(root: Path, version: str = "0.18.0") -> Path:
    """The synthetic head for gpt-oss-20b, its mask_hidden sized for `version` (0.18.0:
    what the plan's default image runs)."""
    root.mkdir(parents=True)
    files = synthetic_head(target_hidden=2880, target_vocab=201088, vllm_version=version)
    for rel, data in files.items():
        (root / rel).write_bytes(data)
    return root


def edit(root: Path, **cfg: Any) -> Path:
    path = root / "config.json"
    c = json.loads(path.read_text())
    for k, v in cfg.items():
        if v is None:
            c.pop(k, None)
        else:
            c[k] = v
    path.write_text(json.dumps(c))
    return root


def prefixed(root: Path) -> Path:
    path = root / "model.safetensors"
    t = load_file(str(path))
    save_file({f"model.{k}": v for k, v in t.items()}, str(path), metadata={"format": "pt"})
    return root


def f33(root: Path) -> Path:
    """One tensor's dtype renamed F16 -> F33 (no such dtype; the same length, so every
    offset still holds)."""
    path = root / "model.safetensors"
    data = bytearray(path.read_bytes())
    n = int.from_bytes(data[:8], "little")
    data[8 : 8 + n] = bytes(data[8 : 8 + n]).replace(b'"dtype":"F16"', b'"dtype":"F33"', 1)
    path.write_bytes(bytes(data))
    return root


def pickled(root: Path) -> Path:
    (root / "model.safetensors").rename(root / "pytorch_model.bin")
    return root


# head name -> (how it is made from the whole head, the check, what vLLM does)
FAILING = {
    "prefixed": (prefixed, "drafter.tensor_names", REFUSES),
    "f33": (f33, "drafter.dtypes", REFUSES),
    "float33": (lambda r: edit(r, torch_dtype="float33"), "drafter.dtypes", REFUSES),
    "no-model-type": (lambda r: edit(r, model_type=None), "drafter.config_keys", REFUSES),
    # LlamaConfig's default intermediate_size 11008: 64 rows held, 11008 needed
    "no-intermediate": (
        lambda r: edit(r, intermediate_size=None),
        "drafter.tensor_shapes",
        REFUSES,
    ),
    "mask-at-vocab": (lambda r: edit(r, ptd_token_id=201088), "drafter.token_ids", FIRST),
    "aux-past-target": (
        lambda r: edit(r, eagle_aux_hidden_state_layer_ids=[2, 12, 30]),
        "drafter.aux_layers",
        FIRST,
    ),
    "pickled": (pickled, "drafter.weights", "would load them"),
}
SILENT_HEADS = {
    "two-layers": (lambda r: edit(r, num_hidden_layers=2), "drafter.unloaded"),
    "head-dim-16": (lambda r: edit(r, head_dim=16), "drafter.tensor_shapes"),
}


def made(tmp_path: Path, name: str, version: str = "0.18.0") -> Path:
    make = {**{k: v[0] for k, v in FAILING.items()}, **{k: v[0] for k, v in SILENT_HEADS.items()}}
    return make[name](whole(tmp_path / name, version))


def mutating(world: World) -> list[str]:
    return [op for op, _ in world.requests if not op.startswith(("Describe", "List", "Get"))]


def uploads(harness: Any) -> list[str]:
    return [op for op in harness.requests.operations() if op in UPLOADS]


CHECK = ("drafter", "check", "-m", "gpt-oss-20b", "--vllm-version", "0.31.0")


@pytest.mark.parametrize("name", list(FAILING))
def test_each_failing_class_is_one_line_with_property_behaviour_and_fix(
    world: World, capsys: Any, tmp_path: Path, name: str
) -> None:
    _, check, behaviour = FAILING[name]
    code, out, err = run(capsys, *CHECK[:2], str(made(tmp_path, name, "0.31.0")), *CHECK[2:])
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, err
    assert lines[0].startswith(f"error: {check}: "), lines[0]
    assert behaviour in lines[0] and "(fix: " in lines[0], lines[0]


@pytest.mark.parametrize("name", list(SILENT_HEADS))
def test_each_silent_class_warns_and_strict_fails_it(
    world: World, capsys: Any, tmp_path: Path, name: str
) -> None:
    _, check = SILENT_HEADS[name]
    head = str(made(tmp_path, name, "0.31.0"))
    code, out, err = run(capsys, *CHECK[:2], head, *CHECK[2:], "--json")
    assert code == 0, err
    doc = {c["name"]: c for c in json.loads(out)["checks"]}
    assert doc[check]["status"] == "warn" and SILENT in doc[check]["message"]
    assert doc[check]["fix"]
    assert [n for n, c in doc.items() if c["status"] != "pass"] == [check]
    code, _, err = run(capsys, *CHECK[:2], head, *CHECK[2:], "--strict")
    assert code == 2 and err.strip().startswith(f"error: {check}: ") and STRICT in err
    result = sm_peagle.drafter_check(head, model="gpt-oss-20b", vllm_version="0.31.0", strict=True)
    assert not result.ok and [c.name for c in result.checks if c.status == "fail"] == [check]


@pytest.mark.parametrize("name", ["f33", "pickled"])
def test_push_refuses_what_vllm_cannot_read_or_peagle_will_not_and_uploads_nothing(
    world: World, sagemaker_harness: Any, capsys: Any, tmp_path: Path, name: str
) -> None:
    _, check, behaviour = FAILING[name]
    head = made(tmp_path, name)
    sagemaker_harness.requests.clear()
    code, out, err = run(capsys, "drafter", "push", str(head), DEST)
    assert code == 2 and out == "" and f"error: {check}: " in err and behaviour in err
    with pytest.raises(CheckFailed) as e:
        sm_peagle.drafter_push(head, DEST)
    assert [c.name for c in e.value.failed] == [check]
    assert uploads(sagemaker_harness) == []
    code, _, err = run(capsys, "drafter", "push", str(head), DEST, "--force")
    assert code == 0, err
    assert "PutObject" in uploads(sagemaker_harness)


def test_push_strict_refuses_a_warning_and_uploads_nothing(
    world: World, sagemaker_harness: Any, capsys: Any, tmp_path: Path
) -> None:
    # The head deploy warns about and nothing else (issue 33: push runs deploy's checks,
    # so the head is checked for the deploy it is for: gpt-oss-20b, trained for K=10).
    head = made(tmp_path, "two-layers")
    target = ("--model", "gpt-oss-20b", "--trained-k", "10")
    sagemaker_harness.requests.clear()
    code, _, err = run(capsys, "drafter", "push", str(head), DEST, *target, "--strict")
    assert code == 2 and err.strip().startswith("error: drafter.unloaded: ") and STRICT in err
    with pytest.raises(CheckFailed):
        sm_peagle.drafter_push(head, DEST, model="gpt-oss-20b", trained_k=10, strict=True)
    assert uploads(sagemaker_harness) == []
    code, _, err = run(capsys, "drafter", "push", str(head), DEST, *target)
    assert code == 0 and "PutObject" in uploads(sagemaker_harness), err
    assert "warning: drafter.unloaded: " in err


@pytest.mark.parametrize("name", ["prefixed", "mask-at-vocab", "aux-past-target"])
def test_deploy_with_a_local_head_refuses_it_before_sending_anything(
    world: World, capsys: Any, tmp_path: Path, name: str
) -> None:
    _, check, behaviour = FAILING[name]
    head = made(tmp_path, name)
    world.requests.clear()
    code, _, err = run(capsys, "deploy", "gpt-oss-20b", "--drafter", str(head), "--yes")
    assert code == 2 and f"error: {check}: " in err and behaviour in err, err
    assert mutating(world) == []


def test_deploy_with_an_s3_head_runs_the_same_checks_before_creating_anything(
    world: World, capsys: Any, tmp_path: Path
) -> None:
    head = made(tmp_path, "f33")
    s3 = boto3.client("s3", region_name=REGION)
    for f in head.iterdir():
        s3.put_object(Bucket=JS_BUCKET, Key=f"mine/f33/{f.name}", Body=f.read_bytes())
    world.requests.clear()
    uri = f"s3://{JS_BUCKET}/mine/f33/"
    code, _, err = run(capsys, "deploy", "gpt-oss-20b", "--drafter", uri, "--yes")
    assert code != 0 and "drafter.dtypes" in err and "F33" in err, err
    assert [op for op in mutating(world) if op.startswith("Create")] == []


def _spec(tmp_path: Path, head: Path) -> Path:
    path = tmp_path / "deployment.yaml"
    doc = {
        "model": "gpt-oss-20b",
        "region": REGION,
        "drafter": {"source": str(head), "trained_k": 10},
    }
    path.write_text(yaml.safe_dump(doc))
    return path


def test_strict_fails_a_silent_head_on_plan_deploy_and_apply_and_sends_nothing(
    world: World, capsys: Any, tmp_path: Path
) -> None:
    spec = _spec(tmp_path, made(tmp_path, "two-layers"))
    code, out, err = run(capsys, "plan", "-f", str(spec), "--json")
    assert code == 0, err
    warns = [c["name"] for c in json.loads(out)["checks"] if c["status"] == "warn"]
    assert warns == ["drafter.unloaded"]
    world.requests.clear()
    for argv in (
        ("plan", "-f", str(spec), "--strict"),
        ("deploy", "-f", str(spec), "--strict", "--yes"),
        ("deploy", "-f", str(spec), "--strict", "--dry-run"),
        ("apply", "-f", str(spec), "--strict", "--yes"),
    ):
        code, _, err = run(capsys, *argv)
        lines = err.strip().splitlines()
        assert code == 2 and lines[-1].startswith("error: drafter.unloaded: "), (argv, err)
        assert STRICT in lines[-1] and "(fix: " in lines[-1]
    assert mutating(world) == []
    assert not sm_peagle.plan(str(spec), strict=True).ok
    with pytest.raises(CheckFailed):
        sm_peagle.deploy(str(spec), strict=True)
    with pytest.raises(CheckFailed):
        sm_peagle.apply(str(spec), strict=True)
    assert mutating(world) == []


def test_strict_passes_a_clean_plan(world: World, capsys: Any, tmp_path: Path) -> None:
    """The control: the whole head with its trained K has no warning, so --strict changes
    nothing (it fails warnings, not plans)."""
    spec = _spec(tmp_path, whole(tmp_path / "h"))
    code, out, err = run(capsys, "plan", "-f", str(spec), "--strict", "--json")
    assert code == 0, err
    assert {c["status"] for c in json.loads(out)["checks"]} == {"pass"}
