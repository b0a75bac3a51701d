"""`sm_peagle.export` and `sm_peagle.iam_policy`: the text and policies the CLI prints, and
the refusals (unknown format, an -o path that cannot be written, a bad account) raised
before anything is planned, with the same SpecError from the SDK and the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import sm_peagle
from sm_peagle.errors import SpecError
from tests.plan_helpers import make_offline, run_cli

TEMPLATE = Path(__file__).resolve().parents[2] / "templates" / "specs" / "gpt-oss-20b-p-eagle.yaml"
ROLE = "arn:aws:iam::111122223333:role/peagle-exec"


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    make_offline(monkeypatch, tmp_path)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")


@pytest.fixture
def no_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    """Planning fails the test: a refusal must come first."""
    from sm_peagle.lifecycle import resolve

    def planned(*a, **k):
        raise AssertionError("planned despite a bad argument")

    monkeypatch.setattr(resolve, "plan", planned)


@pytest.mark.parametrize("fmt", ["terraform", "cloudformation", "json", "sagemaker"])
def test_export_text_is_what_the_cli_prints(capsys, fmt: str) -> None:
    if fmt == "cloudformation":
        # A drafter channel cannot be expressed in CloudFormation: the same refusal.
        with pytest.raises(SpecError) as e:
            sm_peagle.export(TEMPLATE, format=fmt, role=ROLE)
        code, _, err = run_cli(capsys, "export", "-f", str(TEMPLATE), "--format", fmt)
        assert code == 2 and e.value.message in err
        return
    result = sm_peagle.export(TEMPLATE, format=fmt, role=ROLE)
    assert isinstance(result, sm_peagle.ExportResult)
    assert result.format == fmt and result.output is None and result.endpoint
    code, out, err = run_cli(capsys, "export", "-f", str(TEMPLATE), "--format", fmt, "--role", ROLE)
    assert code == 0, err
    assert out == result.text
    assert result.to_dict()["text"] == result.text


def test_export_writes_output_and_says_so(tmp_path: Path, capsys) -> None:
    target = tmp_path / "main.tf.json"
    said: list[str] = []
    result = sm_peagle.Client(progress=said.append).export(
        TEMPLATE, format="terraform", output=target, role=ROLE
    )
    assert result.output == target and target.read_text() == result.text
    assert json.loads(target.read_text())["resource"]
    assert all(line.startswith("warning: ") for line in said)
    cli_target = tmp_path / "cli.tf.json"
    code, out, err = run_cli(
        capsys, "export", "-f", str(TEMPLATE), "--role", ROLE, "-o", str(cli_target)
    )
    assert code == 0 and out == "" and f"to {cli_target}" in err
    assert cli_target.read_text() == result.text


def test_unknown_format_lists_the_choices_before_planning(capsys, no_plan) -> None:
    with pytest.raises(SpecError) as e:
        sm_peagle.export("gpt-oss-20b", format="pulumi")
    assert e.value.message == "format=: unknown format 'pulumi'"  # the keyword, in Python
    assert e.value.remedy == "use one of terraform, cloudformation, json, sagemaker"
    assert (e.value.field, e.value.value) == ("format", "pulumi")
    code, out, err = run_cli(capsys, "export", "gpt-oss-20b", "--format", "pulumi")
    assert code == 2 and out == ""
    assert err.strip() == f"error: --format: unknown format 'pulumi' (fix: {e.value.remedy})"


def _unwritable(tmp_path: Path) -> list[tuple[Path, str]]:
    a_file = tmp_path / "a-file"
    a_file.write_text("keep")
    return [
        (tmp_path, "is a directory"),
        (a_file / "out.tf.json", "is a file, not a directory"),
        (tmp_path / "no" / "such" / "out.tf.json", "does not exist"),
        (Path("/proc/x/y"), "does not exist"),
    ]


def test_unwritable_output_is_refused_before_planning(tmp_path: Path, capsys, no_plan) -> None:
    for path, why in _unwritable(tmp_path):
        with pytest.raises(SpecError) as e:
            sm_peagle.export("gpt-oss-20b", format="json", output=path)
        assert e.value.message.startswith("output=: ") and why in e.value.message, path
        assert e.value.field == "output"
        code, out, err = run_cli(
            capsys, "export", "gpt-oss-20b", "--format", "json", "-o", str(path)
        )
        assert code == 2 and out == ""
        cli_line = "--output: " + e.value.message.removeprefix("output=: ")
        assert err.startswith(f"error: {cli_line}") and len(err.splitlines()) == 1
    assert (tmp_path / "a-file").read_text() == "keep"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]  # nothing written


def test_read_only_directory_is_refused(tmp_path: Path, no_plan) -> None:
    import os

    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        # root (CI) writes through a mode of 500; sysfs refuses new files even to root.
        target = Path("/sys") if os.access(locked, os.W_OK) else locked
        with pytest.raises(SpecError, match="is not writable|Permission denied"):
            sm_peagle.export("gpt-oss-20b", output=target / "out.tf.json")
        assert not (target / "out.tf.json").exists()
    finally:
        locked.chmod(0o700)


def test_iam_policy_is_the_cli_json(capsys) -> None:
    result = sm_peagle.iam_policy(TEMPLATE, role=ROLE, account="444455556666")
    assert isinstance(result, sm_peagle.IamPolicy)
    assert result.account == "444455556666" and result.endpoint
    code, out, err = run_cli(
        capsys,
        "iam-policy",
        "-f",
        str(TEMPLATE),
        "--role",
        ROLE,
        "--account",
        "444455556666",
        "--json",
    )
    assert code == 0, err
    # The SDK's document plus where it came from (issue 26: every --json document carries it).
    assert json.loads(out) == {"label": "AWS", **result.to_dict()}
    assert set(result.to_dict()) == {"for", "policy", "trust_policy"}


def test_iam_policy_bad_account_before_planning(capsys, no_plan) -> None:
    with pytest.raises(SpecError) as e:
        sm_peagle.iam_policy("gpt-oss-20b", account="12345")
    assert e.value.message == "account=: '12345' is not a 12-digit AWS account id"
    assert e.value.field == "account"
    code, out, err = run_cli(capsys, "iam-policy", "gpt-oss-20b", "--account", "12345")
    # The SDK's error brings no remedy: the CLI's line names the command's help (README,
    # "Output and exit codes": bad input always names a fix).
    assert code == 2 and out == ""
    assert err.strip() == (
        "error: --account: '12345' is not a 12-digit AWS account id "
        "(fix: see `peagle iam-policy --help`)"
    )


def test_iam_policy_unknown_for_lists_the_choices_before_planning(capsys, no_plan) -> None:
    # The principals: the role SageMaker assumes, whoever runs peagle, the TTL's role, and
    # drafter training's two (whoever trains, the role the training job assumes).
    with pytest.raises(SpecError) as e:
        sm_peagle.iam_policy("gpt-oss-20b", for_="admin")
    assert e.value.message == "for_=: unknown value 'admin'"  # the SDK's own name for it
    choices = "execution-role, deployer, ttl-role, trainer, training-role"
    assert e.value.remedy == f"use one of {choices}"
    code, out, err = run_cli(capsys, "iam-policy", "gpt-oss-20b", "--for", "admin")
    assert code == 2 and out == ""
    assert err.strip() == f"error: --for: unknown value 'admin' (fix: use one of {choices})"


def test_iam_policy_for_deployer_is_the_cli_json(capsys) -> None:
    result = sm_peagle.iam_policy(TEMPLATE, for_="deployer", role=ROLE)
    assert result.for_ == "deployer" and result.to_dict().keys() == {"for", "policy"}
    code, out, err = run_cli(
        capsys, "iam-policy", "-f", str(TEMPLATE), "--for", "deployer", "--role", ROLE, "--json"
    )
    assert code == 0, err
    assert json.loads(out) == {"label": "AWS", **result.to_dict()}
    code, out, err = run_cli(
        capsys, "iam-policy", "-f", str(TEMPLATE), "--for", "deployer", "--role", ROLE
    )
    assert code == 0 and out.count('"Version": "2012-10-17"') == 1  # no trust policy
    assert "Deployer policy" in out and "Trust policy" not in out
