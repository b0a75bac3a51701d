"""Every command the CLI suggests targets what the command that printed it targeted.

A `next:` line, a `(fix: …)` or a note that says "`peagle gc --yes` removes them" is meant
to be pasted. Pasted as printed, it must reach the same place: after
`peagle --sandbox deploy …`, `peagle delete NAME --yes` without `--sandbox` would delete a
real endpoint of that name for someone with AWS credentials. So one function renders a
suggested command from the current context (`render`), and the CLI's own advice is built
as a `Suggestion` (words, arguments, options), never as a string:

- the sandbox, however it was chosen (`--sandbox`, `--sandbox-engine`, `PEAGLE_SANDBOX=1`,
  or a shell pointed at it by `peagle sandbox env`): `peagle --sandbox …`, plus
  `--sandbox-engine vllm` when the real engine was chosen (a sandbox restarted by the
  pasted command then runs the same engine);
- `--region R` when the command was given one (on the commands that take it);
- `--component C` when the advice is about a component (`Suggestion.about_component`).

The SDK's errors still carry their remedies as free text with `peagle …` commands inside
(issue 34 makes them structured); `rewrite` finds those commands and renders each the same
way, so the error boundary, notes and `next:` lines all go through `render`.

Commands that never leave this machine are left as they are (`LOCAL`: `models`, `schema`,
`recommend`, `report`, and `peagle sandbox …`, the sandbox's own group), and so is a bare
`--help`.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass, replace

__all__ = [
    "Suggestion",
    "Target",
    "begin",
    "current_target",
    "given_component",
    "given_region",
    "quote",
    "render",
    "rewrite",
]

# The `peagle` commands and groups (cli/app.py COMMANDS and PLUGIN_COMMANDS; a unit test
# keeps them equal). Only these words start a command in free text, so prose such as
# "peagle deploys GPU instances" is never taken for one.
COMMAND_WORDS = frozenset(
    (
        "models", "instances", "schema", "plan", "deploy", "status", "ls", "logs", "update",
        "delete", "gc", "invoke", "chat", "apply", "adopt", "diff", "recommend", "bench",
        "sweep", "report", "race", "tune-k", "export", "iam-policy", "drafter", "doctor",
        "sandbox",
    )
)  # fmt: skip
GROUPS = frozenset(("drafter", "sandbox"))
# Commands that never talk to AWS or a sandbox: no --region option (a unit test checks the
# CLI), and no --sandbox either (it would start a sandbox for nothing). `sandbox …` is the
# sandbox's own group.
LOCAL = frozenset(("models", "schema", "recommend", "report", "sandbox"))
# Commands with a --component option.
COMPONENT_COMMANDS = frozenset(
    ("plan", "deploy", "logs", "update", "invoke", "chat", "bench", "race", "tune-k")
)
# In free text, the suggestions that are about the component the command was given: its
# logs (`see `peagle logs EP`` after a component failed to update means that component's).
ABOUT_COMPONENT = frozenset(("logs",))
DEFAULT_ENGINE = "simulated"


@dataclass(frozen=True)
class Target:
    """Where the running command talks to, as far as a suggested command must repeat it."""

    sandbox: bool = False
    engine: str | None = None  # only a non-default engine: the default needs no flag
    region: str | None = None
    component: str | None = None
    command: str | None = None  # the command running (its flags name SDK keywords)


@dataclass(frozen=True)
class Suggestion:
    """A command to suggest: `peagle WORDS ARGS OPTIONS`, before the context is added.

    `options` are (flag, value) pairs, value None for a switch (`("--yes", None)`).
    `about_component`: the advice concerns the component the command was given, so the
    rendered command carries `--component C` (when that command takes one)."""

    words: tuple[str, ...]
    args: tuple[str, ...] = ()
    options: tuple[tuple[str, str | None], ...] = ()
    about_component: bool = False
    sandbox: bool = False  # the text it was parsed from already said --sandbox
    engine: str | None = None

    @classmethod
    def of(
        cls, *words_and_args: str, about_component: bool = False, **options: object
    ) -> Suggestion:
        """`Suggestion.of("delete", name, yes=True)`: the leading command words, then the
        arguments; options by name (`operation="op-1"`, `yes=True`; `_` becomes `-`)."""
        words, args = _split_words(list(words_and_args))
        opts: list[tuple[str, str | None]] = []
        for key, value in options.items():
            if value is None or value is False:
                continue
            flag = "--" + key.replace("_", "-")
            opts.append((flag, None if value is True else quote(str(value))))
        quoted = tuple(quote(a) for a in args)
        return cls(tuple(words), quoted, tuple(opts), about_component)

    @classmethod
    def parse(cls, tokens: Iterable[str]) -> Suggestion | None:
        """A suggestion from the tokens after `peagle` (None if they name no command):
        leading `--sandbox`/`--sandbox-engine E` are kept, the command words found, and
        every other token kept in its place, as written (quotes included), as an argument."""
        rest = list(tokens)
        sandbox, engine = False, None
        while rest and rest[0].startswith("--sandbox"):
            token = rest.pop(0)
            sandbox = True
            if token == "--sandbox-engine" and rest:
                engine = rest.pop(0)
            elif token.startswith("--sandbox-engine="):
                engine = token.split("=", 1)[1]
        if not rest or rest[0] not in COMMAND_WORDS:
            return None
        words, args = _split_words(rest)
        about = words[0] in ABOUT_COMPONENT
        return cls(tuple(words), tuple(args), about_component=about, sandbox=sandbox, engine=engine)

    def flags(self) -> set[str]:
        return {t.split("=", 1)[0] for t in self.args if t.startswith("-")} | {
            flag for flag, _ in self.options
        }


def _split_words(tokens: list[str]) -> tuple[list[str], list[str]]:
    """(command words, the rest): one word, two for a group's command (`drafter push`)."""
    if not tokens:
        return [], []
    n = 2 if tokens[0] in GROUPS and len(tokens) > 1 and not tokens[1].startswith("-") else 1
    return tokens[:n], tokens[n:]


