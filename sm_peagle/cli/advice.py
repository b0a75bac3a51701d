"""Every command the CLI suggests targets what the command that printed it targeted.

A `next:` line, a `(fix: …)` or a note that says "`peagle gc --yes` removes them" is meant
to be pasted. Pasted as printed, it must reach the same place: after a
command run on a plugin's target (`peagle --local deploy …`), `peagle delete NAME --yes`
without `--local` would delete a real endpoint of that name for someone with AWS
credentials. So one function renders a
suggested command from the current context (`render`), and the CLI's own advice is built
as a `Suggestion` (words, arguments, options), never as a string:

- a plugin's target, however it was chosen (its global options, its variable, or a shell
  pointed at it): the options the target says a command must carry to reach it again
  (`TargetState.carry`, e.g. `--local --local-engine real`, so a target restarted by the
  pasted command runs the same way);
- `--region R` when the command was given one (on the commands that take it);
- `--component C` when the advice is about a component (`Suggestion.about_component`).

The SDK's errors still carry their remedies as free text with `peagle …` commands inside
(issue 34 makes them structured); `rewrite` finds those commands and renders each the same
way, so the error boundary, notes and `next:` lines all go through `render`.

Commands that never leave this machine are left as they are (`LOCAL`: `models`, `schema`,
`recommend`, `report`, and every plugin's own command group), and so is a bare `--help`.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

__all__ = [
    "Suggestion",
    "Target",
    "begin",
    "current_command",
    "current_target",
    "given_component",
    "given_region",
    "quote",
    "render",
    "rewrite",
]

# peagle's own commands and groups (cli/app.py COMMANDS; a unit test keeps them equal, and
# cli/app.py imports this module, so it is not read from there).
COMMAND_WORDS = frozenset(
    (
        "models", "instances", "schema", "plan", "deploy", "status", "ls", "logs", "update",
        "delete", "gc", "invoke", "chat", "apply", "adopt", "diff", "recommend", "bench",
        "sweep", "report", "race", "tune-k", "export", "iam-policy", "drafter", "doctor",
        "health",
    )
)  # fmt: skip
# peagle's own command groups (a plugin's group counts as one too: `_split_words`).
GROUPS = frozenset(("drafter",))
# Commands that never talk to AWS or a plugin's target: no --region option (a unit test
# checks the CLI), and no target options either (they would start a target for nothing).
# A plugin's own command group is local too (`_local()`).
LOCAL = frozenset(("models", "schema", "recommend", "report"))
# Commands with a --component option.
COMPONENT_COMMANDS = frozenset(
    ("plan", "deploy", "logs", "update", "invoke", "chat", "bench", "race", "tune-k", "health")
)
# In free text, the suggestions that are about the component the command was given: its
# logs (`see `peagle logs EP`` after a component failed to update means that component's).
ABOUT_COMPONENT = frozenset(("logs",))


def _plugin_commands() -> frozenset[str]:
    from .. import plugins

    return frozenset(plugins.commands())


def command_words() -> frozenset[str]:
    """The words that start a `peagle` command: peagle's own (`COMMAND_WORDS`) and every
    installed plugin's groups. Only these start a command in free text, so prose such as
    "peagle deploys GPU instances" is never taken for one."""
    return COMMAND_WORDS | _plugin_commands()


def _local(command: str) -> bool:
    return command in LOCAL or command in _plugin_commands()


@dataclass(frozen=True)
class Target:
    """Where the running command talks to, as far as a suggested command must repeat it."""

    # The global options that reach the plugin target the command talks to (none for AWS).
    carry: tuple[str, ...] = ()
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
    carry: tuple[str, ...] = ()  # the target options the text it was parsed from gave

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
        leading options of an installed target (`--local`, `--local-engine E`) are kept,
        the command words found, and every other token kept in its place, as written
        (quotes included), as an argument."""
        rest = list(tokens)
        carry: list[str] = []
        while rest and rest[0].startswith("--"):
            flag, eq, value = rest[0].partition("=")
            found = _target_option(flag)
            if found is None:
                break
            rest.pop(0)
            carry.append(flag)
            if found.takes_value:
                if eq:
                    carry.append(value)
                elif rest:
                    carry.append(rest.pop(0))
        if not rest or rest[0] not in command_words():
            return None
        words, args = _split_words(rest)
        about = words[0] in ABOUT_COMPONENT
        return cls(tuple(words), tuple(args), about_component=about, carry=tuple(carry))

    def flags(self) -> set[str]:
        return {t.split("=", 1)[0] for t in self.args if t.startswith("-")} | {
            flag for flag, _ in self.options
        }


