"""The one output object (issue 22, item 5) and the root options that configure it, through
the real entry point `sm_peagle.cli.app.main` where a command is involved. Expected values
come from the README's contract: `--json` prints one JSON document on stdout, notes go to
stderr, bad input is one line `error: <what> (fix: <remedy>)` with exit 2; and issue 26's:
every `--json` document says where it came from under "label" (`AWS`, `SANDBOX
(SIMULATED)`, `SANDBOX (vllm X.Y.Z, CPU, tiny model)`)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import pytest
import typer

from sm_peagle.cli import output
from sm_peagle.cli.app import main


def run(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "fake")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "fake")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # never answers
    monkeypatch.setenv("PEAGLE_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv("PEAGLE_SANDBOX", raising=False)
    monkeypatch.delenv("PEAGLE_SANDBOX_URL", raising=False)  # talking to AWS: label "AWS"
    monkeypatch.delenv("PEAGLE_SANDBOX_ENGINE_LABEL", raising=False)
    monkeypatch.chdir(tmp_path)
    output.reset()


@dataclass
class Thing:
    name: str

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "kind": "thing"}


# -- the object ------------------------------------------------------------------------------
def test_result_is_the_json_document_of_to_dict_in_json_mode(capsys):
    out = output.Output(json=True)
    out.result(Thing("a"), render=lambda t: pytest.fail("rendered in JSON mode"))
    assert json.loads(capsys.readouterr().out) == {"label": "AWS", "name": "a", "kind": "thing"}
    assert out.documents == 1


def test_result_is_the_human_rendering_otherwise(capsys):
    out = output.Output()
    out.result(Thing("a"), render=lambda t: out.echo(f"thing {t.name}"))
    out.result(Thing("b"), render=lambda t: f"returned {t.name}")
    assert capsys.readouterr().out == "thing a\nreturned b\n"
    assert out.documents == 0


def test_a_dataclass_without_to_dict_is_its_fields():
    @dataclass
    class Plain:
        x: int

    assert output.to_document(Plain(3)) == {"x": 3}
    assert output.to_document([1, 2]) == [1, 2]


def test_note_goes_to_stderr_and_quiet_drops_it(capsys):
    output.Output().note("creating model")
    output.Output(quiet=True).note("creating model")
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("", "creating model\n")


def test_quiet_keeps_the_warnings_the_sdk_passes_as_notes(capsys):
    output.Output(quiet=True).note("warning: role: no execution role given")
    assert capsys.readouterr().err == "warning: role: no execution role given\n"


def test_debug_only_with_verbose_and_warn_always(capsys):
    output.Output().debug("hidden")
    output.Output(verbose=True).debug("shown")
    output.Output(quiet=True).warn("--out is deprecated")
    assert capsys.readouterr().err == "debug: shown\nwarning: --out is deprecated\n"


def test_table_prints_for_people_and_nothing_in_json_mode(capsys):
    output.Output(json=True).table("t", ["a"], [["1"]])
    assert capsys.readouterr().out == ""
    output.Output().table("t", ["name", "value"], [["k", "7"]])
    out = capsys.readouterr().out
    assert "name" in out and "k" in out and "7" in out


def test_the_old_names_are_wrappers_over_the_current_object(capsys):
    output.configure(quiet=True)
    output.note("dropped")
    output.print_json({"a": 1})
    assert output.json_printed() and output.current().documents == 1
    assert capsys.readouterr() == ('{\n  "a": 1\n}\n', "")
    assert output.json_printed(reset=True) and not output.json_printed()


def test_no_color_turns_colour_off(monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    assert output.reset().console().no_color
    monkeypatch.setenv("NO_COLOR", "")  # no-color.org: an empty value does not count
    assert not output.reset().console().no_color


def test_no_colour_codes_when_stdout_is_not_a_terminal(capsys, monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    output.reset().print("[red]FAIL[/]")
    assert capsys.readouterr().out == "FAIL\n"


# -- the root options, through main() -------------------------------------------------------
def test_json_before_the_command_is_the_command_json(capsys):
    code, out, _ = run(capsys, "--json", "plan", "gpt-oss-20b")
    assert code == 0
    assert "create_model" in json.loads(out)


def test_json_before_the_command_makes_errors_json_too(capsys):
    code, out, err = run(capsys, "--json", "status", "x", "--region", "mars-1")
    assert code == 2 and err.startswith("error: region: ")
    assert json.loads(out)["error"]["exit_code"] == 2


def test_per_command_json_is_the_same_mode(capsys):
    code, out, _ = run(capsys, "plan", "gpt-oss-20b", "--json")
    assert code == 0 and "create_model" in json.loads(out)
    assert output.current().json


@pytest.mark.parametrize("flag", ["-q", "--quiet", "-v", "--verbose"])
def test_quiet_and_verbose_before_or_after_the_command(capsys, flag):
    assert run(capsys, flag, "plan", "gpt-oss-20b", "--json")[0] == 0
    assert run(capsys, "plan", "gpt-oss-20b", "--json", flag)[0] == 0


def test_verbose_says_which_error_stopped_the_command_and_where(capsys):
    code, _, err = run(capsys, "-v", "status", "x", "--region", "mars-1")
    lines = err.splitlines()
    assert code == 2 and lines[-1].startswith("error: region: ")
    assert lines[0].startswith("debug: sm_peagle.errors.SpecError at ") and ".py:" in lines[0]
    code, _, err = run(capsys, "status", "x", "--region", "mars-1")
    assert "debug:" not in err


def test_root_help_documents_peagle_debug_and_completion(capsys):
    code, out, _ = run(capsys, "--help")
    assert code == 0
    for text in ("PEAGLE_DEBUG", "NO_COLOR", "--install-completion", "-q, --quiet", "--json"):
        assert text in out, text


# -- usage errors: one line, a fix, exit 2 ---------------------------------------------------
def one_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ") and "(fix: " in lines[0] and lines[0].endswith(")")
    return lines[0]


def test_a_misspelt_option_names_the_close_ones_and_the_help(capsys):
    code, _, err = run(capsys, "deploy", "--jsn")
    assert code == 2
    line = one_line(err)
    assert "No such option: --jsn" in line and "did you mean --json" in line
    assert "see `peagle deploy --help`" in line


def test_an_unknown_option_with_nothing_close_names_the_help(capsys):
    code, _, err = run(capsys, "status", "x", "--zzzzzz")
    assert code == 2 and "(fix: see `peagle status --help`)" in one_line(err)


def test_a_missing_argument_shows_the_usage(capsys):
    code, _, err = run(capsys, "logs")
    assert code == 2
    line = one_line(err)
    assert "Missing argument" in line and "usage: peagle logs" in line
    assert "peagle logs --help" in line


def test_an_option_without_its_value(capsys):
    code, _, err = run(capsys, "plan", "gpt-oss-20b", "-k")
    assert code == 2 and "see `peagle plan --help`" in one_line(err)


def test_an_unknown_command_suggests_the_close_one(capsys):
    code, _, err = run(capsys, "lss")
    assert code == 2
    line = one_line(err)
    assert "No such command 'lss'" in line and "did you mean 'ls'" in line


def test_an_unknown_subcommand_names_its_group_help(capsys):
    code, _, err = run(capsys, "drafter", "nosuch")
    assert code == 2 and "`peagle drafter --help`" in one_line(err)


def test_a_bad_value_of_a_typed_option_still_starts_with_click_s_words(capsys):
    code, _, err = run(capsys, "plan", "gpt-oss-20b", "-k", "abc")
    assert code == 2 and one_line(err).startswith("error: Invalid value for '-k'")


def test_a_global_option_after_the_command_says_where_it_goes(capsys):
    code, _, err = run(capsys, "ls", "--sandbox")
    assert code == 2 and "put it before the command" in one_line(err)


def test_a_bad_choice_lists_the_choices(capsys):
    """A strict choice (no spec validation behind it) fails in click: the fix lists it."""
    from sm_peagle.cli.app import PeagleGroup
    from sm_peagle.cli.boundary import exit_code_for

    app = typer.Typer(cls=PeagleGroup, add_completion=False)

    @app.callback()
    def _root() -> None:
        """Root."""

    @app.command("export")
    def export(fmt: Annotated[Literal["terraform", "json"], typer.Option("--format")] = "json"):
        """Export."""

    argv = ["export", "--format", "pulumi"]
    try:
        app(args=argv, prog_name="peagle", standalone_mode=False)
        pytest.fail("accepted a value outside the choices")
    except Exception as e:  # noqa: BLE001 - the boundary decides
        code = exit_code_for(e, argv)
    line = one_line(capsys.readouterr().err)
    assert code == 2 and line.endswith("(fix: use one of: terraform, json)")


# -- the helpers commands render through ------------------------------------------------------
def test_result_renders_the_result_for_people_and_takes_no_document_of_the_cli_s(capsys):
    """--json prints the SDK result's own to_dict(): there is no way to pass another."""
    output.Output().result(Thing("a"), render=lambda t: f"thing {t.name}")
    assert capsys.readouterr().out == "thing a\n"
    with pytest.raises(TypeError):
        output.Output(json=True).result(Thing("a"), print, document={})  # type: ignore[call-arg]


