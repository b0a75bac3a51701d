"""The CLI's vocabulary, declared once: shared option types and the deprecated spellings.

One meaning per short flag across every command (tests/unit/test_cli_vocabulary.py holds it):

    -f --file         a spec file (YAML or JSON)
    -o --output       where results go: a file or a directory
    -k --k            K; a comma list (same long name) where a command tries several
    -c --concurrency  concurrency levels, a comma list of ints everywhere
    -n --requests     requests to send
    -t --instance-type
    -y --yes          do not ask
    -q --quiet        no progress notes (root option, also accepted after every command)
    -v --verbose      debug notes (root option, also accepted after every command)

and one long name for each of `--region`, `--dry-run`, `--json`, `--component`, `--strict`.

A long flag takes the same value on every command that spells it (type and metavar; the
test lists the few exceptions and why), and a shared option is declared here once (a
factory where a command's help must differ). An option that names a directory ends in
`-dir` (`recommend --results-dir`); `-o/--output` is where results go, a file or a
directory as the command writes one result or several. A sizing input is not a load level:
`recommend --sequences N` (sequences of `--max-model-len` tokens the KV cache holds at
once) beside `-c/--concurrency`'s comma list of levels. A whole wait is `--timeout`
(deploy, update, apply); doctor's bound on each request to a source is `--source-timeout`.

Options with a fixed set of values are typed with a `Literal`, so `--help` prints
`<p-eagle|eagle3|baseline>` and the shell completes them. Most are parsed as plain strings
(`parser=str`): the value is then checked by the same validation the SDK runs (the spec's,
e.g. `speculative.mode: …`), so a bad value gets one message from either side.

A renamed option keeps its old spelling for one release through `DEPRECATED`: the command
accepts it and prints `warning: --out is deprecated, use --output/-o (removed in the next
release)` on stderr. The rewrite happens before click parses (`rewrite_deprecated`, called
by the root group in `app.py`), and only while the command accepts the new spelling and not
the old one, so an entry is harmless before its command is converted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

import typer

# -- fixed sets of values ------------------------------------------------------------------
Mode = Literal["p-eagle", "eagle3", "baseline"]
DrafterMode = Literal["p-eagle", "eagle3"]
Hosting = Literal["endpoint", "inference-components"]
ScaleInStrategy = Literal["idle-release", "consolidation"]
ExportFormat = Literal["terraform", "cloudformation", "json", "sagemaker"]

MODES: tuple[str, ...] = get_args(Mode)

# Long option name -> the values it takes. The vocabulary test checks that every option of
# that name lists them in `--help` (as a choice type, or in its help text for comma lists).
CHOICES: dict[str, tuple[str, ...]] = {
    "--mode": MODES,
    "--modes": MODES,
    "--hosting": get_args(Hosting),
    "--scale-in-strategy": get_args(ScaleInStrategy),
    "--format": get_args(ExportFormat),
}

# Short flag -> its one long meaning.
SHORT_FLAGS: dict[str, str] = {
    "-f": "--file",
    "-o": "--output",
    "-k": "--k",
    "-c": "--concurrency",
    "-n": "--requests",
    "-t": "--instance-type",
    "-y": "--yes",
    "-q": "--quiet",
    "-v": "--verbose",
    "-m": "--model",
    "-p": "--prompt",
}


# -- the global options (root callback; -q/-v also on every command, see app.py) ----------
def _set_quiet(value: bool) -> bool:
    if value:
        from .output import configure

        configure(quiet=True)
    return value


def _set_verbose(value: bool) -> bool:
    if value:
        from .output import configure

        configure(verbose=True)
    return value


def _set_json(value: bool) -> bool:
    """`--json` anywhere (before the command or after it) turns on the one JSON mode; a
    command's own `--json` parameter also reads True when it was given before the command."""
    from .output import configure, current

    if value:
        configure(json=True)
    return bool(value) or current().json


QuietOpt = Annotated[
    bool,
    typer.Option(
        "--quiet", "-q", help="No progress notes on stderr (results, warnings, errors stay).",
        callback=_set_quiet, expose_value=False,
    ),
]  # fmt: skip
VerboseOpt = Annotated[
    bool,
    typer.Option(
        "--verbose", "-v", help="Also print debug notes on stderr.",
        callback=_set_verbose, expose_value=False,
    ),
]  # fmt: skip


def json_option(help: str) -> Any:
    """`--json` with a command's own help text (the same mode as the global option)."""
    return Annotated[bool, typer.Option("--json", help=help, callback=_set_json)]


JsonOpt = json_option(
    'Print one JSON document on stdout (errors too: {"error": {...}}); also a '
    "global option (peagle --json COMMAND)."
)


