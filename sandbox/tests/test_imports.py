"""The sandbox reaches into nothing of peagle's: every use of the product in
`peagle_sandbox/**` is `sm_peagle`'s public SDK (a name in `sm_peagle.__all__`) or the
plugin contract (`sm_peagle.contract`, a name in its `__all__`), so a refactor inside
peagle cannot break the sandbox without breaking the contract (issue 35).

Read from the code (AST): imports (`import sm_peagle.x`, `from sm_peagle.x import y`),
attributes of a name bound to peagle's package or its contract (`sm_peagle.x`,
`contract.x`), and string constants naming a module path under `sm_peagle` (an `argv`
of `python -m sm_peagle.…` or an `import_module`); docstrings and comments aside. The
old public names the plugin forwards (`PLUGIN.moved()` keys) are peagle's former public
paths, declared for one release, and may be named.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import sm_peagle
from sm_peagle import contract

PACKAGE = Path(__file__).resolve().parents[1] / "peagle_sandbox"
PRODUCT = "sm_peagle"
CONTRACT = "sm_peagle.contract"
# A dotted path under the product, as a string (`"sm_peagle.container.entrypoint"`).
_MODULE_PATH = re.compile(r"sm_peagle(\.[A-Za-z_]\w*)+")
# `sm_peagle.__file__`: where the product lives (the engine installer links it into the
# engine's virtualenv); a module attribute every module has, not an internal.
_MODULE_ATTRIBUTES = {"__file__"}


def _docstrings(tree: ast.AST) -> set[int]:
    """id() of every docstring node (module, class, function)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


def violations(
    source: str,
    public: frozenset[str],
    contract_names: frozenset[str],
    allowed_strings: frozenset[str] = frozenset(),
) -> list[str]:
    """What `source` uses of the product beyond `public` (sm_peagle's `__all__`) and
    `contract_names` (the contract's `__all__`): one line each, "line N: what"."""
    tree = ast.parse(source)
    found: list[str] = []
    # Local names bound to the product's package and to its contract module.
    product_names: set[str] = set()
    contract_aliases: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == PRODUCT:
                    product_names.add(alias.asname or PRODUCT)
                elif alias.name == CONTRACT:
                    if alias.asname:
                        contract_aliases.add(alias.asname)
                    else:  # `import sm_peagle.contract` binds `sm_peagle`
                        product_names.add(PRODUCT)
                elif alias.name.startswith(PRODUCT + "."):
                    found.append(f"line {node.lineno}: import {alias.name}")
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == PRODUCT:
                for alias in node.names:
                    if alias.name == "contract":
                        contract_aliases.add(alias.asname or "contract")
                    elif alias.name not in public:
                        found.append(f"line {node.lineno}: from sm_peagle import {alias.name}")
            elif node.module == CONTRACT:
                for alias in node.names:
                    if alias.name not in contract_names:
                        found.append(
                            f"line {node.lineno}: from sm_peagle.contract import {alias.name}"
                        )
            elif node.module.startswith(PRODUCT + "."):
                found.append(f"line {node.lineno}: from {node.module} import …")
    docstrings = _docstrings(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            owner, attr = node.value.id, node.attr
            if owner in product_names:
                ok = attr in public or attr in _MODULE_ATTRIBUTES or attr == "contract"
                if not ok:
                    found.append(f"line {node.lineno}: {owner}.{attr}")
            elif owner in contract_aliases and attr not in contract_names:
                found.append(f"line {node.lineno}: {owner}.{attr}")
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
        ):
            for m in _MODULE_PATH.finditer(node.value):
                path = m.group(0)
                if path != CONTRACT and path not in allowed_strings:
                    found.append(f"line {node.lineno}: the string {path!r}")
    return found


def _public() -> tuple[frozenset[str], frozenset[str]]:
    return frozenset(sm_peagle.__all__), frozenset(contract.__all__)


def test_the_sandbox_uses_only_the_public_sdk_and_the_contract() -> None:
    from peagle_sandbox.peagle_plugin import PLUGIN

    public, contract_names = _public()
    moved = frozenset(PLUGIN.moved())
    files = sorted(PACKAGE.rglob("*.py"))
    assert len(files) > 30, f"found only {len(files)} modules under {PACKAGE}"
    bad = {
        str(path.relative_to(PACKAGE.parent)): found
        for path in files
        if (found := violations(path.read_text(), public, contract_names, moved))
    }
    assert bad == {}, "the sandbox reaches into peagle (export it in sm_peagle.contract)"


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("from sm_peagle.errors import SpecError", "from sm_peagle.errors import …"),
        ("import sm_peagle.settings", "import sm_peagle.settings"),
        ("from sm_peagle import settings", "from sm_peagle import settings"),
        ("from sm_peagle.contract import _EXPORTS", "from sm_peagle.contract import _EXPORTS"),
        ("import sm_peagle\nsm_peagle.settings.get('X')", "sm_peagle.settings"),
        ("import sm_peagle as p\np.aws", "p.aws"),
        ("from sm_peagle import contract as c\nc.plugins", "c.plugins"),
        ("argv = ['-m', 'sm_peagle.container.entrypoint']", "'sm_peagle.container.entrypoint'"),
        ("import importlib\nimportlib.import_module('sm_peagle.aws')", "'sm_peagle.aws'"),
    ],
)
def test_each_way_of_reaching_in_is_caught(line: str, expected: str) -> None:
    """The scan can fail: each form of an internal use is reported."""
    (found,) = violations(line, *_public())
    assert expected in found


def test_what_the_contract_allows_passes() -> None:
    source = (
        '"""Docstrings may name sm_peagle.aws."""\n'
        "import sm_peagle\n"
        "import sm_peagle.contract\n"
        "from sm_peagle import Client, contract\n"
        "from sm_peagle.contract import SpecError, CONTAINER_ENTRYPOINT\n"
        "from . import settings\n"
        "sm_peagle.deploy, sm_peagle.__file__, sm_peagle.contract.note, contract.note\n"
        "moved = {'sm_peagle.use_sandbox': 'peagle_sandbox.use_sandbox'}\n"
    )
    allowed = frozenset({"sm_peagle.use_sandbox"})
    assert violations(source, *_public(), allowed) == []
