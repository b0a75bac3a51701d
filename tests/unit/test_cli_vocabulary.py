"""One CLI vocabulary (issue 22, item 6), read from the typer app itself: every command's
parameters, recursing into groups (the `sandbox` group is a plugin, present when the
`peagle-sandbox` distribution is installed).

- each short flag has exactly one long meaning, the one `cli/options.py` declares;
- a long flag spelled on two commands takes the same value (type, metavar, repeatable or
  not) on both, and is declared once in the source (issue 35, item 5);
- every command that prints data accepts `--json` (the root accepts it for every command);
- options with a fixed set of values list them in `--help`;
- each deprecated spelling still parses, and warns once on stderr.

Each check is a function over click commands with a self-test on a synthetic command that
breaks it, so a check that cannot fail is caught."""

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, get_args

import click
import pytest
import typer

from sm_peagle.cli import options
from sm_peagle.cli.app import PeagleGroup, build_app, main

# Leaf commands that print no data of their own, with the reason.
PRINTS_NO_DATA = {
    "sandbox env": "prints shell `export` lines for eval",
    "sandbox install-engine": "builds the engine; only progress lines",
    "sandbox install-trainer": "builds the trainer venv; only progress lines",
}
# Options whose values are a comma list of a fixed set: they list the set in their help.
COMMA_LISTS = {"--modes"}


# -- the checks ------------------------------------------------------------------------------
def leaves(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, Any]]:
    """(`drafter check`, command) for every leaf command under `command`."""
    subcommands = getattr(command, "commands", None)
    if subcommands is None:
        yield " ".join(path), command
        return
    for name, sub in subcommands.items():
        yield from leaves(sub, (*path, name))


def option_params(command: Any) -> list[Any]:
    return [p for p in command.params if p.param_type_name == "option"]


def long_name(param: Any) -> str | None:
    """The option's long name (its first `--` spelling; `--no-x` of a pair is not one)."""
    return next((o for o in param.opts if o.startswith("--")), None)


def short_flags(param: Any) -> list[str]:
    return [o for o in (*param.opts, *param.secondary_opts) if len(o) == 2 and o[0] == "-"]


def short_flag_problems(commands: list[tuple[str, Any]]) -> dict[str, set[str]]:
    """Short flag -> the meanings it has, where it has more than one or another than
    `options.SHORT_FLAGS` declares (a short flag without a long name means `(none)`)."""
    meanings: dict[str, set[str]] = {}
    for path, command in commands:
        for param in option_params(command):
            for flag in short_flags(param):
                meanings.setdefault(flag, set()).add(f"{long_name(param) or '(none)'} in {path}")
    problems = {}
    for flag, uses in meanings.items():
        longs = {u.split(" in ")[0] for u in uses}
        declared = options.SHORT_FLAGS.get(flag)
        if len(longs) > 1 or declared is None or longs != {declared}:
            problems[flag] = uses
    return problems


# (long flag, command) -> why its value differs from the flag's on every other command.
# The value a user would guess from one command must parse on the next; only these differ.
VALUE_DIFFERS = {
    ("--k", "sweep"): "sweep tries several K: a comma list of the same K (`-k 3` is K=3 there "
    "too), as `--concurrency` is a list of levels",
    ("--component", "plan"): "declares the components to create: NAME[:key=value,...], repeated",
    ("--component", "deploy"): "declares the components to create: NAME[:key=value,...], repeated",
    ("--component", "race"): "names the two sides on one endpoint: NAME, given twice",
}


def value_type(param: Any) -> str:
    """What an option's value is, as a user types it: `flag`, `choice` (its values are
    `options.CHOICES`' check), `path`, `int`, `str`, `float`; a repeatable option's item."""
    if getattr(param, "is_flag", False) or getattr(param, "count", False):
        return "flag"
    desc = getattr(param, "type_descriptor", None)
    if desc is None:  # a plain click option (the self-tests)
        name = param.type.name
        return {"integer": "int", "text": "str"}.get(name, name)
    if desc.is_choice:
        return "choice"
    if desc.is_path:
        return "path"
    annotation = get_args(desc.annotation)[0] if desc.is_list else desc.annotation
    return getattr(annotation, "__name__", str(annotation))


def value_of(param: Any) -> tuple[str, str | None, bool]:
    return value_type(param), param.metavar, bool(param.multiple)


