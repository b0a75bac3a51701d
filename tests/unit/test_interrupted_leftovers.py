"""A run stopped a second time says, on its error line, what it left and the one command
that removes it; that command reaches the place the stopped command talked to (issue 33):
`--sandbox` in the sandbox (never a bare `peagle delete NAME`, which pasted with AWS
credentials would reach a real endpoint of that name), `--region R` on AWS. The error
survives typer, which turns any KeyboardInterrupt into a bare exit code 130."""

from __future__ import annotations

import json

import pytest

from sm_peagle.cli import advice, output
from sm_peagle.errors import Call, Interrupted

OP = "op-20261129T090000Z-3f9a1c"


def stopped() -> Interrupted:
    return Interrupted(
        "rollback stopped",
        [("endpoint_config", "x-cfg"), ("model", "x-mdl")],
        Call("gc", operation=OP),
        operation=OP,
        region="eu-west-1",
    )


def test_in_the_sandbox_the_command_says_sandbox(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from sm_peagle.cli.boundary import exit_code_for

    # a shell pointed at the sandbox (`peagle sandbox env`): the target says where it is
    monkeypatch.setenv("PEAGLE_TARGET", "sandbox")
    monkeypatch.setenv("PEAGLE_SANDBOX_URL", "http://127.0.0.1:1")
    output.reset()
    advice.begin()  # a new CLI run (cli/app.py main): no earlier test's region
    assert exit_code_for(stopped(), ["deploy", "gpt-oss-20b", "--yes"]) == 130
    assert capsys.readouterr() == (
        "",
        "error: interrupted; rollback stopped: left endpoint config x-cfg, model x-mdl "
        f"(fix: `peagle --sandbox gc --operation {OP} --yes` removes exactly these)\n",
    )


def test_on_aws_the_command_carries_the_region_and_json_the_leftovers(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from sm_peagle.cli.boundary import exit_code_for

    for name in ("PEAGLE_SANDBOX_URL", "PEAGLE_SANDBOX", "PEAGLE_TARGET"):
        monkeypatch.delenv(name, raising=False)
    output.reset()
    advice.begin()
    assert exit_code_for(stopped(), ["--json", "update", "x", "-k", "5"]) == 130
    out, err = capsys.readouterr()
    command = ["peagle", "gc", "--operation", OP, "--yes", "--region", "eu-west-1"]
    assert err.endswith(f"(fix: `{' '.join(command)}` removes exactly these)\n")
    doc = json.loads(out)["error"]
    assert doc["type"] == "Interrupted" and doc["exit_code"] == 130
    assert doc["left"] == [
        {"kind": "endpoint_config", "name": "x-cfg"},
        {"kind": "model", "name": "x-mdl"},
    ]
    assert (doc["operation"], doc["command"]) == (OP, command)


def test_the_error_survives_typer_to_the_boundary(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Raised inside a command, it reaches the error line (typer returns only 130)."""
    from sm_peagle.cli.app import main
    from sm_peagle.ops.endpoints import EndpointOps

    def stop(*_: object, **__: object) -> None:
        raise stopped()

    monkeypatch.delenv("PEAGLE_SANDBOX_URL", raising=False)
    monkeypatch.setattr(EndpointOps, "gc", stop)  # the client's gc, which the CLI calls
    assert main(["gc", "--yes"]) == 130
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("error: interrupted; rollback stopped: left endpoint config x-cfg")
