"""What `cli/advice.py` renders: a suggested command targets what the printing command
targeted (issue 33, Build 1). Pasted without `--sandbox`, `peagle delete NAME --yes`
printed by a sandbox deploy deletes a real endpoint for someone with AWS credentials;
without `--region R`, it acts on the default region.

The sandbox is a plugin (issue 35): its target says which options a pasted command must
carry (`TargetState.carry`), and the free-text parser knows its options because the
target declares them. These tests run with it installed (the suite's environment)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
import typer

from sm_peagle.cli import advice
from sm_peagle.cli.advice import Suggestion, Target, render, rewrite
from sm_peagle.errors import NotFound

ROOT = Path(__file__).resolve().parents[2]
SANDBOX = Target(carry=("--sandbox",))
EU = Target(region="eu-west-1")


@pytest.fixture(autouse=True)
def _clean(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("PEAGLE_SANDBOX", "PEAGLE_SANDBOX_URL", "PEAGLE_SANDBOX_ENGINE", "PEAGLE_TARGET"):
        monkeypatch.delenv(name, raising=False)
    advice.begin()


def test_a_suggestion_carries_the_sandbox_its_engine_and_the_region() -> None:
    delete = Suggestion.of("delete", "ep", yes=True)
    assert render(delete, Target()) == "peagle delete ep --yes"
    assert render(delete, SANDBOX) == "peagle --sandbox delete ep --yes"
    vllm = Target(carry=("--sandbox", "--sandbox-engine", "vllm"))
    assert render(delete, vllm) == "peagle --sandbox --sandbox-engine vllm delete ep --yes"
    assert render(delete, EU) == "peagle delete ep --yes --region eu-west-1"
    gc = Suggestion.of("gc", operation="op-1", force=True, yes=True)
    assert render(gc, SANDBOX) == "peagle --sandbox gc --operation op-1 --force --yes"
    assert render(Suggestion.of("drafter", "push", "./h", "s3://b/p/"), SANDBOX) == (
        "peagle --sandbox drafter push ./h s3://b/p/"
    )


def test_a_component_is_repeated_only_when_the_advice_is_about_it() -> None:
    t = Target(carry=("--sandbox",), component="p-eagle")
    logs = Suggestion.of("logs", "ep", about_component=True)
    assert render(logs, t) == "peagle --sandbox logs ep --component p-eagle"
    assert render(Suggestion.of("logs", "ep"), t) == "peagle --sandbox logs ep"
    # `delete` has no --component: never given one
    assert render(Suggestion.of("delete", "ep", about_component=True), t) == (
        "peagle --sandbox delete ep"
    )


def test_local_commands_and_help_are_left_alone() -> None:
    t = Target(carry=("--sandbox",), region="eu-west-1")
    for words in (("models",), ("schema",), ("sandbox", "stop"), ("report", "r.json")):
        assert render(Suggestion.of(*words), t) == "peagle " + " ".join(words)
    assert render(Suggestion.of("deploy", "--help"), t) == "peagle deploy --help"


def test_a_process_pointed_at_the_sandbox_carries_its_options(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A shell pointed at the sandbox by `eval "$(peagle sandbox env)"` (PEAGLE_TARGET names
    the target, which says where it is): the run began with no option, yet the sandbox is
    where it talks to, so pasted commands carry what the target says (its real engine
    too, so a sandbox restarted by the pasted command runs the same one)."""
    assert render(Suggestion.of("status", "ep")) == "peagle status ep"
    monkeypatch.setenv("PEAGLE_TARGET", "sandbox")
    monkeypatch.setenv("PEAGLE_SANDBOX_URL", "http://127.0.0.1:9")
    assert render(Suggestion.of("status", "ep")) == "peagle --sandbox status ep"
    monkeypatch.setenv("PEAGLE_SANDBOX_ENGINE", "vllm")
    assert render(Suggestion.of("status", "ep")) == (
        "peagle --sandbox --sandbox-engine vllm status ep"
    )


