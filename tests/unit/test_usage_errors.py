"""Usage errors, for every command and subcommand (issue 24, item 2): what click refuses
before a command runs is one line `error: <click's message> (fix: <remedy>)` on stderr,
exit 2, nothing on stdout (with `--json`, one error document there), no traceback, and no
request sent (the harness's request log stays empty).

The commands are enumerated from the typer app itself (the `drafter` and `sandbox` groups
included), so a new command is walked without editing this file. Expected values come from
the rule in the README ("Output and exit codes") and the issue: the fix names the closest
options when the user mistyped one, otherwise `peagle CMD --help`; a bad number says what
the option takes; a missing argument shows the usage line.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer

from sm_peagle import plugins
from sm_peagle.cli import output
from sm_peagle.cli.app import COMMANDS, build_app, main

NO_SUCH = "--zq-no-such-thing"  # close to no option of any command


def _walk(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    yield path, command
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        yield from _walk(sub, (*path, name))


ROOT = typer.main.get_command(build_app())
WALK = dict(_walk(ROOT))
LEAVES = {p: c for p, c in WALK.items() if not hasattr(c, "commands")}
GROUPS = {p: c for p, c in WALK.items() if hasattr(c, "commands")}


def ident(path: tuple[str, ...]) -> str:
    return " ".join(path) or "<root>"


def helpline(path: tuple[str, ...]) -> str:
    return f"see `{' '.join(('peagle', *path))} --help`"


def long_options(command: Any) -> list[str]:
    return [
        o
        for p in command.params
        if p.param_type_name == "option"
        for o in (*p.opts, *p.secondary_opts)
        if o.startswith("--") and o != "--help"
    ]


def number_options(command: Any) -> list[tuple[Any, str]]:
    """(param, "a whole number" | "a number") for every option typed int or float."""
    kinds = {int: "a whole number", float: "a number"}
    return [
        (p, kinds[p.type_descriptor.annotation])
        for p in command.params
        if p.param_type_name == "option" and p.type_descriptor.annotation in kinds
    ]


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """moto with peagle's harness, whose request log shows what a command sent. One for
    the module (each case only parses, and the log must stay empty anyway); the fake
    environment is the sandbox plugin's `aws_credentials`, at module scope."""
    from moto import mock_aws

    from peagle_sandbox.testing.moto_sagemaker import SageMakerHarness

    home = tmp_path_factory.mktemp("aws")
    with pytest.MonkeyPatch.context() as mp:
        for name in list(os.environ):
            if name.startswith("AWS_ENDPOINT_URL") or name in {
                "AWS_PROFILE",
                "AWS_DEFAULT_PROFILE",
            }:
                mp.delenv(name)
        for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
            mp.setenv(name, "testing")
        mp.setenv("AWS_REGION", "us-east-1")
        mp.setenv("AWS_DEFAULT_REGION", "us-east-1")
        mp.setenv("AWS_CONFIG_FILE", str(home / "no-config"))
        mp.setenv("AWS_SHARED_CREDENTIALS_FILE", str(home / "no-credentials"))
        with mock_aws(), SageMakerHarness(region="us-east-1") as h:
            yield h