def value_disagreements(
    commands: list[tuple[str, Any]], allowed: dict[tuple[str, str], str] = VALUE_DIFFERS
) -> dict[str, dict[str, tuple[str, str | None, bool]]]:
    """Long flag -> {command: (type, metavar, repeatable)} for every flag whose value is
    not the same on every command that spells it (the allowed (flag, command) pairs aside)."""
    seen: dict[str, dict[str, tuple[str, str | None, bool]]] = {}
    for path, command in commands:
        for param in option_params(command):
            name = long_name(param)
            if name is not None and (name, path) not in allowed:
                seen.setdefault(name, {})[path] = value_of(param)
    return {n: uses for n, uses in seen.items() if len(set(uses.values())) > 1}


# Long flag -> why it has more than one `typer.Option(...)` in sm_peagle/cli. None has:
# each shared option is one call in cli/options.py, behind a factory that takes the
# command's help (`force_option(help)`, `k_option`/`k_list_option` over one `_k`), so an
# entry here is a new exception and says why.
DECLARED_MORE_THAN_ONCE: dict[str, str] = {}


def option_declarations(sources: dict[str, str]) -> dict[str, list[str]]:
    """Long flag -> where a `typer.Option("--flag", ...)` call declares it (`file:line`)."""
    found: dict[str, list[str]] = {}
    for name, source in sources.items():
        for node in ast.walk(ast.parse(source)):
            if not (isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "Option"):
                continue
            for arg in node.args:
                if isinstance(arg, ast.Constant) and str(arg.value).startswith("--"):
                    flag = str(arg.value).split("/")[0]
                    found.setdefault(flag, []).append(f"{name}:{node.lineno}")
    return found


def declared_twice(sources: dict[str, str], allowed: dict[str, str]) -> dict[str, list[str]]:
    decls = option_declarations(sources)
    return {f: at for f, at in decls.items() if len(at) > 1 and f not in allowed}


def cli_sources() -> dict[str, str]:
    cli = Path(__file__).resolve().parents[2] / "sm_peagle" / "cli"
    return {f.name: f.read_text() for f in sorted(cli.glob("*.py"))}


def commands_without_json(root: Any, commands: list[tuple[str, Any]]) -> list[str]:
    """Commands that print data and have no `--json` (the root's counts for all of them
    only when the root has it: the per-command alias is checked here)."""
    missing = [] if any("--json" in p.opts for p in option_params(root)) else ["(root)"]
    for path, command in commands:
        if path in PRINTS_NO_DATA:
            continue
        if not any("--json" in p.opts for p in option_params(command)):
            missing.append(path)
    return missing


def choices_of(param: Any) -> tuple[str, ...] | None:
    """The choices `--help` shows for `param` (typer's Literal/Enum, or a click.Choice)."""
    descriptor = getattr(param, "type_descriptor", None)
    values = getattr(descriptor, "choices", None) if descriptor is not None else None
    if values is None:
        values = getattr(getattr(param, "type", None), "choices", None)
    if values is None:
        return None
    return tuple(str(getattr(v, "value", v)) for v in values)


def unlisted_choices(commands: list[tuple[str, Any]]) -> list[str]:
    """Options with a fixed set of values (`options.CHOICES`) whose `--help` does not list
    them: a choice type is required, except for a comma list, whose help names each value."""
    bad = []
    for path, command in commands:
        for param in option_params(command):
            name = long_name(param)
            if name not in options.CHOICES:
                continue
            shown = choices_of(param)
            if shown is not None and set(shown) <= set(options.CHOICES[name]):
                continue
            help_text = param.help or ""
            if name in COMMA_LISTS and all(v in help_text for v in options.CHOICES[name]):
                continue
            bad.append(f"{path} {name}")
    return bad


# -- the app --------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def root() -> Any:
    return typer.main.get_command(build_app())


@pytest.fixture(scope="module")
def commands(root: Any) -> list[tuple[str, Any]]:
    return list(leaves(root))


def test_the_walk_finds_every_command(commands):
    paths = {p for p, _ in commands}
    assert {"plan", "deploy", "bench", "sweep", "logs", "drafter check", "tune-k"} <= paths
    assert len(paths) >= 27


def test_each_short_flag_has_one_long_meaning(commands):
    assert short_flag_problems(commands) == {}