def test_the_run_s_own_target_options_win_over_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What the CLI began the run with (`advice.begin(carry=...)`: the target's carry after
    it was activated) is what pasted commands carry."""
    advice.begin(carry=("--sandbox", "--sandbox-engine", "vllm"), command="deploy")
    assert render(Suggestion.of("delete", "ep", yes=True)) == (
        "peagle --sandbox --sandbox-engine vllm delete ep --yes"
    )
    advice.begin(carry=(), command="deploy")  # AWS: nothing to carry
    assert render(Suggestion.of("delete", "ep", yes=True)) == "peagle delete ep --yes"


def test_target_options_written_in_free_text_are_kept_and_merged() -> None:
    """An SDK remedy that already names the target (`peagle --sandbox-engine vllm ...`)
    keeps its value; the context's other options are added once, never twice."""
    t = Target(carry=("--sandbox",))
    assert rewrite("`peagle --sandbox-engine vllm status ep`", t) == (
        "`peagle --sandbox --sandbox-engine vllm status ep`"
    )
    assert rewrite("run peagle --sandbox status ep now", Target()) == (
        "run peagle --sandbox status ep now"
    )
    # an option no installed target declares is not a target option: not a command
    assert rewrite("`peagle --nope status ep`", t) == "`peagle --nope status ep`"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "peagle delete ep --yes (or `peagle gc --yes`, which removes every such)",
            "peagle --sandbox delete ep --yes --region eu-west-1 (or "
            "`peagle --sandbox gc --yes --region eu-west-1`, which removes every such)",
        ),
        ("see `peagle ls`", "see `peagle --sandbox ls --region eu-west-1`"),
        (
            "push the drafter first: peagle drafter push DIR S3_URI",
            "push the drafter first: peagle --sandbox drafter push DIR S3_URI --region eu-west-1",
        ),
        (
            "peagle update X -k 7, then measure with `peagle bench`",
            "peagle --sandbox update X -k 7 --region eu-west-1, then measure with "
            "`peagle --sandbox bench --region eu-west-1`",
        ),
        # already targeted: rendered once, not twice
        (
            "`peagle --sandbox delete ep --yes --region eu-west-1`",
            "`peagle --sandbox delete ep --yes --region eu-west-1`",
        ),
        # the sandbox's own commands, and sentences about a command, stay as they are
        ("`peagle sandbox stop`, then start", "`peagle sandbox stop`, then start"),
        (
            "tagging them would let peagle delete what another endpoint runs",
            "tagging them would let peagle delete what another endpoint runs",
        ),
        ("the endpoints peagle manages", "the endpoints peagle manages"),
        ("peagle-gpt-oss-20b-p-eagle", "peagle-gpt-oss-20b-p-eagle"),
    ],
)
def test_free_text_commands_are_rendered_for_the_context(text: str, expected: str) -> None:
    target = Target(carry=("--sandbox",), region="eu-west-1")
    assert rewrite(text, target) == expected
    assert rewrite(expected, target) == expected


def _sdk_strings() -> list[tuple[str, str]]:
    """Each string (an f-string with its fields as X) outside `cli/` that names a peagle
    command and is not a docstring: the SDK's remedies, notes and messages."""
    pattern = re.compile(rf"(?<![\w/-])peagle (?:{'|'.join(map(re.escape, COMMANDS))})\b")
    found = []
    for path in sorted((ROOT / "sm_peagle").rglob("*.py")):
        if "cli" in path.parts:
            continue
        tree = ast.parse(path.read_text())
        docs = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Module | ast.FunctionDef | ast.ClassDef)
            and node.body
            and isinstance(node.body[0], ast.Expr)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.JoinedStr):
                parts = node.values
                docs |= {id(v) for v in parts}
                text = "".join(v.value if isinstance(v, ast.Constant) else "X" for v in parts)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                if id(node) in docs:
                    continue
                text = node.value
            else:
                continue
            if pattern.search(text):
                found.append((f"{path.relative_to(ROOT)}:{node.lineno}", text))
    return found


COMMANDS = ("status", "logs", "delete", "gc", "update", "ls", "adopt", "bench", "drafter push")
# Sentences about a command, not advice to run it (checked by eye; each says why).
PROSE = {
    "would let peagle delete what another endpoint runs",  # what tagging would allow
    "peagle drafter push never creates them",  # a fact about push
}


def test_every_sdk_string_naming_a_command_is_rendered_for_the_sandbox() -> None:
    """The boundary and the notes rewrite the SDK's free-text remedies: each command in
    them must come out with --sandbox, or the CLI would print it bare."""
    strings = _sdk_strings()
    # The scan finds the SDK's free text at all (most advice is structured now: errors.Call,
    # worded by cli/faces.py; what is left is prose and other programs' commands).
    assert strings
    bare = re.compile(rf"(?<![\w/-])peagle (?:{'|'.join(map(re.escape, COMMANDS))})\b")
    missed = []
    for where, text in strings:
        done = rewrite(text, SANDBOX)
        for prose in PROSE:
            done = done.replace(prose, "")
        if bare.search(done):
            missed.append((where, done))
    assert missed == []