@pytest.fixture
def cli(harness: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys) -> Any:
    """`peagle …` in process; run(*argv) -> (code, stdout, stderr), asserting after every
    run that nothing was sent."""
    monkeypatch.setenv("PEAGLE_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("PEAGLE_SANDBOX_ENGINE", "simulated")  # main() may set it: restored
    monkeypatch.delenv("PEAGLE_SANDBOX", raising=False)
    monkeypatch.delenv("PEAGLE_SANDBOX_URL", raising=False)
    monkeypatch.chdir(tmp_path)
    harness.requests.clear()

    def run(*argv: str) -> tuple[int, str, str]:
        output.reset()
        code = main(list(argv))
        out, err = capsys.readouterr()
        assert harness.requests.all() == [], (argv, harness.requests.all())
        return code, out, err

    return run


def one_line(err: str) -> str:
    """The single stderr line of an error: `error: … (fix: …)`, no traceback."""
    assert "Traceback" not in err, err
    lines = err.splitlines()
    assert len(lines) == 1, err
    line = lines[0]
    assert line.startswith("error: ") and " (fix: " in line and line.endswith(")"), line
    return line


def test_the_walk_covers_every_command_and_group() -> None:
    """A walk that found nothing would pass every test below: it must see each top-level
    command, each group and its subcommands, the sandbox plugin's included."""
    top = {p[0] for p in WALK if len(p) == 1}
    assert top == set(COMMANDS) | set(plugins.commands())
    assert "sandbox" in plugins.commands()  # the sandbox is installed with the tests
    assert {("drafter",), ("sandbox",)} <= set(GROUPS)
    assert {("drafter", "check"), ("drafter", "push"), ("sandbox", "start")} <= set(LEAVES)


# -- an unknown option -----------------------------------------------------------------------
@pytest.mark.parametrize("path", list(WALK), ids=ident)
def test_an_unknown_option_is_one_line_naming_the_command_s_help(cli, path) -> None:
    code, out, err = cli(*path, NO_SUCH)
    assert code == 2 and out == ""
    assert one_line(err) == f"error: No such option: {NO_SUCH} (fix: {helpline(path)})"


@pytest.mark.parametrize("path", list(WALK), ids=ident)
def test_with_json_an_unknown_option_is_one_error_document(cli, path) -> None:
    code, out, err = cli("--json", *path, NO_SUCH)
    assert code == 2
    assert json.loads(out) == {
        "label": "AWS",  # issue 26: every --json document says where it came from
        "error": {
            "type": "UsageError",
            "message": f"No such option: {NO_SUCH}",
            "fix": helpline(path),
            "exit_code": 2,
        },
    }
    assert one_line(err) == f"error: No such option: {NO_SUCH} (fix: {helpline(path)})"


def first_command_of_each(cases: list[tuple[Any, ...]], key: Any) -> list[tuple[Any, ...]]:
    """One case per option: an option shared by many commands (--region, --json) is tried
    in the first command that has it; the unknown-option walk covers every command."""
    seen: dict[Any, tuple[Any, ...]] = {}
    for case in cases:
        seen.setdefault(key(case), case)
    return list(seen.values())


# Every long option with its last letter dropped (where that is not another option).
MISSPELT = first_command_of_each(
    [
        (path, option, option[:-1])
        for path, command in WALK.items()
        for option in long_options(command)
        if len(option) >= 6 and option[:-1] not in long_options(command)
    ],
    key=lambda case: case[1],
)


def test_there_are_misspelt_options_to_try() -> None:
    assert len(MISSPELT) > 80


@pytest.mark.parametrize(
    ("path", "meant", "typed"), MISSPELT, ids=[f"{ident(p)} {t}" for p, _, t in MISSPELT]
)
def test_a_misspelt_option_names_the_one_meant_first_among_the_closest(
    cli, path, meant, typed
) -> None:
    code, out, err = cli(*path, typed)
    assert code == 2 and out == ""
    line = one_line(err)
    prefix = f"error: No such option: {typed} (fix: did you mean "
    assert line.startswith(prefix), line
    named, _, rest = line[len(prefix) :].partition("? ")
    close = named.split(" or ")
    assert close[0] == meant and len(close) <= 3, line
    assert rest == f"{helpline(path)})"


@pytest.mark.parametrize(
    ("argv", "fix"),
    [
        (["deploy", "--jsn"], "did you mean --json?"),
        (["plan", "gpt-oss-20b", "--regin", "x"], "did you mean --region?"),
        (["bench", "ep", "--requets", "5"], "did you mean --requests?"),
        (["delete", "ep", "--dryrun"], "did you mean --dry-run?"),
    ],
)
def test_the_closest_option_is_named(cli, argv, fix) -> None:
    code, _, err = cli(*argv)
    assert code == 2 and f"(fix: {fix} {helpline((argv[0],))})" in one_line(err)


def test_an_option_nothing_like_any_other_is_not_matched_to_one(cli) -> None:
    """`--bogus` was answered "did you mean --verbose?": with their dashes, any two long
    options share enough for difflib. Compared by name, nothing is close."""
    for path in (("ls",), ("plan",), ("drafter", "check"), ("sandbox", "start")):
        code, _, err = cli(*path, "--bogus")
        assert code == 2
        assert one_line(err) == f"error: No such option: --bogus (fix: {helpline(path)})"


# -- missing arguments, bad numbers, extra arguments -----------------------------------------
REQUIRED = [p for p, c in LEAVES.items() if any(a.required for a in c.params)]


def test_commands_with_required_parameters_are_found() -> None:
    assert {("status",), ("bench",), ("drafter", "check"), ("apply",)} <= set(REQUIRED)


@pytest.mark.parametrize("path", REQUIRED, ids=ident)
def test_a_missing_argument_or_option_shows_the_usage_and_the_help(cli, path) -> None:
    code, out, err = cli(*path)
    assert code == 2 and out == ""
    line = one_line(err)
    assert line.startswith(("error: Missing argument '", "error: Missing option '")), line
    usage = f"usage: {' '.join(('peagle', *path))} [OPTIONS]"
    assert f"(fix: {usage}" in line and line.endswith(f"; {helpline(path)})"), line


NUMBERS = first_command_of_each(
    [
        (path, param, kind)
        for path, command in LEAVES.items()
        for param, kind in number_options(command)
    ],
    key=lambda case: case[1].opts[0],
)


def test_there_are_number_options_to_try() -> None:
    assert len(NUMBERS) > 25


@pytest.mark.parametrize(
    ("path", "param", "kind"), NUMBERS, ids=[f"{ident(p)} {q.opts[0]}" for p, q, _ in NUMBERS]
)
def test_a_word_for_a_number_says_what_the_option_takes(cli, path, param, kind) -> None:
    code, out, err = cli(*path, param.opts[0], "abc")
    assert code == 2 and out == ""
    line = one_line(err)
    assert line.startswith(f"error: Invalid value for '{param.opts[0]}'"), line
    longest = next((o for o in param.opts if o.startswith("--")), param.opts[0])
    assert line.endswith(f"(fix: give {longest} {kind}; {helpline(path)})"), line


EXTRA = [
    p
    for p, c in LEAVES.items()
    if all(a.nargs != -1 for a in c.params if a.param_type_name == "argument")
]


@pytest.mark.parametrize("path", EXTRA, ids=ident)
def test_extra_arguments_are_refused_naming_them(cli, path, tmp_path) -> None:
    params = LEAVES[path].params
    # An existing directory suits every argument and required option.
    given = [str(tmp_path) for a in params if a.param_type_name == "argument"]
    for option in (a for a in params if a.param_type_name == "option" and a.required):
        given += [option.opts[0], str(tmp_path)]
    code, out, err = cli(*path, *given, "surplus-1", "surplus-2")
    assert code == 2 and out == ""
    line = one_line(err)
    assert line == (
        f"error: Got unexpected extra argument(s) (surplus-1 surplus-2) (fix: {helpline(path)})"
    ), line


# -- choices ---------------------------------------------------------------------------------
# Every option with a fixed set of values, with what a run needs besides the bad value.
CHOICES: dict[tuple[tuple[str, ...], str], list[str]] = {
    (("plan",), "--mode"): ["plan", "gpt-oss-20b", "--mode", "nosuch"],
    (("plan",), "--routing-strategy"): ["plan", "gpt-oss-20b", "--routing-strategy", "nosuch"],
    (("plan",), "--hosting"): ["plan", "gpt-oss-20b", "--hosting", "nosuch"],
    (("plan",), "--scale-in-strategy"): [
        "plan",
        "gpt-oss-20b",
        "--hosting",
        "inference-components",
        "--scale-in-strategy",
        "nosuch",
    ],  # fmt: skip
    (("deploy",), "--mode"): ["deploy", "gpt-oss-20b", "--mode", "nosuch"],
    (("deploy",), "--routing-strategy"): ["deploy", "gpt-oss-20b", "--routing-strategy", "nosuch"],
    (("deploy",), "--hosting"): ["deploy", "gpt-oss-20b", "--hosting", "nosuch"],
    (("deploy",), "--scale-in-strategy"): [
        "deploy",
        "gpt-oss-20b",
        "--hosting",
        "inference-components",
        "--scale-in-strategy",
        "nosuch",
    ],  # fmt: skip
    (("update",), "--mode"): ["update", "some-endpoint", "--mode", "nosuch"],
    (("recommend",), "--mode"): ["recommend", "gpt-oss-20b", "--mode", "nosuch"],
    (("export",), "--format"): ["export", "gpt-oss-20b", "--format", "nosuch"],
    (("drafter", "check"), "--mode"): ["drafter", "check", "{tmp}", "--mode", "nosuch"],
    (("drafter", "push"), "--mode"): [
        "drafter",
        "push",
        "{tmp}",
        "s3://bucket/head/",
        "--mode",
        "nosuch",
    ],  # fmt: skip
    (("sandbox", "start"), "--engine"): ["sandbox", "start", "--engine", "nosuch"],
}


def _choice_options() -> dict[tuple[tuple[str, ...], str], list[str]]:
    return {
        (path, p.opts[0]): [str(getattr(v, "value", v)) for v in p.type_descriptor.choices]
        for path, command in WALK.items()
        for p in command.params
        if p.param_type_name == "option" and getattr(p.type_descriptor, "choices", None)
    }


def test_every_option_with_choices_has_a_case() -> None:
    assert set(_choice_options()) == set(CHOICES)


@pytest.mark.parametrize("key", list(CHOICES), ids=lambda k: f"{ident(k[0])} {k[1]}")
def test_a_value_outside_the_choices_names_every_choice(cli, key, tmp_path) -> None:
    argv = [a.replace("{tmp}", str(tmp_path)) for a in CHOICES[key]]
    code, out, err = cli(*argv)
    assert code == 2 and out == ""
    line = one_line(err)
    assert "nosuch" in line, line
    for choice in _choice_options()[key]:
        assert choice in line, (choice, line)


# -- commands and groups ---------------------------------------------------------------------
@pytest.mark.parametrize("path", list(GROUPS), ids=ident)
def test_an_unknown_subcommand_names_the_group_s_help(cli, path) -> None:
    code, out, err = cli(*path, "nosuchcmd")
    assert code == 2 and out == ""
    assert one_line(err) == (
        f"error: No such command 'nosuchcmd' (fix: {helpline(path)} for the commands)"
    )


def test_a_missing_sandbox_plugin_is_one_line_with_its_install(cli, monkeypatch) -> None:
    """Without the peagle-sandbox distribution, its group is still named, and anything
    under it says how to install it (README: `pip install -e ./sandbox`)."""
    import sm_peagle.plugins

    # peagle's view of the installed distributions only: none declares its entry points.
    monkeypatch.setattr(sm_peagle.plugins, "entry_points", lambda group: [])
    sm_peagle.plugins.reset()  # forget the plugins this process found (restored below)
    try:
        for argv, what in (
            (["sandbox", NO_SUCH], "`peagle sandbox`"),
            (["sandbox", "start"], "`peagle sandbox`"),
            (["--sandbox", "ls"], "--sandbox"),
            (["--sandbox-engine", "vllm", "ls"], "--sandbox-engine"),
        ):
            code, out, err = cli(*argv)
            assert code == 2 and out == ""
            line = one_line(err)
            assert line.startswith(
                f"error: {what} comes from the peagle-sandbox plugin (a local SageMaker"
            ), line
            assert "which is not installed (fix: pip install -e ./sandbox)" in line, line
    finally:
        monkeypatch.undo()
        sm_peagle.plugins.reset()


def test_an_engine_outside_the_choices_names_every_choice(cli) -> None:
    """`--sandbox-engine` is the sandbox target's option (declared through the contract,
    checked by the plugin): a bad value is one line naming the choices, before anything
    starts."""
    code, out, err = cli("--sandbox-engine", "nosuch", "ls")
    assert code == 2 and out == ""
    assert one_line(err) == (
        "error: unknown sandbox engine 'nosuch' (fix: use one of: simulated, vllm)"
    )


# -- bad input raised without a remedy -------------------------------------------------------
def test_bad_input_raised_without_a_remedy_gets_the_command_s_help(capsys) -> None:
    """Every exit-2 line names a fix: an error that brings none points at the help of the
    command that refused it, in the line and in the --json document alike."""
    from sm_peagle.cli.boundary import exit_code_for
    from sm_peagle.errors import SpecError

    output.reset()
    assert exit_code_for(SpecError("x: no good"), ["drafter", "-v", "check", "y"]) == 2
    assert capsys.readouterr() == (
        "",
        "error: x: no good (fix: see `peagle drafter check --help`)\n",
    )
    output.reset()
    assert exit_code_for(SpecError("x: no good"), ["--json", "plan"]) == 2
    out, err = capsys.readouterr()
    assert json.loads(out)["error"]["fix"] == "see `peagle plan --help`"
    assert err == "error: x: no good (fix: see `peagle plan --help`)\n"


def test_an_aws_failure_without_a_remedy_is_left_as_it_is(capsys) -> None:
    """Exit 1 is not bad input: pointing at the help would send the user the wrong way."""
    from sm_peagle.cli.boundary import exit_code_for
    from sm_peagle.errors import AwsError

    output.reset()
    assert exit_code_for(AwsError("ThrottlingException: slow down"), ["ls"]) == 1
    assert capsys.readouterr().err == "error: ThrottlingException: slow down\n"


def test_plan_without_a_model_names_a_fix(cli) -> None:
    code, out, err = cli("plan")
    assert code == 2 and out == ""
    assert one_line(err).startswith("error: model: ")
