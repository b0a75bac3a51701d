"""Errors speak Python; the CLI words them (issue 34, design §1).

An SDK message names a parameter (`Param`), a call (`Call`) or a phrase (`Phrase`) as data:
`str()` is the Python wording (`k=`, `sm_peagle.delete('ep')`), and `cli/faces.py` is the
one table the CLI words them with (`-k`, `peagle delete ep --yes`, in the context of the
command running: a target's options, `--region`). The expected strings below are the rule as the
design states it; the last tests hold every keyword and call the SDK's source names to an
option and a command the CLI really has, so a renamed flag cannot leave a message pointing
at nothing.
"""

from __future__ import annotations

import ast
import string
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer

import sm_peagle
from sm_peagle import errors, plugins
from sm_peagle.cli import advice, faces
from sm_peagle.cli.app import build_app
from sm_peagle.cli.faces import CliFace, cli_text, flag_for
from sm_peagle.contract import PluginBase, TargetState, Wording
from sm_peagle.errors import Call, Param, Phrase, SpecError, Text, text

SDK = Path(sm_peagle.__file__).parent


@pytest.fixture(autouse=True)
def _plain_context(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A CLI run on AWS with no region given, unless a test says otherwise."""
    for name in ("PEAGLE_SANDBOX", "PEAGLE_SANDBOX_URL", "PEAGLE_SANDBOX_ENGINE"):
        monkeypatch.delenv(name, raising=False)
    advice.begin()
    yield
    advice.begin()


# -- the two wordings --------------------------------------------------------------------
@pytest.mark.parametrize(
    ("part", "python", "cli"),
    [
        (Param("k"), "k=", "-k"),
        (Param("k", 5), "k=5", "-k 5"),
        (Param("max_error_rate", 0.1), "max_error_rate=0.1", "--max-error-rate 0.1"),
        (Param("wait", True), "wait=True", "--wait"),
        (Param("wait", False), "wait=False", "--no-wait"),
        (Param("rate", [0.5, 2]), "rate=[0.5, 2]", "--rate 0.5,2"),
        # A value a shell would split is quoted; a placeholder prints as it is.
        (Param("prompt", "hello world"), "prompt='hello world'", "--prompt 'hello world'"),
        (
            Param("role", "arn:aws:iam::<account>:role/<name>"),
            None,
            "--role arn:aws:iam::<account>:role/<name>",
        ),
        (Call("ls"), "sm_peagle.ls()", "peagle ls"),
        (Call("status", "ep"), "sm_peagle.status('ep')", "peagle status ep"),
        # delete and gc ask first: the command to paste carries --yes, the SDK call nothing.
        (Call("delete", "ep"), "sm_peagle.delete('ep')", "peagle delete ep --yes"),
        (
            Call("gc", operation="op-1"),
            "sm_peagle.gc(operation='op-1')",
            "peagle gc --operation op-1 --yes",
        ),
        (
            Call("delete", "ep", force=True, yes=False),
            "sm_peagle.delete('ep', force=True)",
            "peagle delete ep --force",
        ),
        (Call("update", "ep", yes=True), "sm_peagle.update('ep')", "peagle update ep --yes"),
        (Call("update", "ep", errors.ETC), "sm_peagle.update('ep', ...)", "peagle update ep ..."),
        (
            Call("drafter_push", "s3://b/h"),
            "sm_peagle.drafter_push('s3://b/h')",
            "peagle drafter push s3://b/h",
        ),
        (Call("tune_k", "ep"), "sm_peagle.tune_k('ep')", "peagle tune-k ep"),
        (
            Call("ls", include_unmanaged=True),
            "sm_peagle.ls(include_unmanaged=True)",
            "peagle ls --all",
        ),
        (
            Call("logs", "ep", component="c"),
            "sm_peagle.logs('ep', component='c')",
            "peagle logs ep --component c",
        ),
        (Call("status", "my ep"), "sm_peagle.status('my ep')", "peagle status 'my ep'"),
        (Phrase("json"), errors.PHRASES["json"], "--json"),
    ],
)
def test_each_part_has_a_python_and_a_cli_wording(part: Any, python: str | None, cli: str) -> None:
    if python is not None:
        assert str(part) == python
    assert Text((part,)).render(CliFace("status")) == cli


def test_a_text_is_its_python_wording_and_the_cli_prints_flags() -> None:
    t = text("{k} must be 1..15, got {got!r}", got=99)
    assert isinstance(t, str) and t == "k= must be 1..15, got 99"
    assert cli_text(t, "deploy") == "-k must be 1..15, got 99"
    fix = text("e.g. {rate} (requests/s)", rate=Param("rate", "0.5,2"))
    err = SpecError(t, remedy=fix, field="k", value=99, rule="1 <= k <= 15")
    assert str(err) == "k= must be 1..15, got 99"
    assert err.one_line() == "k= must be 1..15, got 99 (fix: e.g. rate='0.5,2' (requests/s))"
    assert err.one_line(CliFace("deploy")) == (
        "-k must be 1..15, got 99 (fix: e.g. --rate 0.5,2 (requests/s))"
    )
    doc = err.to_dict()
    assert (doc["field"], doc["value"], doc["rule"]) == ("k", 99, "1 <= k <= 15")


def test_a_text_joined_into_a_text_keeps_its_parts() -> None:
    inner = text("see `{ls}`", ls=Call("ls"))
    outer = text("endpoint x does not exist ({fix})", fix=inner)
    assert outer == "endpoint x does not exist (see `sm_peagle.ls()`)"
    assert cli_text(outer, "status") == "endpoint x does not exist (see `peagle ls`)"
    joined = errors.concat([inner, text("pass {region}")], "; ")
    assert cli_text(joined, "status") == "see `peagle ls`; pass --region"


def test_a_suggested_command_reaches_where_the_running_command_talked_to() -> None:
    """In the sandbox a pasted command says --sandbox (never a bare `peagle delete NAME`,
    which would reach a real endpoint of that name); given --region, it repeats it. A
    command that never leaves this machine says neither."""
    advice.begin(carry=("--sandbox",), command="deploy")
    assert cli_text(text("`{d}`", d=Call("delete", "ep"))) == "`peagle --sandbox delete ep --yes`"
    assert cli_text(text("{m}", m=Call("models"))) == "peagle models"
    advice.begin(carry=(), command="deploy")
    advice.given_region("eu-west-1")
    assert cli_text(text("{s}", s=Call("status", "ep"))) == "peagle status ep --region eu-west-1"
    assert cli_text(text("{m}", m=Call("models"))) == "peagle models"


def test_the_cli_error_line_is_the_cli_wording(capsys: pytest.CaptureFixture[str]) -> None:
    from sm_peagle.cli import output
    from sm_peagle.cli.boundary import exit_code_for

    output.reset()
    err = SpecError(
        text("{k} must be 1..15, got 99"), remedy=text("`{s}`", s=Call("schema")), field="k"
    )
    assert exit_code_for(err, ["deploy", "gpt-oss-20b", "-k", "99"]) == 2
    assert capsys.readouterr().err == "error: -k must be 1..15, got 99 (fix: `peagle schema`)\n"


def test_both_faces_word_the_same_phrases() -> None:
    assert set(errors.PHRASES) == set(faces.PHRASES)


class _Target:
    """A target written only against the contract: its words are its own."""

    name = "local"
    options = ()
    offer = Wording(cli="--local", python="my_local.client()")
    run = Wording(cli="peagle --local", python="`my_local.client()`")

    def activate(self, values: Any) -> TargetState:
        raise AssertionError("not activated here")

    def current(self) -> TargetState | None:
        return TargetState(
            "local", "http://127.0.0.1:1", "LOCAL (SIMULATED)",
            unreachable=Wording(cli="`peagle local status`", python="my_local.status()"),
        )  # fmt: skip


class _Plugin(PluginBase):
    name = "local"

    def target(self) -> Any:
        return _Target()


def test_a_target_s_phrases_are_worded_by_the_target_in_each_face(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`Phrase("local")` and friends name no plugin: each face takes the installed target's
    own wording (`AwsTarget.offer` / `.run`, the current target's `unreachable`)."""
    monkeypatch.setattr(plugins, "installed", lambda: (_Plugin(),))
    fix = text("pass {region}, set AWS_REGION, or use {s}", s=Phrase("local"))
    assert str(fix) == "pass region=, set AWS_REGION, or use my_local.client()"
    assert cli_text(fix, "deploy") == "pass --region, set AWS_REGION, or use --local"
    run = text("test against AWS or {s}", s=Phrase("local_run"))
    assert str(run) == "test against AWS or `my_local.client()`"
    assert cli_text(run, "deploy") == "test against AWS or peagle --local"
    monkeypatch.setenv("PEAGLE_TARGET", "local")
    gone = text("it did not answer: {s}", s=Phrase("unreachable"))
    assert str(gone) == "it did not answer: my_local.status()"
    assert cli_text(gone, "deploy") == "it did not answer: `peagle local status`"


def test_without_a_target_plugin_the_phrase_says_how_to_get_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No plugin installed: nothing local to offer but where to get it (the known plugins'
    install line, `catalog/data/known_plugins.json`)."""
    monkeypatch.setattr(plugins, "installed", lambda: ())
    fix = text("or run with {s}", s=Phrase("local"))
    hint = "a local target plugin (peagle-sandbox: pip install -e ./sandbox)"
    assert str(fix) == f"or run with {hint}"
    assert cli_text(fix, "deploy") == f"or run with {hint}"


# -- every keyword and call the SDK names exists at the CLI --------------------------------
def _sdk_files() -> list[Path]:
    return [
        f
        for f in sorted(SDK.rglob("*.py"))
        if f.relative_to(SDK).parts[0] not in ("cli", "container")
    ]


def _errors_names(tree: ast.Module) -> dict[str, str]:
    """Local name -> the errors name it is bound to (`text as text_` included)."""
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("errors"):
            for alias in node.names:
                out[alias.asname or alias.name] = alias.name
    return out


def named_by_sdk() -> tuple[set[tuple[str, str]], set[tuple[str, str, str | None]]]:
    """(keywords, calls) the SDK's source names: ({(keyword, where)}, {(op, where,
    keyword or None)}) from `Param("kw")`, the `{kw}` fields of `text("…")` that are not
    given as arguments, and `Call("op", …, kw=…)`."""
    params: set[tuple[str, str]] = set()
    calls: set[tuple[str, str, str | None]] = set()
    for path in _sdk_files():
        tree = ast.parse(path.read_text())
        bound = _errors_names(tree)
        where = str(path.relative_to(SDK))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
                continue
            name = bound.get(node.func.id)
            first = node.args[0] if node.args else None
            if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
                continue
            if name == "Param":
                params.add((first.value, f"{where}:{node.lineno}"))
            elif name == "Call":
                calls.add((first.value, f"{where}:{node.lineno}", None))
                for kw in node.keywords:
                    if kw.arg is not None:
                        calls.add((first.value, f"{where}:{node.lineno}", kw.arg))
            elif name == "text":
                given = {kw.arg for kw in node.keywords}
                if None in given:  # **values: what is given is not known here
                    continue
                for _, field, _, _ in string.Formatter().parse(first.value):
                    if field and field not in given:
                        params.add((field, f"{where}:{node.lineno}"))
    return params, calls


@pytest.fixture(scope="module")
def root() -> Any:
    return typer.main.get_command(build_app())


def _leaves(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    subcommands = getattr(command, "commands", None)
    if subcommands is None:
        yield path, command
        return
    for name, sub in subcommands.items():
        yield from _leaves(sub, (*path, name))


def _spellings(command: Any) -> set[str]:
    """Every option spelling and argument metavar (upper case) of a command."""
    out: set[str] = set()
    for p in command.params:
        if p.param_type_name == "option":
            out.update((*p.opts, *p.secondary_opts))
        else:
            out.add(p.name.upper())
    return out


def _command(root: Any, op: str) -> Any:
    words = faces.COMMANDS.get(op) or (op.replace("_", "-"),)
    command = root
    for word in words:
        command = getattr(command, "commands", {}).get(word)
        if command is None:
            return None
    return command


def test_the_scan_finds_what_the_sdk_names() -> None:
    """The scan below is not vacuous: it sees keywords and calls this package names."""
    params, calls = named_by_sdk()
    assert {"region", "timeout"} <= {p for p, _ in params}
    assert {"delete", "gc", "ls", "status"} <= {op for op, _, _ in calls}


def test_every_keyword_the_sdk_names_is_a_cli_option(root: Any) -> None:
    params, _ = named_by_sdk()
    leaves = list(_leaves(root))
    everywhere = set().union(*(_spellings(c) for _, c in leaves)) | _spellings(root)
    by_command = {path[0]: _spellings(c) for path, c in leaves if len(path) == 1}
    missing = []
    for name, where in sorted(params):
        per_command = [
            flag in by_command.get(cmd, set())
            for (cmd, kw), flag in faces.FLAGS_BY_COMMAND.items()
            if kw == name
        ]
        if flag_for(name) not in everywhere and not any(per_command):
            missing.append(f"{where}: {name} -> {flag_for(name)}")
    assert not missing, missing


def test_every_call_the_sdk_names_is_an_sdk_operation_and_a_cli_command(root: Any) -> None:
    _, calls = named_by_sdk()
    bad = []
    for op, where, keyword in sorted(calls, key=lambda c: (c[0], c[1], c[2] or "")):
        command = _command(root, op)
        if not hasattr(sm_peagle, op) or command is None:
            bad.append(f"{where}: {op} (SDK: {hasattr(sm_peagle, op)}, CLI: {command})")
            continue
        if keyword is not None:
            flag = flag_for(keyword, (faces.COMMANDS.get(op) or (op,))[0])
            if flag not in _spellings(command) and not flag.isupper():
                bad.append(f"{where}: {op}({keyword}=) -> {flag} is not an option of it")
    assert not bad, bad