def _cli_commands() -> dict[str, set[str]]:
    from sm_peagle.cli.app import build_app

    root = typer.main.get_command(build_app())
    found: dict[str, set[str]] = {}

    def walk(cmd: object, path: list[str]) -> None:
        subs = getattr(cmd, "commands", None)
        if subs:
            for name, sub in subs.items():
                walk(sub, [*path, name])
            return
        found[" ".join(path)] = {o for p in cmd.params for o in p.opts}  # type: ignore[attr-defined]

    walk(root, [])
    return found


def test_the_command_tables_are_the_clis() -> None:
    from sm_peagle import plugins
    from sm_peagle.cli.app import COMMANDS

    commands = _cli_commands()
    assert set(advice.COMMAND_WORDS) == set(COMMANDS)
    assert {c.split()[0] for c in commands} == set(advice.command_words())
    without_region = {c.split()[0] for c, opts in commands.items() if "--region" not in opts}
    # a plugin's own group never talks to AWS: local, like peagle's own local commands
    assert without_region == set(advice.LOCAL) | set(plugins.commands())
    with_component = {c for c, opts in commands.items() if "--component" in opts}
    assert with_component == set(advice.COMPONENT_COMMANDS)


def test_the_error_boundary_renders_an_sdk_remedy_for_the_context(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from sm_peagle.cli.boundary import exit_code_for
    from sm_peagle.cli.output import reset

    reset()
    advice.begin(carry=("--sandbox",))
    advice.given_region("eu-west-1")
    code = exit_code_for(NotFound("endpoint ep not found", remedy="see `peagle ls`"), [])
    err = capsys.readouterr().err
    assert code == 1
    assert err.strip() == (
        "error: endpoint ep not found (fix: see `peagle --sandbox ls --region eu-west-1`)"
    )


def test_logs_help_says_what_f_means_on_logs(capsys: pytest.CaptureFixture[str]) -> None:
    """-f on logs is the deprecated spelling of --follow (cli/options.py DEPRECATED), not
    --file as on every other command: the help says so."""
    from sm_peagle.cli.app import main

    assert main(["logs", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "-f still means --follow" in text


def test_logs_advised_by_a_component_command_reads_that_component() -> None:
    """After `update EP --component C` fails, "`peagle logs EP` shows more" means C's logs
    (its own log group): the rendered command names it."""
    from sm_peagle.cli.options import given_component

    advice.begin(carry=("--sandbox",))
    given_component("p-eagle")  # the --component option's callback
    said = rewrite("read the log lines above; `peagle logs ep` shows more")
    assert (
        said
        == "read the log lines above; `peagle --sandbox logs ep --component p-eagle` shows more"
    )
    assert rewrite("see `peagle status ep`") == "see `peagle --sandbox status ep`"
    advice.begin(carry=("--sandbox",))  # a new run forgets it
    assert rewrite("`peagle logs ep`") == "`peagle --sandbox logs ep`"


def test_a_command_in_a_status_table_cell_targets_the_sandbox(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """status prints an unknown price's reason (catalog/regional_prices.py: "`peagle
    instances --live-prices --region R` asks AWS") in its table, not in a note: the table
    renders it for the context too."""
    from sm_peagle.catalog.instances import get_instance
    from sm_peagle.catalog.regional_prices import price_in
    from sm_peagle.cli.inventory_cmds import render_status
    from sm_peagle.cli.output import reset
    from sm_peagle.ops.endpoints import EndpointStatus

    reset()
    advice.begin(carry=("--sandbox",))
    inst = get_instance("ml.g7e.2xlarge")
    assert inst is not None
    price = price_in(inst, "ap-south-2").label  # what status's "cost" row shows
    assert "`peagle instances --live-prices --region ap-south-2`" in price  # the SDK's text
    st = {"status": "InService", "instance_count": 1, "desired_instance_count": 1,
          "instance_type": "ml.g7e.2xlarge", "mode": "p-eagle", "k": 3, "image": "img:1",
          "age_seconds": 60, "price": price, "failure_reason": None}  # fmt: skip
    render_status("ep", EndpointStatus.from_dict({"endpoint": "ep", **st}))
    out = " ".join(capsys.readouterr().out.split())
    assert "peagle --sandbox instances --live-prices --region ap-south-2" in out
    assert "`peagle instances" not in out