def test_a_flag_takes_the_same_value_on_every_command(commands):
    """`recommend --concurrency` (one integer) beside bench's `-c 1,4,8` (a list) was a
    finding: the flag a user learns on one command must mean and parse the same on the
    next (issue 35, item 5)."""
    assert value_disagreements(commands) == {}


def test_every_allowed_difference_is_still_there(commands):
    """An entry of VALUE_DIFFERS whose command now agrees (or is gone) is removed."""
    by_path = dict(commands)
    for flag, path in VALUE_DIFFERS:
        param = next(p for p in option_params(by_path[path]) if long_name(p) == flag)
        others = {
            value_of(p)
            for other, c in commands
            if (flag, other) not in VALUE_DIFFERS
            for p in option_params(c)
            if long_name(p) == flag
        }
        assert others and value_of(param) not in others, (flag, path)


def test_each_shared_option_is_declared_once():
    """`--max-tokens` was declared in four modules with three help texts; a shared option
    is declared once in cli/options.py (a factory where the help differs per command)."""
    assert declared_twice(cli_sources(), DECLARED_MORE_THAN_ONCE) == {}


def test_every_allowed_second_declaration_is_still_there():
    """An entry of DECLARED_MORE_THAN_ONCE declared once by now is removed."""
    decls = option_declarations(cli_sources())
    assert [f for f in DECLARED_MORE_THAN_ONCE if len(decls.get(f, [])) < 2] == []


def test_recommend_sizes_by_sequences_and_reads_a_results_directory(commands):
    """The renames of issue 35: recommend's sizing input is not `--concurrency`, and an
    option naming a directory ends in `-dir` (tune-k's `--results` is one file)."""
    by_path = dict(commands)
    recommend = {long_name(p): value_of(p) for p in option_params(by_path["recommend"])}
    assert recommend["--sequences"] == ("int", None, False)
    assert recommend["--results-dir"] == ("path", "DIR", False)
    assert "--concurrency" not in recommend and "--results" not in recommend
    tune_k = {long_name(p): value_of(p) for p in option_params(by_path["tune-k"])}
    assert tune_k["--results"] == ("path", "FILE", False)


def test_the_global_short_flags_mean_one_thing_everywhere(commands):
    """-q and -v are added to every command by the root group: that much holds now."""
    problems = short_flag_problems(commands)
    assert "-q" not in problems and "-v" not in problems
    for path, command in commands:
        flags = {f for p in option_params(command) for f in short_flags(p)}
        assert {"-q", "-v"} <= flags, path


def test_json_is_a_root_option(root):
    assert any("--json" in p.opts for p in option_params(root))


def test_every_command_that_prints_data_accepts_json(root, commands):
    assert commands_without_json(root, commands) == []


def test_options_with_a_fixed_set_of_values_list_them_in_help(commands):
    assert unlisted_choices(commands) == []


def test_mode_lists_its_choices_in_plan_help(capsys):
    assert main(["plan", "--help"]) == 0
    assert "<p-eagle|eagle3|baseline>" in capsys.readouterr().out


# -- deprecated spellings --------------------------------------------------------------------
def deprecated_cases(commands: list[tuple[str, Any]]) -> list[tuple[options.Deprecated, str]]:
    cases = []
    by_path = dict(commands)
    for d in options.DEPRECATED:
        targets = d.commands or tuple(
            p for p, c in commands if any(d.new in s.opts for s in option_params(c))
        )
        cases += [(d, path) for path in targets if path in by_path]
    return cases


def deprecated_spelling_problem(run: Any, command: Any, path: str, d: Any) -> str | None:
    """None when `path OLD [value] --help` parses (exit 0) and warns once; else what is wrong."""
    new = next((p for p in option_params(command) if d.new in (*p.opts, *p.secondary_opts)), None)
    if new is None:
        return f"{path} has no {d.new}"
    takes_value = not (getattr(new, "is_flag", False) or getattr(new, "count", False))
    argv = [*path.split(), d.old]  # --help stops before the arguments are checked
    code, err = run([*argv, *(["1"] if takes_value else []), "--help"])
    warning = f"warning: {d.old} is deprecated, use {d.new}"
    if code != 0:
        return f"{' '.join(argv)}: exit {code}: {err.strip()}"
    if err.count(warning) != 1:
        return f"{' '.join(argv)}: no one-line warning on stderr: {err!r}"
    return None