def test_a_list_of_results_is_the_list_of_their_documents():
    assert output.to_document([Thing("a"), Thing("b")]) == [
        {"name": "a", "kind": "thing"},
        {"name": "b", "kind": "thing"},
    ]


def test_stream_is_json_lines_in_json_mode_and_the_renderer_otherwise(capsys):
    output.Output(json=True).stream(iter([Thing("a"), Thing("b")]), render=pytest.fail)
    assert capsys.readouterr().out == (
        '{"label": "AWS", "name": "a", "kind": "thing"}\n'
        '{"label": "AWS", "name": "b", "kind": "thing"}\n'
    )
    output.Output().stream(iter([Thing("a")]), render=lambda items: print(len(list(items))))
    assert capsys.readouterr().out == "1\n"


def test_human_gives_the_callback_to_people_only():
    show = object()
    assert output.Output().human(show) is show
    assert output.Output(json=True).human(show) is None
    assert output.Output(json=True).human(show, otherwise=len) is len
    assert not output.Output(json=True).live


def test_failure_is_the_document_unless_the_result_was_printed(capsys):
    out = output.Output(json=True)
    out.failure("bad (fix: good)", {"type": "SpecError"})
    assert capsys.readouterr() == (
        '{\n  "label": "AWS",\n  "error": {\n    "type": "SpecError"\n  }\n}\n',
        "error: bad (fix: good)\n",
    )
    out.failure("again", {"type": "SpecError"})  # one document per command
    assert capsys.readouterr() == ("", "error: again\n")
    output.Output().failure("bad", {"type": "SpecError"})
    assert capsys.readouterr() == ("", "error: bad\n")