# -- shared option types -------------------------------------------------------------------
def file_option(help: str = "Deployment spec (YAML or JSON).", *, required: bool = False) -> Any:
    kind = Path if required else Path | None
    return Annotated[kind, typer.Option("--file", "-f", metavar="FILE", help=help)]


def output_option(help: str = "Where results go: a file or a directory.") -> Any:
    return Annotated[Path | None, typer.Option("--output", "-o", metavar="PATH", help=help)]


def _k(kind: Any, help: str, metavar: str | None = None) -> Any:
    return Annotated[kind, typer.Option("-k", "--k", metavar=metavar, help=help)]


def k_option(help: str = "K, the speculative tokens per step.") -> Any:
    return _k(int | None, help)


def k_list_option(help: str = "Comma-separated K values to try.") -> Any:
    """sweep's several K: a comma list of the same K (`-k 3` is K=3 there too)."""
    return _k(str, help, "K[,K...]")


def concurrency_option(help: str = "Comma-separated concurrency levels.") -> Any:
    return Annotated[str, typer.Option("--concurrency", "-c", metavar="N[,N...]", help=help)]


def requests_option(help: str = "Requests to send.", *, optional: bool = True) -> Any:
    kind = int | None if optional else int
    return Annotated[kind, typer.Option("--requests", "-n", help=help)]


def _component(kind: Any, help: str, metavar: str, callback: Any = None) -> Any:
    return Annotated[
        kind, typer.Option("--component", metavar=metavar, help=help, callback=callback)
    ]


def component_option(help: str = "Inference component (the short name is enough).") -> Any:
    return _component(str | None, help, "NAME", given_component)


def given_component(value: str | None) -> str | None:
    """A command's one `--component`: advice about it (reading its logs) repeats it."""
    if value:
        from .advice import given_component as given

        given(value)
    return value


def components_option(help: str, metavar: str = "NAME") -> Any:
    """A repeatable `--component` (race's two sides; plan/deploy's NAME[:key=value,...],
    component_options.ComponentOpt)."""
    return _component(list[str] | None, help, metavar)


def bucket_option(help: str) -> Any:
    """`--bucket`: where peagle uploads (a deploy's local head, a training run's files)."""
    return Annotated[str | None, typer.Option("--bucket", help=help)]


def dry_run_option(help: str = "Show what would happen; change nothing.") -> Any:
    return Annotated[bool, typer.Option("--dry-run", help=help)]


def mode_option(
    help: str = "p-eagle (default), eagle3 or baseline.", *, drafter: bool = False
) -> Any:
    """`--mode`; a drafter's (`drafter check/push`) takes no baseline: there is no head."""
    kind = DrafterMode if drafter else Mode | None
    return Annotated[kind, typer.Option("--mode", parser=str, help=help)]


def model_option(help: str) -> Any:
    """`-m/--model`: a model that is not the command's subject (adopt: what an endpoint
    serves; drafter: the target a head is checked against)."""
    return Annotated[str | None, typer.Option("--model", "-m", help=help)]


def vllm_version_option(help: str = "vLLM version the image runs.") -> Any:
    return Annotated[str | None, typer.Option("--vllm-version", help=help)]


def copies_option(help: str) -> Any:
    """`--copies`: inference-component copies (plan/deploy: each new one's; update: one's)."""
    return Annotated[int | None, typer.Option("--copies", help=help)]


def idle_option(help: str) -> Any:
    """`--idle DURATION` (`ls`, `gc`): endpoints without traffic over the window."""
    return Annotated[str | None, typer.Option("--idle", metavar="DURATION", help=help)]


def force_option(help: str) -> Any:
    """`--force`: go past the command's own refusal; the help names which."""
    return Annotated[bool, typer.Option("--force", help=help)]


def check_region(value: str | None) -> str | None:
    """`--region` on every command: the same check as the spec's `region` field. The
    commands the CLI then suggests carry it too (cli/advice.py)."""
    if value is None:
        return value
    from ..ops.session import check_region as check
    from .advice import given_region

    region = check(value)
    given_region(region)
    return region


FileOpt = file_option()
OutputOpt = output_option()
# The default K is the model's: its JumpStart config's, else its head card's, else 3; `plan`
# prints which, and why (Plan.k_origin).
KOpt = k_option(
    "K, the speculative tokens per step [default: the model's: its JumpStart config's K "
    "(3 for gpt-oss-20b), else its head card's, else 3; `peagle plan` says which]."
)
KListOpt = k_list_option()
ConcurrencyOpt = concurrency_option()
RequestsOpt = requests_option()
ComponentOpt = component_option()
DryRunOpt = dry_run_option()
ModeOpt = mode_option()
YesOpt = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")]
# One meaning wherever it appears (plan, deploy, apply, drafter check, drafter push; SDK
# strict=True): every check that would warn fails instead, so nothing is sent or uploaded.
StrictOpt = Annotated[
    bool,
    typer.Option(
        "--strict",
        help="Fail on warnings too: a head vLLM would load silently wrong (layers left "
        "uninitialised, embeddings or LM head taken from the target, weights cut to fit) "
        "or a fact peagle could not verify fails the check (exit 2) instead of warning.",
    ),
]
RegionOpt = Annotated[
    str | None, typer.Option("--region", help="AWS region.", callback=check_region)
]