def _real_cases() -> list[Any]:
    cmds = list(leaves(typer.main.get_command(build_app())))
    return [pytest.param(d, path, id=f"{path} {d.old}") for d, path in deprecated_cases(cmds)]


@pytest.mark.parametrize(("d", "path"), _real_cases())
def test_deprecated_spellings_still_parse_and_warn(d, path, commands, capsys):
    def run(argv: list[str]) -> tuple[int, str]:
        code = main(argv)
        return code, capsys.readouterr().err

    assert deprecated_spelling_problem(run, dict(commands)[path], path, d) is None


@pytest.mark.parametrize(
    "d", [d for d in options.DEPRECATED if d.commands], ids=lambda d: f"{d.commands[0]} {d.old}"
)
def test_every_command_named_by_a_deprecation_has_the_new_spelling_only(d, commands):
    by_path = dict(commands)
    for path in d.commands:
        spellings = {s for p in option_params(by_path[path]) for s in (*p.opts, *p.secondary_opts)}
        assert d.new in spellings and d.old not in spellings, path


def test_every_deprecated_spelling_is_in_the_changelog():
    from pathlib import Path

    changelog = (Path(__file__).resolve().parents[2] / "CHANGELOG.md").read_text()
    for d in options.DEPRECATED:
        assert f"`{d.old}`" in changelog, d


# -- self-tests: each check fails on a synthetic command that breaks it ----------------------
def synthetic(**commands: list[click.Parameter]) -> click.Group:
    group = click.Group("peagle", params=[click.Option(["--json"], is_flag=True)])
    for name, params in commands.items():
        group.add_command(click.Command(name, params=params))
    return group


def test_self_test_a_short_flag_with_two_meanings_is_found():
    group = synthetic(
        logs=[click.Option(["--follow", "-f"], is_flag=True)],
        plan=[click.Option(["--file", "-f"])],
    )
    assert set(short_flag_problems(list(leaves(group)))) == {"-f"}


def test_self_test_a_short_flag_without_a_long_name_or_undeclared_is_found():
    group = synthetic(sweep=[click.Option(["-k"])], x=[click.Option(["-z", "--zed"])])
    assert set(short_flag_problems(list(leaves(group)))) == {"-k", "-z"}
    good = synthetic(plan=[click.Option(["-k", "--k"])], sweep=[click.Option(["--k", "-k"])])
    assert short_flag_problems(list(leaves(good))) == {}


def test_self_test_a_flag_with_two_value_types_is_found():
    group = synthetic(
        recommend=[click.Option(["--concurrency"], type=int)],
        bench=[click.Option(["--concurrency", "-c"], metavar="N[,N...]")],
        sweep=[click.Option(["--concurrency", "-c"], metavar="N[,N...]")],
    )
    found = value_disagreements(list(leaves(group)), allowed={})
    assert set(found) == {"--concurrency"}
    assert found["--concurrency"]["recommend"] == ("int", None, False)
    allowed = {("--concurrency", "recommend"): "a reason"}
    assert value_disagreements(list(leaves(group)), allowed=allowed) == {}
    # the metavar alone, or repeatable alone, is a difference too
    group = synthetic(
        a=[click.Option(["--results"], type=click.Path(), metavar="DIR")],
        b=[click.Option(["--results"], type=click.Path(), metavar="FILE")],
        c=[click.Option(["--component"], multiple=True)],
        d=[click.Option(["--component"])],
    )
    assert set(value_disagreements(list(leaves(group)), allowed={})) == {
        "--results",
        "--component",
    }


def test_self_test_an_option_declared_twice_is_found():
    sources = {
        "a.py": 'X = Annotated[int, typer.Option("--max-tokens", help="one")]\n',
        "b.py": 'def f(m: Annotated[int, typer.Option(\n    "--max-tokens", "-m")] = 1): ...\n',
        "c.py": 'Y = Annotated[bool, typer.Option("--stream/--no-stream")]\n',
    }
    assert declared_twice(sources, {}) == {"--max-tokens": ["a.py:1", "b.py:1"]}
    assert declared_twice(sources, {"--max-tokens": "a reason"}) == {}


def test_self_test_a_data_command_without_json_is_found():
    group = synthetic(ls=[click.Option(["--json"], is_flag=True)], schema=[])
    assert commands_without_json(group, list(leaves(group))) == ["schema"]
    rootless = click.Group("peagle")
    rootless.add_command(click.Command("ls", params=[click.Option(["--json"], is_flag=True)]))
    assert commands_without_json(rootless, list(leaves(rootless))) == ["(root)"]


