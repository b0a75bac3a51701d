"""The product names no plugin (issue 35, acceptance): a plugin contributes through
`sm_peagle.contract` and is found by entry point, so peagle's code never says its name.

Read from the source (AST, nothing run): every string constant that is not a docstring,
identifier, attribute name, argument and keyword name, function and class name, and
import (module and names) in `sm_peagle/`. Comments and docstrings are prose and may
mention a plugin (the contract's own docs do); code may not. Forbidden in code:

- `sandbox`, in any case: the one plugin peagle grew up with (its command group, its
  module's name, its variables' prefix), and the word the product must stop using for
  "a target a plugin adds";
- the module, command groups and setting names each *installed* plugin declares
  (`plugins.installed()`, `plugins.commands()`, `plugins.settings()`), so a plugin
  installed later is held to the same rule;
- the distributions and commands `catalog/data/known_plugins.json` names (the data may
  name them; the code may not), so the rule holds without any plugin installed.

`ALLOWED` names the files that still mention it, each with why (one: reading stored
documents of the formats before the contract); a file listed there that no longer
mentions it fails, so the list only shrinks.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "sm_peagle"

# path (relative to sm_peagle/) -> why it may still name a plugin.
ALLOWED: dict[str, str] = {
    # Reading documents written before the contract: peagle.bench/2 and /3 keep the target
    # record under "sandbox", and /1 documents need the labels /2 gave them. Read, never
    # written (results.py's LEGACY_* constants); they go when those versions stop being read.
    "benchmarking/results.py": "reads the 'sandbox' record and labels of peagle.bench/1-3",
}


def _docstrings(tree: ast.AST) -> set[int]:
    nodes = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    return {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, nodes)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
        and isinstance(node.body[0].value.value, str)
    }


def code_words(source: str) -> list[tuple[int, str]]:
    """(line, text) of every name and non-docstring string constant in `source`."""
    tree = ast.parse(source)
    docs = _docstrings(tree)
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        texts: list[str] = []
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if id(node) not in docs:
                texts.append(node.value)
        elif isinstance(node, ast.Name):
            texts.append(node.id)
        elif isinstance(node, ast.Attribute):
            texts.append(node.attr)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            texts.append(node.name)
        elif isinstance(node, ast.arg | ast.keyword) and node.arg:
            texts.append(node.arg)
        elif isinstance(node, ast.alias):
            texts += [node.name, node.asname or ""]
        elif isinstance(node, ast.ImportFrom):
            texts.append(node.module or "")
        found += [(getattr(node, "lineno", 0), t) for t in texts if t]
    return found


def forbidden_words() -> tuple[re.Pattern[str], list[str]]:
    """The pattern any case of "sandbox" matches, and the exact names plugins declare."""
    from sm_peagle import plugins

    names: set[str] = set()
    for plugin in plugins.installed():
        names.add(type(plugin).__module__.split(".")[0])  # its top-level package
        names.add(plugin.distribution)
    names |= set(plugins.commands())
    names |= {setting.name for _, setting in plugins.settings()}
    known = json.loads((PACKAGE / "catalog/data/known_plugins.json").read_text())["plugins"]
    for entry in known.values():
        names.add(entry["distribution"])
        names |= set(entry.get("commands", ()))
    return re.compile("sandbox", re.IGNORECASE), sorted(n for n in names if n)


def violations(package: Path) -> dict[str, list[str]]:
    """relative path -> `line: text` of each code word in `package` naming a plugin."""
    pattern, names = forbidden_words()
    out: dict[str, list[str]] = {}
    for path in sorted(package.rglob("*.py")):
        hits = [
            f"{line}: {text[:80]}"
            for line, text in code_words(path.read_text())
            if pattern.search(text) or any(name in text for name in names)
        ]
        if hits:
            out[path.relative_to(package).as_posix()] = hits
    return out


def test_the_rule_sees_the_installed_plugin_and_the_known_ones() -> None:
    """A rule with nothing to look for passes everything: it must hold the sandbox's
    module, command and settings (installed with the tests), and the known plugins'."""
    _, names = forbidden_words()
    assert {"peagle_sandbox", "peagle-sandbox", "sandbox"} <= set(names)
    assert {"PEAGLE_SANDBOX", "PEAGLE_SANDBOX_URL", "PEAGLE_ENGINE_HOME"} <= set(names)


def test_the_scan_finds_a_name_in_code_and_not_in_prose() -> None:
    source = '''
"""The sandbox, in a docstring: prose."""
# the sandbox, in a comment: prose
import peagle_sandbox as ps
from x import use_sandbox

def f(sandbox_url: str) -> None:
    """Again prose: peagle_sandbox."""
    g(engine="PEAGLE_ENGINE_HOME", on_sandbox=True)
    return ps.SANDBOX
'''
    words = {text for _, text in code_words(source)}
    assert {"peagle_sandbox", "use_sandbox", "sandbox_url", "on_sandbox", "SANDBOX"} <= words
    assert "PEAGLE_ENGINE_HOME" in words
    assert not any("prose" in w for w in words)


# The exact words an allowed file may hold (nothing else of its code may name a plugin).
ALLOWED_WORDS: dict[str, set[str]] = {
    "benchmarking/results.py": {
        "sandbox",
        "SANDBOX (SIMULATED)",
        "SANDBOX (vllm {version}, CPU, tiny model)",
        "SANDBOX, {engine}",
    },
}


def test_the_product_names_no_plugin_in_code() -> None:
    found = violations(PACKAGE)
    unexpected = {
        path: [hit for hit in hits if hit.split(": ", 1)[1] not in ALLOWED_WORDS.get(path, ())]
        for path, hits in found.items()
    }
    unexpected = {path: hits for path, hits in unexpected.items() if hits}
    assert unexpected == {}, "name no plugin in code: ask sm_peagle.plugins (see contract.py)"
    assert set(ALLOWED_WORDS) == set(ALLOWED)


def test_the_allow_list_only_shrinks() -> None:
    """Each allowed file must still need it (else remove its entry) and give a reason."""
    found = violations(PACKAGE)
    stale = sorted(path for path in ALLOWED if path not in found)
    assert stale == [], "these files name no plugin any more: remove them from ALLOWED"
    assert all(reason.strip() for reason in ALLOWED.values())


@pytest.mark.parametrize("name", ["sm_peagle.use_sandbox", "sm_peagle.sandbox_start"])
def test_a_moved_name_is_the_plugin_s_declaration(name: str) -> None:
    """The old public names that moved to the sandbox are declared by it (`Plugin.moved()`),
    never listed by peagle (the rule above holds that)."""
    from sm_peagle import plugins

    assert plugins.moved(name) is not None
