"""The one table from the SDK's words to the CLI's: keyword arguments to flags, SDK calls
to `peagle` commands.

The SDK's errors, notes and progress lines name parameters and calls as data
(`sm_peagle.errors.Param`, `Call`, inside a `Text`); `str()` of them is the Python wording
(`k=`, `sm_peagle.delete('ep')`). The CLI prints the same text through `CliFace`: `-k`,
and `peagle delete ep --yes` rendered for where the running command talks to
(`advice.render`: a target's options, `--region`, `--component`).

A flag is `--` plus the keyword with `-` for `_` unless `FLAGS` says otherwise; a unit
test checks every keyword the SDK names against the options the CLI really has.
"""

from __future__ import annotations

from typing import Any

from ..errors import UNSET, Call, Param, Phrase, Text
from ..errors import render as render_text
from ..wording import phrase_in

__all__ = ["COMMANDS", "CONFIRMED", "FLAGS", "CliFace", "cli_text", "flag_for", "suggestion_for"]

# SDK keyword -> CLI flag, where the flag is not `--keyword-with-dashes`. A keyword the
# CLI takes as an argument maps to its metavar (upper case).
FLAGS: dict[str, str] = {
    # client (H-client)
    "for_": "--for",
    "source": "SRC",  # drafter inspect/check/push take the head as their argument
    # foundation
    "k": "-k",
    "spec": "-f",
    "spec_file": "-f",
    "path": "-f",
    "wait": "--wait",
    # errB: spec options and drafter check
    "components": "--component",
    "target_num_layers": "--target-layers",
    # drafter train (issue 40): the target model is its argument
    "target": "TARGET",
    "draft_vocab_size": "--draft-vocab",
}
# Per command, where one command's flag for a keyword differs from the table above.
FLAGS_BY_COMMAND: dict[tuple[str, str], str] = {
    # client (H-client)
    ("drafter", "dest"): "DEST",
    ("drafter", "source"): "SRC",
    ("drafter", "target_num_layers"): "--target-layers",
    # foundation
    ("invoke", "prompt"): "PROMPT",
    ("chat", "prompt"): "PROMPT",
    # measure (bench, race, sweep)
    ("bench", "out"): "--output",
    ("bench", "search"): "--search-max-concurrency",
    ("race", "components"): "--component",
    ("sweep", "out_dir"): "--output",
    ("sweep", "search"): "--search-max-concurrency",
    # errors-a
    ("ls", "include_unmanaged"): "--all",
}
# SDK operation -> the `peagle` command words, where they are not the name with `-`.
COMMANDS: dict[str, tuple[str, ...]] = {
    "drafter_inspect": ("drafter", "inspect"),
    "drafter_check": ("drafter", "check"),
    "drafter_push": ("drafter", "push"),
    "drafter_train": ("drafter", "train"),
    "tune_k": ("tune-k",),
    "iam_policy": ("iam-policy",),
}
# The CLI's wording of each `Phrase` (errors.PHRASES is the Python one; same keys). A
# plugin target's phrases (wording.TARGET_PHRASES) are worded by the target.
PHRASES: dict[str, str] = {
    "json": "--json",
}
# Commands that ask before they change anything: a suggested one carries `--yes` (it is
# pasted to do the thing the fix names; the SDK call has no prompt to answer).
CONFIRMED = frozenset(("delete", "gc"))


def flag_for(name: str, command: str | None = None) -> str:
    """The CLI flag (or argument metavar) that sets SDK keyword `name` on `command`."""
    if command and (command, name) in FLAGS_BY_COMMAND:
        return FLAGS_BY_COMMAND[(command, name)]
    return FLAGS.get(name) or "--" + name.replace("_", "-")


def _quote(token: str) -> str:
    # As the CLI's own advice quotes: a placeholder (`NAME`, `<op>`,
    # `arn:aws:iam::<account>:role/<name>`) prints as it is; a value a shell would split
    # or expand is quoted.
    from .advice import quote

    return quote(token)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return ""
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    return str(value)


class CliFace:
    """The CLI's wording for `command` (the words after `peagle` being run, if known)."""

    def __init__(self, command: str | None = None) -> None:
        if command is None:
            from .advice import current_command

            command = current_command()
        self.command = command

    def param(self, p: Param) -> str:
        flag = flag_for(p.name, self.command)
        if p.value is UNSET or p.value is True:
            return flag
        if p.value is False:
            return "--no-" + flag.lstrip("-")
        value = _value(p.value)
        return f"{flag} {_quote(value) if value else value}".rstrip()

    def phrase(self, p: Phrase) -> str:
        return phrase_in(p, "cli", PHRASES)

    def call(self, c: Call) -> str:
        from .advice import render

        return render(suggestion_for(c))


def suggestion_for(c: Call, *, yes: bool = False) -> Any:
    """The `advice.Suggestion` of SDK call `c`: its command words, arguments and flags;
    `--yes` on a command that asks first (CONFIRMED, or `yes=`), unless `c` says
    `yes=False` (a suggestion that should still ask, such as `delete --force`)."""
    from .advice import ABOUT_COMPONENT, Suggestion

    words = COMMANDS.get(c.op) or (c.op.replace("_", "-"),)
    given = dict(c.kwargs)
    options: list[tuple[str, str | None]] = []
    for key, value in c.kwargs:
        if value is None or value is False:
            continue
        flag = flag_for(key, words[0])
        if flag.isupper():  # an argument of the command
            continue
        options.append((flag, None if value is True else _quote(_value(value))))
    confirmed = yes or words[0] in CONFIRMED
    if confirmed and given.get("yes") is not False and ("--yes", None) not in options:
        options.append(("--yes", None))
    args = [_quote(str(a)) for a in c.args]
    args += [_quote(_value(v)) for k, v in c.kwargs if flag_for(k, words[0]).isupper()]
    # As in free text (advice.rewrite): advice to read a component's logs repeats the
    # `--component` the running command was given.
    about = words[0] in ABOUT_COMPONENT
    return Suggestion(tuple(words), tuple(args), tuple(options), about)


def cli_text(value: str | None, command: str | None = None) -> str | None:
    """`value` as the CLI prints it: a `Text` in the CLI's words; free text (not yet
    structured) with each `peagle …` command in it rendered for the context."""
    from .advice import rewrite

    return render_text(value, CliFace(command), legacy=rewrite)


def cli_doc(doc: Any, command: str | None = None) -> Any:
    """A `to_dict()` document with every `Text` in it in the CLI's words (for `--json`)."""
    if isinstance(doc, Text):
        return doc.render(CliFace(command))
    if isinstance(doc, dict):
        return {k: cli_doc(v, command) for k, v in doc.items()}
    if isinstance(doc, list | tuple):
        return [cli_doc(v, command) for v in doc]
    return doc


def check_detail(check: Any, command: str | None = None) -> str:
    """A check's table cell: its message, and `-> fix` unless it passed, in the CLI's words
    (a `peagle …` in the fix targets where this command did)."""
    detail = cli_text(check.message, command) or ""
    if check.fix and check.status != "pass":
        detail += f" -> {cli_text(check.fix, command)}"
    return detail