# How long deploy, update and apply wait for the endpoint, in all (doctor's bound on each
# network source is another meaning: `--source-timeout`).
TimeoutOpt = Annotated[
    str | None,
    typer.Option(
        "--timeout",
        help="Give up waiting after this long (2h, 90m, 600s). "
        "Default: download + health-check timeouts + 15m.",
    ),
]

# -- the traffic options: every command that sends prompts (invoke, chat, race, bench, sweep,
# tune-k) declares them from here, so each has one type and one help; defaults stay per
# command (in its signature: invoke and chat answer at length, measurements use 256).
MaxTokensOpt = Annotated[
    int, typer.Option("--max-tokens", help="max_tokens of each request: most tokens to generate.")
]
TemperatureOpt = Annotated[
    float | None,
    typer.Option("--temperature", help="Sampling temperature, 0 (greedy) to 2 (model default)."),
]
DatasetOpt = Annotated[
    str | None,
    typer.Option(
        "--dataset",
        help="peagle-builtin (default), FILE.jsonl ('prompt' or 'messages' per line), "
        "humaneval (offline with sm-peagle[humaneval]; the sweep's default then), "
        "mt-bench or speed-bench (need `datasets` and network).",
    ),
]
AcceptanceWaitOpt = Annotated[
    str,
    typer.Option(
        "--acceptance-wait",
        help="How long to wait for vLLM's SpecDecoding log line after the last request, for "
        "images without per-request acceptance (0: read the logs once, no wait).",
    ),
]


# -- deprecated spellings ------------------------------------------------------------------
@dataclass(frozen=True)
class Deprecated:
    """`old` keeps working for one release on `commands` (command paths; empty: every
    command), meaning `new`."""

    old: str
    new: str
    commands: tuple[str, ...] = ()
    removed_in: str = "the next release"

    def applies_to(self, command: str) -> bool:
        return not self.commands or command in self.commands


DEPRECATED: tuple[Deprecated, ...] = (
    Deprecated("--out", "--output", ("bench",)),
    Deprecated("--out-dir", "--output", ("sweep",)),
    Deprecated("-f", "--follow", ("logs",)),
    Deprecated("--num-speculative-tokens", "--k", ("plan", "deploy", "update", "drafter check")),
    # Issue 35: `--concurrency` is a comma list of load levels on bench, sweep and tune-k,
    # where it stays; only recommend's sizing input (one integer) takes another name.
    Deprecated("--concurrency", "--sequences", ("recommend",)),
    # A directory option ends in -dir; tune-k's `--results` (one bench file) keeps its name.
    Deprecated("--results", "--results-dir", ("recommend",)),
    # deploy/update/apply's `--timeout` is the whole wait; doctor's bounds each request to a
    # network source (several per source, all sources at once): another meaning.
    Deprecated("--timeout", "--source-timeout", ("doctor",)),
)


def rewrite_deprecated(
    command: str,
    args: list[str],
    spellings: Callable[[str], Iterable[str] | None],
    deprecated: Iterable[Deprecated] = DEPRECATED,
) -> tuple[list[str], list[str]]:
    """`args` with each deprecated spelling replaced by the new one, and the warnings.

    `spellings(name)` gives every spelling of the option the command declares under `name`
    (e.g. ("--output", "-o")), or None when it has none. An entry applies only when the
    command declares `new` and does not declare `old`. Nothing after `--` is touched."""
    rules = {}
    for d in deprecated:
        if not d.applies_to(command):
            continue
        new_spellings = spellings(d.new)
        if new_spellings and not spellings(d.old):
            longest_first = sorted(new_spellings, key=lambda o: not o.startswith("--"))
            rules[d.old] = (d, "/".join(longest_first))
    if not rules:
        return args, []
    out: list[str] = []
    warnings: list[str] = []
    for i, arg in enumerate(args):
        if arg == "--":
            out.extend(args[i:])
            break
        name, eq, value = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        if name in rules:
            d, shown = rules[name]
            arg = d.new + eq + value
            warning = f"{d.old} is deprecated, use {shown} (removed in {d.removed_in})"
            if warning not in warnings:
                warnings.append(warning)
        out.append(arg)
    return out, warnings
