"""The start-up shortcuts of cli/lazy_commands.py change nothing a user sees: a root-level
run lists the commands exactly as the full build does, a command reached through a stub
runs (and completes) as itself, and the deferred coercion returns what typer's own does."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from contextlib import redirect_stdout

import pytest
import typer
from typer._coercion import build_runtime_param

from sm_peagle.cli.app import COMMANDS, build_app, main
from sm_peagle.cli.lazy_commands import is_listing_stub


def root_help(*, stubs: bool) -> str:
    group = typer.main.get_command(build_app(None, plugins_loaded=False, stubs=stubs))
    ctx = group.context_class(group, info_name="peagle")
    return group.get_help(ctx)


def test_root_help_lists_the_same_commands_with_stubs() -> None:
    listed = root_help(stubs=True)
    assert listed == root_help(stubs=False)
    for name in COMMANDS:  # a sanity check that the text compared is the listing
        assert f"  {name} " in listed


def test_a_root_level_run_builds_stubs_and_a_command_run_does_not() -> None:
    stubbed = typer.main.get_command(build_app(None, plugins_loaded=False))
    assert is_listing_stub(stubbed.commands["plan"])
    assert not stubbed.commands["plan"].params or all(
        p.name in ("quiet", "verbose") for p in stubbed.commands["plan"].params
    )
    full = typer.main.get_command(build_app("plan"))
    assert not is_listing_stub(full.commands["plan"])


def run(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(argv)
    return code, out.getvalue()


def test_a_command_behind_root_flags_runs_as_itself() -> None:
    # `-qv` is not one of main's known root flags, so this run starts as a root-level
    # run (stubs); click resolves `plan` and the stub is replaced by the real command.
    code, combined = run(["-qv", "plan", "gpt-oss-20b", "-k", "5", "--json"])
    assert code == 0
    code_plain, plain = run(["plan", "gpt-oss-20b", "-k", "5", "--json"])
    assert code_plain == 0
    assert json.loads(combined) == json.loads(plain)
    assert json.loads(combined)["speculative_config"]["num_speculative_tokens"] == 5


@pytest.mark.parametrize(
    "argv", [["plan", "--help"], ["drafter", "--help"], ["drafter", "check", "--help"]]
)
def test_help_reached_through_a_stub_is_the_commands_own(argv) -> None:
    assert run(["-qv", *argv]) == run(argv)


def test_shell_completion_reaches_the_options_of_a_stubbed_command(tmp_path) -> None:
    env = {
        **os.environ,
        "_PEAGLE_COMPLETE": "complete_bash",
        "COMP_WORDS": "peagle plan --k-s",
        "COMP_CWORD": "2",
    }
    result = subprocess.run(
        [sys.executable, "-c", "from sm_peagle.cli.app import run; run()"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.stdout.split() == ["--k-schedule"], result.stderr


def leaf_params() -> list[tuple[str, object]]:
    group = typer.main.get_command(build_app())
    out = []
    for name, command in group.commands.items():
        commands = command.commands.items() if hasattr(command, "commands") else [(name, command)]
        for leaf_name, leaf in commands:
            out += [(f"{leaf_name}:{p.name}", p) for p in leaf.params]
    return out


def coerced(coercion: object, value: object, param: object) -> object:
    ctx = typer.Context(typer.main.get_command(build_app("plan")), info_name="peagle")
    try:
        return coercion.coerce(value, param=param, ctx=ctx)  # type: ignore[attr-defined]
    except Exception as exc:  # the same refusal, worded the same
        return (type(exc).__name__, str(exc))


@pytest.mark.parametrize("value", [None, "abc", "12", "RANDOM"])
def test_deferred_coercion_returns_what_typers_own_returns(value) -> None:
    params = [(n, p) for n, p in leaf_params() if hasattr(p, "type_descriptor")]
    assert len(params) > 100  # every command's parameters, not a handful
    for name, param in params:
        if value is not None and (param.multiple or param.nargs == -1):
            continue  # click hands a multi-value parameter a tuple, never a bare string
        theirs = coerced(build_runtime_param(param.type_descriptor), value, param)
        ours = coerced(param.get_runtime_param(), value, param)
        assert ours == theirs, name