def test_self_test_a_fixed_set_without_choices_in_help_is_found():
    group = synthetic(
        plan=[click.Option(["--mode"], help="The mode.")],
        update=[click.Option(["--mode"], type=click.Choice(["p-eagle", "eagle3"]))],
        sweep=[click.Option(["--modes"], help="Comma-separated: baseline, eagle3.")],
        bench=[click.Option(["--modes"], help="Comma-separated: baseline, eagle3, p-eagle.")],
        other=[click.Option(["--mode"], type=click.Choice(["fast", "slow"]))],
    )
    assert sorted(unlisted_choices(list(leaves(group)))) == [
        "other --mode",
        "plan --mode",
        "sweep --modes",
    ]


def _synthetic_app(output_spellings: tuple[str, ...]) -> typer.Typer:
    app = typer.Typer(cls=PeagleGroup, add_completion=False)

    @app.callback()
    def _root() -> None:
        """Root."""

    @app.command("bench")
    def bench(
        name: str,
        out: Annotated[str | None, typer.Option(*output_spellings)] = None,
    ) -> None:
        typer.echo(f"output={out}")

    return app


def _run_synthetic(app: typer.Typer, argv: list[str], capsys: Any) -> tuple[int, str, str]:
    from sm_peagle.cli import output
    from sm_peagle.cli.boundary import exit_code_for

    output.reset()
    try:
        app(args=argv, prog_name="peagle", standalone_mode=False)
        code = 0
    except (Exception, SystemExit) as e:  # noqa: BLE001 - the boundary decides
        code = exit_code_for(e, argv) if not isinstance(e, SystemExit) else int(e.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def test_self_test_a_deprecated_spelling_parses_warns_and_means_the_new_one(capsys):
    app = _synthetic_app(("--output", "-o"))
    code, out, err = _run_synthetic(app, ["bench", "x", "--out", "r.json"], capsys)
    assert (code, out) == (0, "output=r.json\n")
    assert err == ("warning: --out is deprecated, use --output/-o (removed in the next release)\n")
    code, out, err = _run_synthetic(app, ["bench", "x", "--out=r.json"], capsys)
    assert (code, out, err.count("deprecated")) == (0, "output=r.json\n", 1)
    # after `--` nothing is rewritten
    code, _, err = _run_synthetic(app, ["bench", "--", "--out"], capsys)
    assert "deprecated" not in err


def test_self_test_the_deprecation_check_fails_without_the_new_spelling(capsys):
    """A command that still has only the old spelling: the entry does not apply (so it is
    harmless before conversion), and the check reports it."""
    app = _synthetic_app(("--out",))
    command = typer.main.get_command(app).commands["bench"]

    def run(argv: list[str]) -> tuple[int, str]:
        code, _, err = _run_synthetic(app, argv, capsys)
        return code, err

    d = options.Deprecated("--out", "--output", ("bench",))
    assert deprecated_spelling_problem(run, command, "bench", d) == "bench has no --output"
    code, out, err = _run_synthetic(app, ["bench", "x", "--out", "r.json"], capsys)
    assert (code, out, err) == (0, "output=r.json\n", "")


def test_self_test_the_deprecation_check_fails_when_the_old_spelling_is_refused(capsys):
    app = _synthetic_app(("--output", "-o"))
    command = typer.main.get_command(app).commands["bench"]

    def run(argv: list[str]) -> tuple[int, str]:
        code, _, err = _run_synthetic(app, argv, capsys)
        return code, err

    never = options.Deprecated("--outt", "--output", ("bench",))  # not in DEPRECATED
    problem = deprecated_spelling_problem(run, command, "bench", never)
    assert problem is not None and "exit 2" in problem and "No such option: --outt" in problem


def test_rewrite_deprecated_leaves_other_commands_and_values_alone():
    spellings = {"--output": ("--output", "-o"), "--follow": ("--follow",)}.get
    args, warnings = options.rewrite_deprecated("report", ["--out", "x"], spellings)
    assert (args, warnings) == (["--out", "x"], [])
    args, warnings = options.rewrite_deprecated("logs", ["n", "-f", "-f"], spellings)
    assert args == ["n", "--follow", "--follow"] and len(warnings) == 1