def _split_words(tokens: list[str]) -> tuple[list[str], list[str]]:
    """(command words, the rest): one word, two for a group's command (`drafter push`)."""
    if not tokens:
        return [], []
    group = tokens[0] in GROUPS or tokens[0] in _plugin_commands()
    n = 2 if group and len(tokens) > 1 and not tokens[1].startswith("-") else 1
    return tokens[:n], tokens[n:]


def _target_option(flag: str) -> Any:
    """The installed target's option `flag` is (a `contract.TargetOption`), or None."""
    from .. import plugins

    found = plugins.target_option(flag)
    return found[1] if found is not None else None


def _options(carry: tuple[str, ...]) -> dict[str, str | None]:
    """Target options as flag -> value (None for a switch), in their order."""
    out: dict[str, str | None] = {}
    rest = list(carry)
    while rest:
        flag = rest.pop(0)
        option = _target_option(flag)
        out[flag] = rest.pop(0) if option is not None and option.takes_value and rest else None
    return out


def _merge(context: tuple[str, ...], given: tuple[str, ...]) -> list[str]:
    """The context's target options, with those the suggestion's text gave winning (a
    `--local-engine E` written in the text keeps its E)."""
    if not given:
        return list(context)
    if not context:
        return list(given)
    merged = {**_options(context), **_options(given)}
    out: list[str] = []
    for flag, value in merged.items():
        out += [flag] if value is None else [flag, value]
    return out


_target = Target()


def begin(*, carry: tuple[str, ...] = (), command: str | None = None) -> None:
    """A new CLI run (cli/app.py `main`): the target options the command reaches its target
    with (`TargetState.carry`, or those given); forget the previous run's region and
    component."""
    global _target
    _target = Target(carry=tuple(carry), command=command)


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


def current_command() -> str | None:
    """The command this run is (`begin`), without asking any plugin where it talks to."""
    return _target.command


def current_target() -> Target:
    """The context now: the target options of where this command talks to (those the run
    began with, else those of a target this process or shell was pointed at, asked of the
    plugin: `plugins.current_target().carry`), region, component."""
    if _target.carry:
        return _target
    from .. import plugins

    state = plugins.current_target()
    return replace(_target, carry=state.carry) if state is not None else _target


def render(suggestion: Suggestion, target: Target | None = None) -> str:
    """The command line to print: `peagle [TARGET OPTIONS] WORDS ARGS OPTIONS
    [--component C] [--region R]` for the context (`current_target()` by default)."""
    t = current_target() if target is None else target
    command = suggestion.words[0] if suggestion.words else ""
    local = _local(command) or _help_only(suggestion)
    head = ["peagle"]
    if not local:
        head += _merge(t.carry, suggestion.carry)
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


def _bare() -> re.Pattern[str]:
    """An unquoted command: `peagle`, any global options of an installed target, a command
    word; its arguments run until punctuation, a backquote or an English word that ends
    it (`_command_end`)."""
    from .. import plugins

    flags = [
        re.escape(o.flag) + (r"[ =][\w.-]+" if o.takes_value else "")
        for t in plugins.targets()
        for o in t.options
    ]
    # The longest first, so `--local-engine E` is not read as `--local` then `-engine`.
    flags.sort(key=len, reverse=True)
    options = f"(?: (?:{'|'.join(flags)})(?![\\w-]))*" if flags else ""
    return re.compile(rf"(?<![\w`/-])peagle({options} [a-z][\w-]*)")


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
    for m in _bare().finditer(text):
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