_target = Target()


def begin(*, carry: tuple[str, ...] = (), command: str | None = None) -> None:
    """A new CLI run (cli/app.py `main`): forget the previous run's region and component.
    (Interim: helper A replaces this with the target's carry.)"""
    global _target
    _target = Target(sandbox=bool(carry), command=command)


def given_region(region: str | None) -> None:
    """The command's `--region` (its option callback): suggested commands repeat it."""
    global _target
    if region:
        _target = replace(_target, region=region)


def given_component(component: str | None) -> None:
    """The component the command is about: advice about it repeats `--component`."""
    global _target
    if component:
        _target = replace(_target, component=component)


def current_target() -> Target:
    """The context now: the sandbox (also when chosen by PEAGLE_SANDBOX=1, or by a shell
    pointed at it, PEAGLE_SANDBOX_URL), its engine if not the default, region, component."""
    from .. import plugins

    state = plugins.current_target()  # interim (helper A replaces this with carry)
    sandbox = _target.sandbox or state is not None
    carry = state.carry if state is not None else ()
    engine = carry[carry.index("--sandbox-engine") + 1] if "--sandbox-engine" in carry else None
    if engine == DEFAULT_ENGINE:
        engine = None
    return replace(_target, sandbox=sandbox, engine=engine)


def render(suggestion: Suggestion, target: Target | None = None) -> str:
    """The command line to print: `peagle [--sandbox [--sandbox-engine E]] WORDS ARGS
    OPTIONS [--component C] [--region R]` for the context (`current_target()` by default)."""
    t = current_target() if target is None else target
    command = suggestion.words[0] if suggestion.words else ""
    local = command in LOCAL or _help_only(suggestion)
    head = ["peagle"]
    sandbox = (t.sandbox or suggestion.sandbox) and not local
    engine = suggestion.engine or t.engine
    if sandbox:
        head.append("--sandbox")
        if engine and engine != DEFAULT_ENGINE:
            head += ["--sandbox-engine", engine]
    tail = [*suggestion.args]
    for flag, value in suggestion.options:
        tail += [flag] if value is None else [flag, value]
    have = suggestion.flags()
    if (
        suggestion.about_component
        and t.component
        and command in COMPONENT_COMMANDS
        and "--component" not in have
    ):
        tail += ["--component", t.component]
    if t.region and not local and "--region" not in have:
        tail += ["--region", t.region]
    return " ".join([*head, *suggestion.words, *tail])