# -- every --json document says where it came from (issue 26, item 5) ------------------------
SIMULATED = "SANDBOX (SIMULATED)"
REAL = "SANDBOX (vllm 0.31.0, CPU, tiny model)"


def in_sandbox(monkeypatch: pytest.MonkeyPatch, engine: str) -> None:
    """This process pointed at a sandbox as `--sandbox` points it (the target's name, its
    URL and engine)."""
    monkeypatch.setenv("PEAGLE_TARGET", "sandbox")
    monkeypatch.setenv("PEAGLE_SANDBOX_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("PEAGLE_SANDBOX_ENGINE_LABEL", engine)


@dataclass
class Answer:
    def to_dict(self) -> dict[str, Any]:
        return {"text": "hi", "usage": {"completion_tokens": 2}}


def test_the_label_comes_first_and_every_key_of_the_document_is_kept(capsys):
    output.Output(json=True).result(Answer(), render=print)
    doc = json.loads(capsys.readouterr().out)
    assert list(doc) == ["label", "text", "usage"]
    assert doc == {"label": "AWS", "text": "hi", "usage": {"completion_tokens": 2}}


@pytest.mark.parametrize(
    ("engine", "label"),
    [("SIMULATED", SIMULATED), ("vllm 0.31.0 (CPU, tiny model)", REAL)],
)
def test_in_the_sandbox_the_label_names_its_engine(capsys, monkeypatch, engine, label):
    in_sandbox(monkeypatch, engine)
    out = output.Output(json=True)
    assert out.label == label
    out.result(Thing("a"), render=print)
    assert json.loads(capsys.readouterr().out)["label"] == label
    out.stream(iter([Thing("b")]), render=pytest.fail)
    assert json.loads(capsys.readouterr().out)["label"] == label
    output.Output(json=True).failure("bad", {"type": "AwsError"})
    assert json.loads(capsys.readouterr().out) == {"label": label, "error": {"type": "AwsError"}}


def test_a_list_stays_a_list_and_each_object_in_it_is_labelled(capsys, monkeypatch):
    in_sandbox(monkeypatch, "SIMULATED")
    out = output.Output(json=True)
    out.result([Thing("a"), Thing("b")], render=print)
    assert json.loads(capsys.readouterr().out) == [
        {"label": SIMULATED, "name": "a", "kind": "thing"},
        {"label": SIMULATED, "name": "b", "kind": "thing"},
    ]
    out.result([], render=print)  # nothing to carry it: still the list users index
    assert json.loads(capsys.readouterr().out) == []
    out.result(["x", 1], render=print)  # not objects: as they are
    assert json.loads(capsys.readouterr().out) == ["x", 1]


def test_a_document_that_labels_itself_keeps_its_label(capsys, monkeypatch):
    """A benchmark result carries the label of the engine that produced its figures."""
    in_sandbox(monkeypatch, "SIMULATED")
    output.Output(json=True).result({"kind": "bench", "label": REAL}, render=print)
    assert json.loads(capsys.readouterr().out) == {"label": REAL, "kind": "bench"}


def test_an_explicit_label_wins(capsys, monkeypatch):
    in_sandbox(monkeypatch, "SIMULATED")
    output.Output(json=True).result(Thing("a"), render=print, label="AWS")
    assert json.loads(capsys.readouterr().out)["label"] == "AWS"


def test_json_document_itself_writes_what_it_is_given(capsys):
    """`peagle schema` prints the spec's JSON Schema through it: no label in a schema."""
    output.Output(json=True).json_document({"$schema": "x", "title": "spec"})
    assert json.loads(capsys.readouterr().out) == {"$schema": "x", "title": "spec"}


def test_the_commands_json_carries_the_label_through_main(capsys, monkeypatch):
    code, out, _ = run(capsys, "plan", "gpt-oss-20b", "--json")
    assert code == 0 and json.loads(out)["label"] == "AWS"
    code, out, _ = run(capsys, "--json", "status", "x", "--region", "mars-1")
    assert code == 2 and json.loads(out)["label"] == "AWS"
    in_sandbox(monkeypatch, "vllm 0.31.0 (CPU, tiny model)")
    output.reset()
    code, out, _ = run(capsys, "models", "--json")
    assert code == 0 and {m["label"] for m in json.loads(out)} == {REAL}


# -- no command branches on --json: the output object knows the mode --------------------------
CLI_SOURCES = [
    *sorted((Path(__file__).resolve().parents[2] / "sm_peagle" / "cli").glob("*.py")),
    Path(__file__).resolve().parents[2] / "sandbox" / "peagle_sandbox" / "cli.py",
]


def json_out_branches(source: str) -> list[int]:
    """Line numbers of every branch on `json_out`: an `if`/`while` whose test mentions it,
    or a conditional expression (`a if json_out else b`) on it."""
    import ast

    def mentions(node: ast.AST) -> bool:
        return any(isinstance(n, ast.Name) and n.id == "json_out" for n in ast.walk(node))

    return sorted(
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.If | ast.IfExp | ast.While) and mentions(node.test)
    )


def test_the_branch_counter_finds_each_kind_of_branch():
    source = (
        "def cmd(json_out=False):\n"
        "    if json_out:\n"
        "        print_json(x)\n"
        "    elif other:\n"
        "        pass\n"
        "    print_json(d) if json_out else render(d)\n"
        "    f(on_diff=None if json_out else show)\n"
        "    if count == 0 and not json_out:\n"
        "        note('none')\n"
        "    wait_view(quiet=json_out)\n"  # an argument, not a branch
        "    if json:\n"  # another name
        "        pass\n"
    )
    assert json_out_branches(source) == [2, 6, 7, 8]


def test_no_command_branches_on_json_out():
    """Commands keep `json_out` (the per-command --json alias) but render through
    `current().result(...)`: 31 branches in sm_peagle/cli and 3 in the sandbox's CLI before
    issue 22's item 5, none after."""
    found = {
        str(path.relative_to(path.parents[2])): lines
        for path in CLI_SOURCES
        if (lines := json_out_branches(path.read_text()))
    }
    assert found == {}
