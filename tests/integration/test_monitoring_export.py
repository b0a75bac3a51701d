"""The exports carry monitoring as deploy makes it, or refuse: Terraform gets the log
group, transformer, filters, alarm and dashboard (hashicorp/aws >= 6.25.0, the first
release with aws_cloudwatch_log_transformer: its CHANGELOG, "6.25.0 (December 4, 2025)");
CloudFormation refuses a monitored spec (it drafts, and AWS::SageMaker::Model cannot mount
a drafter channel), and its monitoring resources lint clean on their own."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

import sm_peagle
from sm_peagle.iac.export import export_document
from tests.integration.lifecycle_env import run

NAME = "peagle-gpt-oss-20b-p-eagle"
GROUP = f"/aws/sagemaker/Endpoints/{NAME}"


def _unescape(value: str) -> str:
    """Terraform JSON's template escapes undone: what Terraform sends."""
    return value.replace("$${", "${").replace("%%{", "%{")


def _spec(tmp_path: Path, keep_logs: bool = False) -> Path:
    path = tmp_path / "monitored.yaml"
    path.write_text(
        "model: gpt-oss-20b\nmonitoring:\n"
        f"  threshold: 1.4\n  keep_logs: {'true' if keep_logs else 'false'}\n"
    )
    return path


def test_terraform_export_carries_the_monitoring_deploy_sends(tmp_path, capsys):
    code, out, err = run(
        capsys, "export", "-f", str(_spec(tmp_path, True)), "--format", "terraform"
    )
    assert code == 0, err
    doc = json.loads(out)
    assert doc["terraform"]["required_providers"]["aws"]["version"] == ">= 6.25.0"
    r = doc["resource"]
    (group,) = r["aws_cloudwatch_log_group"].values()
    assert group["name"] == GROUP and group["retention_in_days"] == 30
    assert group["skip_destroy"] is True  # keep_logs: destroying the stack keeps the logs
    assert group["tags"]["peagle:deployment"] == NAME
    (transformer,) = r["aws_cloudwatch_log_transformer"].values()
    grok = transformer["transformer_config"][0]["grok"][0]
    # What vLLM's line must match, escaped so Terraform does not read %{ as a directive.
    assert "%%{NUMBER:acceptance_length}" in grok["match"]
    sent = sm_peagle.plan(_spec(tmp_path, True)).monitoring
    assert _unescape(grok["match"]) == sent.transformer["transformerConfig"][0]["grok"]["match"]
    filters = r["aws_cloudwatch_log_metric_filter"]
    assert sorted(f["name"] for f in filters.values()) == [
        "peagle-acceptance-length",
        "peagle-accepted-tokens",
        "peagle-drafted-tokens",
    ]
    for f in filters.values():
        assert f["apply_on_transformed_logs"] is True
        assert "default_value" not in f["metric_transformation"][0]  # idle: no datapoint
    (alarm,) = r["aws_cloudwatch_metric_alarm"].values()
    assert (alarm["threshold"], alarm["treat_missing_data"]) == (1.4, "missing")
    assert alarm["comparison_operator"] == "LessThanThreshold"
    (dash,) = r["aws_cloudwatch_dashboard"].values()
    assert "${data.aws_caller_identity.current.account_id}" in dash["dashboard_body"]
    assert "AWS::AccountId" not in dash["dashboard_body"]
    assert "aws_caller_identity" in doc["data"]
    (endpoint,) = r["aws_sagemaker_endpoint"].values()
    # The endpoint after the log group, transformer and filters (SageMaker writes there).
    assert len(endpoint["depends_on"]) == 5


def test_cloudformation_export_of_a_monitored_spec_is_refused_with_the_reason(tmp_path, capsys):
    code, out, err = run(capsys, "export", "-f", str(_spec(tmp_path)), "--format", "cloudformation")
    assert code == 2 and out == ""
    assert "AdditionalModelDataSources" in err and "Traceback" not in err


def test_cloudformation_monitoring_resources_lint_clean(tmp_path):
    """The monitoring half of the template, on its own (the drafter channel refuses the
    whole today): the schema names and values cfn-lint knows."""
    from sm_peagle.iac.export_monitoring import cfn_monitoring

    p = sm_peagle.plan(_spec(tmp_path, True))
    resources, depends = cfn_monitoring(p)
    assert depends[:2] == ["PeagleLogGroup", "PeagleLogTransformer"]
    assert resources["PeagleLogGroup"]["DeletionPolicy"] == "Retain"
    body = resources["PeagleSpeculationDashboard"]["Properties"]["DashboardBody"]["Fn::Sub"]
    assert "${AWS::AccountId}" in body
    path = tmp_path / "monitoring.json"
    path.write_text(json.dumps({"AWSTemplateFormatVersion": "2010-09-09", "Resources": resources}))
    exe = shutil.which("cfn-lint")
    if exe is None:
        pytest.skip("cfn-lint is not installed")
    result = subprocess.run([exe, "--", str(path)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_json_export_is_the_plan_with_its_monitoring(tmp_path):
    p = sm_peagle.plan(_spec(tmp_path))
    assert export_document(p, "json")["monitoring"]["log_group"] == GROUP


def test_sagemaker_script_export_of_a_monitored_spec_is_refused(tmp_path, capsys):
    code, out, err = run(capsys, "export", "-f", str(_spec(tmp_path)), "--format", "sagemaker")
    assert code == 2 and out == ""
    (line,) = [ln for ln in err.splitlines() if ln.startswith("error:")]
    assert "monitoring" in line and "(fix:" in line
