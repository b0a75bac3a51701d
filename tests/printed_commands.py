"""The commands peagle prints for people to paste, and whether each targets what the command
that printed it targeted (issue 33): after `peagle --sandbox deploy …`, a `next:` line
without `--sandbox` pasted by someone with AWS credentials reaches real AWS.

What counts as a printed command: each `peagle …` on a `next:` line, inside a
`(fix: …)`, or between backquotes. Commands that never talk to AWS or a sandbox (they have
no `--region` option: `models`, `schema`, `recommend`, `report`) and the sandbox's own
`peagle sandbox …` group need no target, nor does a bare `--help`.
"""

from __future__ import annotations

import re

__all__ = ["off_target", "printed_commands"]

LOCAL = ("models", "schema", "recommend", "report", "sandbox")
_GLOBAL = r"(?: --sandbox(?:-engine[ =][\w-]+)?| --json| --quiet| -q| --verbose| -v)"
_COMMAND = re.compile(rf"(?<![\w/-])peagle({_GLOBAL}*) ([a-z][\w-]*)([^`()|;,]*)")
_QUOTED = re.compile(r"`(peagle [^`]+)`")


def printed_commands(text: str) -> list[str]:
    """Every command of a `next:` line, a `(fix: …)` or a backquoted `peagle …` in `text`."""
    found: list[str] = []
    for line in text.splitlines():
        spans = [m.group(1) for m in _QUOTED.finditer(line)]
        if line.startswith("next:"):
            spans.append(line[len("next:") :])
        spans += [line[m.end() :] for m in re.finditer(r"\(fix: ", line)]
        for span in spans:
            for m in _COMMAND.finditer(span):
                if m.group(2) == "doctor" and m.group(3).startswith(" ("):
                    continue  # doctor's heading, "peagle doctor (SANDBOX …)"
                found.append(re.split(r" (?:or|then|to|and) ", m.group(0))[0].strip())
    return sorted(set(found))


def off_target(text: str, *, sandbox: bool, region: str | None = None) -> list[str]:
    """The printed commands in `text` that miss the target: without `--sandbox` after a
    sandbox command, without `--region R` after a command given one, or with `--sandbox`
    after a command that talked to AWS."""
    bad = []
    for command in printed_commands(text):
        words = command.split()
        name = _command_name(words[1:])
        if name in LOCAL or words[-1] == "--help":
            continue
        has_sandbox = "--sandbox" in words or "--sandbox-engine" in words
        if has_sandbox != sandbox or region and f"--region {region}" not in command:
            bad.append(command)
    return bad


def _command_name(words: list[str]) -> str:
    skip = False
    for word in words:
        if skip or word.startswith("-"):
            skip = word == "--sandbox-engine"
            continue
        return word
    return ""