def _help_only(s: Suggestion) -> bool:
    return s.args in (("--help",), ("-h",)) and not s.options


def quote(token: str) -> str:
    # A value given to `Suggestion.of`: placeholders (NAME, <op>, ...) and most values
    # print as they are; only one a shell would split or expand is quoted.
    return token if re.fullmatch(r"[\w@%+=:,./<>\[\]*-]+", token) else shlex.quote(token)


# -- free text (the SDK's remedies, notes) -------------------------------------------------
_QUOTED = re.compile(r"`peagle ([^`]+)`")
# An unquoted command: `peagle`, any global sandbox options, a command word; its arguments
# run until punctuation, a backquote or an English word that ends it (below).
_BARE = re.compile(r"(?<![\w`/-])peagle((?: --sandbox(?:-engine[ =][\w-]+)?)* [a-z][\w-]*)")
_PROSE = frozenset(
    ("what", "never", "would", "will", "can", "cannot", "does", "did", "is", "are", "the")
    + ("a", "an", "on", "in", "of", "which", "that", "it", "them", "only", "also", "itself")
)
_STOP = frozenset(
    ("or", "and", "then", "to", "for", "with", "if", "which", "removes", "remove", "lists")
    + ("changes", "once", "it", "them", "as", "is")
)


def rewrite(text: str, target: Target | None = None) -> str:
    """`text` with each `peagle …` command in it rendered for the context: backquoted ones
    whole; an unquoted one (a remedy such as `peagle delete NAME --yes (or …)`) up to where
    its arguments end. Text naming no command comes back unchanged."""
    if "peagle " not in text:
        return text
    t = current_target() if target is None else target

    def quoted(m: re.Match[str]) -> str:
        s = Suggestion.parse(m.group(1).split())
        return m.group(0) if s is None else f"`{render(s, t)}`"

    parts = re.split(r"(`[^`]*`)", text)
    out = []
    for part in parts:
        if part.startswith("`") and part.endswith("`") and len(part) > 1:
            out.append(_QUOTED.sub(quoted, part))
        else:
            out.append(_rewrite_bare(part, t))
    return "".join(out)


def _rewrite_bare(text: str, t: Target) -> str:
    out, pos = [], 0
    for m in _BARE.finditer(text):
        if m.start() < pos:
            continue
        end = _command_end(text, m.end())
        s = Suggestion.parse(text[m.start() + len("peagle") : end].split())
        if s is None or _prose(s, text, end):
            continue
        out += [text[pos : m.start()], render(s, t)]
        pos = end
    return "".join([*out, text[pos:]])


def _prose(s: Suggestion, text: str, end: int) -> bool:
    """A sentence about a command, not one to paste: `peagle` and a command word then an
    English word ("would let peagle delete what another endpoint runs", "peagle drafter
    push never creates them"), or nothing to run then a word."""
    if s.args:
        return s.args[0] in _PROSE
    return bool(re.match(r" +[a-z]", text[end:]))


def _command_end(text: str, start: int) -> int:
    """Where an unquoted command's arguments end: at punctuation that closes a clause, or
    before an English word that starts one ("… --yes or …")."""
    end = start
    for m in re.finditer(r"\s+([^\s(),;`|]+)", text[start:]):
        if m.start() != end - start:  # a gap: something else came between
            break
        word = m.group(1)
        if word in _STOP:
            break
        # "NAME." ends a sentence; "..." alone is a placeholder for more arguments.
        trimmed = word[:-1] if word[-1] in ".:" and word.strip(".") else word
        end = start + m.end() - (len(word) - len(trimmed))
        if trimmed != word:
            break
    return end
