"""Issue 14 (a newcomer's first hour), the items that need no AWS: each through the real
CLI entry point (in process), asserting the exit code and the message. Expected values come
from the rule the README states ("bad input: exit 2, one line, naming the fix"; "--json:
one document on stdout, errors too"), not from the code under test."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sm_peagle.cli import output
from sm_peagle.cli.app import main

REGION_COMMANDS = [
    ["ls"],
    ["status", "x"],
    ["logs", "x"],
    ["delete", "x", "--yes"],
    ["gc", "--dry-run"],
    ["update", "x", "-k", "3"],
    ["invoke", "x", "hi"],
    ["chat", "x"],
    ["bench", "x"],
    ["instances", "--live-prices"],
    ["drafter", "inspect", "s3://bucket/head/"],
    ["plan", "gpt-oss-20b"],
    ["deploy", "gpt-oss-20b"],
    ["apply", "-f", "spec.yaml"],
    ["diff", "-f", "spec.yaml"],
]


def run(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Fake credentials, no endpoint: a command that reached AWS here would hang or fail
    differently, so every exit 2 below happened before any request."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "fake")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "fake")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # discard: never answers
    monkeypatch.setenv("PEAGLE_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv("PEAGLE_SANDBOX", raising=False)
    monkeypatch.chdir(tmp_path)


def test_version(capsys):
    from sm_peagle.version import __version__

    assert run(capsys, "--version") == (0, f"peagle {__version__}\n", "")


def test_sandbox_after_the_command_says_where_it_goes(capsys):
    code, _, err = run(capsys, "ls", "--sandbox")
    assert code == 2 and "No such option: --sandbox" in err
    assert "put it before the command" in err and err.count("\n") == 1


@pytest.mark.parametrize("argv", REGION_COMMANDS, ids=lambda a: " ".join(a[:2]))
def test_region_is_validated_on_every_command_that_takes_it(capsys, argv):
    for region in ("mars-1", "eu-west-9"):
        code, _, err = run(capsys, *argv, "--region", region)
        assert code == 2, (argv, err)
        assert f"region: '{region}' is not an AWS region" in err
        assert "$" not in err and "Traceback" not in err


def test_a_bad_aws_region_in_the_environment_is_bad_input(capsys, monkeypatch):
    monkeypatch.setenv("AWS_REGION", "mars-1")
    code, _, err = run(capsys, "ls")
    assert code == 2 and "'mars-1' is not an AWS region" in err


def test_every_spec_error_is_shown_in_the_cli_json_and_sdk(capsys):
    import sm_peagle

    argv = ["plan", "gpt-oss-120b", "--model-data", "s3://b/m/", "--drafter", "s3://b/h/"]
    code, _, err = run(capsys, *argv)
    assert code == 2 and "model_data:" in err and "drafter.source:" in err and "more" not in err
    code, out, _ = run(capsys, *argv, "--json")
    message = json.loads(out)["error"]["message"]
    assert "model_data:" in message and "drafter.source:" in message
    with pytest.raises(sm_peagle.SpecError) as e:
        sm_peagle.plan("gpt-oss-120b", model_data="s3://b/m/", drafter="s3://b/h/")
    assert "model_data:" in str(e.value) and "drafter.source:" in str(e.value)


def test_every_failed_check_is_shown():
    from sm_peagle.checks import Check
    from sm_peagle.errors import CheckFailed

    err = CheckFailed([Check("a", "fail", "first", "fix a"), Check("b", "fail", "second", None)])
    assert err.one_line() == "a: first (fix: fix a); b: second"
    assert [e["name"] for e in err.to_dict()["errors"]] == ["a", "b"]


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["plan", "gpt-oss-20b", "--mode", "baseline", "-k", "5"], "baseline proposes no"),
        (
            ["plan", "gpt-oss-20b", "-t", "ml.g7e.2xlarge", "--fallback", "ml.g7e.2xlarge"],
            "is the primary instance type",
        ),
        (["plan", "gpt-oss-20b", "--target-concurrency", "4"], "--autoscale MIN:MAX"),
        (["recommend", "gpt-oss-20b", "--sequences", "-3"], "--sequences: must be at least"),
        (["invoke", "ep", ""], "prompt: empty"),
        (["plan", "gpt-oss-20bb"], "did you mean gpt-oss-20b?"),
    ],
    ids=["baseline-k", "fallback-primary", "target-no-range", "sequences", "empty", "typo"],
)
def test_silently_accepted_inputs_are_now_exit_2(capsys, argv, expected):
    code, _, err = run(capsys, *argv)
    assert code == 2 and expected in err, err
    assert "Field required" not in err


def _bench_doc(model: str, simulated: bool) -> dict[str, Any]:
    level = {"output_tokens_per_s": 1000.0, "concurrency": 1}
    doc = {"model": model, "instance_type": "ml.g7e.2xlarge", "simulated": simulated}
    return {**doc, "levels": [level]}


def test_recommend_results_never_rank_one_model_by_another(capsys, tmp_path):
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "a.json").write_text(json.dumps(_bench_doc("gpt-oss-20b", True)))
    code, _, err = run(capsys, "recommend", "gpt-oss-120b", "--results-dir", str(tmp_path / "r"))
    assert code == 2 and "no results for gpt-oss-120b" in err and "gpt-oss-20b" in err
    code, out, _ = run(
        capsys, "recommend", "gpt-oss-20b", "--results-dir", str(tmp_path / "r"), "--json"
    )
    doc = json.loads(out)
    assert code == 0 and "SIMULATED" in doc["basis"] and "measured" not in doc["basis"]
    row = next(c for c in doc["candidates"] if c["instance_type"] == "ml.g7e.2xlarge")
    assert row["basis"] == "SIMULATED throughput"  # no label to name it by


def test_plot_without_matplotlib_fails_before_any_work(capsys, monkeypatch, tmp_path):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda n, *a: None if n == "matplotlib" else real(n, *a)
    )
    code, _, err = run(capsys, "bench", "ep", "--plot", str(tmp_path / "c.png"))
    assert code == 2 and "sm-peagle[plot]" in err and "talking to" not in err


def test_sweep_typo_fails_before_any_work(capsys, tmp_path):
    code, _, err = run(capsys, "sweep", "gpt-oss-20bb", "--output", str(tmp_path / "out"))
    assert code == 2 and "did you mean gpt-oss-20b?" in err
    assert not (tmp_path / "out").exists() and "talking to" not in err


def test_drafter_inspect_of_an_empty_directory_is_exit_2(capsys, tmp_path):
    code, _, err = run(capsys, "drafter", "inspect", str(tmp_path))
    assert code == 2 and "no drafter head here" in err


def test_n_at_a_prompt_says_aborted_and_exits_1(capsys, monkeypatch):
    class Tty:
        def isatty(self) -> bool:
            return True

        def readline(self) -> str:
            return "n\n"

    monkeypatch.setattr("sys.stdin", Tty())
    monkeypatch.setattr("builtins.input", lambda *_: "n")
    code, _, err = run(capsys, "delete", "ep")
    assert code == 1 and err.strip().splitlines()[-1] == "error: aborted"


def test_ctrl_c_exits_130_and_says_interrupted(capsys, monkeypatch):
    def interrupted() -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("sm_peagle.cli.catalog_cmds.schema", interrupted)
    code, _, err = run(capsys, "schema")
    assert code == 130 and err == "error: interrupted\n"


def test_json_errors_are_one_document_on_stdout(capsys):
    code, out, err = run(capsys, "plan", "gpt-oss-20bb", "--json")
    doc = json.loads(out)
    assert code == 2 and doc.keys() == {"error", "label"} and doc["label"] == "AWS"
    assert doc["error"]["exit_code"] == 2 and doc["error"]["type"] == "SpecError"
    assert "did you mean" in doc["error"]["fix"] and err.startswith("error: ")


def test_update_help_says_mode_keeps_the_current_one(capsys):
    code, out, _ = run(capsys, "update", "--help")
    text = " ".join(out.split())
    assert code == 0 and "keep the current" in text and "p-eagle (default)" not in text


def test_wait_timeout_names_the_endpoint():
    from sm_peagle.errors import DeploymentTimeout
    from sm_peagle.lifecycle.waiter import wait_for_endpoint

    class Sm:
        def describe_endpoint(self, **_: Any) -> dict:
            return {"EndpointStatus": "Creating"}

    with pytest.raises(DeploymentTimeout) as e:
        wait_for_endpoint(Sm(), "my-ep", timeout=0, sleep=lambda _: None)
    line = e.value.one_line()  # the SDK's words: the keyword and the call
    assert "timeout=" in line and "sm_peagle.logs('my-ep')" in line and "NAME" not in line


@pytest.mark.parametrize("width", [80, 100, 120])
def test_tables_never_break_a_word(capsys, monkeypatch, width):
    """On a terminal of `width` columns (outside one nothing is fitted to a width)."""
    monkeypatch.setattr(output, "is_terminal", lambda _stream: True)
    monkeypatch.setenv("COLUMNS", str(width))
    monkeypatch.setattr(output, "_console", None)
    code, out, _ = run(capsys, "models")
    assert code == 0 and "openai-reasoning-gpt-oss-20b" in out
    assert max(len(line) for line in out.splitlines()) <= width
    monkeypatch.setattr(output, "_console", None)


def test_drafter_check_title_without_k_says_so(capsys, monkeypatch, tmp_path):
    from peagle_sandbox.synthetic_head import synthetic_head

    for key, body in synthetic_head(target_hidden=2880, target_vocab=201088).items():
        (tmp_path / key).write_bytes(body)
    monkeypatch.setenv("COLUMNS", "250")
    monkeypatch.setattr(output, "_console", None)
    _, out, _ = run(capsys, "drafter", "check", str(tmp_path))
    monkeypatch.setattr(output, "_console", None)
    assert "K=None" not in out and "K not given" in out


def test_instances_live_prices_without_credentials_warns(capsys, monkeypatch, tmp_path):
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(var)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    code, _, err = run(capsys, "instances", "--live-prices")
    assert code == 0 and "warning: live prices:" in err and "<" not in err


def test_an_interrupted_rollback_names_the_deployments_delete(monkeypatch):
    """After a second Ctrl-C the advice is the one command that removes exactly this
    deployment's leftovers (`peagle delete NAME`, which finds its tagged config and model
    even when the endpoint is gone), never a blanket `gc --min-age 0`."""
    from sm_peagle.errors import Call, Interrupted
    from sm_peagle.lifecycle.manager import Lifecycle

    said: list[str] = []
    lc = Lifecycle(None, say=said.append)

    def interrupted(*_: Any, **__: Any) -> bool:
        raise KeyboardInterrupt

    monkeypatch.setattr(lc, "delete_and_confirm", interrupted)
    with pytest.raises(Interrupted) as stopped:
        lc.rollback([("model", "m"), ("endpoint_config", "c"), ("endpoint", "my-ep")])
    assert stopped.value.command == Call("delete", "my-ep")
    assert stopped.value.left == [("endpoint", "my-ep"), ("endpoint_config", "c"), ("model", "m")]
    assert "`sm_peagle.delete('my-ep')`" in str(stopped.value)  # the SDK's words
